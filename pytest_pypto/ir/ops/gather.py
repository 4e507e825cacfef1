# SPDX-License-Identifier: Apache-2.0
"""Gather ops (docs/design/language.md §21): tile.gather, gather_mask, gatherb, gather_row and
mgather.

* ``gather(src, indices, tmp)``: ``dst[i, j] = src.flat[indices[i, j]]`` (flat over src's
  physical buffer, as the device's TGATHER index form); the result has the indices'
  shape and valid region, src's dtype.  ``tmp`` is scratch and never changes values.
* ``gather_mask(src, mask_pattern, output_dtype=)``: the mask-marked columns of each row
  compacted to the left (P0101 = columns 0, 2, 4 ...); ``output_dtype`` reinterprets the
  bits (same width), it does not convert.
* ``gatherb(src, offset, output_dtype=)``: each UINT32 **byte** offset selects one 32-byte
  block of src's buffer; an offset column becomes ``32 / sizeof(output_dtype)`` elements.
* ``gather_row(dst, src, dst_offset, src_offset, shapes, transpose=False, valid_shape=)``:
  a DDR window copied straight into a region of dst, in place (``transpose`` places the
  window [r, c] as [c, r]).
* ``mgather(mem, idx, coalesce="row", gather_oob=, target_memory=, scratch=, valid_shape=)``:
  rows (``row``) or flat elements (``elem``) of a DDR tensor into a fresh tile: a Vec tile
  from an index tile, or a Mat tile from a GM index tensor (``valid_shape`` its written
  region; ``scratch``, elem mode only, is the device's staging buffer).

An index outside its source is a `SimulationError` naming the index, except where
``gather_oob`` says to clamp, wrap or zero it.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import convert_array, place
from pytest_pypto.ir.ops._indexing import (
    GATHER_DTYPES,
    MASK_PATTERNS,
    OpIndexError,
    check_indices,
    require_gather_index,
    require_mask_pattern,
)
from pytest_pypto.ir.ops._indexing import mask_pattern as as_int
from pytest_pypto.ir.ops._rules import (
    dims,
    np,
    require_dtype,
    require_rank,
    space_name,
    static_shape,
    tensor,
    tile,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TensorType, TileType
from pytest_pypto.ir.values import TileValue, new_buffer

GATHERB_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "BF16", "FP32")
MGATHER_DTYPES = GATHERB_DTYPES + ("FP8E4M3FN", "FP8E5M2")
MGATHER_FP8 = ("FP8E4M3FN", "FP8E5M2", "HF8")
COALESCE = {"row": 0, "elem": 1}
GATHER_OOB = {"undefined": 0, "clamp": 1, "wrap": 2, "zero": 3}


def _choice(info: CallInfo, name: str, table: dict[str, int]) -> int:
    value = info.values.get(name)
    value = getattr(value, "value", value)
    if isinstance(value, str) and value in table:
        return table[value]
    if isinstance(value, int) and not isinstance(value, bool) and value in table.values():
        return value
    names = ", ".join(f"{k!r} ({v})" for k, v in table.items())
    raise OpTypeError(f"The operator {info.op} requires {name} in {{{names}}}, but got {value!r}")


def _output_dtype(info: CallInfo, default: Any) -> Any:
    dt = info.values.get("output_dtype")
    return default if dt is None else dt


# --------------------------------------------------------------------- gather


def _gather_type(info: CallInfo) -> TileType:
    src, idx = tile(info, "src"), tile(info, "indices")
    tile(info, "tmp")
    require_dtype(info, src.dtype, GATHER_DTYPES, "src dtype")
    require_gather_index(info, src.dtype, idx.dtype, "src", "indices")
    return TileType(idx.shape, src.dtype, valid=idx.valid)


def _gather_arch(arch: Any, info: CallInfo) -> None:
    idx = tile(info, "indices")
    if idx.dtype.name == "INT16" and not arch.gather_int16_indices:
        raise OpArchError(
            f"The operator {info.op} does not support INT16 indices on the '{arch.name}' "
            "backend (an a5 index form)",
            "pl.cast the indices to pl.INT32, or target a5",
        )


def _gather_execute(src, indices, tmp=None, *, out=None, **_):
    view = indices.valid_view()
    idx = check_indices("tile.gather", view, src.data.size,
                        f"src of {src.data.size} elements {list(src.shape)}")
    values = src.data.reshape(-1)[idx]
    result = out if out is not None else TileType(indices.shape, src.dtype, "Vec")
    return place(values, result)


register(OpSpec(
    name="tile.gather",
    reads_while_writing=True,
    params=(ParamSpec("src", "tile"), ParamSpec("indices", "tile"), ParamSpec("tmp", "tile")),
    type_rule=_gather_type,
    mem=MemRule(operands={"src": ("Vec",), "indices": ("Vec",), "tmp": ("Vec",)}, result="Vec"),
    arch_rule=_gather_arch,
    execute=_gather_execute,
    spellings=("tile.gather",),
    tier=2,
    doc="Index-form gather: dst[i, j] = src.flat[indices[i, j]] (flat over src's physical "
        "buffer); result has the indices' shape and valid region and src's dtype (FP16/FP32/"
        "INT16/INT32). INT32 indices, or INT16 with a 16-bit src on a5; tmp is scratch. An "
        "index outside src is a SimulationError.",
))


# ---------------------------------------------------------------- gather_mask


def _gather_mask_type(info: CallInfo) -> TileType:
    src = tile(info, "src")
    require_dtype(info, src.dtype, GATHER_DTYPES, "src dtype")
    require_rank(info, src, "src", exact=2)
    pattern = require_mask_pattern(info)
    start, stride = MASK_PATTERNS[pattern]
    if src.shape[1] % stride:
        raise OpTypeError(
            f"The operator {info.op} with mask_pattern={pattern} requires src columns divisible "
            f"by {stride}, got {src.shape[1]}"
        )
    out = _output_dtype(info, src.dtype)
    if out.bits != src.dtype.bits:
        raise OpTypeError(
            f"The operator {info.op} output_dtype must have the same bit width as src dtype "
            f"({src.dtype.name} = {src.dtype.bits} bits), but got {out.name} = {out.bits} bits"
        )
    vc = src.valid[1]
    valid_c = None if vc is None else max(0, (vc - start + stride - 1) // stride)
    return TileType((src.shape[0], src.shape[1] // stride), out, valid=(src.valid[0], valid_c))


def _gather_mask_execute(src, *, mask_pattern, output_dtype=None, out=None, **_):
    start, stride = MASK_PATTERNS[as_int(mask_pattern)]
    vr, vc = (int(v) for v in src.valid)
    picked = src.data[:vr, start:vc:stride]
    dtype = out.dtype if out is not None else (output_dtype or src.dtype)
    shape = (src.shape[0], src.shape[1] // stride)
    data = new_buffer(shape, dtype)
    data[:vr, : picked.shape[1]] = picked.view(dtype.np)
    return TileValue(data, (vr, picked.shape[1]), dtype, "Vec")


register(OpSpec(
    name="tile.gather_mask",
    reads_while_writing=True,
    params=(ParamSpec("src", "tile"), ParamSpec("mask_pattern", "literal"),
            ParamSpec("output_dtype", "dtype", default=None, keyword_only=True)),
    type_rule=_gather_mask_type,
    mem=MemRule(operands={"src": ("Vec",)}, result="Vec"),
    execute=_gather_mask_execute,
    spellings=("tile.gather_mask",),
    tier=2,
    doc="Mask-form gather: the mask-marked columns of each row (mask_pattern 1..7: P0101 "
        "even, P1010 odd, P0001/P0010/P0100/P1000 every 4th from 0/1/2/3, P1111 all) "
        "compacted into [R, C / stride]; output_dtype reinterprets the bits (same width).",
))


# -------------------------------------------------------------------- gatherb

_BLOCK = 32  # bytes per gatherb block


def _gatherb_type(info: CallInfo) -> TileType:
    src, off = tile(info, "src"), tile(info, "offset")
    require_dtype(info, src.dtype, GATHERB_DTYPES, "src dtype")
    out = _output_dtype(info, src.dtype)
    require_dtype(info, out, GATHERB_DTYPES, "output_dtype")
    require_dtype(info, off.dtype, ("UINT32",), "offset dtype",
                  hint="offsets are UINT32 byte offsets: pl.cast them to pl.UINT32")
    require_rank(info, src, "src", exact=2)
    require_rank(info, off, "offset", exact=2)
    if off.shape[1] % 8:
        raise OpTypeError(
            f"The operator {info.op} requires offset columns to be a positive multiple of 8 "
            f"(32-byte UINT32 row), but got {off.shape[1]}"
        )
    per = _BLOCK // out.itemsize
    vc = off.valid[1]
    return TileType((off.shape[0], off.shape[1] * per), out,
                    valid=(off.valid[0], None if vc is None else vc * per))


def _gatherb_execute(src, offset, *, output_dtype=None, out=None, **_):
    dtype = out.dtype if out is not None else (output_dtype or src.dtype)
    raw = np.ascontiguousarray(src.data).reshape(-1).view(np.uint8)
    vr, vc = (int(v) for v in offset.valid)
    offs = offset.data[:vr, :vc].astype(np.int64)
    bad = (offs < 0) | (offs + _BLOCK > raw.size)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        raise OpIndexError(
            f"tile.gatherb: byte offset {int(offs[pos])} at position {list(pos)} reads past src "
            f"of {raw.size} bytes (a block is {_BLOCK} bytes: offsets 0..{raw.size - _BLOCK})",
            "offsets are byte offsets of whole 32-byte blocks",
        )
    blocks = raw[offs[..., None] + np.arange(_BLOCK)]  # (vr, vc, 32) bytes
    per = _BLOCK // dtype.itemsize
    values = np.ascontiguousarray(blocks).view(dtype.np).reshape(vr, vc * per)
    shape = (offset.shape[0], offset.shape[1] * per)
    data = new_buffer(shape, dtype)
    data[:vr, : vc * per] = values
    return TileValue(data, (vr, vc * per), dtype, "Vec")


register(OpSpec(
    name="tile.gatherb",
    reads_while_writing=True,
    params=(ParamSpec("src", "tile"), ParamSpec("offset", "tile"),
            ParamSpec("output_dtype", "dtype", default=None, keyword_only=True)),
    type_rule=_gatherb_type,
    mem=MemRule(operands={"src": ("Vec",), "offset": ("Vec",)}, result="Vec"),
    execute=_gatherb_execute,
    spellings=("tile.gatherb", "gatherb"),
    tier=2,
    doc="Block gather: each UINT32 byte offset selects one 32-byte block of src's buffer; an "
        "offset column expands to 32 / sizeof(output_dtype) elements (output_dtype defaults to "
        "src's, a byte reinterpretation). A block past src's end is a SimulationError.",
))


# ----------------------------------------------------------------- gather_row


def _gather_row_type(info: CallInfo) -> TileType:
    dst = tile(info, "dst")
    src = tensor(info, "src")
    require_rank(info, dst, "dst", exact=2)
    if src.rank != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2D src tensor, but got rank "
                          f"{src.rank}")
    if dst.dtype.name != src.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires dst dtype ({dst.dtype.name}) to match src dtype "
            f"({src.dtype.name})"
        )
    shape = static_shape(info, "shapes", info.values.get("shapes"))
    for name in ("dst_offset", "src_offset"):
        items = info.values.get(name)
        if not isinstance(items, (tuple, list)) or len(items) != 2:
            raise OpTypeError(f"The operator {info.op} requires '{name}' to be [row, col], but "
                              f"got {items!r}")
    if len(shape) != 2:
        raise OpTypeError(f"The operator {info.op} requires shapes [r, c], but got {dims(shape)}")
    transpose = bool(info.values.get("transpose"))
    if transpose and info.values.get("valid_shape") is not None:
        raise OpTypeError(f"The operator {info.op} does not support valid_shape together with "
                          "transpose=True")
    if transpose and dst.space not in (None, "Mat"):
        raise OpTypeError(f"The operator {info.op} places a transposed row only in Mat, but dst "
                          f"is in {dst.space}")
    placed = shape[::-1] if transpose else shape
    d_off = info.values.get("dst_offset")
    for d in range(2):
        if d_off[d] is not None and d_off[d] + placed[d] > dst.shape[d]:
            raise OpTypeError(
                f"The operator {info.op} writes past dst: dst_offset {dims(d_off)} + window "
                f"{dims(placed)} > dst {dims(dst.shape)} (dimension {d})"
            )
    return dst.with_(space=None)


def _gather_row_execute(dst, src, *, dst_offset, src_offset, shapes, transpose=False,
                        valid_shape=None, out=None, **_):
    r, c = (int(v) for v in (valid_shape if valid_shape is not None else shapes))
    sr, sc = (int(v) for v in src_offset)
    dr, dc = (int(v) for v in dst_offset)
    if sr < 0 or sc < 0 or sr + r > src.shape[0] or sc + c > src.shape[1]:
        raise OpIndexError(
            f"tile.gather_row: src_offset [{sr}, {sc}] + window [{r}, {c}] is outside src "
            f"{list(src.shape)}",
            "check the block-table lookup that computes src_offset",
        )
    window = convert_array(src[sr:sr + r, sc:sc + c], dst.dtype)
    if transpose:
        window, r, c = window.T, c, r
    if dr < 0 or dc < 0 or dr + r > dst.shape[0] or dc + c > dst.shape[1]:
        raise OpIndexError(
            f"tile.gather_row: dst_offset [{dr}, {dc}] + window [{r}, {c}] is outside dst "
            f"{list(dst.shape)}"
        )
    dst.data[dr:dr + r, dc:dc + c] = window
    return dst


register(OpSpec(
    name="tile.gather_row",
    params=(
        ParamSpec("dst", "tile"),
        ParamSpec("src", "tensor"),
        ParamSpec("dst_offset", "index_list"),
        ParamSpec("src_offset", "index_list"),
        ParamSpec("shapes", "shape"),
        ParamSpec("transpose", "bool", default=False),
        ParamSpec("valid_shape", "index_list", default=None, keyword_only=True),
    ),
    type_rule=_gather_row_type,
    mem=MemRule(operands={"dst": ("Mat", "Vec")}, result="same:dst"),
    execute=_gather_row_execute,
    spellings=("gather_row",),
    tier=2,
    doc="Copy the DDR window src[src_offset : +shapes] (only valid_shape of it, which may be "
        "dynamic) into dst at dst_offset, in place; transpose=True places the [r, c] window as "
        "[c, r] (Mat only). A window outside src is a SimulationError.",
))


# -------------------------------------------------------------------- mgather


def _mgather_type(info: CallInfo) -> TileType:
    mem = tensor(info, "mem")
    require_dtype(info, mem.dtype, MGATHER_DTYPES, "mem dtype")
    coalesce = _choice(info, "coalesce", COALESCE)
    _choice(info, "gather_oob", GATHER_OOB)
    target = space_name(info.values.get("target_memory")) or "Vec"
    if target not in ("Vec", "Mat"):
        raise OpTypeError(f"The operator {info.op} requires target_memory to be Vec or Mat, but "
                          f"got {target}")
    idx_t = info.types.get("idx")
    want = TileType if target == "Vec" else TensorType
    if not isinstance(idx_t, want):
        what = "an INT32 index tile" if target == "Vec" else "a GM INT32 index tensor"
        raise OpTypeError(
            f"The operator {info.op} with {target} output requires idx to be {what}, but got "
            f"{getattr(idx_t, 'kind', idx_t)}",
            "load the indices with pl.load for Vec output; pass the GM tensor itself with "
            "target_memory=pl.MemorySpace.Mat")
    if idx_t.dtype.name != "INT32":
        raise OpTypeError(f"The operator {info.op} requires idx dtype to be INT32, but got "
                          f"{idx_t.dtype.name}")
    if len(idx_t.shape) != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2D idx, but got rank "
                          f"{len(idx_t.shape)}")
    if (info.types.get("scratch") is not None) != (target == "Mat" and coalesce == 1):
        raise OpTypeError(f"The operator {info.op} takes scratch exactly in Mat elem mode")
    if target == "Mat":
        return _mgather_mat_type(info, mem, idx_t, coalesce)
    idx_valid = tuple(getattr(idx_t, "valid", None) or idx_t.shape)
    if coalesce == 1:
        shape, valid = tuple(idx_t.shape), idx_valid
    else:
        if mem.rank < 2:
            raise OpTypeError(f"The operator {info.op} row mode requires mem rank >= 2 so rows "
                              f"have an element dimension, but got rank {mem.rank}")
        a, b = idx_t.shape
        if 1 not in (a, b):
            raise OpTypeError(f"The operator {info.op} row mode requires a [1, R] or [R, 1] idx "
                              f"shape, but got {dims(idx_t.shape)}")
        rows = b if a == 1 else a
        vrows = idx_valid[1] if a == 1 else idx_valid[0]
        shape, valid = (rows, mem.shape[-1]), (vrows, mem.shape[-1])
    if info.values.get("valid_shape") is not None:
        raise OpTypeError(f"The operator {info.op} takes valid_shape only for Mat output; "
                          "Vec output derives it from idx")
    return TileType(shape, mem.dtype, target, valid)


def _static_count(info: CallInfo, shape: Any, what: str) -> int:
    if not all(isinstance(d, int) for d in shape):
        raise OpTypeError(f"The operator {info.op} Mat {what} shape must be static, but got "
                          f"{dims(shape)}")
    count = 1
    for d in shape:
        count *= d
    return count


def _mgather_mat_type(info: CallInfo, mem: Any, idx_t: Any, coalesce: int) -> TileType:
    """Mat output: the rows/elements land in L1 (the NZ layout is the device's; values are
    the same), shape from the GM index tensor, valid region from valid_shape."""
    if coalesce == 1:
        scratch = tensor(info, "scratch")
        if scratch.dtype != mem.dtype:
            raise OpTypeError(f"The operator {info.op} Mat elem scratch dtype must match mem "
                              f"dtype {mem.dtype.name}, but got {scratch.dtype.name}")
        shape = tuple(idx_t.shape)
        need = _static_count(info, shape, "elem output")
        have = _static_count(info, scratch.shape, "elem scratch")
        if have < need:
            raise OpTypeError(f"The operator {info.op} Mat elem scratch requires at least {need} "
                              f"elements, but got {have}")
    else:
        if mem.rank < 2:
            raise OpTypeError(f"The operator {info.op} Mat row mode requires mem rank >= 2")
        if idx_t.shape[0] != 1:
            raise OpTypeError(f"The operator {info.op} Mat row mode requires a [1, R] GM idx "
                              f"tensor, but got {dims(idx_t.shape)}")
        shape = (idx_t.shape[1], mem.shape[-1])
    _static_count(info, shape, "output")
    c0 = 32 // mem.dtype.itemsize
    if shape[0] % 16 or shape[1] % c0:
        raise OpTypeError(f"The operator {info.op} Mat output must be [16k, {c0}k] for "
                          f"{mem.dtype.name}, but got {dims(shape)}")
    valid = shape
    requested = info.values.get("valid_shape")
    if requested is not None:
        requested = tuple(requested)
        if len(requested) != 2 or not all(isinstance(v, int) for v in requested):
            raise OpTypeError(f"The operator {info.op} Mat valid_shape must be two compile-time "
                              f"ints, but got {list(requested)}")
        for i, (v, d) in enumerate(zip(requested, shape)):
            if not 0 < v <= d:
                raise OpTypeError(f"The operator {info.op} requires 0 < Mat valid_shape[{i}] <= "
                                  f"output_shape[{i}], but got {v} and {d}")
        valid = requested
    return TileType(shape, mem.dtype, "Mat", valid)


def _mgather_arch(arch: Any, info: CallInfo) -> None:
    mem = tensor(info, "mem")
    idx_t = info.types.get("idx")
    if mem.dtype.name in MGATHER_FP8 and not arch.mgather_fp8:
        raise OpArchError(
            f"The operator {info.op} does not support dtype {mem.dtype.name} on the "
            f"'{arch.name}' backend",
            "FP8 gathers need a5",
        )
    if (isinstance(idx_t, TileType) and _choice(info, "coalesce", COALESCE) == 0
            and idx_t.shape[1] == 1 and idx_t.shape[0] != 1 and not arch.mgather_fp8):
        raise OpArchError(
            f"The operator {info.op} does not support the [R, 1] column index form on the "
            f"'{arch.name}' backend",
            "pass the indices as a [1, R] row, or target a5",
        )


def _oob(idx: Any, bound: int, mode: int, op: str, what: str) -> tuple[Any, Any]:
    """Indices after the gather_oob rule, and the mask of the ones that read zero."""
    idx = np.asarray(idx).astype(np.int64) & 0xFFFFFFFF  # unsigned 32-bit, as the device reads
    zero = np.zeros(idx.shape, dtype=bool)
    if mode == 1:
        idx = np.minimum(idx, bound - 1)
    elif mode == 2:
        idx = idx % bound
    elif mode == 3:
        zero = idx >= bound
        idx = np.where(zero, 0, idx)
    else:
        idx = check_indices(op, idx, bound, what)
    return idx, zero


def _mgather_execute(mem, idx, scratch=None, *, coalesce="row", gather_oob="undefined",
                     target_memory=None, valid_shape=None, out=None, **_):
    """``scratch`` (Mat elem mode) is the device's staging area: it never changes a value."""
    mode = GATHER_OOB.get(gather_oob, gather_oob) if isinstance(gather_oob, str) else gather_oob
    elem = COALESCE.get(coalesce, coalesce) if isinstance(coalesce, str) else coalesce
    view = idx.valid_view() if isinstance(idx, TileValue) else np.asarray(idx)
    dtype = out.dtype
    shape = tuple(out.shape)
    data = new_buffer(shape, dtype)
    if elem == 1:
        flat = np.ascontiguousarray(mem).reshape(-1)
        if valid_shape is not None:
            view = view[: int(valid_shape[0]), : int(valid_shape[1])]
        ids, zero = _oob(view, flat.size, mode, "tile.mgather",
                         f"mem of {flat.size} elements {list(mem.shape)}")
        values = np.where(zero, np.zeros((), dtype.np), flat[ids])
    else:
        rows = np.asarray(mem).reshape(-1, mem.shape[-1])
        wanted = view.reshape(-1)
        if valid_shape is not None:
            wanted = wanted[: int(valid_shape[0])]
        ids, zero = _oob(wanted, rows.shape[0], mode, "tile.mgather",
                         f"mem of {rows.shape[0]} rows")
        values = np.where(zero[:, None], np.zeros((), dtype.np), rows[ids])
        if valid_shape is not None:
            values = values[:, : int(valid_shape[1])]
    data[tuple(slice(0, n) for n in values.shape)] = values
    return TileValue(data, tuple(values.shape), dtype, out.space or "Vec")


register(OpSpec(
    name="tile.mgather",
    reads_while_writing=True,
    params=(
        ParamSpec("mem", "tensor"),
        ParamSpec("idx", "tile_or_tensor"),
        ParamSpec("coalesce", "literal", default="row"),
        ParamSpec("gather_oob", "literal", default="undefined", keyword_only=True),
        ParamSpec("target_memory", "space", default=None, keyword_only=True),
        ParamSpec("scratch", "tensor", default=None, optional=True, keyword_only=True),
        ParamSpec("valid_shape", "index_list", default=None, keyword_only=True),
    ),
    type_rule=_mgather_type,
    mem=MemRule(operands={"idx": ("Vec",)}, result="attr:target_memory"),
    arch_rule=_mgather_arch,
    execute=_mgather_execute,
    spellings=("tile.mgather", "mgather"),
    tier=2,
    doc="Gather-load from a DDR tensor into a fresh tile: coalesce='row' takes whole rows "
        "mem[idx[r]] (idx [1, R], or [R, 1] on a5), 'elem' takes mem.flat[idx[i, j]]; "
        "gather_oob undefined (a SimulationError here), clamp, wrap or zero; FP8 data on a5 "
        "only.  Vec output (default) takes an INT32 index tile and its valid region; "
        "target_memory=Mat takes the GM index tensor itself ([1, R] for rows), a [16k, "
        "32/itemsize k] result, valid_shape= for the written region, and in elem mode a "
        "same-dtype GM scratch of at least as many elements (it changes no value).",
))
