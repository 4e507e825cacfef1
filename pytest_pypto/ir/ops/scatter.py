# SPDX-License-Identifier: Apache-2.0
"""Scatter ops (docs/design/language.md §21): tile.scatter, tile.scatter_mask, tile.scatter_update,
tile.mscatter, and tensor.scatter_update (tile.scatter_update on whole tensors).

* ``scatter(dst, src, indexes)``: ``dst.flat[indexes[i, j]] = src[i, j]`` over src's valid
  region, in row-major order (a repeated index: the last write wins), into dst in place.
  The flat index addresses dst's physical buffer (row stride = dst's physical columns).
* ``scatter_mask(dst, src, mask_pattern)``: row ``i`` of src goes to the mask-marked
  columns of dst row ``i`` (P0101 = even columns, ...); other columns keep dst.
* ``scatter_update(input, index, src, dim=-2)``: rows of input (2-D ``[rows, d]``, or 4-D
  ``[blocks, block_size, 1, d]`` flattened to rows) at ``index[b, s]`` take row ``b*S + s``
  of src.
* ``mscatter(src, idx, output_tensor)`` (a5 only): ``output_tensor.flat[idx[i, j]] =
  src[i, j]``, a scatter-store to DDR; returns the tensor (rebind it).

An index outside its destination is a `SimulationError` naming the index (docs/design/language.md
§21).
"""

from __future__ import annotations

from pytest_pypto.ir.apply import convert_array
from pytest_pypto.ir.ops._indexing import (
    MASK_PATTERNS,
    SCATTER_DTYPES,
    check_indices,
    require_mask_pattern,
    require_scatter_index,
)
from pytest_pypto.ir.ops._indexing import mask_pattern as as_int
from pytest_pypto.ir.ops._rules import (
    dims,
    lowered_by_compiler,
    np,
    require_dtype,
    require_rank,
    require_same_dtype,
    tensor,
    tile,
)
from pytest_pypto.ir.ops._whole_tensor import via_tile, whole
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TensorType, TileType

MSCATTER_DTYPES = ("FP16", "FP32", "INT16", "INT32")


# -------------------------------------------------------------------- scatter


def _scatter_type(info: CallInfo) -> TileType:
    dst, src, idx = tile(info, "dst"), tile(info, "src"), tile(info, "indexes")
    require_dtype(info, dst.dtype, SCATTER_DTYPES, "dst dtype")
    require_same_dtype(info, dst.dtype, src.dtype, "dst and src")
    require_dtype(info, idx.dtype, ("INT16", "INT32"), "indexes dtype")
    require_rank(info, src, "src", exact=2)
    require_rank(info, dst, "dst", exact=2)
    require_rank(info, idx, "indexes", exact=2)
    require_scatter_index(info, dst.dtype, idx.dtype, "dst", "indexes")
    if tuple(idx.shape) != tuple(src.shape):
        raise OpTypeError(
            f"The operator {info.op} requires indexes of src's shape {dims(src.shape)}, but got "
            f"{dims(idx.shape)}"
        )
    return dst.with_(space=None)


def _scatter_execute(dst, src, indexes, *, out=None, **_):
    vr, vc = (int(v) for v in src.valid)
    idx = check_indices("tile.scatter", indexes.data[:vr, :vc], dst.data.size,
                        f"dst of {dst.data.size} elements {list(dst.shape)}")
    flat = dst.data.reshape(-1)
    flat[idx.reshape(-1)] = convert_array(src.data[:vr, :vc], dst.dtype).reshape(-1)
    return dst


register(OpSpec(
    name="tile.scatter",
    params=(ParamSpec("dst", "tile"), ParamSpec("src", "tile"), ParamSpec("indexes", "tile")),
    type_rule=_scatter_type,
    mem=MemRule(operands={"dst": ("Vec",), "src": ("Vec",), "indexes": ("Vec",)},
                result="same:dst"),
    execute=_scatter_execute,
    spellings=("tile.scatter",),
    tier=2,
    doc="dst.flat[indexes[i, j]] = src[i, j] in place over src's valid region (row-major, "
        "last write wins); indexes has src's shape, INT32 for 4-byte dst and INT16 for 2- and "
        "1-byte dst. An index outside dst is a SimulationError.",
))


# --------------------------------------------------------------- scatter_mask


def _scatter_mask_type(info: CallInfo) -> TileType:
    dst, src = tile(info, "dst"), tile(info, "src")
    require_dtype(info, dst.dtype, SCATTER_DTYPES, "dst dtype")
    require_same_dtype(info, dst.dtype, src.dtype, "dst and src")
    require_rank(info, src, "src", exact=2)
    require_rank(info, dst, "dst", exact=2)
    pattern = require_mask_pattern(info)
    _, stride = MASK_PATTERNS[pattern]
    if src.shape[0] != dst.shape[0]:
        raise OpTypeError(
            f"The operator {info.op} requires src.shape[0] == dst.shape[0], got src rows "
            f"{src.shape[0]} vs dst rows {dst.shape[0]}"
        )
    if dst.shape[1] != src.shape[1] * stride:
        raise OpTypeError(
            f"The operator {info.op} with mask_pattern={pattern} requires dst.shape[1] "
            f"({dst.shape[1]}) == src.shape[1] ({src.shape[1]}) * {stride}"
        )
    return dst.with_(space=None)


def _scatter_mask_execute(dst, src, *, mask_pattern, out=None, **_):
    start, stride = MASK_PATTERNS[as_int(mask_pattern)]
    vr, vc = (int(v) for v in src.valid)
    cols = start + stride * vc
    dst.data[:vr, start:cols:stride] = convert_array(src.data[:vr, :vc], dst.dtype)
    return dst


register(OpSpec(
    name="tile.scatter_mask",
    params=(ParamSpec("dst", "tile"), ParamSpec("src", "tile"), ParamSpec("mask_pattern", "literal")),
    type_rule=_scatter_mask_type,
    mem=MemRule(operands={"dst": ("Vec",), "src": ("Vec",)}, result="same:dst"),
    execute=_scatter_mask_execute,
    spellings=("tile.scatter_mask",),
    tier=2,
    doc="Write each src row into the mask-marked columns of the dst row in place "
        "(mask_pattern 1..7: P0101 even, P1010 odd, P0001/P0010/P0100/P1000 every 4th from "
        "0/1/2/3, P1111 all); dst.shape[1] = src.shape[1] * stride; unmarked columns keep dst.",
))


# -------------------------------------------------------------- scatter_update


def _scatter_update_type(info: CallInfo) -> TileType:
    inp, idx, src = tile(info, "input"), tile(info, "index"), tile(info, "src")
    if inp.rank not in (2, 4):
        raise OpTypeError(f"The operator {info.op} requires input to be 2D or 4D, but got rank "
                          f"{inp.rank}")
    require_rank(info, idx, "index", exact=2)
    if not idx.dtype.is_int:
        raise OpTypeError(f"The operator {info.op} requires an integer index dtype, but got "
                          f"{idx.dtype.name}")
    if src.rank != inp.rank:
        raise OpTypeError(f"The operator {info.op} requires src rank ({src.rank}) to match "
                          f"input rank ({inp.rank})")
    require_same_dtype(info, inp.dtype, src.dtype, "input and src")
    if info.values.get("dim", -2) != -2:
        raise OpTypeError(f"The operator {info.op} supports only dim=-2, but got "
                          f"{info.values.get('dim')!r}")
    if src.shape[-1] != inp.shape[-1]:
        raise OpTypeError(
            f"The operator {info.op} requires src rows of input's width {inp.shape[-1]}, but got "
            f"{src.shape[-1]}"
        )
    rows = 1
    for d in src.shape[:-1]:
        rows *= d
    if rows < idx.shape[0] * idx.shape[1]:
        raise OpTypeError(
            f"The operator {info.op} requires src to hold one row per index ({idx.shape[0]} x "
            f"{idx.shape[1]}), but src {dims(src.shape)} has {rows} rows"
        )
    return inp.with_(space=None)


def _scatter_update_execute(input, index, src, *, dim=-2, out=None, **_):
    width = input.data.shape[-1]
    rows = input.data.reshape(-1, width)
    b, s = (int(v) for v in index.valid)
    idx = check_indices("tile.scatter_update", index.data[:b, :s], rows.shape[0],
                        f"input of {rows.shape[0]} rows")
    values = src.data.reshape(-1, width)[: b * s]
    rows[idx.reshape(-1)] = convert_array(values, input.dtype)
    return input


register(OpSpec(
    name="tile.scatter_update",
    params=(ParamSpec("input", "tile"), ParamSpec("index", "tile"), ParamSpec("src", "tile"),
            ParamSpec("dim", "int", default=-2)),
    type_rule=_scatter_update_type,
    mem=MemRule(operands={"input": ("Vec",), "index": ("Vec",), "src": ("Vec",)},
                result="same:input"),
    execute=_scatter_update_execute,
    spellings=("tile.scatter_update", "scatter_update"),
    tier=2,
    doc="input row index[b, s] = src row b*S + s, in place (dim=-2 only): 2-D input [rows, d] "
        "with src [B*S, d], or 4-D [blocks, block_size, 1, d] flattened to rows with src "
        "[B, S, 1, d]. An index outside input's rows is a SimulationError.",
))


# -------------------------------------------------------------------- mscatter


def _mscatter_type(info: CallInfo) -> TensorType:
    src, idx = tile(info, "src"), tile(info, "idx")
    dst = tensor(info, "output_tensor")
    require_dtype(info, src.dtype, MSCATTER_DTYPES, "src dtype")
    require_dtype(info, idx.dtype, ("INT32",), "idx dtype")
    if idx.rank != src.rank or tuple(idx.shape) != tuple(src.shape):
        raise OpTypeError(
            f"The operator {info.op} requires idx of src's shape {dims(src.shape)}, but got "
            f"{dims(idx.shape)}"
        )
    if dst.rank < 1:
        raise OpTypeError(f"The operator {info.op} requires output_tensor of rank >= 1")
    if dst.dtype.name != src.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires output_tensor dtype ({dst.dtype.name}) to match src "
            f"dtype ({src.dtype.name})",
            f"pl.cast the tile to pl.{dst.dtype.name} first",
        )
    return dst


def _mscatter_execute(src, idx, dst, *, out=None, **_):
    region = tuple(slice(0, int(v)) for v in src.valid)
    flat_idx = check_indices("tile.mscatter", idx.data[region], dst.size,
                             f"output_tensor of {dst.size} elements {list(dst.shape)}")
    values = convert_array(src.data[region], src.dtype).reshape(-1)
    if dst.flags.c_contiguous:
        dst.reshape(-1)[flat_idx.reshape(-1)] = values
    else:
        dst[np.unravel_index(flat_idx.reshape(-1), dst.shape)] = values
    return dst


register(OpSpec(
    name="tile.mscatter",
    params=(ParamSpec("src", "tile"), ParamSpec("idx", "tile"), ParamSpec("output_tensor", "tensor")),
    type_rule=_mscatter_type,
    mem=MemRule(operands={"src": ("Vec",), "idx": ("Vec",)}, result=None),
    execute=_mscatter_execute,
    spellings=("mscatter",),
    writes="output_tensor",
    tier=2,
    doc="Scatter-store: output_tensor.flat[idx[i, j]] = src[i, j] over src's valid region "
        "(FP16/FP32/INT16/INT32, INT32 idx of src's shape); returns the tensor (rebind it). "
        "An index outside the tensor is a SimulationError. a5 only.",
))


# ------------------------------------------------------------- scatter_update


def _scatter_update_type(info: CallInfo) -> TensorType:
    types = {n: whole(info, n) for n in ("input", "index", "src")}
    via_tile("tile.scatter_update", info, types)
    return tensor(info, "input")


register(OpSpec(
    name="tensor.scatter_update",
    lowering_hook=True,
    params=(ParamSpec("input", "tensor"), ParamSpec("index", "tensor"),
            ParamSpec("src", "tensor"), ParamSpec("dim", "int", default=-2)),
    type_rule=_scatter_update_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("scatter_update", "tensor.scatter_update"),
    tier=2,
    doc="tile.scatter_update on whole tensors: a copy of input whose row index[b, s] is src "
        "row b*S + s (2-D input [rows, d] with src [B*S, d], or 4-D [blocks, block_size, 1, "
        "d] with src [B, S, 1, d]; dim=-2 only). PyPTO's call shapes (input, dim, index, "
        "src) and (input, dim, index=, src=) are accepted. An index outside input's rows is "
        "a SimulationError.",
))
