"""The generic runner of op semantics: what the simulator calls for every tile op.

`apply(spec, *operands, out=..., **attrs)` turns `TileValue` operands into the wide
valid-region arrays a ``compute`` expects (scalars converted to the tile dtype
first, docs/design/numerics.md §2), rounds the wide result once to ``out.dtype`` and places it in
a fresh buffer poisoned outside the valid region (docs/design/numerics.md §6).  ``execute`` ops get
their operands unchanged.

Its numpy is `ir.lazy_numpy.np`, so that the op modules can import these helpers
while the registry stays numpy-free.

Speed matters (the simulator must stay within a small factor of plain numpy), so
the fast path makes no copies beyond numpy's own result arrays: no widening copy
for FP32/INT64, no narrowing copy when the dtype already matches, no poison fill
when the result covers the whole tile.

Precise mode (``RunConfig.precise``, ``--pypto-precise``): `PRECISE` is set by the
simulator around a run (a context variable, like `values.UNINITIALIZED`, so nothing
stays set after it).  While it is true, `place` keeps a float result whose dtype is
narrower than FP32 in FP32 storage instead of rounding it, so a chain of BF16/FP16
ops runs without per-op rounding; the tile keeps its dtype (its label) and the one
rounding happens where data leaves the kernel (a store into the tensor, which
converts to the tensor's dtype).  Explicit `pl.cast` conversions still round: they
are the program's own choice.  `nominal` narrows such a tile for the ops that read
its storage bit by bit.
"""

from __future__ import annotations

import contextvars
import math
from typing import Any

from pytest_pypto.ir.dtypes import ALL_DTYPES, FP32, DataType
from pytest_pypto.ir.lazy_numpy import np
from pytest_pypto.ir.registry import OpRuleError, OpSpec
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue, new_buffer, widen

_BY_NUMPY: dict[Any, DataType] = {}  # numpy dtype -> DataType, filled as dtypes are met
_BY_STORAGE: dict[str, DataType] = {}  # storage name -> DataType (needs no ml_dtypes import)

# True while a precise run executes (set and reset by the simulator's Worker).
PRECISE: contextvars.ContextVar[bool] = contextvars.ContextVar("pypto_precise", default=False)
# Set by the simulator for the length of a run, which silences numpy's floating-point
# errors once (IEEE specials are the DSL's numerics, docs/design/numerics.md §2): ops then skip
# their own errstate.
QUIET_FLOATS: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "pypto_quiet_floats", default=False
)


def dtype_of(array: np.ndarray) -> DataType:
    """The DataType that stores as ``array.dtype`` (int64 -> INT64, not INDEX).

    Matched by storage name, so a run that meets no ml_dtypes array never imports
    ml_dtypes (whose import costs 0.8 s in version 0.7)."""
    have = array.dtype
    found = _BY_NUMPY.get(have)
    if found is not None:
        return found
    if not _BY_STORAGE:
        for dt in ALL_DTYPES:
            if dt.storage is not None and dt.name != "INDEX" and dt.bits != 4:
                _BY_STORAGE.setdefault(dt.storage, dt)
    found = _BY_STORAGE.get(np.dtype(have).name)
    if found is None:
        raise TypeError(f"no DSL dtype stores as numpy {have}")
    _BY_NUMPY[have] = found
    return found


class ScalarRangeError(OpRuleError):
    """A run-time float scalar (NaN or inf) has no value in an integer tile's dtype; the
    simulator reports it at the user's line with the Scalar values."""


def scalar_to_dtype(value: Any, dtype: DataType) -> Any:
    """Convert a scalar operand to the tile dtype, as the device narrows it (docs/design/numerics.md
    §2).

    Floats round once (RNE) to the tile's float format and come back as a Python float;
    ints (and finite floats given to an int tile, truncated as a C cast) wrap to the
    width.  NaN and inf have no integer value: `ScalarRangeError` names the value and
    the dtype's range (rather than a bare OverflowError, or a silent 0).
    """
    if dtype.is_float:
        cls = value.__class__
        if cls is float or cls is int:  # (the sign tells 0.0 from -0.0, equal as keys)
            key = (cls, value, dtype.name, math.copysign(1.0, value) if cls is float else 0.0)
            hit = _CONVERTED.get(key)
            if hit is None:
                if len(_CONVERTED) >= _CONVERTED_MAX:
                    _CONVERTED.clear()
                with np.errstate(over="ignore", invalid="ignore"):
                    hit = _CONVERTED[key] = float(
                        np.asarray(float(value), dtype=np.float64).astype(dtype.np))
            return hit
        with np.errstate(over="ignore", invalid="ignore"):
            return float(np.asarray(float(value), dtype=np.float64).astype(dtype.np))
    if dtype.is_int:
        if isinstance(value, float) or (hasattr(value, "dtype") and value.dtype.kind == "f"):
            value = _float_to_int(float(value), dtype)
        v = int(value) & ((1 << dtype.bits) - 1)
        if dtype.kind != "uint" and v >= 1 << (dtype.bits - 1):
            v -= 1 << dtype.bits
        return v
    return bool(value)


# (type, value, float dtype name, sign) -> the scalar rounded to that dtype: a kernel converts the
# same few literals and Scalars over and over (a NaN key never matches: converted anew)
_CONVERTED: dict[tuple[type, Any, str, float], float] = {}
_CONVERTED_MAX = 4096


def _float_to_int(value: float, dtype: DataType) -> int:
    """C truncation of a float scalar for an int tile; NaN / inf raise `ScalarRangeError`."""
    if not math.isfinite(value):
        if dtype.kind == "uint":
            lo, hi = 0, (1 << dtype.bits) - 1
        else:
            lo, hi = -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1
        raise ScalarRangeError(
            f"the scalar {value!r} has no {dtype.name} value: {dtype.name} holds integers in "
            f"[{lo}, {hi}]",
            f"check the Scalar that reaches this {dtype.name} tile op, or pl.cast the tile "
            "to a float dtype first",
        )
    return int(value)


def convert_array(array: Any, dtype: DataType) -> np.ndarray:
    """Round/wrap an array once to ``dtype`` (floats RNE with overflow to inf; ints wrap;
    floats into ints: round half to even, NaN -> 0, clamped).  No copy when it matches."""
    arr = np.asarray(array)
    target = dtype.np
    if arr.dtype == target:
        return arr
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype.is_int and arr.dtype.kind == "f":
            info = np.iinfo(target)
            arr = np.nan_to_num(np.rint(arr.astype(np.float64)), nan=0.0)
            return np.clip(arr, info.min, info.max).astype(target)
        if dtype.is_float and arr.dtype.kind == "f" and arr.dtype.itemsize > 4:
            arr = arr.astype(np.float32)
        return arr.astype(target, copy=False)


def _joint_views(tiles: list[TileValue]) -> list[np.ndarray]:
    """Views of every tile over the first tile's valid region (broadcast dims stay 1)."""
    lead = tiles[0]
    rank = lead.data.ndim
    if any(t.data.ndim != rank for t in tiles):
        return [t.valid_view() for t in tiles]
    ext = []
    for d in range(rank):
        e = int(lead.valid[d])
        if lead.shape[d] == 1:
            wider = [int(t.valid[d]) for t in tiles[1:] if t.shape[d] != 1]
            if wider:
                e = wider[0]
        ext.append(e)
    views = []
    for t in tiles:
        sl = tuple(
            slice(0, 1) if t.shape[d] == 1 and ext[d] > 1 else slice(0, min(ext[d], t.shape[d]))
            for d in range(rank)
        )
        views.append(t.data[sl])
    return views


def _low_float(dtype: DataType) -> bool:
    return dtype.is_float and dtype.bits < 32


def place(wide: Any, out: TileType, inputs: tuple[Any, ...] = ()) -> TileValue:
    """Round ``wide`` once to ``out.dtype`` and put it at the origin of a fresh tile buffer
    (under `PRECISE`, a float result narrower than FP32 stays in FP32 storage)."""
    storage = out.dtype
    if _low_float(storage) and PRECISE.get():
        storage = FP32
    narrowed = convert_array(wide, storage)
    # A result that owns its memory is fresh (numpy made it); anything else may alias an input.
    if narrowed.base is not None or not narrowed.flags.writeable:
        if not narrowed.flags.writeable or any(
            isinstance(t, TileValue) and np.may_share_memory(narrowed, t.data) for t in inputs
        ):
            narrowed = narrowed.copy()
    valid = narrowed.shape
    if valid == out.shape:
        data = narrowed
    else:
        if len(valid) != len(out.shape) or any(v > s for v, s in zip(valid, out.shape)):
            raise ValueError(f"result region {valid} does not fit the tile shape {out.shape}")
        data = new_buffer(tuple(out.shape), storage, out.pad)
        data[tuple(slice(0, v) for v in valid)] = narrowed
    return TileValue(data, valid, out.dtype, out.space or "Vec", out.pad)


def nominal(value: Any) -> Any:
    """``value`` with its buffer in its dtype's own storage: a precise-mode tile held in
    FP32 is rounded once to its dtype (a copy); anything else is returned as is."""
    if not isinstance(value, TileValue):
        return value
    target = value.dtype.np if value.dtype.storage is not None else None
    if target is None or value.data.dtype == target:
        return value
    return TileValue(
        convert_array(value.data, value.dtype), value.valid, value.dtype, value.space, value.pad
    )


def _full(t: TileValue) -> bool:
    return t.valid == t.data.shape


def apply(spec: OpSpec, *operands: Any, out: TileType | None = None, **attrs: Any) -> Any:
    """Run one op on run-time values: ``compute`` through widen/round/place, ``execute`` as is.

    ``out`` is the compiled result type; when omitted for a compute op (tests), the result
    takes the first tile's dtype and the result array's shape.
    """
    if spec.execute is not None:
        return spec.execute(*operands, out=out, **attrs)
    if out is not None and not attrs:
        if len(operands) == 2:
            fast = _float32_binary(spec, operands, out)
            if fast is not None:
                return fast
        elif len(operands) == 1:
            # One fully valid FP32 tile (a unary op): the general path's widen is the buffer
            # itself, so compute on it and place the result, without the operand loop.
            t = operands[0]
            if t.__class__ is TileValue and t.valid == t.data.shape and t.dtype.name == "FP32" \
                    and t.data.dtype == np.float32:
                if QUIET_FLOATS.get():
                    wide = spec.compute(t.data)
                else:
                    with np.errstate(all="ignore"):
                        wide = spec.compute(t.data)
                return place(wide, out, operands)
    tiles = [op for op in operands if isinstance(op, TileValue)]
    lead_dtype = tiles[0].dtype if tiles else out.dtype
    if all(_full(t) for t in tiles):
        # Fast path: every operand fully valid; its whole buffer is its valid region, and
        # equal-rank operands broadcast exactly as _joint_views would extend them.
        views = iter([t.data for t in tiles])
    elif getattr(spec.compute, "region", None) == "lhs" and len(tiles) > 1:
        views = iter(_joint_views(tiles))
    else:
        views = iter([t.valid_view() for t in tiles])
    args = []
    scalar_dtype = None
    for op in operands:
        if isinstance(op, TileValue):
            args.append(widen(next(views), op.dtype))
        elif op is None or isinstance(op, np.ndarray):
            args.append(op)
        else:
            if scalar_dtype is None:  # precise: a scalar is not rounded to a narrow tile dtype
                low = _low_float(lead_dtype) and PRECISE.get()
                scalar_dtype = FP32 if low else lead_dtype
            args.append(scalar_to_dtype(op, scalar_dtype))
    if QUIET_FLOATS.get():
        wide = spec.compute(*args, **attrs)
    else:
        with np.errstate(all="ignore"):
            wide = spec.compute(*args, **attrs)
    if out is None:
        shape = np.shape(wide)
        out = TileType(tuple(shape), lead_dtype, tiles[0].space if tiles else None)
    return place(wide, out, operands)


def _float32_binary(spec: OpSpec, operands: tuple[Any, ...], out: TileType) -> TileValue | None:
    """A binary float32-ufunc op (``compute.float32_ufunc``) on two fully valid FP32 tiles of
    the result's shape (or the second a column [rows, 1] the ufunc broadcasts, as the
    row_expand ops' compute does), into an FP32 result: the ufunc's own result is what
    widen, compute and place give (float32 math, no rounding, a fresh buffer), without
    their calls.
    None when any of that does not hold (the general path runs)."""
    global _F32
    hit = _UFUNCS.get(id(spec))
    if hit is not None and hit[0] is spec:
        ufunc = hit[1]
    else:  # first sight (or an id reused by another entry, e.g. one a test registered)
        name = getattr(spec.compute, "float32_ufunc", None)
        ufunc = getattr(np, name) if name else None
        _UFUNCS[id(spec)] = (spec, ufunc)
        _F32 = np.dtype(np.float32)  # here, not at import: the registry imports no numpy
    if ufunc is None or out.dtype.name != "FP32":
        return None
    a, b = operands
    if a.__class__ is not TileValue or b.__class__ is not TileValue:
        return None
    da, db = a.data, b.data
    shape = out.shape
    f32 = _F32
    if (da.dtype is not f32 or db.dtype is not f32 or da.shape != shape or a.valid != shape
            or b.valid != db.shape or a.dtype.name != "FP32" or b.dtype.name != "FP32"):
        return None
    if db.shape != shape and (len(shape) != 2 or db.shape != (shape[0], 1)):
        return None  # (a column [rows, 1] broadcasts along the rows: row_expand_*)
    if QUIET_FLOATS.get():
        data = ufunc(da, db)
    else:
        with np.errstate(all="ignore"):
            data = ufunc(da, db)
    return TileValue(data, shape, out.dtype, out.space or "Vec", out.pad)


_UFUNCS: dict[int, tuple[OpSpec, Any]] = {}  # id(op entry) -> (entry, float32 ufunc or None)
# numpy's builtin dtypes are singletons: compared by identity (set at a ufunc's first sight)
_F32: Any = None
