# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""The canonical Axpy example of docs/design/language.md §3 parses to the expected IR shape."""

from __future__ import annotations

import inspect

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.nodes import Assign, Call, Const, For, FuncCall, Program, Return, Var, Yield
from pytest_pypto.ir.types import Direction, ScalarType, TensorType, TileType

M, N, TM = 128, 64, 32


@pl.program
class Axpy:
    @pl.function(type=pl.FunctionType.InCore)
    def axpy(self, x: pl.Tensor[[M, N], pl.FP16], y: pl.Tensor[[M, N], pl.FP32],
             alpha: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            xh: pl.Tile[[TM, N], pl.FP16] = pl.load(x, [r, 0], [TM, N])
            xf: pl.Tile[[TM, N], pl.FP32] = pl.cast(xh, pl.FP32)
            yt = pl.load(y, [r, 0], [TM, N])
            out = pl.store(pl.add(pl.mul(xf, alpha), yt), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP16], y: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.axpy(x, y, 0.5, out)
        return out


def test_program_object_and_source():
    assert isinstance(Axpy, Program)
    assert Axpy.name == "Axpy"
    assert list(Axpy.functions) == ["axpy", "main"]
    assert Axpy.file == inspect.getsourcefile(test_program_object_and_source)
    assert Axpy.source_lines[0].startswith("# SPDX")


def test_signatures_kinds_and_directions():
    axpy, main = Axpy.functions["axpy"], Axpy.functions["main"]
    assert (axpy.kind, main.kind) == ("InCore", "Orchestration")
    assert [(p.name, p.direction) for p in axpy.params] == [
        ("x", Direction.IN), ("y", Direction.IN), ("alpha", Direction.SCALAR),
        ("out", Direction.OUT),
    ]
    assert axpy.params[0].type == TensorType((128, 64), dtypes.FP16)
    assert axpy.params[2].type == ScalarType(dtypes.FP32)
    assert axpy.returns == (TensorType((128, 64), dtypes.FP32),)


def test_loop_carries_out_explicitly():
    body = Axpy.functions["axpy"].body
    loop, ret = body
    assert isinstance(loop, For) and isinstance(ret, Return)
    assert loop.kind == "range"
    assert [(c.value if isinstance(c, Const) else None) for c in (loop.start, loop.stop, loop.step)] == [0, 128, 32]
    assert loop.var.type == ScalarType(dtypes.INDEX)
    (carried, init), = loop.carried
    assert isinstance(init, Var) and init.name == "out"  # the Out parameter
    assert carried.type == TensorType((128, 64), dtypes.FP32)
    (result,) = loop.results
    assert ret.values == (result,)
    last = loop.body[-1]
    assert isinstance(last, Yield)
    store_assign = loop.body[-2]
    assert isinstance(store_assign, Assign) and last.values == store_assign.targets
    store = store_assign.value
    assert isinstance(store, Call) and store.op == "tile.store"
    assert store.arg("output_tensor") is carried  # the iteration variable, not the parameter


def test_types_of_each_assignment():
    loop = Axpy.functions["axpy"].body[0]
    assigns = [s for s in loop.body if isinstance(s, Assign)]
    ops = [a.value.op for a in assigns]
    assert ops == ["tile.load", "tile.cast", "tile.load", "tile.muls", "tile.add", "tile.store"]
    shapes = [(a.targets[0].type.shape, a.targets[0].type.dtype.name) for a in assigns]
    assert shapes == [((32, 64), "FP16"), ((32, 64), "FP32"), ((32, 64), "FP32"),
                      ((32, 64), "FP32"), ((32, 64), "FP32"), ((128, 64), "FP32")]
    load = assigns[0].value
    assert load.arg("offsets") == (loop.var, 0)
    assert load.arg("shapes") == (32, 64)
    assert load.arg("target_memory") is None  # retargetable: no space annotation
    assert isinstance(assigns[0].targets[0].type, TileType)
    assert assigns[1].value.arg("target_type") is dtypes.FP32
    assert assigns[0].annotation == TileType((32, 64), dtypes.FP16)
    # the scalar right operand selected the scalar form
    assert assigns[3].value.arg("rhs").name == "alpha"


def test_orchestration_call_binds_result():
    main = Axpy.functions["main"]
    assign, ret = main.body
    assert isinstance(assign.value, FuncCall) and assign.value.callee == "axpy"
    alpha = assign.value.args[2]
    assert isinstance(alpha, Const) and alpha.value == 0.5 and alpha.type == ScalarType(dtypes.FP32)
    assert assign.value.type == TensorType((128, 64), dtypes.FP32)
    assert ret.values == assign.targets
    assert assign.targets[0].name != "out"  # SSA: the rebinding is a new name


def test_spans_point_into_this_file():
    loop = Axpy.functions["axpy"].body[0]
    first = loop.body[0]
    assert first.span.file == Axpy.file
    text = Axpy.source_lines[first.span.line - 1]
    assert text.strip().startswith("xh: pl.Tile[[TM, N], pl.FP16]")
    assert text[first.span.col - 1:].startswith("xh:")
