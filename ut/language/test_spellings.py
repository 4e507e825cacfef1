"""PyPTO's keyword spellings parse, and the older spelling means the same (docs/design/language.md
§1)."""

import numpy as np

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.printer import print_program


def _program(use_pypto_spelling: bool):
    if use_pypto_spelling:

        @pl.program
        class Ragged:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 32], pl.FP32],
                  out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
                t = pl.load(x, [0, 0], [16, 32], valid_shapes=[8, 20])
                out = pl.store(pl.add(t, t), [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 32], pl.FP32],
                     out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
                out = self.k(x, out)
                return out

        return Ragged

    @pl.program
    class Ragged:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 32], pl.FP32],
              out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 32], valid_shape=[8, 20])
            out = pl.store(pl.add(t, t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 32], pl.FP32],
                 out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            out = self.k(x, out)
            return out

    return Ragged


def test_valid_shapes_and_valid_shape_are_one_parameter():
    pypto, dsl = _program(True), _program(False)
    assert print_program(pypto) == print_program(dsl)
    assert "valid_shapes=[8, 20]" in print_program(pypto)


def test_valid_shapes_limits_the_stored_region():
    x = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    out = np.full((16, 32), -1.0, np.float32)
    expected = out.copy()
    expected[:8, :20] = 2 * x[:8, :20]
    pytest_pypto.run(_program(True), x, out, config=RunConfig(platform="a5sim"))
    np.testing.assert_array_equal(out, expected)
