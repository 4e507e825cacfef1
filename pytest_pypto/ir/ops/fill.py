# SPDX-License-Identifier: Apache-2.0
"""Fill and generator ops (docs/design/language.md §15, §21): fillpad, fillpad_inplace,
fillpad_expand, tri, ci/arange.

fillpad* write the pad value everywhere outside the source's valid region and make
the result fully valid; pad values are `pl.PadValue.zero/min/max` or the literals
``0``, ``-math.inf``, ``math.inf`` (zero -> 0; min/max -> -inf/+inf for floats,
iinfo min/max for ints).  The result type carries the pad, as PyPTO's does, so a
later narrower view still reads the pad there.

tri and ci generate tiles from nothing: tri writes 1 inside the triangle and 0
outside it over its valid region (the rest of the buffer is undefined); ci writes
``start + k`` (or ``start - k``) along the single row of a ``[1, ..., N]`` tile,
wrapping to the dtype.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.apply import convert_array
from pytest_pypto.ir.dtypes import INT32
from pytest_pypto.ir.ops._rules import dims, dtype_list, np, static_shape, tile
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import ScalarType, TileType
from pytest_pypto.ir.values import TileValue, new_buffer
from pytest_pypto.ir.values import pad_value as value_of

PAD_NAMES = ("zero", "min", "max")
TRI_DTYPES = ("INT8", "UINT8", "INT16", "INT32", "UINT16", "UINT32", "FP16", "BF16", "FP32")
CI_DTYPES = ("INT16", "INT32", "UINT16", "UINT32")
_INT_SCALARS = ("INDEX", "INT64", "INT32", "INT16", "INT8", "UINT8", "UINT16", "UINT32", "UINT64")
VEC1 = MemRule(operands={"tile": ("Vec",)}, result="Vec")


def pad_name(op: str, value: Any) -> str:
    """The pad mode of a pad_value argument: a PadValue name, or 0 / -inf / +inf."""
    if isinstance(value, str) and value in PAD_NAMES:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value == 0:
            return "zero"
        if math.isinf(value):
            return "max" if value > 0 else "min"
    shown = "pl.PadValue.null" if value == "null" else repr(value)
    raise OpTypeError(
        f"The operator {op} requires pad_value pl.PadValue.zero, pl.PadValue.min or "
        f"pl.PadValue.max (or 0, -math.inf, math.inf), but got {shown}",
        "the hardware only fills with zero, the dtype's minimum or its maximum",
    )


# ----------------------------------------------------------------- fillpad*


def _fillpad_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    pad = pad_name(info.op, info.values.get("pad_value", "zero"))
    return TileType(src.shape, src.dtype, valid=src.shape, pad=pad)


def _fillpad_expand_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    shape = static_shape(info, "shape", info.values.get("shape"))
    if len(shape) != src.rank:
        raise OpTypeError(
            f"The operator {info.op} requires shape of the source's rank {src.rank}, but got "
            f"{dims(shape)} for a source {dims(src.shape)}"
        )
    for d, (new, old) in enumerate(zip(shape, src.shape)):
        if new < old:
            raise OpTypeError(
                f"The operator {info.op} requires every dimension of shape to be at least the "
                f"source's, but got shape {dims(shape)} for a source {dims(src.shape)} "
                f"(dimension {d})",
                "fillpad_expand only grows a tile; use pl.slice to shrink one",
            )
    pad = pad_name(info.op, info.values.get("pad_value", "zero"))
    return TileType(shape, src.dtype, valid=shape, pad=pad)


def _padded_copy(src: Any, shape: tuple[int, ...], pad: str) -> Any:
    """A fresh buffer of ``shape``: the source's valid region, the pad everywhere else.
    A fully valid source of the same shape (a task-batched fillpad of full blocks) is a
    plain copy, without the fill the copy would overwrite: half the time.  (Filling only
    the complement of a partial region measured slower than this fill and copy.)"""
    valid = tuple(int(v) for v in src.valid)
    region = tuple(slice(0, v) for v in valid)
    if valid == tuple(shape) and src.data.dtype == src.dtype.np:  # (not a precise run's
        return src.data[region].copy()  # FP32 storage of a narrower tile: rounded below)
    data = new_buffer(shape, src.dtype, pad)
    data[region] = src.data[region]
    return data


def _fillpad_execute(src: Any, *, pad_value: Any = "zero", out: Any = None, **_: Any) -> Any:
    pad = pad_name("tile.fillpad", pad_value)
    data = _padded_copy(src, src.shape, pad)
    return TileValue(data, data.shape, src.dtype, (out.space if out else None) or src.space, pad)


def _fillpad_inplace_execute(src: Any, *, pad_value: Any = "zero", out: Any = None,
                             **_: Any) -> Any:
    pad = pad_name("tile.fillpad_inplace", pad_value)
    mask = np.ones(src.data.shape, dtype=bool)
    mask[tuple(slice(0, int(v)) for v in src.valid)] = False
    src.data[mask] = value_of(src.dtype, pad)
    return TileValue(src.data, src.shape, src.dtype, src.space, pad)


def _fillpad_expand_execute(src: Any, *, shape: Any, pad_value: Any = "zero", out: Any = None,
                            **_: Any) -> Any:
    pad = pad_name("tile.fillpad_expand", pad_value)
    data = _padded_copy(src, tuple(int(s) for s in shape), pad)
    return TileValue(data, data.shape, src.dtype, (out.space if out else None) or src.space, pad)


_PAD_PARAM = ParamSpec("pad_value", "enum", default="zero")

register(OpSpec(
    name="tile.fillpad",
    task_batchable=True,
    params=(ParamSpec("tile", "tile", aliases=("value",)), _PAD_PARAM),
    type_rule=_fillpad_type,
    mem=VEC1,
    execute=_fillpad_execute,
    spellings=("fillpad",),
    doc="A copy of the tile, fully valid, with every element outside the source's valid "
        "region set to the pad value (zero, or the dtype's min/max: -inf/+inf for floats).",
))
register(OpSpec(
    name="tile.fillpad_inplace",
    wide_safe=True,
    params=(ParamSpec("tile", "tile"), _PAD_PARAM),
    type_rule=_fillpad_type,
    mem=MemRule(operands={"tile": ("Vec",)}, result="same:tile"),
    execute=_fillpad_inplace_execute,
    spellings=("tile.fillpad_inplace",),
    tier=2,
    doc="fillpad in the input's own buffer: the elements outside the valid region are "
        "overwritten with the pad value and the result (sharing the buffer) is fully valid.",
))
register(OpSpec(
    name="tile.fillpad_expand",
    reads_while_writing=True,
    params=(ParamSpec("tile", "tile", aliases=("value",)), ParamSpec("shape", "shape"),
            _PAD_PARAM),
    type_rule=_fillpad_expand_type,
    mem=VEC1,
    execute=_fillpad_expand_execute,
    spellings=("fillpad_expand",),
    tier=2,
    doc="A new, larger tile of `shape` (each dim >= the source's): the source's valid "
        "region at the top-left, every other element the pad value; fully valid.",
))


# ---------------------------------------------------------------- tri / ci


def _int_scalar(info: CallInfo, name: str) -> ScalarType:
    t = info.types.get(name)
    if not isinstance(t, ScalarType) or t.dtype.name not in _INT_SCALARS:
        got = t.dtype.name if isinstance(t, ScalarType) else f"a {getattr(t, 'kind', 'nothing')}"
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be an integer scalar, but got {got}",
            "pass an int literal or an INT32 Scalar",
        )
    return t


def _dtype(info: CallInfo, allowed: tuple[str, ...]) -> Any:
    dt = info.values.get("dtype")
    if dt is None or dt.name not in allowed:
        raise OpTypeError(
            f"The operator {info.op} requires dtype {dtype_list(allowed)}, but got "
            f"{getattr(dt, 'name', dt)}"
        )
    return dt


def _tri_type(info: CallInfo) -> TileType:
    dt = _dtype(info, TRI_DTYPES)
    _int_scalar(info, "diagonal")
    shape = static_shape(info, "shape", info.values.get("shape"))
    if len(shape) != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2-D shape, but got {dims(shape)}")
    valid = info.values.get("valid_shape")
    if valid is None:
        return TileType(shape, dt)
    valid = tuple(valid)
    if len(valid) != 2 or any(not 0 < v <= s for v, s in zip(valid, shape)):
        raise OpTypeError(
            f"The operator {info.op} requires 0 < valid_shape <= shape in both dimensions, but "
            f"got valid_shape {dims(valid)} for shape {dims(shape)}"
        )
    return TileType(shape, dt, valid=valid)


def _tri_arch(arch: Any, info: CallInfo) -> None:
    dt = info.values.get("dtype")
    if dt is not None and dt.name in arch.tri_rejected_dtypes:
        allowed = [d for d in TRI_DTYPES if d not in arch.tri_rejected_dtypes]
        raise OpArchError(
            f"The operator {info.op} does not support dtype {dt.name} on the '{arch.name}' "
            "backend",
            f"use {dtype_list(allowed)}, or target a5",
        )


def _tri_execute(diagonal: Any, *, shape: Any, valid_shape: Any = None, dtype: Any = None,
                 upper: bool = False, out: Any = None, **_: Any) -> Any:
    dtype = out.dtype if out is not None else dtype
    shape = tuple(int(s) for s in shape)
    vr, vc = (int(v) for v in (valid_shape or shape))
    i = np.arange(vr)[:, None]
    j = np.arange(vc)[None, :]
    d = int(diagonal)
    ones = (j >= i + d) if upper else (j <= i + d)
    data = new_buffer(shape, dtype)
    data[:vr, :vc] = ones.astype(dtype.np)
    return TileValue(data, (vr, vc), dtype, (out.space if out else None) or "Vec")


register(OpSpec(
    name="tile.tri",
    params=(
        ParamSpec("diagonal", "scalar"),
        ParamSpec("shape", "shape"),
        ParamSpec("valid_shape", "shape", default=None),
        ParamSpec("dtype", "dtype", default=INT32),
        ParamSpec("upper", "bool", default=False),
    ),
    type_rule=_tri_type,
    mem=MemRule(result="Vec"),
    arch_rule=_tri_arch,
    execute=_tri_execute,
    spellings=("tri",),
    tier=2,
    doc="A triangular mask: 1 where j <= i + diagonal (upper=True: j >= i + diagonal), 0 "
        "elsewhere, over valid_shape (default shape); INT32 unless dtype is given.",
))


def _ci_type(info: CallInfo) -> TileType:
    dt = _dtype(info, CI_DTYPES)
    start = _int_scalar(info, "start")
    if start.dtype.name not in ("INDEX", dt.name):
        raise OpTypeError(
            f"The operator {info.op} requires 'start' of the destination dtype {dt.name}, but "
            f"got a {start.dtype.name} scalar",
            f"pl.cast the start Scalar to pl.{dt.name}, or pass an int literal",
        )
    shape = static_shape(info, "shape", info.values.get("shape"))
    if shape[-1] == 1:
        raise OpTypeError(
            f"The operator {info.op} requires the innermost dimension to be != 1, but got "
            f"shape {dims(shape)}",
            "generate a row: shape [1, N]",
        )
    if any(d != 1 for d in shape[:-1]):
        raise OpTypeError(
            f"The operator {info.op} fills only the first row, so its leading dimensions must "
            f"be 1, but got shape {dims(shape)}",
            f"generate [1, {shape[-1]}] and broadcast it with pl.col_expand",
        )
    return TileType(shape, dt)


def _ci_execute(start: Any, *, shape: Any, dtype: Any = None, descending: bool = False,
                out: Any = None, **_: Any) -> Any:
    dtype = out.dtype if out is not None else dtype
    shape = tuple(int(s) for s in shape)
    k = np.arange(shape[-1], dtype=np.int64)
    row = int(start) - k if descending else int(start) + k
    data = convert_array(row, dtype).reshape(shape)  # ints wrap to the width
    return TileValue(np.ascontiguousarray(data), shape, dtype,
                     (out.space if out else None) or "Vec")


register(OpSpec(
    name="tile.ci",
    params=(
        ParamSpec("start", "scalar"),
        ParamSpec("shape", "shape"),
        ParamSpec("dtype", "dtype", default=INT32),
        ParamSpec("descending", "bool", default=False),
    ),
    type_rule=_ci_type,
    mem=MemRule(result="Vec"),
    execute=_ci_execute,
    spellings=("tile.ci", "tile.arange"),
    tier=2,
    doc="An integer sequence along the single row of a [1, ..., N] tile: start + k, or "
        "start - k when descending; INT16/INT32/UINT16/UINT32 (INT32 by default), wrapping.",
))
