"""Binary elementwise ops and their scalar forms (docs/design/language.md §21,
docs/design/numerics.md §2).

``pl.add(tile, tile)`` is tile.add; ``pl.add(tile, 2.0)`` dispatches through
``scalar_form`` to tile.adds.  Computes get wide arrays (float32 / int64) and
return wide results; the runner rounds once to the tile dtype.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from pytest_pypto.ir.dtypes import INT64
from pytest_pypto.ir.errors import PyptoWarning
from pytest_pypto.ir.ops._rules import (
    NUMERIC_DTYPES,
    broadcast_result,
    dims,
    np,
    require_dtype,
    require_same_dtype,
    scalar,
    tile,
    warn_unvalidated,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import fill_value

DIV_DTYPES = ("INT16", "INT32", "FP16", "FP32")
SUBS_DTYPES = ("INT8", "INT16", "INT32", "FP16", "FP32", "BF16")
VEC2 = MemRule(operands={"lhs": ("Vec",), "rhs": ("Vec",)}, result="Vec")
VEC1 = MemRule(operands={"lhs": ("Vec",)}, result="Vec")


# ------------------------------------------------------------------- numerics


def int_div(a: Any, b: Any) -> Any:
    """C integer division (truncate toward zero) on int64; x/0 yields the poison pattern."""

    a = np.asarray(a, dtype=np.int64)
    b = np.asarray(b, dtype=np.int64)
    zero = b == 0
    safe = np.where(zero, 1, b)
    q = np.abs(a) // np.abs(safe)
    q = np.where((a < 0) != (safe < 0), -q, q)
    if zero.any():
        # The int64 poison pattern wraps to the pattern of every narrower width.
        q = np.where(zero, np.int64(fill_value(INT64)), q)
        warnings.warn(
            f"integer division by zero in {int(zero.sum())} element(s); they hold the "
            "poison pattern", PyptoWarning, stacklevel=3,
        )
    return q


def divide(a: Any, b: Any) -> Any:
    """IEEE float division, or C integer division for int64 operands."""
    if np.asarray(a).dtype.kind == "f" or np.asarray(b).dtype.kind == "f":
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.divide(a, b, dtype=np.float32)
    return int_div(a, b)


def _lhs_region(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a compute whose tile operands are read over the first operand's valid region.

    The device computes over lhs's valid region and reads the other operand's physical
    memory there; the runner extends that operand's view (undefined elements included).
    """
    fn.region = "lhs"  # type: ignore[attr-defined]
    return fn


_BINARY: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "div": divide,
    "maximum": lambda a, b: np.maximum(a, b),
    "minimum": lambda a, b: np.minimum(a, b),
}


# The numpy ufunc (by name: numpy loads lazily) each binary op is on float32 operands: a
# float32 ufunc into a float32 buffer rounds exactly as compute-then-narrow, so batched
# stores may compute straight into the destination window (ir/batch.store_into).
# div too: on floats `divide` is numpy's float32 division, exactly the ufunc.
_FLOAT32_UFUNC: dict[str, str] = {
    "add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
    "maximum": "maximum", "minimum": "minimum",
}


def _make_compute(fn: Callable[[Any, Any], Any], ufunc: str | None = None) -> Callable[..., Any]:
    def compute(lhs: Any, rhs: Any, **_: Any) -> Any:
        return fn(lhs, rhs)

    compute.float32_ufunc = ufunc  # type: ignore[attr-defined]
    return _lhs_region(compute)


# ---------------------------------------------------------------- type rules


def _binary_type(info: CallInfo) -> TileType:
    a, b = tile(info, "lhs"), tile(info, "rhs")
    require_same_dtype(info, a.dtype, b.dtype)
    short = info.op.split(".", 1)[1]
    if short == "div":
        require_dtype(info, a.dtype, DIV_DTYPES)
        if a.shape != b.shape:
            raise OpTypeError(
                f"The operator {info.op} requires identical shapes, but got {dims(a.shape)} "
                f"and {dims(b.shape)}"
            )
        if None not in a.valid and None not in b.valid and tuple(a.valid) != tuple(b.valid):
            raise OpTypeError(
                f"The operator {info.op} requires identical valid shapes, but got "
                f"{dims(a.valid)} and {dims(b.valid)}",
                "pl.set_validshape or pl.fillpad the operands to one region",
            )
        if info.values.get("high_precision"):
            require_dtype(info, a.dtype, ("FP16", "FP32"), "with high_precision=True dtype")
    else:
        require_dtype(info, a.dtype, NUMERIC_DTYPES)
    return broadcast_result(info, a, b)


def _scalar_type(info: CallInfo) -> TileType:
    a = tile(info, "lhs")
    s = scalar(info, "rhs")
    if info.op == "tile.subs":
        require_dtype(info, a.dtype, SUBS_DTYPES)
        if s.dtype.name not in SUBS_DTYPES + ("INDEX", "INT64"):
            require_dtype(info, s.dtype, SUBS_DTYPES, "scalar dtype")
    elif info.op == "tile.divs":
        require_dtype(info, a.dtype, DIV_DTYPES)
    else:
        require_dtype(info, a.dtype, NUMERIC_DTYPES)
    return TileType(a.shape, a.dtype, valid=a.valid)


def _subs_arch(arch: Any, info: CallInfo) -> None:
    dt = tile(info, "lhs").dtype.name
    warn_unvalidated(arch, info, f"subs:{dt}", f"on {dt}")


def _div_arch(arch: Any, info: CallInfo) -> None:
    dt = tile(info, "lhs").dtype.name
    warn_unvalidated(arch, info, f"div:{dt}", f"on {dt}")


_DOCS = {
    "add": "Elementwise a + b",
    "sub": "Elementwise a - b",
    "mul": "Elementwise a * b",
    "div": "Elementwise a / b (IEEE for floats; ints truncate toward zero, x/0 is poisoned)",
    "maximum": "Elementwise max(a, b)",
    "minimum": "Elementwise min(a, b)",
}
_SCALAR = {"add": "adds", "sub": "subs", "mul": "muls", "div": "divs",
           "maximum": "maximums", "minimum": "minimums"}

for _name, _fn in _BINARY.items():
    _sname = _SCALAR[_name]
    _params = [ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile")]
    if _name == "div":
        # PyPTO's PTOAS precision mode; positional there too: pl.div(a, b, True)
        _params.append(ParamSpec("high_precision", "bool", default=False))
    register(OpSpec(
        name=f"tile.{_name}",
        params=tuple(_params),
        type_rule=_binary_type,
        mem=VEC2,
        doc=f"{_DOCS[_name]} over lhs's valid region; same dtype, rhs may broadcast where a "
            "dim is 1; computed in float32/int64 and rounded once to the tile dtype.",
        spellings=(_name,),
        scalar_form=f"tile.{_sname}",
        arch_rule=_div_arch if _name == "div" else None,
        compute=_make_compute(_fn, _FLOAT32_UFUNC.get(_name)),
        batchable=True,
        tensor_promotes=("lhs", "rhs"),
    ))
    register(OpSpec(
        name=f"tile.{_sname}",
        params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "scalar")),
        type_rule=_scalar_type,
        mem=VEC1,
        doc=f"{_DOCS[_name].split(' (')[0]} with a scalar b, first converted to the tile "
            "dtype (as the device narrows it); result rounded once to the tile dtype.",
        spellings=(_sname,),
        arch_rule=_subs_arch if _sname == "subs" else None,
        compute=_make_compute(_fn),
        batchable=True,
    ))
