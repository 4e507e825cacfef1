# SPDX-License-Identifier: Apache-2.0
"""Gathers by compare and through a page table (docs/design/language.md §21): tile.gather_compare
(also the compare form of tensor.gather) and tensor.paged_gather.

* ``tile.gather_compare(src, kvalue, tmp, *, cmp_mode="eq", offset=0, out_cols,
  count_dtype=None)`` returns the pair ``(dst, cdst)`` (tuple-unpacked in kernels):
  per row ``r`` of src's valid region, the columns ``j`` (ascending) where
  ``src[r, j] <cmp_mode> kvalue`` holds; ``dst[r, k] = offset + j_k`` for the first
  ``out_cols`` of them (INT32; later positions stay undefined) and ``cdst[0, r]`` is the
  row's match count (``count_dtype``, INT32 or UINT32).  ``tmp`` is UINT8 scratch.
  The tensor form is ``pl.tensor.gather(input, kvalue=, cmp_mode=, out_cols=)``
  (`tensor_index.py` routes its compare form here).
* ``tensor.paged_gather(src, indices, block_table, block_size, size, max_indices, *,
  space=Mat, col_off=0, is_trans=False, is_b_matrix=False)``: row ``i`` of the result is
  ``src[phys_i, col_off : col_off + size]`` with ``phys_i = block_table[idx // block_size]
  * block_size + idx % block_size``; the result is ``[max_indices, size]`` (``[size,
  max_indices]`` with is_trans), rows past the indices undefined.  PyPTO places it
  on-chip; the simulator keeps it as a kernel-local tensor (the lowering checks that it
  fits the space) that pl.matmul / pl.load read.
An index outside its source is a `SimulationError` naming the index (docs/design/language.md §21).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import convert_array, dtype_of
from pytest_pypto.ir.dtypes import INT32
from pytest_pypto.ir.ops._indexing import OpIndexError, check_indices
from pytest_pypto.ir.ops._rules import (
    dims,
    np,
    require_dtype,
    require_rank,
    scalar,
    space_name,
    tensor,
    tile,
)
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TensorType, TileType, TupleType
from pytest_pypto.ir.values import TileValue, new_buffer

COMPARE_DTYPES = ("FP16", "FP32", "INT16", "INT32")
COUNT_DTYPES = ("INT32", "UINT32")
CMP_MODES = ("eq", "ne", "lt", "le", "gt", "ge")
PAGED_DTYPES = ("FP16", "BF16", "FP32", "INT8")
PAGED_SPACES = ("Mat", "Vec")


def cmp_mode_index(op: str, value: Any) -> int:
    """PyPTO's cmp_mode: a name in CMP_MODES or its index 0..5."""
    value = getattr(value, "value", value)
    if isinstance(value, str) and value in CMP_MODES:
        return CMP_MODES.index(value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(CMP_MODES):
        return value
    raise OpTypeError(
        f"The operator {op} requires cmp_mode in {list(CMP_MODES)} or an int 0..5, but got "
        f"{value!r}"
    )


# -------------------------------------------------------------- gather_compare


def compare_results(info: CallInfo, src: Any, rows: int, valid_rows: Any) -> tuple[Any, Any]:
    """(dst, cdst) shapes/dtypes of the compare gather of a [rows, C] src (checks the rule)."""
    require_dtype(info, src.dtype, COMPARE_DTYPES, "src dtype")
    kv = scalar(info, "kvalue")
    same = kv.dtype.name == src.dtype.name or (
        kv.dtype.name == "INDEX" and src.dtype.is_int)
    if not same:
        raise OpTypeError(
            f"The operator {info.op} requires kvalue dtype to match src dtype "
            f"({src.dtype.name}), but got {kv.dtype.name}",
            f"pl.cast the threshold to pl.{src.dtype.name}",
        )
    cmp_mode_index(info.op, info.values.get("cmp_mode", "eq"))
    out_cols = info.values.get("out_cols")
    if not isinstance(out_cols, int) or isinstance(out_cols, bool) or out_cols <= 0:
        raise OpTypeError(f"The operator {info.op} requires out_cols to be a positive int, "
                          f"but got {out_cols!r}")
    offset = info.values.get("offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        raise OpTypeError(f"The operator {info.op} requires offset to be a non-negative int, "
                          f"but got {offset!r}")
    count = info.values.get("count_dtype") or INT32
    require_dtype(info, count, COUNT_DTYPES, "count_dtype")
    return ((rows, out_cols), (valid_rows, None)), ((1, rows), (1, valid_rows), count)


def _gather_compare_type(info: CallInfo) -> TupleType:
    src = tile(info, "src")
    require_rank(info, src, "src", exact=2)
    tmp = tile(info, "tmp")
    require_dtype(info, tmp.dtype, ("UINT8",), "tmp dtype",
                  hint="create the workspace with pl.tile.create([...], pl.UINT8)")
    (shape, valid), (cshape, cvalid, count) = compare_results(info, src, src.shape[0],
                                                              src.valid[0])
    return TupleType((TileType(shape, INT32, "Vec", valid),
                      TileType(cshape, count, "Vec", cvalid)))


def compare_tensor_type(info: CallInfo, src: TileType) -> TupleType:
    """tensor.gather's compare form: (dst [rows, out_cols] INT32, cdst [1, rows])."""
    missing = [n for n in ("kvalue", "cmp_mode", "out_cols")
               if info.types.get(n) is None and info.values.get(n) is None]
    if missing:
        raise OpTypeError(f"The operator {info.op} compare form requires kvalue, cmp_mode and "
                          f"out_cols (missing {', '.join(missing)})")
    if src.rank != 2:
        raise OpTypeError(f"The operator {info.op} compare form requires 2D input, but got "
                          f"rank {src.rank}")
    (shape, _), (cshape, _, count) = compare_results(info, src, src.shape[0], src.shape[0])
    return TupleType((TensorType(shape, INT32), TensorType(cshape, count)))


def compare_rows(src: Any, kvalue: Any, cmp_mode: Any, offset: int, out_cols: int) -> Any:
    """Per row: the matching column indices (+ offset, first out_cols) and the match count."""
    ops = (np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal)
    hit = ops[cmp_mode_index("tile.gather_compare", cmp_mode)](src, kvalue)
    picked, counts = [], []
    for row in hit:
        cols = np.flatnonzero(row)
        counts.append(cols.size)
        picked.append(cols[:out_cols] + offset)
    return picked, np.asarray(counts, dtype=np.int64)


def _gather_compare_execute(src, kvalue, tmp=None, *, cmp_mode="eq", offset=0, out_cols,
                            count_dtype=None, out=None, **_):
    vr, vc = (int(v) for v in src.valid)
    picked, counts = compare_rows(src.data[:vr, :vc], kvalue, cmp_mode, int(offset),
                                  int(out_cols))
    rows = src.shape[0]
    dst = new_buffer((rows, int(out_cols)), INT32)
    for r, cols in enumerate(picked):
        dst[r, : cols.size] = cols
    count = count_dtype or INT32
    cdst = new_buffer((1, rows), count)
    cdst[0, :vr] = convert_array(counts, count)
    return (TileValue(dst, (vr, int(out_cols)), INT32, "Vec"),
            TileValue(cdst, (1, vr), count, "Vec"))


register(OpSpec(
    name="tile.gather_compare",
    reads_while_writing=True,
    params=(
        ParamSpec("src", "tile"),
        ParamSpec("kvalue", "scalar"),
        ParamSpec("tmp", "tile"),
        ParamSpec("cmp_mode", "literal", default="eq", keyword_only=True),
        ParamSpec("offset", "int", default=0, keyword_only=True),
        ParamSpec("out_cols", "int", keyword_only=True),
        ParamSpec("count_dtype", "dtype", default=None, keyword_only=True),
    ),
    type_rule=_gather_compare_type,
    mem=MemRule(operands={"src": ("Vec",), "tmp": ("Vec",)}, result="Vec"),
    execute=_gather_compare_execute,
    spellings=("tile.gather_compare",),
    tier=2,
    doc="Compare-form gather returning (dst, cdst): per row of src (FP16/FP32/INT16/INT32), "
        "the ascending columns j where src[r, j] <cmp_mode> kvalue (eq/ne/lt/le/gt/ge or "
        "0..5); dst [rows, out_cols] INT32 holds offset + j for the first out_cols matches "
        "(later positions undefined), cdst [1, rows] (count_dtype INT32/UINT32) the match "
        "count. kvalue has src's dtype; tmp is UINT8 scratch.",
))


# ---------------------------------------------------------------- paged_gather


def paged_shape(info: CallInfo) -> tuple[tuple[int, int], str]:
    """The result shape and space of a paged gather (checks the rule)."""
    src, idx, table = (tensor(info, n) for n in ("src", "indices", "block_table"))
    require_dtype(info, src.dtype, PAGED_DTYPES, "src dtype")
    if src.rank != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2D src pool, but got rank "
                          f"{src.rank}")
    for name, t in (("indices", idx), ("block_table", table)):
        require_dtype(info, t.dtype, ("INT32",), f"{name} dtype")
    if not (idx.rank == 1 or (idx.rank == 2 and idx.shape[0] == 1)):
        raise OpTypeError(f"The operator {info.op} requires indices of shape [n] or [1, n], "
                          f"but got {dims(idx.shape)}")
    ints = {}
    for name in ("block_size", "size", "max_indices"):
        v = info.values.get(name)
        if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
            raise OpTypeError(f"The operator {info.op} requires {name} to be a positive int, "
                              f"but got {v!r}")
        ints[name] = v
    col_off = info.values.get("col_off", 0)
    if not isinstance(col_off, int) or isinstance(col_off, bool) or col_off < 0:
        raise OpTypeError(f"The operator {info.op} requires col_off to be a non-negative int, "
                          f"but got {col_off!r}")
    cols = src.shape[1]
    if isinstance(cols, int) and col_off + ints["size"] > cols:
        raise OpTypeError(
            f"The operator {info.op} reads columns {col_off}..{col_off + ints['size'] - 1}, "
            f"past src's {cols} columns (col_off {col_off} + size {ints['size']})"
        )
    n_idx = idx.shape[-1]
    if isinstance(n_idx, int) and n_idx > ints["max_indices"]:
        raise OpTypeError(
            f"The operator {info.op} gathers {n_idx} indices, more than max_indices "
            f"{ints['max_indices']}", "raise max_indices to the number of indices",
        )
    space = space_name(info.values.get("space")) or "Mat"
    if space not in PAGED_SPACES:
        raise OpTypeError(f"The operator {info.op} requires space Mat or Vec, but got {space}")
    trans = bool(info.values.get("is_trans"))
    if trans and space != "Mat":
        raise OpTypeError(f"The operator {info.op} transposes (is_trans=True) only into Mat, "
                          f"but space is {space}")
    shape = (ints["max_indices"], ints["size"])
    return (shape[::-1] if trans else shape), space


def _paged_gather_type(info: CallInfo) -> TensorType:
    shape, _ = paged_shape(info)
    return TensorType(shape, tensor(info, "src").dtype)


def _paged_gather_execute(src, indices, block_table, *, block_size, size, max_indices,
                          space=None, col_off=0, is_trans=False, is_b_matrix=False,
                          out=None, **_):
    op = "tensor.paged_gather"
    logical = np.asarray(indices).reshape(-1).astype(np.int64)
    table = np.asarray(block_table).reshape(-1).astype(np.int64)
    blocks = check_indices(op, logical // block_size, table.size,
                           f"block_table of {table.size} entries (index // block_size "
                           f"{block_size})")
    phys = table[blocks] * block_size + logical % block_size
    bad = (phys < 0) | (phys >= src.shape[0])
    if bad.any():
        i = int(np.argwhere(bad)[0][0])
        raise OpIndexError(
            f"{op}: index {int(logical[i])} at position [{i}] maps through block_table"
            f"[{int(blocks[i])}] = {int(table[blocks[i]])} to physical row {int(phys[i])}, "
            f"outside src of {src.shape[0]} rows",
            "check the block table's entries",
        )
    dt = dtype_of(src)
    data = new_buffer((int(max_indices), int(size)), dt)
    data[: phys.size] = src[phys, int(col_off): int(col_off) + int(size)]
    return np.ascontiguousarray(data.T) if is_trans else data


register(OpSpec(
    name="tensor.paged_gather",
    lowering_hook=True,
    params=(
        ParamSpec("src", "tensor"),
        ParamSpec("indices", "tensor"),
        ParamSpec("block_table", "tensor"),
        ParamSpec("block_size", "int"),
        ParamSpec("size", "int"),
        ParamSpec("max_indices", "int"),
        ParamSpec("space", "space", default="Mat", keyword_only=True),
        ParamSpec("col_off", "int", default=0, keyword_only=True),
        ParamSpec("is_trans", "bool", default=False, keyword_only=True),
        ParamSpec("is_b_matrix", "bool", default=False, keyword_only=True),
    ),
    type_rule=_paged_gather_type,
    mem=MemRule(),
    execute=_paged_gather_execute,
    spellings=("paged_gather", "tensor.paged_gather"),
    tier=2,
    doc="Paged gather into an on-chip buffer (space Mat, or Vec): result row i is "
        "src[phys, col_off : col_off + size] with phys = block_table[idx // block_size] * "
        "block_size + idx % block_size for the i-th of indices ([n] or [1, n] INT32); the "
        "result is [max_indices, size] ([size, max_indices] with is_trans, Mat only), rows "
        "past n undefined; it feeds pl.matmul or pl.load. An index or block-table entry "
        "outside its table is a SimulationError.",
))
