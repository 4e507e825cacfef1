"""Reductions (docs/design/language.md §21): row_* over the last axis, col_* over the rows.

row_sum/row_max/row_min/row_prod and col_max/col_min/col_prod accumulate wide
(float32, int64 for ints) over the valid region and round once; a tmp_tile is
scratch and never changes their result.

col_sum on floats follows the device's order instead, because PyPTO's goldens
encode it (its column-reduction system tests): TCOLSUM adds rows in the
tile dtype, rounding every addition, either one row after another (no tmp_tile)
or as a binary tree when a tmp_tile is passed (pairs (0,1), (2,3), ... halve the
row count each step; an odd last row is folded into row 0).  Integer col_sum
wraps, so its order does not matter.

row/col argmax/argmin return the INT32 index of the extremum; ties give the
lowest index (numpy's rule; PyPTO's goldens use distinct values only).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import place
from pytest_pypto.ir.dtypes import INT32
from pytest_pypto.ir.ops._rules import (
    NUMERIC_DTYPES,
    dims,
    np,
    optional_tile,
    require_dtype,
    require_rank,
    require_same_dtype,
    tile,
)
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import widen

ROW_MIN_DTYPES = ("INT16", "INT32", "FP16", "FP32")
ARG_DTYPES = ("FP16", "FP32")  # pto-isa TROWARGMAX/TCOLARGMAX: half or float sources
# How two partial results of a reduction cut along its axis combine (OpSpec.partial_combine).
PARTIAL_COMBINE = {"sum": "tile.add", "max": "tile.maximum", "min": "tile.minimum",
                   "prod": "tile.mul"}
VEC_IN_OUT = MemRule(operands={"tile": ("Vec",), "tmp_tile": ("Vec",)}, result="Vec")


# ---------------------------------------------------------------- type rules


def _check_tmp(info: CallInfo, src: TileType, *, exact: bool = False) -> None:
    tmp = optional_tile(info, "tmp_tile")
    if tmp is None:
        return
    require_same_dtype(info, src.dtype, tmp.dtype, "tmp_tile and the input")
    if tmp.rank != src.rank:
        raise OpTypeError(
            f"The operator {info.op} requires tmp_tile to have the input's rank {src.rank}, "
            f"but got rank {tmp.rank}"
        )
    hint = f"create tmp_tile as pl.create_tile({list(src.shape)}, pl.{src.dtype.name})"
    for d, (t, s) in enumerate(zip(tmp.shape, src.shape)):
        if exact and t != s:
            raise OpTypeError(
                f"The operator {info.op} requires tmp_tile of exactly the input's shape, but "
                f"got tmp_tile {dims(tmp.shape)} for input {dims(src.shape)} (dimension {d})",
                hint,
            )
        if t < s:
            raise OpTypeError(
                f"The operator {info.op} requires tmp_tile to be at least the input size in "
                f"every dimension, but got tmp_tile {dims(tmp.shape)} for input "
                f"{dims(src.shape)} (dimension {d})",
                hint,
            )


def _require_tmp(info: CallInfo, src: TileType) -> None:
    if info.types.get("tmp_tile") is None:
        raise OpTypeError(
            f"The operator {info.op} requires tmp_tile in its tile form",
            f"pass a scratch tile: pl.create_tile({list(src.shape)}, pl.{src.dtype.name})",
        )


def _dtypes_of(op: str) -> tuple[str, ...]:
    if op == "tile.row_min":
        return ROW_MIN_DTYPES
    if "arg" in op:
        return ARG_DTYPES
    return NUMERIC_DTYPES


def _result_dtype(op: str, src: TileType) -> Any:
    if "arg" in op:
        return INT32
    return src.dtype


def _row_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    require_rank(info, src, "tile", at_least=2)
    require_dtype(info, src.dtype, _dtypes_of(info.op))
    _require_tmp(info, src)
    _check_tmp(info, src, exact="arg" in info.op)
    return TileType(src.shape[:-1] + (1,), _result_dtype(info.op, src),
                    valid=tuple(src.valid[:-1]) + (1,))


def _col_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    require_rank(info, src, "tile", exact=2)
    require_dtype(info, src.dtype, _dtypes_of(info.op))
    if "arg" in info.op:
        _require_tmp(info, src)
    _check_tmp(info, src)
    return TileType((1, src.shape[1]), _result_dtype(info.op, src), valid=(1, src.valid[1]))


# ------------------------------------------------------------------ numerics


def _empty(tile: Any, axis: int, dtype: Any) -> Any:
    """Nothing valid to reduce: the device leaves the result undefined; we give zeros."""
    shape = list(tile.shape)
    shape[axis] = 1
    return np.zeros(shape, dtype=dtype)


def _reducer(kind: str, axis: int):
    def compute(tile: Any, tmp_tile: Any = None, **_: Any) -> Any:
        acc = np.float32 if tile.dtype.kind == "f" else np.int64
        if kind == "sum":  # (the ufunc's reduce is np.sum, without its Python wrapper)
            return np.add.reduce(tile, axis=axis, keepdims=True, dtype=acc)
        if kind == "prod":
            with np.errstate(over="ignore"):
                return np.prod(tile, axis=axis, keepdims=True, dtype=acc)
        if tile.shape[axis] == 0:
            return _empty(tile, axis, acc)
        if kind in ("argmax", "argmin"):
            fn = np.argmax if kind == "argmax" else np.argmin
            return np.expand_dims(fn(tile, axis=axis), axis).astype(np.int64)
        fn = np.maximum.reduce if kind == "max" else np.minimum.reduce  # np.max / np.min
        return fn(tile, axis=axis, keepdims=True)

    return compute


def device_col_sum(rows: Any, tree: bool) -> Any:
    """TCOLSUM over axis -2 of ``rows`` (in the tile's storage dtype), every addition
    rounded to that dtype: sequential without a tmp_tile, a binary tree with one."""
    n = rows.shape[-2]
    if n == 0:
        return _empty(rows, -2, rows.dtype)
    with np.errstate(over="ignore", invalid="ignore"):
        if not tree:
            acc = rows[..., 0:1, :].copy()
            for i in range(1, n):
                acc = acc + rows[..., i:i + 1, :]
            return acc
        buf = rows.copy()
        while n > 1:
            half = n // 2
            paired = buf[..., 0:2 * half:2, :] + buf[..., 1:2 * half:2, :]
            if n % 2:
                paired[..., 0:1, :] = paired[..., 0:1, :] + buf[..., n - 1:n, :]
            buf = paired
            n = half
        return buf[..., 0:1, :]


def _col_sum_execute(tile: Any, tmp_tile: Any = None, *, out: Any = None, **_: Any) -> Any:
    view = tile.valid_view()
    if tile.dtype.is_float:
        wide = device_col_sum(view, tree=tmp_tile is not None)
    else:
        wide = np.sum(widen(view, tile.dtype), axis=-2, keepdims=True, dtype=np.int64)
    if out is None:
        shape = tile.shape[:-2] + (1, tile.shape[-1])
        out = TileType(shape, tile.dtype, tile.space, pad=tile.pad)
    return place(wide, out, (tile,))


# -------------------------------------------------------------- registration

_DOC = {
    "sum": "Sum", "max": "Maximum", "min": "Minimum", "prod": "Product (fp32/int64 accumulate)",
    "argmax": "INT32 index of the maximum (ties: lowest index)",
    "argmin": "INT32 index of the minimum (ties: lowest index)",
}

for _kind in ("sum", "max", "min", "prod", "argmax", "argmin"):
    _arg = _kind.startswith("arg")
    register(OpSpec(
        name=f"tile.row_{_kind}",
        params=(ParamSpec("tile", "tile"), ParamSpec("tmp_tile", "tile")),
        type_rule=_row_type,
        mem=VEC_IN_OUT,
        compute=_reducer(_kind, -1),
        batchable=True,
        spellings=(f"row_{_kind}",),
        partial_combine=PARTIAL_COMBINE.get(_kind),
        reads_while_writing=True,
        tier=2 if _kind in ("prod", "argmax", "argmin") else 1,
        doc=f"{_DOC[_kind]} of each row over the valid columns into [..., R, 1]; the tile form "
            "requires a scratch tmp_tile of the input's dtype, "
            + ("exactly the input's shape" + (" (FP16/FP32 sources)." if _arg else ".")
               if _arg else "at least the input's size."),
    ))
    if _kind == "sum":
        register(OpSpec(
            name="tile.col_sum",
            wide_safe=True,
            params=(ParamSpec("tile", "tile"),
                    ParamSpec("tmp_tile", "tile", default=None, optional=True)),
            type_rule=_col_type,
            mem=VEC_IN_OUT,
            execute=_col_sum_execute,
            batchable=True,
            spellings=("col_sum",),
            partial_combine=PARTIAL_COMBINE["sum"],
            doc="Sum of each column over the valid rows into [1, C]. Floats add in the tile "
                "dtype with every addition rounded, in the device's order: row by row, or a "
                "binary tree when the optional tmp_tile is passed; ints wrap.",
        ))
        continue
    register(OpSpec(
        name=f"tile.col_{_kind}",
        params=(ParamSpec("tile", "tile"),) + ((ParamSpec("tmp_tile", "tile"),) if _arg else ()),
        type_rule=_col_type,
        mem=VEC_IN_OUT,
        compute=_reducer(_kind, -2),  # axis 0 of the 2-D tile; -2 keeps a batch axis
        batchable=True,
        spellings=(f"col_{_kind}",),
        partial_combine=PARTIAL_COMBINE.get(_kind),
        reads_while_writing=_arg,
        tier=2 if _kind in ("prod", "argmax", "argmin") else 1,
        doc=f"{_DOC[_kind]} of each column over the valid rows into [1, C]"
            + ("; requires a tmp_tile of the input's dtype (FP16/FP32 sources)." if _arg else "."),
    ))
