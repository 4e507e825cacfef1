# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""A scalar literal its float dtype cannot hold, and a tensor dimension beyond int64,
are compile errors at the user's line (issue 26, item 13), not an inf or a shape that
fails later."""

from __future__ import annotations

import math

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import ParserTypeError

HUGE_DIM = 2**63
BIG_DIM = 2**63 - 1
INF = math.inf
FP32_MAX = 3.4028234663852886e38


def test_fp32_scalar_literal_beyond_the_range_is_an_error(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                t = pl.load(x, [0, 0], [16, 16])
                t = pl.add(t, 1e40)  # lit-1e40
                out = pl.store(t, [0, 0], out)
                return out
    e = ei.value
    assert e.line == line_of("lit-1e40") and e.file == __file__
    assert "the constant 1e+40 does not fit FP32" in e.message
    assert "FP32 would hold inf" in e.message


def _scalar():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], f: pl.Scalar[pl.FP32]):
            s = f + -1e39  # lit-scalar


def _const():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            s = pl.const(1e39, pl.FP32)  # lit-const


def _annotated():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            s: pl.Scalar[pl.FP32] = 5e38  # lit-annotated


def _fp16():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], h: pl.Scalar[pl.FP16]):
            s = h * 1e5  # lit-fp16


@pytest.mark.parametrize(("build", "dtype"), [
    (_scalar, "FP32"), (_const, "FP32"), (_annotated, "FP32"), (_fp16, "FP16"),
], ids=["scalar", "const", "annotated", "fp16"])
def test_every_literal_form_is_checked(build, dtype, line_of):
    with pytest.raises(ParserTypeError) as ei:
        build()
    e = ei.value
    assert e.line == line_of(f"lit-{build.__name__[1:]}")
    assert f"does not fit {dtype}" in e.message


def test_literals_the_dtype_holds_still_compile():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], h: pl.Scalar[pl.FP16]):
            a = 3.4028235e38  # FP32's max as printed: rounds onto it
            b = -FP32_MAX
            c = -INF  # an explicit infinity is an IEEE value
            d = h * 65504.0
            e = pl.const(1e-50, pl.FP32)  # underflow to 0 is not an overflow

    assert "k" in K.functions


def test_tensor_dimension_beyond_int64_is_an_error(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[HUGE_DIM, 64], pl.FP32]):  # dim-huge
                pass
    e = ei.value
    assert e.line == line_of("dim-huge") and e.file == __file__
    assert "dimension 9223372036854775808 does not fit int64" in e.message
    assert "at most 9223372036854775807" in e.message


def test_tensor_dimension_of_int64_max_is_accepted():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[BIG_DIM, 64], pl.FP32]):
            pass

    assert K.functions["k"].params[0].type.shape[0] == BIG_DIM
