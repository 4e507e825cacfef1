"""Float Scalars hold values of their dtype (docs/design/language.md §19): staged arguments, typed
constants and FP32 scalar arithmetic are rounded, not carried as the host's float64.
(Found by the in-repository fuzzer, ut/fuzz.)"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

R, C = 8, 32


@pl.program
class AddsHalf:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32], alpha: pl.Scalar[pl.FP16],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = pl.store(pl.adds(pl.load(x, [0, 0], [R, C]), alpha), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], alpha: pl.Scalar[pl.FP16],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(x, alpha, out)
        return out


@pl.program
class AddsConst:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.adds(pl.load(x, [0, 0], [R, C]), pl.const(7.1, pl.BF16))
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(x, out)
        return out


@pl.program
class AddsExpr:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32], alpha: pl.Scalar[pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.adds(pl.load(x, [0, 0], [R, C]), (alpha / 3.0) - 0.10000000149011612)
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], alpha: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(x, alpha, out)
        return out


PLATFORMS = ["a2a3sim", "a5sim"]


def _run(program, *scalars, platform):
    x = np.zeros((R, C), np.float32)
    out = np.empty((R, C), np.float32)
    pytest_pypto.run(program, x, *scalars, out, config=RunConfig(platform=platform))
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_python_float_is_staged_as_its_scalar_dtype(platform: str) -> None:
    out = _run(AddsHalf, 0.1, platform=platform)
    assert (out == np.float32(np.float16(0.1))).all()  # 0.099975586, not 0.1


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_typed_constant_holds_its_dtypes_value(platform: str) -> None:
    import ml_dtypes

    out = _run(AddsConst, platform=platform)
    assert (out == np.float32(ml_dtypes.bfloat16(7.1))).all()  # 7.09375


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp32_scalar_arithmetic_rounds_each_step(platform: str) -> None:
    out = _run(AddsExpr, 0.5, platform=platform)
    step = np.float32(np.float32(0.5) / np.float32(3.0))
    want = np.float32(step - np.float32(0.10000000149011612))
    assert (out == want).all()
    assert want != np.float32(0.5 / 3.0 - 0.10000000149011612)  # float64 steps differ
