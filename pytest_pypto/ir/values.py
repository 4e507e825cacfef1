"""Run-time values shared by the op registry's numpy semantics and the simulator.

A tile at run time is a `TileValue`: a numpy buffer of the tile's physical shape in
the storage dtype, plus its valid region and memory space.  Elements outside the
valid region are poisoned (docs/design/numerics.md §6) unless the tile has a pad value, so a test
that reads undefined memory fails loudly instead of passing by luck.

Its numpy is `ir.lazy_numpy.np`: the op modules import these helpers and must import
without numpy (compiler checks never compute, the simulator always does).
"""

from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.lazy_numpy import np

# "poison" (default) or "zero": how undefined memory reads (RunConfig.uninitialized).
UNINITIALIZED: contextvars.ContextVar[str] = contextvars.ContextVar(
    "pypto_uninitialized", default="poison"
)

POISON_BYTE = 0xA5

# Float poison: a quiet NaN whose payload repeats the 0xA5 bytes, so a NaN the program
# computed or was given (np.nan, 0/0: the canonical payload) is never taken for memory
# no store reached (docs/design/numerics.md §6).  Numpy copies and views keep the bits;
# arithmetic on poison may give another NaN, which is then an ordinary one.
NAN_POISON_BITS = {
    "float32": 0x7FE5A5A5,
    "float16": 0x7EA5,
    "bfloat16": 0x7FE5,
    "float8_e5m2": 0x7F,  # its canonical NaN is 0x7E
}


def poison_value(dtype: DataType) -> Any:
    """The scalar an undefined element of ``dtype`` holds (a NaN of its own payload,
    0xA5.. bytes, True).  FP8E4M3FN and FP8E8M0 have one NaN encoding: their poison is
    that NaN (`poison_is_distinct` is False for them)."""
    value = _POISON.get(dtype.name)
    if value is None:
        value = _POISON[dtype.name] = _make_poison(dtype)
    return value


_POISON: dict[str, Any] = {}  # dtype name -> its poison scalar (immutable; made once)


def _make_poison(dtype: DataType) -> Any:
    npd = dtype.np
    if dtype.name == "BOOL":
        return np.True_
    bits = NAN_POISON_BITS.get(npd.name)
    if bits is not None:
        return np.array(bits, dtype=f"u{npd.itemsize}").view(npd)[()]
    if dtype.is_float and _has_nan(npd):
        return np.array(np.nan, dtype=np.float32).astype(npd)[()]
    raw = np.full(npd.itemsize, POISON_BYTE, dtype=np.uint8)
    return raw.view(npd)[0]


def poison_is_distinct(dtype: DataType) -> bool:
    """Whether ``dtype``'s poison bits tell never-written memory from a value: not for
    BOOL (True) nor for a float whose only NaN is the poison (FP8E4M3FN, FP8E8M0)."""
    if dtype.name == "BOOL":
        return False
    return not dtype.is_float or dtype.np.name in NAN_POISON_BITS or not _has_nan(dtype.np)


def _has_nan(npd: np.dtype) -> bool:
    return bool(np.isnan(np.array(np.nan, dtype=np.float32).astype(npd)))


def fill_value(dtype: DataType, pad: str | None = None) -> Any:
    """What fills a fresh buffer or a tile's invalid region: the pad value if set,
    else poison (or zero when the run asks for zero-initialized memory)."""
    if pad is not None:
        return pad_value(dtype, pad)
    if UNINITIALIZED.get() == "zero":
        return np.zeros((), dtype=dtype.np)[()]
    return poison_value(dtype)


def pad_value(dtype: DataType, pad: str) -> Any:
    """`zero` -> 0; `min`/`max` -> -inf/+inf for floats, iinfo min/max for ints
    (docs/design/language.md §15)."""
    npd = dtype.np
    if pad == "zero":
        return np.zeros((), dtype=npd)[()]
    if dtype.is_float:
        value = -np.inf if pad == "min" else np.inf
        return np.array(value, dtype=np.float32).astype(npd)[()]
    info = np.iinfo(npd)
    return npd.type(info.min if pad == "min" else info.max)


def new_buffer(
    shape: tuple[int, ...], dtype: DataType, pad: str | None = None, *,
    name: str | None = None, value: Any = None, fill: Any = None,
) -> np.ndarray:
    """A fresh buffer of ``shape`` filled with ``value`` (default: the undefined-memory
    value; ``fill``: that value already looked up, `fill_value` of ``dtype`` and ``pad``).
    One this process cannot allocate is a `SimulationError` naming the tensor (``name``),
    its shape, dtype and size, not a bare ``MemoryError``."""
    npd = dtype.np
    if value is None:
        # the fill is a scalar of the buffer's own dtype: ``fill`` copies its bits, as
        # np.full does, at half the cost
        if fill is None:
            fill = fill_value(dtype, pad)
        try:
            buffer = np.empty(shape, dtype=npd)
        except (MemoryError, ValueError) as exc:
            if isinstance(exc, ValueError) and "too big" not in str(exc):
                raise
            raise too_big(shape, dtype, name) from None
        buffer.fill(fill)
        return buffer
    try:
        return np.full(shape, value, dtype=npd)
    except (MemoryError, ValueError) as exc:
        if isinstance(exc, ValueError) and "too big" not in str(exc):
            raise
        raise too_big(shape, dtype, name) from None


def too_big(shape: tuple[int, ...], dtype: DataType, name: str | None = None) -> Exception:
    """The error of a buffer this process cannot allocate (a runtime-error)."""
    count = 1
    for d in shape:
        count *= int(d)
    what = f"tensor '{name}'" if name else "a buffer"
    return SimulationError(
        f"cannot allocate {what}: {list(shape)} {dtype.name} needs "
        f"{size_text(count * dtype.np.itemsize)}, more memory than this process can get",
        hint="make the tensor smaller (the simulator holds every tensor in host memory)",
    )


def size_text(nbytes: int) -> str:
    """``4.00 TiB``: bytes in binary units, as numpy's allocation errors say it."""
    size, unit = float(nbytes), "bytes"
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if size < 1024 or unit == "EiB":
            break
        size /= 1024
    return f"{int(size)} bytes" if unit == "bytes" else f"{size:.2f} {unit}"


def valid_slices(valid: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(0, int(v)) for v in valid)


@dataclass
class TileValue:
    """A tile at run time: physical buffer, valid region, dtype, memory space, pad."""

    data: np.ndarray
    valid: tuple[int, ...]
    dtype: DataType
    space: str
    pad: str | None = None

    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(self.data.shape)

    def valid_view(self) -> np.ndarray:
        """The valid region (a view: writes go to the tile)."""
        return self.data[valid_slices(self.valid)]

    def invalidate_outside(self) -> None:
        """Re-fill everything outside the valid region (pad value or poison)."""
        mask = np.ones(self.data.shape, dtype=bool)
        mask[valid_slices(self.valid)] = False
        if mask.any():
            self.data[mask] = fill_value(self.dtype, self.pad)


def row_major_copy(array: np.ndarray) -> np.ndarray:
    """A C-contiguous copy of ``array``, bit for bit.  An extension float type (ml_dtypes'
    BF16, FP8, ...) is copied as the unsigned integer of its width: numpy's strided copy
    of such a type goes element by element through the type's own copy function, a
    quarter slower on a transposed BF16 view than the integer copy of the same bits."""
    dt = array.dtype
    if dt.isbuiltin == 2 and dt.itemsize in (1, 2):  # (2: a user-defined dtype)
        return array.view(f"u{dt.itemsize}").copy().view(dt)
    return array.copy()


def widen(array: np.ndarray, dtype: DataType) -> np.ndarray:
    """Exact widening for computation: floats -> float32, ints -> int64, bool unchanged.
    (BF16 by ml_dtypes' own cast: measured against widening by a 16-bit shift, it is
    faster at every size on ml_dtypes 0.5, 0.6 and 0.7.)"""
    if dtype.is_float:
        if array.dtype is _F32[0]:
            return array  # (already float32: what astype(copy=False) returns, sooner)
        if _F32[0] is None:
            _F32[0] = np.dtype(np.float32)
        return array.astype(np.float32, copy=False)
    if dtype.is_int:
        return array.astype(np.int64, copy=False)
    return array


# the float32 numpy dtype (a singleton: compared by identity), fetched on first use (the
# module imports no numpy)
_F32: list[Any] = [None]


def narrow(wide: Any, dtype: DataType) -> np.ndarray:
    """Round a wide result once to ``dtype``: RNE for floats, two's-complement wrap for ints."""
    arr = np.asarray(wide)
    if dtype.is_int and arr.dtype.kind == "f":
        raise TypeError("narrow(): float result for an integer dtype; convert in the op")
    if dtype.is_float and arr.dtype != np.float32 and arr.dtype.kind == "f":
        arr = arr.astype(np.float32)
    with np.errstate(over="ignore", invalid="ignore"):
        return arr.astype(dtype.np)
