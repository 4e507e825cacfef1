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

from bisect import bisect_left
from collections.abc import Iterator
from typing import Any

import numpy as np

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import SimulationError


class RootBuffer:
    """One allocation: an entry parameter's staged array or a `create_tensor` result."""

    __slots__ = (
        "id", "data", "shape", "itemsize", "nbytes", "dtype", "name", "origin", "_writers",
        "_readers",
    )

    def __init__(self, rid: int, data: np.ndarray, dtype: DataType, name: str, origin: str) -> None:
        self.id = rid
        self.data = data  # C-contiguous (None once only its handles hold it: `release`)
        self.shape, self.itemsize, self.nbytes = data.shape, data.itemsize, data.nbytes
        self.dtype = dtype
        self.name = name
        self.origin = origin  # "In" | "Out" | "InOut" (entry params) | "create_tensor"
        self._writers: WindowIndex | None = None
        self._readers: WindowIndex | None = None

    # Dependency bookkeeping of the task graph: its live writers and (strict WAR checks
    # only) its readers, each a window with the id of its task.  Made on first use: a
    # run whose record nobody asks for never links its tasks.
    @property
    def writers(self) -> WindowIndex:
        if self._writers is None:
            self._writers = WindowIndex()
        return self._writers

    @property
    def readers(self) -> WindowIndex:
        if self._readers is None:
            self._readers = WindowIndex()
        return self._readers

    def handle(self, data: np.ndarray | None = None) -> TensorHandle:
        """The handle covering the whole buffer (``data``: the buffer, when the root does
        not hold it)."""
        if data is None:
            data = self.data
        h = TensorHandle.__new__(TensorHandle)
        h.root = self
        h.array = data
        h.start = h.lo = 0
        h.shape = shape = data.shape
        h.strides = _c_strides(shape)
        h.hi = data.size
        h.coords = _ZEROS[len(shape)]
        h.window = None
        return h


def whole_root(
    roots: list[RootBuffer], data: np.ndarray, dtype: DataType, name: str, origin: str,
    keep: bool = True,
) -> TensorHandle:
    """A new root buffer appended to ``roots`` (its id: its position) and the handle
    covering it (every entry argument of every run makes one: no __init__ call).  With
    ``keep`` False the root does not hold ``data`` (`RootBuffer.data` None): its handles
    do, so it is freed with the last of them (a made tensor)."""
    root = RootBuffer.__new__(RootBuffer)
    root.id = len(roots)
    root.data = data if keep else None
    root.shape, root.itemsize, root.nbytes = data.shape, data.itemsize, data.nbytes
    root.dtype = dtype
    root.name = name
    root.origin = origin
    root._writers = root._readers = None
    roots.append(root)
    return root.handle(data)


_ZEROS = tuple((0,) * n for n in range(65))  # the origin in every rank numpy 2 allows (64)
_STRIDES: dict[tuple[int, ...], tuple[int, ...]] = {}
_ONE = (1,)


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

    __slots__ = ("root", "array", "start", "shape", "strides", "lo", "hi", "coords", "window")

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
        # The declared shape of a slice cut at its source's edge (PyPTO clamps the view):
        # ``shape`` is the part inside, what the kernel's reads are bounded by.
        self.window: tuple[int, ...] | None = None

    def __repr__(self) -> str:
        return f"<tensor {self.root.name} {list(self.shape)} {self.root.dtype.name} @{self.start}>"

    @property
    def dtype(self) -> DataType:
        return self.root.dtype

    @property
    def byte_range(self) -> tuple[int, int]:
        """[first byte, past-the-end byte) inside the root buffer."""
        size = self.root.itemsize
        return (self.lo * size, self.hi * size)

    @property
    def is_whole(self) -> bool:
        return self.start == 0 and self.shape == self.root.shape

    @property
    def is_plain_whole(self) -> bool:
        """The whole buffer in its own row-major order (the root's own array)."""
        return self.is_whole and self.strides == _c_strides(self.shape)

    def husk(self) -> TensorHandle:
        """The same window without its array: what the task record and the dependency
        indexes keep, so they never hold a buffer alive after its last task ran."""
        h = TensorHandle.__new__(TensorHandle)
        h.root = self.root  # (one store a line: no tuple built and unpacked)
        h.array = None
        h.start = self.start
        h.shape = self.shape
        h.strides = self.strides
        h.lo = self.lo
        h.hi = self.hi
        h.coords = self.coords
        return h


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


# -- window index ----------------------------------------------------------------------

Entry = tuple[int, "TensorHandle", int]  # (insertion number, window, task id)
_SEQ_BITS = 40  # sort key: element offset << _SEQ_BITS | insertion number
_CHUNK = 512  # entries per chunk of a length class's sorted run


class WindowIndex:
    """Windows of one root buffer, each with a task id, found by element interval.

    The task graph keeps a root's live writers here (and, for strict WAR checks, its
    readers).  `overlapping` returns every entry whose element interval [lo, hi)
    meets the query's, in insertion order: a superset of what `overlaps` accepts
    (the graph applies that exact test), so the result is the same as scanning a
    list of every entry, at O(log n + k) per length class present instead of O(n).

    Entries are grouped by length class ``(hi - lo).bit_length()``: in class c every
    length is below 2**c, so an entry meeting [lo, hi) starts in (lo - 2**c, hi), one
    contiguous run of the class's entries sorted by start.  Each class is a sorted
    list of chunks (bounded inserts and deletes).  Empty windows meet nothing and are
    not stored.
    """

    __slots__ = ("_classes", "_seq", "size")

    def __init__(self) -> None:
        # length class -> (chunk keys, chunk entries, last key of each chunk)
        self._classes: dict[int, tuple[list[list[int]], list[list[Entry]], list[int]]] = {}
        self._seq = 0
        self.size = 0

    def __len__(self) -> int:
        return self.size

    def __iter__(self) -> Iterator[Entry]:
        """Every entry, in insertion order."""
        found = [e for _, entries, _ in self._classes.values() for run in entries for e in run]
        found.sort(key=_first)
        return iter(found)

    def add(self, h: TensorHandle, tid: int) -> None:
        lo, hi = h.lo, h.hi
        if hi <= lo:
            return
        seq = self._seq
        self._seq = seq + 1
        key = (lo << _SEQ_BITS) | seq
        entry = (seq, h, tid)
        cls = self._classes.get((hi - lo).bit_length())
        if cls is None:
            self._classes[(hi - lo).bit_length()] = ([[key]], [[entry]], [key])
            self.size += 1
            return
        keys, entries, maxes = cls
        c = bisect_left(maxes, key)
        if c == len(maxes):
            c -= 1
        run_keys, run = keys[c], entries[c]
        i = bisect_left(run_keys, key)
        run_keys.insert(i, key)
        run.insert(i, entry)
        maxes[c] = run_keys[-1]
        if len(run_keys) > 2 * _CHUNK:  # split the chunk in halves
            keys[c:c + 1] = [run_keys[:_CHUNK], run_keys[_CHUNK:]]
            entries[c:c + 1] = [run[:_CHUNK], run[_CHUNK:]]
            maxes[c:c + 1] = [run_keys[_CHUNK - 1], run_keys[-1]]
        self.size += 1

    def remove(self, entry: Entry) -> None:
        """Drop an entry returned by `overlapping` (or iteration)."""
        seq, h, _ = entry
        length = (h.hi - h.lo).bit_length()
        keys, entries, maxes = self._classes[length]
        key = (h.lo << _SEQ_BITS) | seq
        c = bisect_left(maxes, key)
        run_keys = keys[c]
        i = bisect_left(run_keys, key)
        if i == len(run_keys) or run_keys[i] != key:  # pragma: no cover - caller's bug
            raise KeyError(entry)
        del run_keys[i]
        del entries[c][i]
        if run_keys:
            maxes[c] = run_keys[-1]
        else:
            del keys[c], entries[c], maxes[c]
            if not maxes:
                del self._classes[length]
        self.size -= 1

    def overlapping(self, h: TensorHandle) -> list[Entry]:
        """Entries whose element interval meets ``h``'s, in insertion order."""
        lo, hi = h.lo, h.hi
        if hi <= lo or not self.size:
            return []
        found: list[Entry] = []
        stop = hi << _SEQ_BITS
        for length, (keys, entries, maxes) in self._classes.items():
            start = (lo - (1 << length) + 1) << _SEQ_BITS
            c = bisect_left(maxes, start)
            if c == len(maxes):
                continue
            run_keys = keys[c]
            i = bisect_left(run_keys, start)
            while True:
                n = len(run_keys)
                run = entries[c]
                while i < n and run_keys[i] < stop:
                    e = run[i]
                    if e[1].hi > lo:
                        found.append(e)
                    i += 1
                if i < n:
                    break
                c += 1
                if c == len(keys):
                    break
                run_keys, i = keys[c], 0
        if len(found) > 1:
            found.sort(key=_first)
        return found


def _first(entry: Entry) -> int:
    return entry[0]


# -- views ---------------------------------------------------------------------------


def slice_view(t: TensorHandle, shape: Any, offsets: Any, valid_shape: Any = None,
               clamp: bool = False) -> TensorHandle:
    """`pl.slice(t, shape, offsets, valid_shape=, clamp=)`: a window inside ``t`` (bounds
    checked, docs/design/checks.md §6).  A window is cut at its source's edge, as PyPTO
    clamps the view (its ``window`` keeps the declared shape); what has to fit is the
    extent declared read, valid_shape, when given.  A read of the cut part fails where
    the kernel reads it."""
    if len(shape) == 2 and len(offsets) == 2 and len(t.shape) == 2 and (
            valid_shape is None or _valid_2d(valid_shape, shape)):
        # Fast path (most slices of orchestration): a 2-D window of ints inside its source,
        # the same handle as below without the general loops (a valid_shape inside the
        # window changes only the checks, which a window inside its source passes).
        d0, d1 = shape
        o0, o1 = offsets
        n0, n1 = t.shape
        if (d0.__class__ is int and d1.__class__ is int and o0.__class__ is int
                and o1.__class__ is int and 0 <= o0 and 0 <= d0 and o0 + d0 <= n0
                and 0 <= o1 and 0 <= d1 and o1 + d1 <= n1):
            s0, s1 = strides = t.strides
            start = t.start + o0 * s0 + o1 * s1
            view = TensorHandle.__new__(TensorHandle)
            view.root, view.array, view.start = t.root, t.array[o0:o0 + d0, o1:o1 + d1], start
            view.shape, view.strides, view.lo, view.window = (d0, d1), strides, start, None
            view.hi = start + (d0 - 1) * s0 + (d1 - 1) * s1 + 1 if d0 and d1 else start
            # _frame_coords of two dims: row-major strides, and the window inside a frame row
            coords = None
            if 0 < s1 <= s0 and not s0 % s1:
                c0, rest = divmod(start, s0)
                c1, rest = divmod(rest, s1)
                if not rest and (c1 + d1) * s1 <= s0:
                    coords = (c0, c1)
            view.coords = coords
            return view
    shape = tuple(int(d) for d in shape)
    offsets = tuple(int(o) for o in offsets)
    if len(shape) != len(t.shape) or len(offsets) != len(t.shape):
        raise SimulationError(
            f"pl.slice of tensor '{t.root.name}' (rank {len(t.shape)}) got shape {list(shape)} "
            f"and offsets {list(offsets)}; both need one entry per dimension"
        )
    valid = shape if valid_shape is None else tuple(int(v) for v in valid_shape)
    for axis, (o, d, v, n) in enumerate(zip(offsets, shape, valid, t.shape)):
        if not 0 <= v <= d:
            raise SimulationError(
                f"pl.slice valid extent {v} of dimension {axis} is outside 0..{d} "
                f"(tensor '{t.root.name}', at run time)",
                hint="a valid region cannot be larger than the window that holds it",
            )
        if o < 0 or o > n:
            raise SimulationError(
                f"pl.slice starts outside dimension {axis}: offset {o} is not in 0..{n} "
                f"(tensor '{t.root.name}', at run time)",
                hint="a window starts inside its source; check the offsets computed by the "
                "orchestration",
            )
        if not clamp and valid_shape is not None and o + v > n:
            raise SimulationError(
                f"pl.slice reads past the end of dimension {axis}: offset {o} + valid extent {v} > "
                f"source extent {n} (tensor '{t.root.name}', at run time)",
                hint="shrink the window or check the offsets computed by the orchestration",
            )
    declared = shape
    shape = tuple(min(d, max(0, n - o)) for o, d, n in zip(offsets, shape, t.shape))
    index = tuple(slice(o, o + d) for o, d in zip(offsets, shape))
    start = t.start + sum(o * s for o, s in zip(offsets, t.strides))
    view = TensorHandle(t.root, t.array[index], start, shape, t.strides)
    if shape != declared:
        view.window = declared
    return view


def _valid_2d(valid: Any, shape: Any) -> bool:
    """Whether a 2-D ``valid_shape`` is two ints, each within its window dimension."""
    if len(valid) != 2:
        return False
    v0, v1 = valid
    d0, d1 = shape
    return (v0.__class__ is int and v1.__class__ is int and d0.__class__ is int
            and d1.__class__ is int and 0 <= v0 <= d0 and 0 <= v1 <= d1)


def element_window(t: TensorHandle, index: tuple[int, ...]) -> TensorHandle:
    """The one-element window of ``t`` at ``index`` (in range): what a scalar read or
    write of orchestration touches, so it waits only for that element's tasks."""
    strides = t.strides
    if len(index) == 1:  # (a 1-D tensor: most scalar reads) the handle below, at less cost
        i, = index
        s, = strides
        start = t.start + i * s
        view = TensorHandle.__new__(TensorHandle)
        view.root, view.array, view.start = t.root, t.array[i:i + 1], start
        view.shape, view.strides, view.lo, view.hi, view.window = _ONE, strides, start, \
            start + 1, None
        view.coords = (start // s,) if s > 0 and not start % s else None  # (_frame_coords)
        return view
    start = t.start + sum(i * s for i, s in zip(index, strides))
    view = t.array[tuple(slice(i, i + 1) for i in index)]
    return TensorHandle(t.root, view, start, (1,) * len(index), strides)


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
