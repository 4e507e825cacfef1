"""`pl.read(t, i)` / `pl.write(t, i, v)` with a bare index: PyPTO's spelling of a 1-D
access, the same as ``[i]`` (ParamSpec.bare_index); a rank-2 tensor still needs one index
per dimension."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.errors import ParserTypeError


@pl.program
class ScaleByEntry:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32], s: pl.Scalar[pl.FP32],
          out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out = pl.store(pl.mul(pl.load(x, [0, 0], [16, 64]), s), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], table: pl.InOut[pl.Tensor[[4], pl.FP32]],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        i: pl.Scalar[pl.INDEX] = 2
        s: pl.Scalar[pl.FP32] = pl.read(table, i)
        pl.write(table, 0, s)
        out = self.k(x, s, out)
        return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_bare_index_reads_and_writes_a_1d_tensor(platform: str) -> None:
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    table = np.array([1.0, 2.0, 3.0, 4.0], np.float32)
    out = np.zeros_like(x)
    pytest_pypto.run(ScaleByEntry, x, table, out, config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out, x * np.float32(3.0))
    np.testing.assert_array_equal(table, [3.0, 2.0, 3.0, 4.0])


def test_a_bare_index_on_a_rank_2_tensor_still_needs_one_index_per_dimension() -> None:
    with pytest.raises(ParserTypeError, match="one index per dimension: 1 indices for a rank-2"):

        @pl.program
        class Flat:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, t: pl.Tensor[[4, 4], pl.FP32],
                     out: pl.Out[pl.Tensor[[4, 4], pl.FP32]]) -> pl.Tensor[[4, 4], pl.FP32]:
                s: pl.Scalar[pl.FP32] = pl.read(t, 3)
                pl.write(out, [0, 0], s)
                return out
