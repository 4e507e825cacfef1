# SPDX-License-Identifier: Apache-2.0
"""Compare and select: cmp, cmps, sel, sels (docs/design/language.md §21, packed masks
docs/design/numerics.md §5).

``cmp``/``cmps`` write a packed predicate mask: UINT8 ``[..., R, roundup(ceil(C/8), 32)]``
with valid ``[..., vR, ceil(vC/8)]``; element ``(i, j)`` of the source valid region is
bit ``j % 8`` (LSB first) of byte ``j // 8`` of row ``i``, every other bit and byte 0
(the device zero-fills the mask).  ``sel``/``sels`` read those bits from the raw bytes
of each mask row, whatever the mask tile's integer dtype: PyPTO's tests load 8-, 16-
and 32-bit "mask carriers" (0xAA bytes select the odd columns).  Comparisons are exact
IEEE on the widened values (NaN compares false, except NE).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import place, scalar_to_dtype
from pytest_pypto.ir.dtypes import UINT8, DataType
from pytest_pypto.ir.ops._rules import (
    broadcast_result,
    dims,
    dtype_list,
    np,
    require_arch_dtype,
    require_dtype,
    require_rank,
    require_same_dtype,
    scalar,
    tile,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpRuleError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue

CMP_NAMES = ("EQ", "NE", "LT", "LE", "GT", "GE")
# Union over the archs of what TCMP/TCMPS take (ARCH vec_op_dtypes narrows per arch).
CMP_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32")
SEL_DTYPES = ("INT16", "UINT16", "INT32", "UINT32", "FP16", "BF16", "FP32")  # 2/4-byte
SELS_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32")
MASK_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32")
MASK_ROW_ALIGN = 32  # mask bytes per row are padded to 32 (one vector block)


def cmp_index(value: Any) -> int:
    """``cmp_type`` as 0..5: an int, a name (EQ/NE/LT/LE/GT/GE, any case) or an enum
    member carrying either; ValueError names the valid values."""
    if hasattr(value, "value") and not isinstance(value, (int, str)):
        value = getattr(value, "name", value.value)
    if isinstance(value, int) and not isinstance(value, bool) and 0 <= value < len(CMP_NAMES):
        return value
    if isinstance(value, str) and value.upper() in CMP_NAMES:
        return CMP_NAMES.index(value.upper())
    raise ValueError(
        f"cmp_type must be 0..5 ({', '.join(f'{i}={n}' for i, n in enumerate(CMP_NAMES))}) "
        f"or one of those names, but got {value!r}"
    )


def mask_layout(shape: tuple[int, ...], valid: tuple[int | None, ...]
                ) -> tuple[tuple[int, ...], tuple[int | None, ...]]:
    """Physical shape and valid region of the packed mask of a ``shape``/``valid`` source."""
    row_bytes = -(-shape[-1] // 8)
    packed = -(-row_bytes // MASK_ROW_ALIGN) * MASK_ROW_ALIGN
    last = valid[-1]
    return (*shape[:-1], packed), (*valid[:-1], None if last is None else -(-last // 8))


# ---------------------------------------------------------------- type rules


def _cmp_type(info: CallInfo) -> TileType:
    a = tile(info, "lhs")
    if info.op == "tile.cmp":
        b = tile(info, "rhs")
        require_same_dtype(info, a.dtype, b.dtype)
        shape = broadcast_result(info, a, b).shape
    else:
        scalar(info, "rhs")
        shape = a.shape
    require_dtype(info, a.dtype, CMP_DTYPES, hint="pl.cast the operands to FP32 first")
    try:
        cmp_index(info.values.get("cmp_type", 0))
    except ValueError as exc:
        raise OpTypeError(f"The operator {info.op}: {exc}") from None
    mshape, mvalid = mask_layout(tuple(shape), tuple(a.valid))
    return TileType(mshape, UINT8, valid=mvalid)


def _cmp_arch(arch: Any, info: CallInfo) -> None:
    require_arch_dtype(arch, info, info.op.split(".", 1)[1], tile(info, "lhs").dtype)


def _check_mask(info: CallInfo, mask: TileType, src: TileType) -> None:
    """The mask covers the source valid region: its valid rows reach the source's, and
    each of its rows holds ceil(valid columns / 8) bytes (static extents only)."""
    require_dtype(info, mask.dtype, MASK_DTYPES, "an 8-, 16- or 32-bit integer mask, i.e. dtype",
                  hint="pass the UINT8 tile pl.cmp / pl.cmps produced")
    rows, cols = mask.valid[-2] if mask.rank >= 2 else 1, mask.valid[-1]
    src_rows = src.valid[-2] if src.rank >= 2 else 1
    src_cols = src.valid[-1]
    if rows is not None and src_rows is not None and rows < src_rows:
        raise OpTypeError(
            f"The operator {info.op} requires the mask's valid rows to cover the source's, "
            f"but got mask valid {dims(mask.valid)} for source valid {dims(src.valid)}"
        )
    if cols is not None and src_cols is not None and cols * mask.dtype.itemsize < -(-src_cols // 8):
        raise OpTypeError(
            f"The operator {info.op} requires each mask row to hold ceil({src_cols} / 8) = "
            f"{-(-src_cols // 8)} packed bytes, but the mask's valid {dims(mask.valid)} "
            f"{mask.dtype.name} rows hold {cols * mask.dtype.itemsize}",
            "use the mask pl.cmp / pl.cmps produced for this source",
        )


def _sel_type(info: CallInfo) -> TileType:
    mask, a, b = tile(info, "mask"), tile(info, "lhs"), tile(info, "rhs")
    tile(info, "tmp")
    require_same_dtype(info, a.dtype, b.dtype, "lhs and rhs")
    require_dtype(info, a.dtype, SEL_DTYPES, hint="TSEL selects 2- or 4-byte elements; "
                  f"pl.cast to one of {dtype_list(SEL_DTYPES)}")
    out = broadcast_result(info, a, b)
    _check_mask(info, mask, a)
    return out


def _sels_type(info: CallInfo) -> TileType:
    mask, src, tmp = tile(info, "mask"), tile(info, "src"), tile(info, "tmp")
    scalar(info, "scalar")
    for name, t in (("mask", mask), ("src", src), ("tmp", tmp)):
        require_rank(info, t, name, exact=2)
    require_dtype(info, src.dtype, SELS_DTYPES, "src dtype")
    _check_mask(info, mask, src)
    return TileType(src.shape, src.dtype, valid=src.valid)


def _sels_arch(arch: Any, info: CallInfo) -> None:
    dt = tile(info, "src").dtype.name
    if dt not in arch.sels_src_dtypes:
        raise OpArchError(
            f"The operator {info.op} does not support src dtype {dt} on the '{arch.name}' "
            "backend",
            f"use {dtype_list(arch.sels_src_dtypes)}, or target a5",
        )


# ---------------------------------------------------------------- numerics


def read_over(shape: tuple[int, ...], other: Any) -> Any:
    """``other``'s memory over a ``shape`` region at the origin (its dims of 1 broadcast):
    the device walks the first operand's valid region and reads the others there."""
    sl = tuple(slice(0, 1) if s == 1 and v > 1 else slice(0, v)
               for s, v in zip(other.data.shape, shape))
    return other.data[sl]


def _over(lead: Any, other: Any) -> tuple[Any, Any]:
    a = lead.valid_view()
    return a, read_over(a.shape, other)


def _widen(x: Any, dtype: DataType) -> Any:
    return x.astype(np.float32 if dtype.is_float else np.int64)


_PREDICATES = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def _pack(pred: Any, src: Any, out: TileType | None) -> Any:
    """The predicate packed into a zero-filled mask tile (docs/design/numerics.md §5)."""

    shape, _ = mask_layout(src.shape, src.valid)
    data = np.zeros(shape, dtype=np.uint8)
    packed = np.packbits(pred.astype(bool), axis=-1, bitorder="little")
    data[tuple(slice(0, n) for n in packed.shape)] = packed
    space = (out.space if out is not None else None) or src.space
    return TileValue(data, tuple(packed.shape), UINT8, space)


def _cmp_execute(lhs: Any, rhs: Any, *, cmp_type: Any = 0, out: TileType | None = None,
                 **_: Any) -> Any:
    fn = getattr(np, _PREDICATES[cmp_index(cmp_type)])
    if isinstance(rhs, TileValue):
        a, b = _over(lhs, rhs)
        b = _widen(b, rhs.dtype)
    else:
        a = lhs.valid_view()
        b = scalar_to_dtype(rhs, lhs.dtype)
    with np.errstate(invalid="ignore"):
        pred = fn(_widen(a, lhs.dtype), b)
    return _pack(np.broadcast_to(pred, a.shape), lhs, out)


def mask_bits(mask: Any, shape: tuple[int, ...], op: str) -> Any:
    """The predicate of each element of a ``shape`` region, read from the mask's row bytes."""
    lead, cols = shape[:-1], shape[-1]
    raw = np.ascontiguousarray(mask.data)
    raw = raw.view(np.uint8).reshape(*raw.shape[:-1], -1)
    need = -(-cols // 8)
    if raw.shape[-1] < need or any(m < s for m, s in zip(raw.shape[:-1], lead)):
        raise OpRuleError(
            f"{op}: the {mask.dtype.name} mask {list(mask.data.shape)} does not cover the "
            f"selected region {list(shape)}",
            "use the mask pl.cmp / pl.cmps produced for this source",
        )
    rows = raw[tuple(slice(0, s) for s in lead)][..., :need]
    return np.unpackbits(rows, axis=-1, bitorder="little")[..., :cols].astype(bool)


def _place(values: Any, like: Any, inputs: tuple[Any, ...], out: TileType | None) -> Any:
    out = out or TileType(like.shape, like.dtype, like.space)
    return place(values, out, inputs)


def _sel_execute(mask: Any, lhs: Any, rhs: Any, tmp: Any = None, *,
                 out: TileType | None = None, **_: Any) -> Any:
    a, b = _over(lhs, rhs)
    bits = mask_bits(mask, a.shape, "tile.sel")
    return _place(np.where(bits, a, b), lhs, (mask, lhs, rhs), out)


def _sels_execute(mask: Any, src: Any, tmp: Any, value: Any, *,
                  out: TileType | None = None, **_: Any) -> Any:
    a = src.valid_view()
    s = np.asarray(scalar_to_dtype(value, src.dtype)).astype(src.dtype.np)
    return _place(np.where(mask_bits(mask, a.shape, "tile.sels"), a, s), src, (mask, src), out)


# ---------------------------------------------------------------- entries

_CMP_DOC = (
    "Compare {what} elementwise over lhs's valid region (cmp_type 0..5 = EQ, NE, LT, LE, "
    "GT, GE, or those names) into a packed UINT8 predicate mask [..., R, "
    "roundup(ceil(C/8), 32)] with valid [..., vR, ceil(vC/8)]: bit j%8 (LSB first) of byte "
    "j//8 of row i; all other bits 0. Exact on the widened values (NaN: false except NE)."
)

register(OpSpec(
    name="tile.cmp",
    wide_safe=True,
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"),
            ParamSpec("cmp_type", "literal", default=0)),
    type_rule=_cmp_type,
    mem=MemRule(operands={"lhs": ("Vec",), "rhs": ("Vec",)}, result="Vec"),
    doc=_CMP_DOC.format(what="two tiles of one dtype (rhs may broadcast where a dim is 1)"),
    spellings=("cmp",),
    scalar_form="tile.cmps",
    arch_rule=_cmp_arch,
    execute=_cmp_execute,
    tier=1,
))

register(OpSpec(
    name="tile.cmps",
    wide_safe=True,
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "scalar"),
            ParamSpec("cmp_type", "literal", default=0)),
    type_rule=_cmp_type,
    mem=MemRule(operands={"lhs": ("Vec",)}, result="Vec"),
    doc=_CMP_DOC.format(what="a tile with a scalar (converted to the tile dtype first)"),
    spellings=("cmps",),
    arch_rule=_cmp_arch,
    execute=_cmp_execute,
))

register(OpSpec(
    name="tile.sel",
    reads_while_writing=("mask", "tmp"),
    params=(ParamSpec("mask", "tile"), ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"),
            ParamSpec("tmp", "tile")),
    type_rule=_sel_type,
    mem=MemRule(operands={"mask": ("Vec",), "lhs": ("Vec",), "rhs": ("Vec",), "tmp": ("Vec",)},
                result="Vec"),
    doc="where(mask bit, lhs, rhs) over lhs's valid region (rhs may broadcast where a dim is "
        "1); the bits are read from the raw bytes of each mask row (docs/design/numerics.md §5), any 8/16/32-bit "
        "integer mask dtype; lhs/rhs of one 2- or 4-byte dtype; tmp is scratch (UINT8 "
        "[1, 32] suffices) and is not read.",
    spellings=("sel",),
    execute=_sel_execute,
))

register(OpSpec(
    name="tile.sels",
    reads_while_writing=("mask",),
    params=(ParamSpec("mask", "tile"), ParamSpec("src", "tile"), ParamSpec("tmp", "tile"),
            ParamSpec("scalar", "scalar")),
    type_rule=_sels_type,
    mem=MemRule(operands={"mask": ("Vec",), "src": ("Vec",), "tmp": ("Vec",)}, result="Vec"),
    doc="where(mask bit, src, scalar) over src's valid region; the scalar is converted to "
        "src's dtype (an unsigned src keeps the scalar's bit pattern); rank-2 mask/src/tmp; "
        "src dtypes per arch (docs/design/arch.md §7: INT8/UINT8 on a5 only); tmp is scratch.",
    spellings=("sels",),
    arch_rule=_sels_arch,
    execute=_sels_execute,
))
