# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Tuple returns, positional binding of results, op namespaces and static statements."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import InvalidOperationError, ParserTypeError
from pytest_pypto.ir.nodes import Assign, FuncCall
from pytest_pypto.ir.types import TensorType, TileType, TupleType

T64 = TensorType((64, 64), dtypes.FP32)


def test_tuple_returns_bind_positionally():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], x: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
              y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> tuple[pl.Tensor[[64, 64], pl.FP32],
                                                               pl.Tensor[[64, 64], pl.FP32]]:
            t = pl.load(a, [0, 0], [64, 64])
            x = pl.store(t, [0, 0], x)
            y = pl.store(t, [0, 0], y)
            return x, y

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[64, 64], pl.FP32], x: pl.InOut[pl.Tensor[[64, 64], pl.FP32]],
                 y: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tuple[pl.Tensor[[64, 64], pl.FP32],
                                                                     pl.Tensor[[64, 64], pl.FP32]]:
            x, y = self.k(a, x, y)
            return x, y

    k, main = P.functions["k"], P.functions["main"]
    assert k.returns == (T64, T64) and main.returns == (T64, T64)
    assign, ret = main.body
    assert isinstance(assign, Assign) and isinstance(assign.value, FuncCall)
    assert assign.value.type == TupleType((T64, T64))
    assert [t.type for t in assign.targets] == [T64, T64]
    assert ret.values == assign.targets


def test_scalar_argument_dtype_is_checked():
    # PyPTO passes integer/BOOL Scalars of another dtype by C conversion (funcalls._coerced);
    # a float for an integer parameter stays an error.
    with pytest.raises(ParserTypeError, match="Scalar\\[INT32\\], but got Scalar\\[FP32\\]"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, n: pl.Scalar[pl.INT32]):
                pass

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[64, 64], pl.FP32], s: pl.Scalar[pl.FP32]):
                for i in pl.range(4):
                    self.k(s)


def test_tile_namespace_keywords_and_fixed_spaces():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP16], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            m = pl.load(a, [0, 0], [16, 16], target_memory=pl.Mem.Mat)
            left = pl.move(m, target_memory=pl.Mem.Left)
            right = pl.move(m, target_memory=pl.Mem.Right)
            c: pl.Tile[[16, 16], pl.FP32, pl.Mem.Acc] = pl.matmul(left, right)
            z = pl.tile.full([16, 16], pl.FP32, 0.0)
            s = pl.tile.add(z, z)
            pl.store(c, [0, 0], out, atomic=pl.AtomicType.Add)

    body = P.functions["k"].body
    load, left, right, mm, full, add, store = body
    assert load.value.arg("target_memory") == "Mat"
    assert left.targets[0].type.space == "Left"
    assert mm.targets[0].type == TileType((16, 16), dtypes.FP32, "Acc")
    assert full.value.op == "tile.full" and full.value.arg("value") == 0.0
    assert add.value.op == "tile.add"
    assert store.expr.op == "tile.store" and store.expr.arg("atomic") == "Add"


def test_create_tile_annotation_retargets_and_static_checks(capsys):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
            pl.static_assert(16 % 8 == 0, "aligned")
            t: pl.Tile[[16, 16], pl.FP32, pl.Mem.Mat] = pl.create_tile([16, 16], pl.FP32)
            pl.static_print("rows", 16 * 2)

    (create,) = P.functions["k"].body
    assert create.value.op == "tile.create" and create.value.arg("target_memory") == "Mat"
    assert create.targets[0].type.space == "Mat"
    assert "static_print: rows 32" in capsys.readouterr().out

    with pytest.raises(ParserTypeError, match="static_assert failed: too big"):
        @pl.program
        class Q:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
                pl.static_assert(16 > 32, "too big")


def test_unknown_op_is_named():
    with pytest.raises(InvalidOperationError, match="frobnicate"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
                t = pl.frobnicate(a)
