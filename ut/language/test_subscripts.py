# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Subscript sugar as PyPTO parses it: which op a subscript becomes, its window
(shape, offsets, dropped axes, valid shape), and the errors, with message and line."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.types import TensorType, TileType


def calls_of(program, fn="k"):
    """name -> Call for every `name = <op call>` of the function's body."""
    out = {}
    for stmt in program.functions[fn].body:
        if isinstance(stmt, n.Assign) and isinstance(stmt.value, n.Call):
            out[stmt.targets[0].name] = stmt.value
    return out


def window_args(call):
    return {k: v for k, v in call.args if k in ("shape", "offset", "drop_dims", "valid_shape")}


def test_tile_subscripts_become_slices_and_reads():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2, 8, 16], pl.FP32]):
            t = pl.load(x, [0, 0, 0], [2, 8, 16])
            a = t[1]
            b = t[0, 2:6]
            c = t[:, :, 4:12]
            e = t[1, 2, 3]

    got = calls_of(K)
    assert got["a"].op == "tile.slice"
    assert window_args(got["a"]) == {"shape": (1, 8, 16), "offset": (1, 0, 0), "drop_dims": (0,),
                                     "valid_shape": None}
    assert got["a"].type.shape == (8, 16)
    assert got["b"].type.shape == (4, 16) and window_args(got["b"])["offset"] == (0, 2, 0)
    assert got["c"].type.shape == (2, 8, 8) and window_args(got["c"])["drop_dims"] is None
    assert got["e"].op == "tile.read" and got["e"].type.dtype is pl.FP32


def test_tile_subscript_valid_region_follows_the_source():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], m: pl.Scalar[pl.INDEX]):
            t = pl.load(x, [0, 0], [16, 16], valid_shapes=[10, 16])
            a = t[8:16, :]
            b = t[0:m, :]

    got = calls_of(K)
    assert got["a"].type == TileType((8, 16), pl.FP32, None, (2, 16))
    assert got["b"].type.shape == (16, 16)  # a dynamic upper bound narrows valid_shape only
    assert got["b"].type.valid == (None, 16)


def test_tensor_subscripts_become_tensor_slices_and_reads():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[8, 16], pl.FP32], i: pl.Scalar[pl.INDEX]):
            a = x[i:i + 2, :]
            b = x[3]
            e = x[1, 2]

    got = calls_of(K)
    assert got["a"].op == "tensor.slice" and got["a"].type == TensorType((2, 16), pl.FP32)
    assert got["b"].type == TensorType((16,), pl.FP32)
    assert got["e"].op == "tensor.read"


def test_subscript_writes_assemble_and_lift_dropped_axes():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[4, 16], pl.FP32], out: pl.Out[pl.Tensor[[2, 4, 16], pl.FP32]]):
            out[1] = x
            out[0, 0:2, :] = x[0:2, :]

    body = K.functions["k"].body
    assembles = [s.value for s in body if isinstance(s, n.Assign) and s.value.op == "tensor.assemble"]
    assert len(assembles) == 2
    first = dict(assembles[0].args)
    assert first["offset"] == (1, 0, 0)
    lifted = assembles[0].arg("source")  # x reshaped up over the dropped axis
    assert lifted.op == "tensor.reshape" and lifted.arg("shape") == (1, 4, 16)
    second = assembles[1]
    assert second.arg("offset") == (0, 0, 0) and second.arg("source").arg("shape") == (1, 2, 16)


def test_too_many_indices(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32]):
                a = x[1, 2, 3]  # too-many
    assert "Tensor subscript has 3 indices but the tensor is 2D" in ei.value.message
    assert ei.value.line == line_of("too-many")


def test_slice_step_is_rejected(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32]):
                t = pl.load(x, [0, 0], [8, 16])
                a = t[0:8:2, :]  # step
    assert "slices with a step are not supported in tile subscripts" in ei.value.message
    assert ei.value.line == line_of("step")


def test_dynamic_lower_bound_on_a_tile_is_rejected(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32], i: pl.Scalar[pl.INDEX]):
                t = pl.load(x, [0, 0], [8, 16])
                a = t[i:i + 2, :]  # dyn-lower
    assert "dynamic lower bounds are not supported in tile subscripts" in ei.value.message
    assert ei.value.line == line_of("dyn-lower")
    assert "pl.tile.slice" in ei.value.hint


def test_element_write_subscript_is_rejected_as_pypto_does(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32]):
                t = pl.load(x, [0, 0], [8, 16])
                t[1, 2] = 3.0  # elem-write
    assert "element-write 'dst[i, j] = value' is not supported for tile targets" in ei.value.message
    assert ei.value.line == line_of("elem-write")
    assert "pl.write(dst, [i, j], value)" in ei.value.hint


def test_subscript_write_source_kind_and_rank(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
                t = pl.load(x, [0, 0], [8, 16])
                out[0:8, :] = t  # kind
    assert "subscript-write source must also be a Tensor, but got Tile" in ei.value.message
    assert ei.value.line == line_of("kind")

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[2, 8, 16], pl.FP32]]):
                out[0, 0] = x  # rank
    assert "must be 1D to match the window, but it is 2D" in ei.value.message
    assert ei.value.line == line_of("rank")

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K3:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
                out[0:4, :] = x  # extent
    assert "shape mismatch on source axis 0: the window expects 4 elements, the source has 8" \
        in ei.value.message
    assert ei.value.line == line_of("extent")


def test_subscript_writes_are_rejected_under_strict_ssa(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore, strict_ssa=True)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]):
                out[0:8, :] = x  # strict
    assert ei.value.line == line_of("strict")


def test_view_op_errors_point_at_the_call(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32]):
                t = pl.load(x, [0, 0], [8, 16], valid_shapes=[3, 7])
                r = pl.reshape(t, [16, 8])  # reshape
    assert "cannot map valid region [3, 7] of shape [8, 16] onto shape [16, 8]" in ei.value.message
    assert ei.value.line == line_of("reshape")
    assert "fillpad" in ei.value.hint

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 16], pl.FP32]):
                t = pl.load(x, [0, 0], [8, 16])
                w = pl.slice(t, [4, 4], [0, 0], clamp=True)  # clamp
    assert "does not take clamp=True" in ei.value.message
    assert ei.value.line == line_of("clamp")
