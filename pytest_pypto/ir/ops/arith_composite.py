# SPDX-License-Identifier: Apache-2.0
"""Composite elementwise arithmetic (docs/design/language.md §21): fmod/fmods, rem/rems, lrelu,
prelu, the
three-input addc/subc/addsc/subsc and the partial combines part_add/mul/max/min.

Numerics, each pinned to what the device computes (pto-isa):

* ``fmod`` is C ``fmod``: the result takes the dividend's sign (``torch.fmod``, PyPTO's
  golden).  ``rem`` is TREM, ``a - floor(a / b) * b``: the result takes the *divisor's*
  sign (``torch.remainder`` / Python ``%``, PyPTO's reference).  ``fmod`` is exact;
  ``rem`` of floats is computed in float32 and rounded once (its final ``+ b`` can
  round).  Ints are exact, and an integer division by zero gives the poison pattern
  with a warning, as integer ``div`` does.
* ``lrelu(x, slope)`` / ``prelu(x, slope)``: ``x if x > 0 else x * slope`` (TLRELU /
  TPRELU; this is ``max(x, slope * x)`` only for slope <= 1), rounded once.
* ``addc`` = lhs + rhs + rhs2 and ``addsc`` = lhs + scalar + rhs2 run as two device
  adds (TADD + TADD / TADDS + TADD), so the simulator rounds after each.  ``subc`` is
  lhs - rhs + rhs2 and ``subsc`` lhs - scalar + rhs2: the device lowers them to
  TSUB + TADD / TSUBS + TADD (pto-isa TSUBC/TSUBSC), which is what a PyPTO kernel
  computes, although PyPTO's docstrings say ``- rhs2``.
* ``part_*`` run over src0's valid region (the result's); where src1 is valid too they
  combine, elsewhere src0 passes through (TPARTADD...), one rounding.
"""

from __future__ import annotations

import warnings
from typing import Any

from pytest_pypto.ir.apply import convert_array, place, scalar_to_dtype
from pytest_pypto.ir.dtypes import INT64
from pytest_pypto.ir.errors import PyptoWarning
from pytest_pypto.ir.ops._rules import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    broadcast_result,
    dims,
    np,
    require_arch_dtype,
    require_dtype,
    require_rank,
    require_same_dtype,
    scalar,
    tile,
)
from pytest_pypto.ir.ops.compare import read_over
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue, fill_value, widen

# Union over the archs of what TFMOD/TREM take (ARCH vec_op_dtypes narrows per arch).
MOD_DTYPES = ("INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32")
RELU_DTYPES = ("FP16", "FP32")
PART_DTYPES = ("INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "FP16", "FP32", "BF16")
FLOATS = FLOAT_DTYPES[:3]


def _vec(*names: str) -> MemRule:
    return MemRule(operands={n: ("Vec",) for n in names}, result="Vec")


# ---------------------------------------------------------------- type rules


def _binary(info: CallInfo, lhs: str = "lhs", rhs: str = "rhs") -> TileType:
    a, b = tile(info, lhs), tile(info, rhs)
    require_same_dtype(info, a.dtype, b.dtype)
    return broadcast_result(info, a, b)


def _mod_type(info: CallInfo) -> TileType:
    if isinstance(info.types.get("rhs"), TileType):
        out = _binary(info)
    else:
        scalar(info, "rhs")
        a = tile(info, "lhs")
        out = TileType(a.shape, a.dtype, valid=a.valid)
    require_dtype(info, out.dtype, MOD_DTYPES)
    if info.op in ("tile.rem", "tile.rems"):
        tile(info, "tmp")
    return out


def _mod_arch(family: str):
    def rule(arch: Any, info: CallInfo) -> None:
        require_arch_dtype(arch, info, family, tile(info, "lhs").dtype)

    return rule


def _lrelu_type(info: CallInfo) -> TileType:
    a = tile(info, "tile")
    scalar(info, "slope")
    require_dtype(info, a.dtype, RELU_DTYPES)
    return TileType(a.shape, a.dtype, valid=a.valid)


def _prelu_type(info: CallInfo) -> TileType:
    src, slope, tmp = tile(info, "tile"), tile(info, "slope"), tile(info, "tmp")
    require_dtype(info, src.dtype, RELU_DTYPES)
    require_same_dtype(info, src.dtype, slope.dtype, "slope and the input")
    require_rank(info, src, "tile", exact=2)
    require_rank(info, tmp, "tmp", exact=2)
    if tuple(slope.shape) != tuple(src.shape):
        raise OpTypeError(
            f"The operator {info.op} requires slope to have the input's shape "
            f"{dims(src.shape)}, but got {dims(slope.shape)}"
        )
    known = None not in src.valid and None not in slope.valid
    if known and tuple(slope.valid) != tuple(src.valid):
        raise OpTypeError(
            f"The operator {info.op} requires slope to have the input's valid shape "
            f"{dims(src.valid)}, but got {dims(slope.valid)}",
            "load slope with the input's valid_shape",
        )
    return TileType(src.shape, src.dtype, valid=src.valid)


def _prelu_arch(arch: Any, info: CallInfo) -> None:
    """a2a3's TPRELU keeps a bit mask in tmp: UINT8, rows >= valid rows + 1, valid
    columns >= ceil(valid columns / 8) (ARCH vec_op_dtypes "prelu_tmp")."""
    need = arch.vec_op_dtypes.get("prelu_tmp")
    if need is None:
        return
    src, tmp = tile(info, "tile"), tile(info, "tmp")
    where = f"on the '{arch.name}' backend"
    if tmp.dtype.name not in need:
        raise OpArchError(
            f"The operator {info.op} requires a {need[0]} tmp {where}, but got {tmp.dtype.name}",
            "pl.create_tile the scratch as pl.UINT8, or target a5",
        )
    rows, cols = src.valid[0], src.valid[1]
    if rows is not None and tmp.shape[0] < rows + 1:
        raise OpArchError(
            f"The operator {info.op} requires tmp to have at least {rows + 1} rows (valid rows "
            f"+ 1) {where}, but got {dims(tmp.shape)}"
        )
    if cols is not None and tmp.valid[1] is not None and tmp.valid[1] < -(-cols // 8):
        raise OpArchError(
            f"The operator {info.op} requires tmp to have at least ceil({cols} / 8) = "
            f"{-(-cols // 8)} valid columns {where}, but got valid {dims(tmp.valid)}"
        )


def _three_type(info: CallInfo) -> TileType:
    a, c = tile(info, "lhs"), tile(info, "rhs2")
    if isinstance(info.types.get("rhs"), TileType):
        out = _binary(info)
    else:
        scalar(info, "rhs")
        out = TileType(a.shape, a.dtype, valid=a.valid)
    require_same_dtype(info, a.dtype, c.dtype, "lhs and rhs2")
    require_dtype(info, a.dtype, NUMERIC_DTYPES)
    full = broadcast_result(info, out, c)
    return TileType(full.shape, a.dtype, valid=a.valid)


def _part_type(info: CallInfo) -> TileType:
    out = _binary(info, "src0", "src1")
    require_dtype(info, out.dtype, PART_DTYPES)
    a = tile(info, "src0")
    return TileType(out.shape, a.dtype, valid=a.valid)


def _part_arch(arch: Any, info: CallInfo) -> None:
    require_arch_dtype(arch, info, "part", tile(info, "src0").dtype)


# ---------------------------------------------------------------- numerics


def _by_zero(result: Any, b: Any, op: str) -> Any:
    """Integer x / 0 leaves the poison pattern (docs/design/numerics.md §2) and a recorded
    warning."""
    zero = np.asarray(b) == 0
    if not zero.any():
        return result
    warnings.warn(f"integer {op} by zero in {int(zero.sum())} element(s); they hold the "
                  "poison pattern", PyptoWarning, stacklevel=4)
    return np.where(zero, np.int64(fill_value(INT64)), result)


def _int_mod(a: Any, b: Any, fn: Any, op: str) -> Any:
    b = np.asarray(b)
    return _by_zero(fn(a, np.where(b == 0, 1, b)), b, op)


def fmod(a: Any, b: Any) -> Any:
    """C fmod (sign of the dividend): exact for floats, C ``%`` for ints."""
    if np.asarray(a).dtype.kind == "f":
        return np.fmod(a, b, dtype=np.float32)
    return _int_mod(a, b, np.fmod, "fmod")


def rem(a: Any, b: Any) -> Any:
    """Floored remainder a - floor(a / b) * b (sign of the divisor): float32, rounded once."""
    if np.asarray(a).dtype.kind == "f":
        return np.remainder(a, b, dtype=np.float32)
    return _int_mod(a, b, np.remainder, "rem")


def _mod_compute(fn: Any) -> Any:
    def compute(lhs: Any, rhs: Any, tmp: Any = None, **_: Any) -> Any:
        return fn(lhs, rhs)

    compute.region = "lhs"  # type: ignore[attr-defined]
    return compute


def _lrelu(tile: Any, slope: Any, **_: Any) -> Any:
    return np.where(tile > 0, tile, tile * slope)


def _prelu(tile: Any, slope: Any, tmp: Any = None, **_: Any) -> Any:
    return np.where(tile > 0, tile, tile * slope)


_prelu.region = "lhs"  # type: ignore[attr-defined]


def _widened(t: Any, view: Any) -> Any:
    return widen(view, t.dtype)


def _three_execute(first: Any, second: Any):
    """``(lhs op1 rhs) op2 rhs2`` with the device's rounding after each of the two ops."""

    def execute(lhs: Any, rhs: Any, rhs2: Any, *, out: TileType | None = None, **_: Any) -> Any:
        a = lhs.valid_view()
        if isinstance(rhs, TileValue):
            b = _widened(rhs, read_over(a.shape, rhs))
        else:
            b = scalar_to_dtype(rhs, lhs.dtype)
        c = _widened(rhs2, read_over(a.shape, rhs2))
        with np.errstate(all="ignore"):
            step = convert_array(first(_widened(lhs, a), b), lhs.dtype)
            result = second(_widened(lhs, step), c)
        out = out or TileType(lhs.shape, lhs.dtype, lhs.space)
        return place(result, out, (lhs, rhs, rhs2))

    return execute


_PART = {
    "add": lambda a, b: a + b,
    "mul": lambda a, b: a * b,
    "max": lambda a, b: np.maximum(a, b),
    "min": lambda a, b: np.minimum(a, b),
}


def _part_execute(fn: Any):
    def execute(src0: Any, src1: Any, *, out: TileType | None = None, **_: Any) -> Any:
        a = _widened(src0, src0.valid_view())
        both = tuple(slice(0, min(int(v0), int(v1))) for v0, v1 in zip(src0.valid, src1.valid))
        result = a.copy()
        with np.errstate(all="ignore"):
            result[both] = fn(a[both], _widened(src1, src1.data[both]))
        out = out or TileType(src0.shape, src0.dtype, src0.space)
        return place(result, out, (src0, src1))

    return execute


# ---------------------------------------------------------------- entries

for _name, _fn, _doc in (
    ("fmod", fmod, "C fmod(a, b): the result has the dividend's sign"),
    ("rem", rem, "remainder a - floor(a / b) * b: the result has the divisor's sign"),
):
    _tmp = (ParamSpec("tmp", "tile"),) if _name == "rem" else ()
    _note = "; tmp is scratch the a2a3 instruction needs" if _tmp else ""
    register(OpSpec(
        name=f"tile.{_name}",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"), *_tmp),
        type_rule=_mod_type,
        mem=_vec("lhs", "rhs", "tmp"),
        doc=f"Elementwise {_doc}, over lhs's valid region, one dtype (rhs may broadcast "
            f"where a dim is 1); float32, rounded once (fmod is exact); integer x / 0 is "
            f"poisoned with a warning{_note}.",
        spellings=(_name,),
        scalar_form=f"tile.{_name}s",
        arch_rule=_mod_arch(_name),
        compute=_mod_compute(_fn),
        batchable=True,
        reads_while_writing=_name == "fmod",
        tier=2,
    ))
    register(OpSpec(
        name=f"tile.{_name}s",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "scalar"), *_tmp),
        type_rule=_mod_type,
        mem=_vec("lhs", "tmp"),
        doc=f"Elementwise {_doc}, of a tile by a scalar (converted to the tile dtype "
            f"first){_note}.",
        spellings=(f"{_name}s",),
        arch_rule=_mod_arch(_name),
        compute=_mod_compute(_fn),
        batchable=True,
        reads_while_writing=_name == "fmod",
        tier=2,
    ))

register(OpSpec(
    name="tile.lrelu",
    params=(ParamSpec("tile", "tile"), ParamSpec("slope", "scalar")),
    type_rule=_lrelu_type,
    mem=_vec("tile"),
    doc="Leaky ReLU: x if x > 0 else x * slope (slope converted to the tile dtype), FP16 / "
        "FP32, over the valid region, rounded once.",
    spellings=("lrelu",),
    compute=_lrelu,
    batchable=True,
    tier=2,
))

register(OpSpec(
    name="tile.prelu",
    params=(ParamSpec("tile", "tile"), ParamSpec("slope", "tile"), ParamSpec("tmp", "tile")),
    type_rule=_prelu_type,
    mem=_vec("tile", "slope", "tmp"),
    doc="Parametric ReLU: x if x > 0 else x * slope, slope a tile of the input's dtype, "
        "shape and valid shape (FP16 / FP32, rank 2), rounded once; tmp is scratch (a2a3: "
        "UINT8 with valid rows + 1 rows and ceil(valid cols / 8) valid columns).",
    spellings=("prelu",),
    arch_rule=_prelu_arch,
    compute=_prelu,
    batchable=True,
    reads_while_writing=True,  # a5 could reuse the unread tmp: kept conservative
    tier=2,
))

_ADD = lambda a, b: a + b  # noqa: E731
_SUB = lambda a, b: a - b  # noqa: E731
for _name, _first, _sign in (("add", _ADD, "+"), ("sub", _SUB, "-")):
    register(OpSpec(
        name=f"tile.{_name}c",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"), ParamSpec("rhs2", "tile")),
        type_rule=_three_type,
        mem=_vec("lhs", "rhs", "rhs2"),
        doc=f"lhs {_sign} rhs + rhs2 over lhs's valid region (one dtype, dims of 1 broadcast), "
            f"as the device's two ops (T{_name.upper()} + TADD): rounded after each.",
        spellings=(f"{_name}c",),
        scalar_form=f"tile.{_name}sc",
        execute=_three_execute(_first, _ADD),
        tier=2,
    ))
    register(OpSpec(
        name=f"tile.{_name}sc",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "scalar"), ParamSpec("rhs2", "tile")),
        type_rule=_three_type,
        mem=_vec("lhs", "rhs2"),
        doc=f"lhs {_sign} scalar + rhs2 over lhs's valid region (the scalar converted to the "
            f"tile dtype), as the device's T{_name.upper()}S + TADD: rounded after each.",
        spellings=(f"{_name}sc",),
        execute=_three_execute(_first, _ADD),
        tier=2,
    ))

for _name, _fn in _PART.items():
    register(OpSpec(
        name=f"tile.part_{_name}",
        params=(ParamSpec("src0", "tile"), ParamSpec("src1", "tile")),
        type_rule=_part_type,
        mem=_vec("src0", "src1"),
        doc=f"Partial {_name} over src0's valid region (the result's): where src1 is valid "
            f"too the two combine, elsewhere src0 passes through; one dtype, rounded once.",
        spellings=(f"part_{_name}",),
        arch_rule=_part_arch,
        execute=_part_execute(_fn),
        tier=2,
    ))
