# SPDX-License-Identifier: Apache-2.0
"""Ops that combine or re-present tiles (docs/design/language.md §21): concat, extract,
reinterpret_view.

* ``concat(src0, src1)``: TCONCAT, column-wise.  2-D, one dtype, equal rows; the
  result is ``[R, C0 + C1]`` and fully valid, as PyPTO types it.  The device packs
  each row as ``src0[r, :vc0]`` then ``src1[r, :vc1]``, so with ragged sources the
  rest of the row (and rows past the shorter valid height) is undefined: poisoned.
* ``tile.extract(src, index_row, index_col, shape, target_memory=)``: TEXTRACT, a
  dense copy of a window of a 2-D tile into another space (Mat -> Left/Right,
  Acc -> Mat, Vec -> Vec).  Valid only where the source is: the source's valid
  region shifted by the offsets and cut to the window.
* ``reinterpret_view(data, dtype, shape=None)``: the same bytes read as another
  dtype, zero-copy.  Without ``shape`` the last axis scales by the byte ratio (an
  FP32 ``[8, 16]`` is an INT16 ``[8, 32]``); with ``shape`` the byte count must
  match.  A zero pad survives (0 is all-zero bytes in every dtype); min/max do not.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.ops._rules import (
    OpBoundsError,
    dims,
    dtype_list,
    np,
    require_rank,
    require_same_dtype,
    space_name,
    static_shape,
    tile,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpSpaceError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import ScalarType, TileType
from pytest_pypto.ir.values import TileValue, new_buffer

EXTRACT_ROUTES = {"Mat": ("Left", "Right"), "Acc": ("Mat",), "Vec": ("Vec",)}
REINTERPRET_DTYPES = ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64",
                      "FP16", "FP32", "BF16")


# -------------------------------------------------------------------- concat


def _concat_type(info: CallInfo) -> TileType:
    a, b = tile(info, "src0"), tile(info, "src1")
    require_same_dtype(info, a.dtype, b.dtype, "src0 and src1")
    require_rank(info, a, "src0", exact=2)
    require_rank(info, b, "src1", exact=2)
    if a.shape[0] != b.shape[0]:
        raise OpTypeError(
            f"The operator {info.op} requires src0 and src1 with one row count, but got "
            f"{dims(a.shape)} and {dims(b.shape)}"
        )
    shape = (a.shape[0], a.shape[1] + b.shape[1])
    return TileType(shape, a.dtype, valid=shape)


def _concat_execute(src0: Any, src1: Any, *, out: Any = None, **_: Any) -> Any:
    rows = src0.shape[0]
    shape = (rows, src0.shape[1] + src1.shape[1])
    if src0.valid == src0.shape and src1.valid == src1.shape:
        data = np.concatenate([src0.data, src1.data], axis=1)
    else:
        data = new_buffer(shape, src0.dtype)
        (r0, c0), (r1, c1) = (tuple(int(v) for v in t.valid) for t in (src0, src1))
        data[:r0, :c0] = src0.data[:r0, :c0]
        data[:r1, c0:c0 + c1] = src1.data[:r1, :c1]
    return TileValue(data, shape, src0.dtype, (out.space if out else None) or "Vec")


register(OpSpec(
    name="tile.concat",
    reads_while_writing=True,
    params=(ParamSpec("src0", "tile"), ParamSpec("src1", "tile")),
    type_rule=_concat_type,
    mem=MemRule(operands={"src0": ("Vec",), "src1": ("Vec",)}, result="Vec"),
    execute=_concat_execute,
    spellings=("concat",),
    tier=2,
    doc="Column-wise concatenation of two 2-D tiles of one dtype and row count into "
        "[R, C0 + C1]; each row is src0's valid columns then src1's (ragged sources leave "
        "the rest undefined).",
))


# ------------------------------------------------------------------- extract


def _index_scalar(info: CallInfo, name: str) -> None:
    t = info.types.get(name)
    if not isinstance(t, ScalarType) or t.dtype.name not in ("INDEX", "INT64", "UINT64"):
        got = t.dtype.name if isinstance(t, ScalarType) else f"a {getattr(t, 'kind', 'nothing')}"
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be an INDEX/INT64 scalar, but got {got}",
            "pass an int literal or a loop index",
        )


def _window_valid(src_valid: Any, offsets: Any, shape: tuple[int, ...]) -> tuple[Any, ...]:
    """The source's valid region shifted by ``offsets`` and cut to the window (None where
    an offset is only known at run time)."""
    valid = []
    for v, o, s in zip(src_valid, offsets, shape):
        valid.append(None if v is None or o is None else max(0, min(s, v - o)))
    return tuple(valid)


def _extract_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    require_rank(info, src, "tile", exact=2)
    _index_scalar(info, "index_row")
    _index_scalar(info, "index_col")
    shape = static_shape(info, "shape", info.values.get("shape"))
    if len(shape) != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2-D shape, but got {dims(shape)}")
    for d, (s, n) in enumerate(zip(shape, src.shape)):
        if s > n:
            raise OpTypeError(
                f"The operator {info.op} requires the window inside the source, but got shape "
                f"{dims(shape)} for a source {dims(src.shape)} (dimension {d})",
                "TEXTRACT bounds are hard; shrink the shape",
            )
    target = space_name(info.values.get("target_memory")) or "Vec"
    if src.space is not None and target not in EXTRACT_ROUTES.get(src.space, ()):
        routes = ", ".join(f"{s} -> {dtype_list(t)}" for s, t in EXTRACT_ROUTES.items())
        raise OpSpaceError(
            f"The operator {info.op} cannot extract from {src.space} into {target}; TEXTRACT "
            f"routes are {routes}",
            "pl.move the tile first, or pick a target_memory of that route",
        )
    # Offsets are Scalars (bounds are checked when the window is read): a fully valid
    # source gives a fully valid window, a ragged one a run-time valid region.
    full = tuple(src.valid) == src.shape
    return TileType(shape, src.dtype, target, shape if full else (None, None))


def _extract_execute(src: Any, index_row: Any, index_col: Any, *, shape: Any,
                     target_memory: Any = None, out: Any = None, **_: Any) -> Any:
    shape = tuple(int(s) for s in shape)
    offsets = (int(index_row), int(index_col))
    for d, (o, s, n) in enumerate(zip(offsets, shape, src.shape)):
        if o < 0 or o + s > n:
            raise OpBoundsError(
                f"tile.extract reads outside the source tile in dimension {d}: offset {o} + "
                f"extent {s} > source extent {n}",
                "TEXTRACT bounds are hard; shrink the shape or move the offset",
            )
    valid = _window_valid(src.valid, offsets, shape)
    window = src.data[offsets[0]:offsets[0] + shape[0], offsets[1]:offsets[1] + shape[1]]
    if valid == shape:
        data = window.copy()
    else:
        data = new_buffer(shape, src.dtype)
        data[:valid[0], :valid[1]] = window[:valid[0], :valid[1]]
    space = (out.space if out else None) or space_name(target_memory) or "Vec"
    return TileValue(data, valid, src.dtype, space)


register(OpSpec(
    name="tile.extract",
    reads_while_writing=True,
    params=(
        ParamSpec("tile", "tile", aliases=("src",)),
        ParamSpec("index_row", "scalar"),
        ParamSpec("index_col", "scalar"),
        ParamSpec("shape", "shape"),
        ParamSpec("target_memory", "space", default=None, keyword_only=True),
    ),
    type_rule=_extract_type,
    mem=MemRule(operands={"tile": ("Vec", "Mat", "Acc")}, result="attr:target_memory"),
    execute=_extract_execute,
    spellings=("tile.extract",),
    tier=2,
    doc="A dense copy of the [shape] window at (index_row, index_col) of a 2-D tile into "
        "target_memory (Mat -> Left/Right, Acc -> Mat, Vec -> Vec); valid where the source "
        "is valid under the window.",
))


# ---------------------------------------------------------- reinterpret_view


def _scaled(extent: Any, num: int, den: int, info: CallInfo, what: str) -> Any:
    if extent is None:
        return None
    if (extent * num) % den:
        raise OpTypeError(
            f"The operator {info.op} cannot split {what} {extent} into whole elements of "
            f"{info.values['dtype'].name} ({den}:{num} bytes)",
            "pl.fillpad or pl.set_validshape to a multiple first",
        )
    return extent * num // den


def _reinterpret_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    dt = info.values.get("dtype")
    for name, d in (("source", src.dtype), ("target", dt)):
        if d is None or d.name not in REINTERPRET_DTYPES:
            raise OpTypeError(
                f"The operator {info.op} requires a {name} dtype of {dtype_list(REINTERPRET_DTYPES)}"
                f", but got {getattr(d, 'name', d)}"
            )
    if dt.name == src.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires a dtype other than the source's {dt.name}",
            "drop the reinterpret_view: the tile already has that dtype",
        )
    num, den = src.dtype.itemsize, dt.itemsize
    requested = info.values.get("shape")
    if requested is None:
        shape = src.shape[:-1] + (_scaled(src.shape[-1], num, den, info, "the last dim"),)
    else:
        shape = static_shape(info, "shape", requested)
        if math.prod(shape) * den != math.prod(src.shape) * num:
            raise OpTypeError(
                f"The operator {info.op} requires shape of the source's byte size "
                f"{math.prod(src.shape) * num}, but got {dims(shape)} of {dt.name} "
                f"({math.prod(shape) * den} bytes)"
            )
    if tuple(src.valid) == src.shape:
        valid: tuple[Any, ...] = shape
    elif shape[:-1] == src.shape[:-1]:
        valid = tuple(src.valid[:-1]) + (_scaled(src.valid[-1], num, den, info, "valid width"),)
    else:
        raise OpTypeError(
            f"The operator {info.op} cannot map the valid region {dims(src.valid)} of "
            f"{dims(src.shape)} onto {dims(shape)}",
            "pl.fillpad the tile first, or keep the leading dims",
        )
    return TileType(shape, dt, src.space, valid, "zero" if src.pad == "zero" else None)


def _reinterpret_execute(src: Any, *, dtype: Any, shape: Any = None, out: Any = None,
                         **_: Any) -> Any:
    data = src.data if src.data.flags.c_contiguous else np.ascontiguousarray(src.data)
    viewed = data.view(dtype.np)
    num, den = src.dtype.itemsize, dtype.itemsize
    if shape is None:
        shape = src.shape[:-1] + (src.shape[-1] * num // den,)
    viewed = viewed.reshape(tuple(int(s) for s in shape))
    if out is not None:
        valid = tuple(out.valid) if None not in out.valid else None
    else:
        valid = None
    if valid is None:
        valid = tuple(src.valid[:-1]) + (int(src.valid[-1]) * num // den,) \
            if viewed.shape[:-1] == src.shape[:-1] else viewed.shape
    pad = "zero" if src.pad == "zero" else None
    return TileValue(viewed, tuple(int(v) for v in valid), dtype, src.space, pad)


register(OpSpec(
    name="tile.reinterpret_view",
    params=(
        ParamSpec("tile", "tile", aliases=("data",)),
        ParamSpec("dtype", "dtype"),
        ParamSpec("shape", "shape", default=None, keyword_only=True),
    ),
    type_rule=_reinterpret_type,
    mem=MemRule(result="same:tile", view=True),
    execute=_reinterpret_execute,
    spellings=("reinterpret_view",),
    tier=2,
    doc="The tile's bytes read as another dtype, zero-copy: without shape the last axis "
        "scales by the byte ratio, with shape the byte count must match; the valid width "
        "scales the same way.",
))
