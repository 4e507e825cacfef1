"""Reductions: row_sum/row_max/row_min over the last axis, col_sum/col_max/col_min over
rows (DSL.md §4.1).  They accumulate in float32 (int64 for ints) over the valid
region and round once; a tmp_tile is scratch and never changes the result."""

from __future__ import annotations

from typing import Any

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

ROW_MIN_DTYPES = ("INT16", "INT32", "FP16", "FP32")


def _check_tmp(info: CallInfo, src: TileType) -> None:
    tmp = optional_tile(info, "tmp_tile")
    if tmp is None:
        return
    require_same_dtype(info, src.dtype, tmp.dtype, "tmp_tile and the input")
    if tmp.rank != src.rank:
        raise OpTypeError(
            f"The operator {info.op} requires tmp_tile to have the input's rank {src.rank}, "
            f"but got rank {tmp.rank}"
        )
    for d, (t, s) in enumerate(zip(tmp.shape, src.shape)):
        if t < s:
            raise OpTypeError(
                f"The operator {info.op} requires tmp_tile to be at least the input size in "
                f"every dimension, but got tmp_tile {dims(tmp.shape)} for input "
                f"{dims(src.shape)} (dimension {d})",
                f"create tmp_tile as pl.create_tile({list(src.shape)}, pl.{src.dtype.name})",
            )


def _row_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    require_rank(info, src, "tile", at_least=2)
    if info.op == "tile.row_min":
        require_dtype(info, src.dtype, ROW_MIN_DTYPES)
    else:
        require_dtype(info, src.dtype, NUMERIC_DTYPES)
    if info.types.get("tmp_tile") is None:
        raise OpTypeError(
            f"The operator {info.op} requires tmp_tile in its tile form",
            f"pass a scratch tile: pl.create_tile({list(src.shape)}, pl.{src.dtype.name})",
        )
    _check_tmp(info, src)
    return TileType(src.shape[:-1] + (1,), src.dtype, valid=tuple(src.valid[:-1]) + (1,))


def _col_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    require_rank(info, src, "tile", exact=2)
    require_dtype(info, src.dtype, NUMERIC_DTYPES)
    _check_tmp(info, src)
    return TileType((1, src.shape[1]), src.dtype, valid=(1, src.valid[1]))


def _reducer(kind: str, axis: int):
    def compute(tile: Any, tmp_tile: Any = None, **_: Any) -> Any:
        acc = np.float32 if tile.dtype.kind == "f" else np.int64
        if kind == "sum":
            return np.sum(tile, axis=axis, keepdims=True, dtype=acc)
        if tile.shape[axis] == 0:  # nothing valid to reduce: the result is undefined
            shape = list(tile.shape)
            shape[axis] = 1
            return np.zeros(shape, dtype=acc)
        fn = np.max if kind == "max" else np.min
        return fn(tile, axis=axis, keepdims=True)

    return compute


_DOC = {"sum": "Sum", "max": "Maximum", "min": "Minimum"}

for _kind in ("sum", "max", "min"):
    register(OpSpec(
        name=f"tile.row_{_kind}",
        params=(ParamSpec("tile", "tile"), ParamSpec("tmp_tile", "tile")),
        type_rule=_row_type,
        mem=MemRule(operands={"tile": ("Vec",), "tmp_tile": ("Vec",)}, result="Vec"),
        compute=_reducer(_kind, -1),
        batchable=True,
        spellings=(f"row_{_kind}",),
        doc=f"{_DOC[_kind]} of each row over the valid columns into [..., R, 1]; the tile form "
            "requires a scratch tmp_tile at least the input's size, same dtype.",
    ))
    register(OpSpec(
        name=f"tile.col_{_kind}",
        params=(ParamSpec("tile", "tile"),)
        + ((ParamSpec("tmp_tile", "tile", default=None, optional=True),) if _kind == "sum" else ()),
        type_rule=_col_type,
        mem=MemRule(operands={"tile": ("Vec",), "tmp_tile": ("Vec",)}, result="Vec"),
        compute=_reducer(_kind, -2),  # axis 0 of the 2-D tile; -2 keeps a batch axis
        batchable=True,
        spellings=(f"col_{_kind}",),
        doc=f"{_DOC[_kind]} of each column over the valid rows into [1, C]"
            + ("; tmp_tile is optional scratch." if _kind == "sum" else "."),
    ))
