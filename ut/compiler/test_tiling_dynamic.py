# SPDX-License-Identifier: Apache-2.0
"""Tiling plans over `pl.dynamic` dims (compiler/tiling.py): a dynamic dim gets a tile
extent from the static dims and the arch capacity, one run-time segment, and a
dynamic reduced axis is reported.  Expected sizes follow docs/design/checks.md §7's byte rule
(prod(shape) x element bytes, rounded up to Vec's 128-byte alignment), written here."""

from __future__ import annotations

import math

import pytest

from pytest_pypto.arch import spec
from pytest_pypto.compiler import tiling
from pytest_pypto.ir.dtypes import FP16, FP32
from pytest_pypto.ir.types import DynVar


def vec_bytes(shape, nbytes):
    return math.ceil(math.prod(shape) * nbytes / 128) * 128


def test_a_dynamic_length_is_one_run_time_segment():
    m = DynVar("M")
    (seg,) = tiling.segments(m, 64)
    assert (seg.start, seg.stop, seg.extent) == (0, m, 64)
    assert seg.dynamic and seg.count is None
    assert [(s.start, s.stop, s.count) for s in tiling.segments(100, 64)] == [(0, 64, 1),
                                                                              (64, 100, 1)]


@pytest.mark.parametrize("arch", ["a2a3", "a5"])
def test_dynamic_rows_take_the_most_rows_of_static_columns_that_fit(arch):
    m = DynVar("M")
    cap = spec(arch).capacity["Vec"]
    plan = tiling.vector_plan((m, 64), FP32, [tiling.Operand((m, 64), FP32)], spec(arch), cap)
    rows, cols = plan.extents
    assert plan.kind == "map" and plan.shape == (m, 64) and plan.dynamic and cols == 64
    most = cap // (2 * 64 * 4)  # operand and result tiles of FP32 rows at once
    assert 2 * vec_bytes((rows, 64), 4) <= cap and rows * 2 > most
    assert rows & (rows - 1) == 0  # a power of two: the tail is min(T, M - r)
    assert tiling.dynamic_dims(plan) == []


def test_both_dims_dynamic_fit_vec_and_a_broadcast_operand_stays_one_row():
    m, n = DynVar("M"), DynVar("N")
    arch = spec("a2a3")
    ops = [tiling.Operand((m, n), FP16), tiling.Operand((1, n), FP16)]
    plan = tiling.vector_plan((m, n), FP16, ops, arch, arch.capacity["Vec"])
    rows, cols = plan.extents
    assert ops[1].window(plan.extents, plan.shape) == (1, cols)
    assert 2 * vec_bytes((rows, cols), 2) + vec_bytes((1, cols), 2) <= arch.capacity["Vec"]
    assert rows >= 1 and cols >= 1


def test_a_dynamic_reduced_axis_is_reported_and_a_static_one_is_not():
    m = DynVar("M")
    arch = spec("a5")
    cols = tiling.vector_plan((m, 1), FP32, [tiling.Operand((m, 64), FP32)], arch,
                              arch.capacity["Vec"])
    assert cols.kind == "reduce" and cols.axis == 1 and tiling.dynamic_dims(cols) == []
    assert cols.extents[1] == 64 and not cols.split
    rows = tiling.vector_plan((1, 64), FP32, [tiling.Operand((m, 64), FP32)], arch,
                              arch.capacity["Vec"])
    assert rows.kind == "reduce" and tiling.dynamic_dims(rows) == [0]
