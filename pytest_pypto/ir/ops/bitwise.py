# SPDX-License-Identifier: Apache-2.0
"""Integer bitwise ops (docs/design/language.md §21): and_/or_/xor/not_/shl/shr and the scalar forms
ands/ors/xors/shls/shrs.

PyPTO's op names are ``tile.and``/``tile.or``/``tile.not`` (spelled ``pl.and_``,
``pl.or_``, ``pl.not_``).  Integer tiles only; ``xor``/``xors`` take a scratch ``tmp``
tile (the a2a3 instruction needs one); ``not_`` is INT16/UINT16 (PyPTO's rule).  Which
integer widths each arch's instruction takes is ARCH (``vec_op_dtypes``).

Numerics, on two's-complement values of the tile width: ``shl`` shifts in zeros and
wraps (a shift by the width or more gives 0); ``shr`` is arithmetic on signed tiles
(sign fill) and logical on unsigned ones; a negative shift amount is a run-time error.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import (
    broadcast_result,
    np,
    require_arch_dtype,
    require_dtype,
    require_same_dtype,
    scalar,
    tile,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpRuleError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType

NOT_DTYPES = ("INT16", "UINT16")
# 8/16/32-bit integers: neither arch's vector unit has 64-bit bitwise ops.
INT_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32")
_FAMILY = {"and": "and", "or": "or", "xor": "xor", "shl": "shift", "shr": "shift"}


def _require_int(info: CallInfo, t: TileType, what: str) -> None:
    if t.dtype.name not in INT_DTYPES:
        raise OpTypeError(
            f"The operator {info.op} requires an integer {what} dtype (INT8/16/32 or "
            f"UINT8/16/32), but got {t.dtype.name}",
            "pl.cast the tile to an integer dtype first",
        )


def _binary_type(info: CallInfo) -> TileType:
    a, b = tile(info, "lhs"), tile(info, "rhs")
    _require_int(info, a, "tile")
    short = info.op.split(".", 1)[1]
    if short in ("shl", "shr"):
        _require_int(info, b, "shift tile")  # the amount's width may differ (PyPTO)
    else:
        _require_int(info, b, "tile")
        require_same_dtype(info, a.dtype, b.dtype)
    if short == "xor":
        tile(info, "tmp")
    out = broadcast_result(info, a, b)
    return TileType(out.shape, a.dtype, valid=out.valid)


def _scalar_type(info: CallInfo) -> TileType:
    a = tile(info, "lhs")
    _require_int(info, a, "tile")
    s = scalar(info, "rhs")
    if not s.dtype.is_int:
        raise OpTypeError(
            f"The operator {info.op} requires an integer scalar, but got {s.dtype.name}",
            "pass an int (shift amounts and bit masks are integers)",
        )
    if info.op == "tile.xors":
        tile(info, "tmp")
    return TileType(a.shape, a.dtype, valid=a.valid)


def _not_type(info: CallInfo) -> TileType:
    a = tile(info, "tile")
    require_dtype(info, a.dtype, NOT_DTYPES, hint="TNOT takes 16-bit integers; pl.cast first")
    return TileType(a.shape, a.dtype, valid=a.valid)


def _arch(family: str):
    def rule(arch: Any, info: CallInfo) -> None:
        require_arch_dtype(arch, info, family, tile(info, "lhs").dtype)

    return rule


# ------------------------------------------------------------------ numerics


def _amount(b: Any, op: str) -> Any:
    """Shift amounts as int64, capped at 63 (any amount >= the width shifts every bit out:
    numpy's shifts are defined up to 63 and the width is at most 32)."""
    b = np.asarray(b, dtype=np.int64)
    if (b < 0).any():
        raise OpRuleError(
            f"tile.{op}: shift amounts must be >= 0, but {int((b < 0).sum())} are negative "
            f"(smallest {int(b.min())})",
            "the device rejects negative shifts; shift the other way instead",
        )
    return np.minimum(b, 63)


# Each compute gets the widened operands: signed tiles sign-extended, unsigned ones
# zero-extended into int64, so int64 shifts are arithmetic / logical as the tile's
# signedness asks, and the runner's wrap to the tile width drops what shl pushed out.
_COMPUTE = {
    "and": lambda a, b: np.bitwise_and(a, b),
    "or": lambda a, b: np.bitwise_or(a, b),
    "xor": lambda a, b: np.bitwise_xor(a, b),
    "shl": lambda a, b: np.left_shift(a, _amount(b, "shl")),
    "shr": lambda a, b: np.right_shift(a, _amount(b, "shr")),
}


def _make(fn: Any) -> Any:
    def compute(lhs: Any, rhs: Any, tmp: Any = None, **_: Any) -> Any:
        return fn(lhs, rhs)

    compute.region = "lhs"  # type: ignore[attr-defined]
    return compute


def _not(tile: Any, **_: Any) -> Any:
    return np.invert(tile)


_DOC = {
    "and": "bitwise AND",
    "or": "bitwise OR",
    "xor": "bitwise XOR",
    "shl": "left shift by rhs (zeros shifted in, wraps; >= width gives 0)",
    "shr": "right shift by rhs (arithmetic on signed, logical on unsigned tiles)",
}
_SPELLING = {"and": "and_", "or": "or_", "xor": "xor", "shl": "shl", "shr": "shr"}
_VEC = MemRule(operands={"lhs": ("Vec",), "rhs": ("Vec",), "tmp": ("Vec",)}, result="Vec")

for _short, _fn in _COMPUTE.items():
    _tmp = (ParamSpec("tmp", "tile"),) if _short == "xor" else ()
    _extra = "; tmp is scratch (the a2a3 TXOR needs one), not read" if _tmp else ""
    _rhs_rule = ("the amount a tile of any integer dtype" if _short in ("shl", "shr")
                 else "rhs of lhs's dtype")
    register(OpSpec(
        name=f"tile.{_short}",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"), *_tmp),
        type_rule=_binary_type,
        mem=_VEC,
        doc=f"Elementwise {_DOC[_short]} of integer tiles over lhs's valid region, "
            f"{_rhs_rule} (dims of 1 broadcast); result in lhs's dtype{_extra}.",
        spellings=(_SPELLING[_short],),
        scalar_form=f"tile.{_short}s",
        arch_rule=_arch(_FAMILY[_short]),
        compute=_make(_fn),
        batchable=True,
        tier=2,
    ))
    register(OpSpec(
        name=f"tile.{_short}s",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "scalar"), *_tmp),
        type_rule=_scalar_type,
        mem=MemRule(operands={"lhs": ("Vec",), "tmp": ("Vec",)}, result="Vec"),
        doc=f"Elementwise {_DOC[_short]} of an integer tile with an integer scalar "
            f"(converted to the tile dtype first){_extra}.",
        spellings=(f"{_short}s",),
        reads_while_writing=_short in ("and", "or", "xor"),
        arch_rule=_arch(_FAMILY[_short]),
        compute=_make(_fn),
        batchable=True,
        tier=2,
    ))

register(OpSpec(
    name="tile.not",
    params=(ParamSpec("tile", "tile"),),
    type_rule=_not_type,
    mem=MemRule(operands={"tile": ("Vec",)}, result="Vec"),
    doc="Elementwise bitwise NOT (~x) of an INT16/UINT16 tile over its valid region.",
    spellings=("not_",),
    compute=_not,
    batchable=True,
    tier=2,
))
