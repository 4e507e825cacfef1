# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""A tensor created with a Scalar dim has a dynamic dim that *is* that Scalar: two
tensors created with the same Scalar Var have one type, so a loop may carry one and
yield the other (docs/design/language.md §12); different Scalars give different dims."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.errors import ParserTypeError

N = pl.dynamic("N")


def _program(same_dim: bool):
    @pl.program
    class Carry:
        @pl.function(type=pl.FunctionType.InCore)
        def double(self, a: pl.Tensor[[16, N], pl.FP32],
                   b: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 64])
            b = pl.store(pl.add(t, t), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.InCore)
        def copy_into(self, b: pl.Out[pl.Tensor[[16, N], pl.FP32]],
                      a: pl.Tensor[[16, N], pl.FP32]) -> pl.Tensor[[16, N], pl.FP32]:
            b = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.InCore)
        def double_in_place(self, like: pl.Tensor[[16, N], pl.FP32],
                            b: pl.InOut[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            t = pl.load(b, [0, 0], [16, 64])
            b = pl.store(pl.add(t, t), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, N], pl.FP32], y: pl.Tensor[[16, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            n = pl.tensor.dim(x, 1)
            m = pl.tensor.dim(y, 1)
            acc = pl.create_tensor([16, n], dtype=pl.FP32)
            acc = self.copy_into(acc, x)  # its dim: n
            for i in pl.range(2):
                if same_dim:
                    nxt = pl.create_tensor([16, n], dtype=pl.FP32)
                else:
                    nxt = pl.create_tensor([16, m], dtype=pl.FP32)  # binds N of the call below
                acc = self.double_in_place(nxt, acc)  # carried
            out = self.double(acc, out)
            return out

    return Carry


def test_tensors_created_with_one_scalar_dim_share_a_type() -> None:
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    out = np.zeros_like(x)
    pytest_pypto.run(_program(True), x, x.copy(), out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, x * 8)


def test_tensors_created_with_different_scalar_dims_differ(line_of) -> None:
    x = np.zeros((16, 64), np.float32)
    with pytest.raises(ParserTypeError) as ei:
        pytest_pypto.run(_program(False), x, x, np.zeros_like(x),
                         config=RunConfig(platform="a2a3sim"))
    assert ei.value.line == line_of("carried")
    assert "loop-carried value 'acc' changes type" in ei.value.message
    assert "[16, n]" in ei.value.message and "[16, m]" in ei.value.message
