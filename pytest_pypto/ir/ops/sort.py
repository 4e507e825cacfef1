# SPDX-License-Identifier: Apache-2.0
"""Sorting (docs/design/language.md §21): tile.sort32 and tile.mrgsort, PyPTO's TSORT32 / TMRGSORT.

Both work on (value, index) **pairs** stored interleaved in the value dtype: a pair of
an FP32 tile is [value, index bits as UINT32] (two FP32 words), of an FP16 tile
[value, index bits as UINT16].  So a sorted tile's last dim is twice the element count.

* ``sort32(src, idx)``: every 32-element block of each row of src (the valid part of a
  ragged last block) sorted **descending**, each value paired with its idx entry.
* ``mrgsort(src, block_len=L)`` (format 1): the row holds sorted runs of L words (L/2
  pairs, L a positive multiple of 64); every 4 consecutive runs merge into one sorted run
  of 4L words (sort32 then L = 64, 256, 1024 ... sorts a whole row).
* ``mrgsort(src0, src1[, src2[, src3]], tmp=t, exhausted=False)`` (format 2): 2-4 sorted
  pair lists merge into one, of tmp's shape.

Ties keep their input order (earlier block or list first); PyPTO's goldens use
distinct values, and docs/design/numerics.md §2 leaves tie order unspecified.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import convert_array
from pytest_pypto.ir.ops._indexing import OpIndexError
from pytest_pypto.ir.ops._rules import dims, np, require_dtype, require_same_dtype, tile
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TileType
from pytest_pypto.ir.values import TileValue, new_buffer

SORT_DTYPES = ("FP16", "FP32")
_IDX_BITS = {"FP32": "uint32", "FP16": "uint16"}  # index bits of a pair, by value dtype


def _pairs(values: Any, idx: Any, dtype: Any) -> Any:
    """Interleave values with index bits into the value dtype: [..., 2n]."""
    bits = np.dtype(_IDX_BITS[dtype.name])
    out = np.empty(values.shape[:-1] + (2 * values.shape[-1],), dtype=dtype.np)
    out[..., 0::2] = values
    out[..., 1::2] = np.asarray(idx).astype(np.int64).astype(bits).view(dtype.np)
    return out


def _sort_desc(values: Any, payload: Any) -> tuple[Any, Any]:
    """Stable descending sort of the last axis (NaN last), payload permuted alongside."""
    key = values.astype(np.float32)
    order = np.argsort(-key, axis=-1, kind="stable")
    return np.take_along_axis(values, order, -1), np.take_along_axis(payload, order, -1)


# --------------------------------------------------------------------- sort32


def _sort32_type(info: CallInfo) -> TileType:
    src, idx = tile(info, "src"), tile(info, "idx")
    require_dtype(info, src.dtype, SORT_DTYPES, "src dtype")
    if not idx.dtype.is_int:
        raise OpTypeError(f"The operator {info.op} requires an integer idx tile, but got "
                          f"{idx.dtype.name}", "load the indices as pl.UINT32")
    if tuple(idx.shape) != tuple(src.shape):
        raise OpTypeError(f"The operator {info.op} requires idx of src's shape "
                          f"{dims(src.shape)}, but got {dims(idx.shape)}")
    vc = src.valid[-1]
    return TileType(src.shape[:-1] + (2 * src.shape[-1],), src.dtype,
                    valid=tuple(src.valid[:-1]) + (None if vc is None else 2 * vc,))


def _sort32_execute(src, idx, *, out=None, **_):
    region = tuple(slice(0, int(v)) for v in src.valid)
    values, ids = src.data[region], idx.data[region].astype(np.int64)
    n = values.shape[-1]
    sorted_v, sorted_i = values.copy(), ids.copy()
    for start in range(0, n, 32):
        block = slice(start, min(start + 32, n))
        sorted_v[..., block], sorted_i[..., block] = _sort_desc(values[..., block],
                                                                ids[..., block])
    pairs = _pairs(sorted_v, sorted_i, src.dtype)
    shape = src.shape[:-1] + (2 * src.shape[-1],)
    data = new_buffer(shape, src.dtype)
    data[tuple(slice(0, k) for k in pairs.shape)] = pairs
    return TileValue(data, pairs.shape, src.dtype, "Vec")


register(OpSpec(
    name="tile.sort32",
    reads_while_writing=True,
    params=(ParamSpec("src", "tile"), ParamSpec("idx", "tile")),
    type_rule=_sort32_type,
    mem=MemRule(operands={"src": ("Vec",), "idx": ("Vec",)}, result="Vec"),
    execute=_sort32_execute,
    spellings=("sort32",),
    tier=2,
    doc="Sort each 32-element block of every row descending, pairing each value with its idx "
        "entry: the result interleaves [value, index bits] in src's dtype (FP16/FP32), last dim "
        "doubled; idx itself is not modified.",
))


# -------------------------------------------------------------------- mrgsort


def _unpair(words: Any, dtype: Any) -> tuple[Any, Any]:
    values = words[..., 0::2]
    ids = np.ascontiguousarray(words[..., 1::2]).view(np.dtype(_IDX_BITS[dtype.name]))
    return values, ids.astype(np.int64)


def _mrgsort_type(info: CallInfo) -> TileType:
    src0 = tile(info, "src0")
    require_dtype(info, src0.dtype, SORT_DTYPES, "src dtype")
    others = [n for n in ("src1", "src2", "src3") if info.types.get(n) is not None]
    block = info.types.get("block_len")
    if block is not None:
        if others or info.types.get("tmp") is not None:
            raise OpTypeError(
                f"The operator {info.op} format1 (block_len=...) and format2 (src1, ..., tmp) "
                "are mutually exclusive",
                "pass block_len alone, or src1..src3 with tmp=",
            )
        if not isinstance(block, ScalarType) or not block.dtype.is_int:
            raise OpTypeError(f"The operator {info.op} requires block_len to be an integer")
        return TileType(src0.shape, src0.dtype, valid=src0.valid)
    if not others:
        raise OpTypeError(
            f"The operator {info.op} requires either block_len=<int> for format1, or at least "
            "(src0, src1, tmp=<tile>) for format2"
        )
    if "src3" in others and "src2" not in others:
        raise OpTypeError(f"The operator {info.op} takes src3 only after src2")
    for name in others:
        require_same_dtype(info, src0.dtype, tile(info, name).dtype, f"src0 and {name}")
    tmp = info.types.get("tmp")
    if tmp is None:
        raise OpTypeError(
            f"The operator {info.op} format2 requires tmp",
            "use pl.tile.mrgsort(src0, src1[, src2[, src3]], tmp=<tile>)",
        )
    tmp = tile(info, "tmp")
    return TileType(tmp.shape, src0.dtype)


def _merge(lists: list[tuple[Any, Any]]) -> tuple[Any, Any]:
    """Stable descending merge of sorted (values, ids) lists along the last axis."""
    values = np.concatenate([v for v, _ in lists], axis=-1)
    ids = np.concatenate([i for _, i in lists], axis=-1)
    return _sort_desc(values, ids)


def _mrgsort_execute(src0, src1=None, src2=None, src3=None, tmp=None, exhausted=False, *,
                     block_len=None, out=None, **_):
    dtype = src0.dtype
    if block_len is not None:
        run = int(block_len)
        if run <= 0 or run % 64:
            raise OpIndexError(f"tile.mrgsort: block_len {run} is not a positive multiple of 64")
        words = src0.valid_view()
        merged = words.copy()
        n = words.shape[-1]
        for start in range(0, n, 4 * run):
            group = words[..., start:min(start + 4 * run, n)]
            runs = [_unpair(group[..., i:i + run], dtype) for i in range(0, group.shape[-1], run)]
            v, i = _merge(runs)
            merged[..., start:start + group.shape[-1]] = _pairs(v, i, dtype)
        data = new_buffer(src0.shape, dtype)
        data[tuple(slice(0, k) for k in merged.shape)] = merged
        return TileValue(data, merged.shape, dtype, "Vec")
    srcs = [t for t in (src0, src1, src2, src3) if t is not None]
    rows = min(int(t.valid[0]) for t in srcs)
    v, i = _merge([_unpair(t.valid_view()[:rows], dtype) for t in srcs])
    words = convert_array(_pairs(v, i, dtype), dtype)
    shape = tuple(out.shape) if out is not None else tmp.shape
    if words.shape[-1] > shape[-1]:
        words = words[..., : shape[-1]]
    data = new_buffer(shape, dtype)
    data[:rows, : words.shape[-1]] = words
    return TileValue(data, (rows, words.shape[-1]), dtype, "Vec")


register(OpSpec(
    name="tile.mrgsort",
    reads_while_writing=True,
    params=(
        ParamSpec("src0", "tile"),
        ParamSpec("src1", "tile", default=None, optional=True),
        ParamSpec("src2", "tile", default=None, optional=True),
        ParamSpec("src3", "tile", default=None, optional=True),
        ParamSpec("tmp", "tile", default=None, optional=True),
        ParamSpec("exhausted", "bool", default=False),
        ParamSpec("block_len", "scalar", default=None, optional=True, keyword_only=True),
    ),
    type_rule=_mrgsort_type,
    mem=MemRule(operands={n: ("Vec",) for n in ("src0", "src1", "src2", "src3", "tmp")},
                result="Vec"),
    execute=_mrgsort_execute,
    spellings=("mrgsort",),
    tier=2,
    doc="Merge sorted (value, index) pair runs descending. Format 1 mrgsort(src, block_len=L): "
        "every 4 consecutive runs of L words (L a positive multiple of 64, may be a Scalar) "
        "merge into one of 4L. Format 2 mrgsort(src0, src1[, src2[, src3]], tmp=t): 2-4 sorted "
        "lists merge into one of tmp's shape; exhausted is accepted.",
))
