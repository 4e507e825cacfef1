"""Unary elementwise ops (docs/design/language.md §21): exp, log, sqrt, rsqrt, recip, abs, neg,
relu,
sin, cos.  Transcendentals are numpy's float32 results rounded once to the tile
dtype, not the device's approximations (docs/design/numerics.md §2).

``log``/``recip(high_precision=True)`` (FP16/FP32 only) and ``rsqrt(tile, tmp)`` select
the device's high-precision templates; the simulator's float32 result is already at
least that accurate, so the mode changes the checks, not the numbers.  Tile ``rsqrt``
has no ``high_precision`` keyword (PyPTO: the scratch tile is the switch).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import (
    FLOAT_DTYPES,
    NUMERIC_DTYPES,
    SIGNED_INT_DTYPES,
    dims,
    np,
    optional_tile,
    require_dtype,
    require_same_dtype,
    tile,
)
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TileType

FLOATS = FLOAT_DTYPES[:3]  # FP16, FP32, BF16
SIGNED = SIGNED_INT_DTYPES + FLOATS

# name -> (allowed dtypes, numpy function on the wide array, doc)
_UNARY: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "exp": (FLOATS, lambda x: np.exp(x), "e**x"),
    "log": (("FP16", "FP32"), lambda x: np.log(x), "natural log (FP16/FP32)"),
    "sqrt": (FLOATS, lambda x: np.sqrt(x), "square root"),
    "rsqrt": (FLOATS, lambda x: np.float32(1.0) / np.sqrt(x), "1/sqrt(x)"),
    "recip": (FLOATS, lambda x: np.float32(1.0) / x, "1/x"),
    "abs": (SIGNED, lambda x: np.abs(x), "absolute value (ints wrap: abs(INT_MIN) = INT_MIN)"),
    "neg": (SIGNED, lambda x: -x, "negation (ints wrap)"),
    "relu": (NUMERIC_DTYPES, lambda x: np.maximum(x, 0), "max(x, 0)"),
    "sin": (("FP32",), lambda x: np.sin(x), "sine, FP32 only"),
    "cos": (("FP32",), lambda x: np.cos(x), "cosine, FP32 only"),
}


def _unary_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    require_dtype(info, src.dtype, _UNARY[info.op.split(".", 1)[1]][0])
    if info.values.get("high_precision"):
        require_dtype(info, src.dtype, ("FP16", "FP32"), "with high_precision=True dtype")
    tmp = optional_tile(info, "tmp")
    if tmp is not None:
        require_same_dtype(info, src.dtype, tmp.dtype, "tmp and the input")
        if tuple(tmp.shape) != tuple(src.shape):
            raise OpTypeError(
                f"The operator {info.op} requires tmp to have the input's shape "
                f"{dims(src.shape)}, but got {dims(tmp.shape)}"
            )
    return TileType(src.shape, src.dtype, valid=src.valid)


def _make(fn: Any):
    def compute(tile: Any, tmp: Any = None, **_: Any) -> Any:
        return fn(tile)

    return compute


for _name, (_allowed, _fn, _doc) in _UNARY.items():
    _params = [ParamSpec("tile", "tile")]
    if _name == "rsqrt":
        _params.append(ParamSpec("tmp", "tile", default=None, optional=True))
    if _name in ("recip", "log"):  # PyPTO's PTOAS precision mode (positional there too)
        _params.append(ParamSpec("high_precision", "bool", default=False))
    register(OpSpec(
        name=f"tile.{_name}",
        params=tuple(_params),
        type_rule=_unary_type,
        mem=MemRule(operands={"tile": ("Vec",), "tmp": ("Vec",)}, result="Vec"),
        compute=_make(_fn),
        batchable=True,
        reads_while_writing=_name in ("recip", "rsqrt"),
        spellings=(_name,),
        doc=f"Elementwise {_doc} over the valid region; shape, dtype and valid kept; "
            "computed in float32 (int64 for ints), rounded once.",
    ))
