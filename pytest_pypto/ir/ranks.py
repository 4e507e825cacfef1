# SPDX-License-Identifier: Apache-2.0
"""Window buffers of simulated devices, as both the runtime and the ops see them
(docs/design/distributed.md §1, §3).

A `WindowBuffer` is ``nbytes`` of memory on every rank of a run: one byte array per
rank, made when a rank first touches it.  Every byte array is registered here, so
code that holds a view of one (staging, an op's operand) can tell that the array is
window memory, whose rank it is, and where the same bytes are on another rank.

A buffer serves a group of the run's ranks, its comm domain (distributed.md §3a):
every rank by default, or the ranks its dispatches go to once the run seals it
(`WindowBuffer.seal`).  Ranks, peers and collectives on a window count within that
group: slice k is the k-th rank of the group.
"""

from __future__ import annotations

import itertools
import sys
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import Any, Protocol

from pytest_pypto.ir.lazy_numpy import np

__all__ = ["MAX_DEFERRALS", "RankContext", "WindowBuffer", "comm_ctx", "current", "defer",
           "group_place", "is_window", "live", "peer_view", "set_current", "take_deferred",
           "window_of"]


class RankContext(Protocol):
    """What an op running on a simulated rank may ask of its run (runtime/devices_sim.py)."""

    rank: int
    nranks: int

    def block_until(self, pred: Callable[[], bool], what: str, span: Any = None) -> None:
        """Wait until ``pred()`` holds, letting the other ranks run (a deadlock raises,
        at ``span`` when given)."""

    def rendezvous(self, key: Any, what: str, members: Sequence[int] | None = None) -> None:
        """Wait until every rank (of ``members``, global ranks) has made as many ``key``
        calls as this one has."""


_LOCAL = threading.local()


def current() -> RankContext | None:
    """The rank whose job runs in this thread (None: not a multi-chip run)."""
    return getattr(_LOCAL, "ctx", None)


def set_current(ctx: RankContext | None) -> None:
    _LOCAL.ctx = ctx


# A task's deferred completion conditions (pld.system.defer_wait, distributed.md §3b):
# the op registers them while its task runs; the task graph takes them when it returns.
MAX_DEFERRALS = 64  # conditions one task may register (PyPTO's cap)


def defer(pred: Callable[[], bool], what: str, holds: Callable[[], Any]) -> int:
    """Register a condition the running task's completion waits for: ``pred``, described
    by ``what`` and the current value ``holds()``; how many the task has now.  The
    callers' (file, line) pairs are kept, so the task graph can name the user's line."""
    pending = getattr(_LOCAL, "deferred", None)
    if pending is None:
        pending = _LOCAL.deferred = []
    frames = []
    frame = sys._getframe(1)
    while frame is not None and len(frames) < 8:
        frames.append((frame.f_code.co_filename, frame.f_lineno))
        frame = frame.f_back
    pending.append((pred, what, holds, tuple(frames)))
    return len(pending)


def take_deferred() -> list[tuple[Any, ...]] | None:
    """The conditions registered since the last call (None: none), forgotten here."""
    pending = getattr(_LOCAL, "deferred", None)
    if pending:
        _LOCAL.deferred = None
        return pending
    return None

# id(byte array) -> (buffer, rank): every live rank slice of every window buffer
_ROOTS: dict[int, tuple[WindowBuffer, int]] = {}
# handle -> buffer: what pld.get_comm_ctx(t) hands a kernel names t's comm domain
_HANDLES: weakref.WeakValueDictionary[int, WindowBuffer] = weakref.WeakValueDictionary()
_NEXT_HANDLE = itertools.count(1)  # 0: no window (the run's ranks)


class WindowBuffer:
    """``nbytes`` of window memory on each of ``nranks`` ranks: the run's ranks, or the
    ``devices`` (global ranks, ascending) it was sealed to."""

    __slots__ = ("nbytes", "nranks", "index", "devices", "handle", "_slices", "__weakref__")

    def __init__(self, nbytes: int, nranks: int, index: int = 0) -> None:
        if nbytes <= 0:
            raise ValueError(f"a window buffer needs a positive size, got {nbytes} bytes")
        self.nbytes = nbytes
        self.nranks = nranks
        self.index = index
        self.devices: tuple[int, ...] | None = None  # None: every rank of the run
        self.handle = next(_NEXT_HANDLE)
        _HANDLES[self.handle] = self
        self._slices: dict[int, np.ndarray] = {}

    def seal(self, devices: Sequence[int]) -> None:
        """Serve only ``devices`` (global ranks): slice k is ``devices[k]``'s.  A buffer
        already sealed keeps its group; asking for another one is a ValueError."""
        group = tuple(sorted(devices))
        if self.devices is not None:
            if group != self.devices:
                raise ValueError(f"window buffer {self.index} serves ranks "
                                 f"{_listed(self.devices)}, not {_listed(group)}")
            return
        if self._slices:
            raise ValueError(f"window buffer {self.index} is in use by every rank")
        self.devices = group
        self.nranks = len(group)

    def member(self, rank: int) -> int:
        """Global rank ``rank``'s place in this buffer's group (a ValueError outside it)."""
        if self.devices is None:
            return rank
        try:
            return self.devices.index(rank)
        except ValueError:
            raise ValueError(f"rank {rank} is not one of window buffer {self.index}'s ranks "
                             f"{_listed(self.devices)}") from None

    def global_rank(self, member: int) -> int:
        return member if self.devices is None else self.devices[member]

    def check(self, shape: tuple[int, ...], dtype: Any, offset: int = 0) -> int:
        """The bytes a view of ``shape`` at ``offset`` ends at (a ValueError past the end)."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        need = offset + count * dtype.itemsize
        if need > self.nbytes:
            raise ValueError(
                f"a window of shape {list(shape)} ({dtype}) at byte {offset} needs {need} bytes, "
                f"but the window buffer holds {self.nbytes}"
            )
        return need

    def rank_bytes(self, rank: int) -> np.ndarray:
        """Rank ``rank``'s slice (zero-filled when first touched)."""
        data = self._slices.get(rank)
        if data is None:
            if not 0 <= rank < self.nranks:
                raise IndexError(f"rank {rank} is outside 0..{self.nranks - 1}")
            data = self._slices[rank] = np.zeros(self.nbytes, np.uint8)
            _ROOTS[id(data)] = (self, rank)
        return data

    def view(self, rank: int, shape: tuple[int, ...], dtype: Any, offset: int = 0) -> np.ndarray:
        """A typed view of ``shape`` at byte ``offset`` of slice ``rank`` (a rank of the
        buffer's group)."""
        dtype = np.dtype(dtype)
        need = self.check(shape, dtype, offset)
        return self.rank_bytes(rank)[offset:need].view(dtype).reshape(shape)

    def zero(self) -> None:
        """Zero every rank's slice (a persistent window reset between runs)."""
        for data in self._slices.values():
            data.fill(0)

    def release(self) -> None:
        """Forget every rank's slice (the run is over)."""
        for data in self._slices.values():
            _ROOTS.pop(id(data), None)
        self._slices.clear()

    def __repr__(self) -> str:
        return f"<window buffer {self.index}: {self.nbytes} bytes x {self.nranks} ranks>"


def _listed(ranks: Sequence[int]) -> str:
    return ", ".join(map(str, ranks))


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def window_of(array: Any) -> tuple[WindowBuffer, int, int] | None:
    """(buffer, rank, byte offset) of an array viewing window memory, else None."""
    if not _ROOTS or not isinstance(array, np.ndarray):
        return None
    root = _root(array)
    found = _ROOTS.get(id(root))
    if found is None:
        return None
    offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return found[0], found[1], offset


def live() -> bool:
    """Whether any window buffer has memory now (staging checks arguments only then)."""
    return bool(_ROOTS)


def is_window(array: Any) -> bool:
    """Whether ``array`` views window memory (cheap when no window is live)."""
    return bool(_ROOTS) and window_of(array) is not None


def comm_ctx(array: Any) -> int:
    """What ``pld.get_comm_ctx(t)`` gives: a handle naming ``t``'s window buffer (its comm
    domain), 0 for a tensor that is not window memory (the run's ranks)."""
    found = window_of(array)
    return found[0].handle if found is not None else 0


def group_place(ctx: RankContext, handle: int) -> tuple[int, int, tuple[int, ...] | None]:
    """(rank, nranks, global ranks or None: all) of ``ctx``'s rank in the comm domain
    ``handle`` names (`comm_ctx`)."""
    buf = _HANDLES.get(int(handle)) if handle else None
    if buf is None:
        return ctx.rank, ctx.nranks, None
    return buf.member(ctx.rank), buf.nranks, buf.devices


def peer_view(array: np.ndarray, peer: int, op: str) -> np.ndarray:
    """The bytes ``array`` views in its window buffer, on rank ``peer``."""
    found = window_of(array)
    if found is None:
        raise ValueError(f"{op} needs a window-bound tensor (pld.DistributedTensor bound to "
                         "pld.window(...)), but got ordinary device memory")
    buf, _, offset = found
    if not 0 <= peer < buf.nranks:
        whose = "the run's ranks" if buf.devices is None else \
            f"the ranks of its comm domain (ranks {_listed(buf.devices)} of the run)"
        raise ValueError(f"{op}: peer rank {peer} is outside {whose} 0..{buf.nranks - 1}")
    return np.ndarray(array.shape, array.dtype, buffer=buf.rank_bytes(peer), offset=offset,
                      strides=array.strides)
