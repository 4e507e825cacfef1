# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""The IR printer: deterministic, span-free, and sensitive to every semantic change."""

from __future__ import annotations

import math

from hypothesis import given
from hypothesis import strategies as st

import pytest_pypto.language as pl
from pytest_pypto.ir.printer import print_function, print_program


def make(rows: int, space=None, dtype=pl.FP32, name_dim=None):
    """The same kernel with one knob changed; `space` retargets the load via annotation."""
    M = name_dim if name_dim is not None else rows
    SPACE = space

    if SPACE is None:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, 64], dtype], out: pl.Out[pl.Tensor[[M, 64], dtype]]):
                for r in pl.range(0, 4):
                    t = pl.load(x, [r, 0], [rows, 64])
                    out = pl.store(pl.exp(t), [r, 0], out)
        return P

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[M, 64], dtype], out: pl.Out[pl.Tensor[[M, 64], dtype]]):
            for r in pl.range(0, 4):
                t: pl.Tile[[rows, 64], dtype, SPACE] = pl.load(x, [r, 0], [rows, 64])
                out = pl.store(pl.exp(t), [r, 0], out)
    return P


def test_identical_programs_print_identically():
    a, b = make(32), make(32)
    assert a is not b
    assert print_program(a) == print_program(b)


def test_semantic_changes_print_differently():
    base = print_program(make(32))
    assert print_program(make(16)) != base  # a constant
    assert print_program(make(32, dtype=pl.FP16)) != base  # a dtype
    assert print_program(make(32, space=pl.Mem.Vec)) != base  # a memory space


def test_text_contains_types_spaces_directions_and_attrs():
    text = print_program(make(32, space=pl.Mem.Vec))
    assert "program P" in text
    assert "func @k [InCore](x: In Tensor[[32, 64], FP32], out: Out Tensor[[32, 64], FP32])" in text
    assert "target_memory='Vec'" in text
    assert "Tile[[32, 64], FP32, Vec]" in text
    assert "carry (" in text and "yield " in text
    assert "0x" not in text  # no addresses
    assert ".py" not in text  # no spans


def test_spans_are_not_printed():
    # same kernel at a different place in a file: only the spans differ
    a = make(32)
    b = make(32)
    b.functions["k"].body[0].span = None
    assert print_program(a) == print_program(b)
    assert print_function(a.functions["k"]) in print_program(a)


def test_distinct_dynamic_dims_with_one_name_stay_distinct():
    one = pl.dynamic("M")
    same = print_program(_two_dims(one, one))
    different = print_program(_two_dims(pl.dynamic("M"), pl.dynamic("M")))
    assert same != different
    assert "M@0" in same and "M@1" not in same and "M@1" in different
    assert print_program(_two_dims(one, one)) == same


def _two_dims(a, b):
    @pl.program
    class D:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[a, 64], pl.FP32], y: pl.Tensor[[b, 64], pl.FP32]):
            pass
    return D


@given(st.integers(-50, 50), st.integers(-50, 50).filter(lambda v: v != 0))
def test_constant_folding_matches_the_dsl_semantics(a, b):
    @pl.program
    class F:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]):
            q = n + a / b
            f = n + a // b
            m = n + a % b

    got = [s.value.rhs.value for s in F.functions["k"].body]
    # '/' truncates toward zero (C); '//' and '%' floor (Python)
    assert got == [math.trunc(a / b), math.floor(a / b), a - b * math.floor(a / b)]
