"""Tensors of a simulated run: root buffers and the handles (views) orchestration passes around.

The device runtime tracks dependencies by memory range, not by Python object, so a
handle here is a root buffer plus an element window (start offset, shape, element
strides) alongside the numpy view kernels receive.  That window gives every task
argument a byte range, and lets two views of one root be tested for overlap
exactly: two windows with the same strides are boxes in one row-major frame, so
they overlap iff the boxes intersect; anything else falls back to comparing byte
intervals (conservative: it can only add a dependency, never drop one).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import SimulationError


class RootBuffer:
    """One allocation: an entry parameter's staged array or a `create_tensor` result."""

    __slots__ = ("id", "data", "dtype", "name", "origin", "writers", "readers")

    def __init__(self, rid: int, data: np.ndarray, dtype: DataType, name: str, origin: str) -> None:
        self.id = rid
        self.data = data  # C-contiguous
        self.dtype = dtype
        self.name = name
        self.origin = origin  # "In" | "Out" | "InOut" (entry params) | "create_tensor"
        # Dependency bookkeeping of the task graph: (handle, task id) per write / read.
        self.writers: list[tuple[TensorHandle, int]] = []
        self.readers: list[tuple[TensorHandle, int]] = []

    def handle(self) -> TensorHandle:
        """The handle covering the whole buffer."""
        data = self.data
        h = TensorHandle.__new__(TensorHandle)
        h.root = self
        h.array = data
        h.start = h.lo = 0
        h.shape = data.shape
        h.strides = _c_strides(data.shape)
        h.hi = data.size
        h.coords = (0,) * data.ndim
        return h


_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}


def _c_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    """Element strides of a row-major array of ``shape`` (cached per shape)."""
    strides = _STRIDES.get(shape)
    if strides is None:
        out = []
        acc = 1
        for d in reversed(shape):
            out.append(acc)
            acc *= max(int(d), 1)
        strides = _STRIDES[tuple(shape)] = tuple(reversed(out))
    return strides


class TensorHandle:
    """A window of a root buffer: what orchestration code holds for a tensor."""

    __slots__ = ("root", "array", "start", "shape", "strides", "lo", "hi", "coords")

    def __init__(
        self,
        root: RootBuffer,
        array: np.ndarray,
        start: int,
        shape: tuple[int, ...],
        strides: tuple[int, ...],
    ) -> None:
        self.root = root
        self.array = array  # numpy view of root.data
        self.start = start  # element offset of the first element
        self.shape = tuple(int(d) for d in shape)
        self.strides = strides  # element strides
        if 0 in self.shape:
            self.lo = self.hi = start
        else:
            self.lo = start
            self.hi = start + sum((d - 1) * s for d, s in zip(self.shape, strides)) + 1
        self.coords = _frame_coords(start, self.shape, strides)

    def __repr__(self) -> str:
        return f"<tensor {self.root.name} {list(self.shape)} {self.root.dtype.name} @{self.start}>"

    @property
    def dtype(self) -> DataType:
        return self.root.dtype

    @property
    def byte_range(self) -> tuple[int, int]:
        """[first byte, past-the-end byte) inside the root buffer."""
        size = self.root.data.itemsize
        return (self.lo * size, self.hi * size)

    @property
    def is_whole(self) -> bool:
        return self.start == 0 and self.shape == self.root.data.shape


def _frame_coords(start: int, shape: tuple[int, ...], strides: tuple[int, ...]) -> tuple | None:
    """Coordinates of the window's first element in the row-major frame its strides imply.

    None when the strides do not describe a row-major frame (e.g. after a transpose)
    or the window does not fit inside one frame row; overlap then falls back to bytes.
    """
    coords = []
    rest = start
    prev = None
    for d, s in zip(shape, strides):
        if s <= 0 or (prev is not None and (prev % s or s > prev)):
            return None
        c, rest = divmod(rest, s)
        if prev is not None and (c + d) * s > prev:
            return None  # the window wraps past its frame row
        coords.append(c)
        prev = s
    if rest:
        return None
    return tuple(coords)


def overlaps(a: TensorHandle, b: TensorHandle) -> bool:
    """Whether two windows share an element (exact for boxes of one frame, else by bytes)."""
    if a.root is not b.root or a.hi <= b.lo or b.hi <= a.lo or a.lo == a.hi or b.lo == b.hi:
        return False
    if a.strides == b.strides and a.coords is not None and b.coords is not None:
        for ca, da, cb, db in zip(a.coords, a.shape, b.coords, b.shape):
            if ca + da <= cb or cb + db <= ca:
                return False
    return True


def covers(a: TensorHandle, b: TensorHandle) -> bool:
    """Whether window ``a`` contains every element of ``b`` (False when unsure)."""
    if a.root is not b.root:
        return False
    if a.is_whole:
        return True
    if a.strides == b.strides and a.coords is not None and b.coords is not None:
        return all(
            ca <= cb and cb + db <= ca + da
            for ca, da, cb, db in zip(a.coords, a.shape, b.coords, b.shape)
        )
    return False


# -- views ---------------------------------------------------------------------------


def slice_view(t: TensorHandle, shape: Any, offsets: Any) -> TensorHandle:
    """`pl.slice(t, shape, offsets)`: a window inside ``t`` (bounds checked, DSL §6.4)."""
    shape = tuple(int(d) for d in shape)
    offsets = tuple(int(o) for o in offsets)
    if len(shape) != len(t.shape) or len(offsets) != len(t.shape):
        raise SimulationError(
            f"pl.slice of tensor '{t.root.name}' (rank {len(t.shape)}) got shape {list(shape)} "
            f"and offsets {list(offsets)}; both need one entry per dimension"
        )
    for axis, (o, d, n) in enumerate(zip(offsets, shape, t.shape)):
        if o < 0 or d < 0 or o + d > n:
            raise SimulationError(
                f"pl.slice reads past the end of dimension {axis}: offset {o} + extent {d} > "
                f"source extent {n} (tensor '{t.root.name}', at run time)",
                hint="shrink the window or check the offsets computed by the orchestration",
            )
    index = tuple(slice(o, o + d) for o, d in zip(offsets, shape))
    start = t.start + sum(o * s for o, s in zip(offsets, t.strides))
    return TensorHandle(t.root, t.array[index], start, shape, t.strides)


def reshape_view(t: TensorHandle, shape: Any) -> TensorHandle:
    """`pl.reshape(t, shape)`: same elements, new shape; needs a contiguous window."""
    shape = tuple(int(d) for d in shape)
    if int(np.prod(shape, dtype=np.int64)) != t.array.size:
        raise SimulationError(
            f"pl.reshape of tensor '{t.root.name}' {list(t.shape)} to {list(shape)}: "
            f"element counts differ ({t.array.size} vs {int(np.prod(shape, dtype=np.int64))})"
        )
    if not _is_contiguous(t):
        raise SimulationError(
            f"pl.reshape of a non-contiguous window of tensor '{t.root.name}' "
            f"({list(t.shape)} at element {t.start}) would need a copy",
            hint="reshape the whole tensor first, then slice",
        )
    view = t.array.reshape(shape)
    return TensorHandle(t.root, view, t.start, shape, _c_strides(shape))


def transpose_view(t: TensorHandle, ax1: int, ax2: int) -> TensorHandle:
    """`pl.transpose(t, ax1, ax2)` in orchestration: a strided view (no copy)."""
    rank = len(t.shape)
    a, b = int(ax1) % rank, int(ax2) % rank
    shape = list(t.shape)
    strides = list(t.strides)
    shape[a], shape[b] = shape[b], shape[a]
    strides[a], strides[b] = strides[b], strides[a]
    return TensorHandle(t.root, t.array.swapaxes(a, b), t.start, tuple(shape), tuple(strides))


def _is_contiguous(t: TensorHandle) -> bool:
    expected = 1
    for d, s in zip(reversed(t.shape), reversed(t.strides)):
        if d == 1:
            continue
        if s != expected:
            return False
        expected *= d
    return True
