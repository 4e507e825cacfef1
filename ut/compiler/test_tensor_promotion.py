# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Tensor-level elementwise binaries bring their operands to one dtype by PyPTO's
promotion rule (a float beats an int, the wider float wins: FP32 + BF16 is FP32); the
lowering casts the narrower operand after its load (docs/design/language.md §10)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.ir.errors import PyptoError
from pytest_pypto.ir.tensor_forms import promote
from ut.helpers import line_finder

line_of = line_finder(__file__)

BF16 = ml_dtypes.bfloat16


def _mixed(op, out_dtype, bf16_first: bool):
    @pl.program
    class Mixed:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.BF16],
              out: pl.Out[pl.Tensor[[16, 64], out_dtype]]) -> pl.Tensor[[16, 64], out_dtype]:
            if bf16_first:
                s = op(b, a)
            else:
                s = op(a, b)
            out = pl.assemble(out, s, [0, 0])  # mixed-assemble
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 64], pl.FP32], b: pl.Tensor[[16, 64], pl.BF16],
                 out: pl.Out[pl.Tensor[[16, 64], out_dtype]]) -> pl.Tensor[[16, 64], out_dtype]:
            out = self.k(a, b, out)
            return out

    return Mixed


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
@pytest.mark.parametrize(("op", "ref"), [(pl.add, np.add), (pl.sub, np.subtract),
                                         (pl.mul, np.multiply), (pl.maximum, np.maximum)])
@pytest.mark.parametrize("bf16_first", [False, True])
def test_fp32_and_bf16_operands_compute_in_fp32(platform, op, ref, bf16_first) -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((16, 64)).astype(np.float32)
    b = rng.standard_normal((16, 64)).astype(BF16)
    out = np.zeros_like(a)
    pytest_pypto.run(_mixed(op, pl.FP32, bf16_first), a, b, out,
                     config=RunConfig(platform=platform))
    wide = b.astype(np.float32)
    want = ref(wide, a) if bf16_first else ref(a, wide)
    np.testing.assert_array_equal(out, want.astype(np.float32))


def test_the_promoted_result_is_fp32_not_the_narrower_dtype() -> None:
    a = np.zeros((16, 64), np.float32)
    with pytest.raises(PyptoError) as ei:
        pytest_pypto.run(_mixed(pl.add, pl.BF16, True), a, a.astype(BF16),
                         np.zeros((16, 64), BF16), config=RunConfig(platform="a2a3sim"))
    assert ei.value.line == line_of("mixed-assemble")
    assert "FP32" in ei.value.message and "BF16" in ei.value.message


@pytest.mark.parametrize(("a", "b", "want"), [
    ("FP32", "BF16", "FP32"), ("BF16", "FP32", "FP32"), ("FP16", "BF16", "FP16"),
    ("INT32", "FP16", "FP16"), ("INT8", "INT32", "INT32"), ("UINT32", "INT32", "INT32"),
])
def test_promotion_rule(a, b, want) -> None:
    assert promote(dtype_by_name(a), dtype_by_name(b)).name == want
