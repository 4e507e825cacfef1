# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Closure constants (docs/design/language.md §7): module-level and get_program()-local captures
fold."""

from __future__ import annotations

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.nodes import Assign, BinOp, Const
from pytest_pypto.ir.types import TensorType, TileType

ROWS, COLS = 32, 16
SHAPE = (ROWS, COLS)
DT = pl.FP16
SPACE = pl.Mem.Mat


class Suite:
    M = 64
    N = 128

    def get_program(self):
        M, N = self.M, self.N
        half = N // 2

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, N], pl.FP32]):
                t = pl.load(x, [0, half], [M, half])

        return P


def test_get_program_locals_overlay_globals():
    p = Suite().get_program()
    k = p.functions["k"]
    assert k.params[0].type == TensorType((64, 128), dtypes.FP32)
    load = k.body[0].value
    assert load.arg("offsets") == (0, 64)
    assert load.arg("shapes") == (64, 64)


def test_module_constants_tuples_dtypes_enums_and_arithmetic():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[ROWS * 2, COLS + COLS], DT]):
            t: pl.Tile[[SHAPE[0], SHAPE[1]], DT, SPACE] = pl.load(x, [ROWS - 32, 0], [ROWS, COLS])

    k = P.functions["k"]
    assert k.params[0].type == TensorType((64, 32), dtypes.FP16)
    (assign,) = k.body
    assert assign.value.arg("offsets") == (0, 0)
    # the annotation's space retargets the load (no target_memory given)
    assert assign.value.arg("target_memory") == "Mat"
    assert assign.targets[0].type == TileType((32, 16), dtypes.FP16, "Mat")


def test_local_name_shadows_closure():
    ROWS = 999  # noqa: F841 - would be captured if the body did not shadow it

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]):
            ROWS = n * 2
            z = ROWS + 1

    body = P.functions["k"].body
    assert isinstance(body[1], Assign) and isinstance(body[1].value, BinOp)
    assert body[1].value.lhs is body[0].targets[0]


def test_constant_arithmetic_folds_with_dsl_division():
    A, B = 7, -2

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]):
            a = n + A // B
            b = n + A / B
            c = n + A % B

    consts = [s.value.rhs for s in P.functions["k"].body]
    assert all(isinstance(c, Const) for c in consts)
    # floor division and floor modulo as in Python; '/' on ints truncates toward zero (C)
    assert [c.value for c in consts] == [-4, -3, -1]
