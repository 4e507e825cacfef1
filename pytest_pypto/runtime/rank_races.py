# SPDX-License-Identifier: Apache-2.0
"""The race detector across the ranks of a multi-chip run (docs/design/distributed.md §5).

While a `SimCluster` runs, every access to window memory is recorded with who made it
(rank, dispatch, kernel, op, user line) and the rank's vector clock:

- a rank's own slice through its window-bound kernel parameters: those arrive as
  `WinTraced` views (the `races.Traced` mechanism), which note the elements each op
  actually reads or writes;
- any rank's slice through ``pld.tile.remote_load`` / ``remote_store``,
  ``pld.tensor.put`` / ``get`` / ``remote_store`` and ``pld.system.notify`` (the ops
  call `RankRaces.touch` through their rank context).

Happens-before: a rank's accesses are ordered as the rank ran them (its dispatches in
host order, the tasks of one dispatch in the order the chip ran them); a
``pld.system.notify`` releases the notifier's clock into the signal cell and the
``pld.system.wait`` it satisfies acquires every clock released into that cell so far
(AtomicAdd counts accumulate); a barrier or in-kernel collective joins every
participant's clock; the host waits for every queued dispatch before a host-level
collective and when it returns (`begin`: all clocks joined); and within one batch of
dispatches, a rank's k-th dispatch is in round k, every round before the next (the
simulator's own schedule, distributed.md §4 and §5).  Two accesses of one
slice whose elements overlap, at least one a plain write, neither ordered before the
other, are a race: collected while the run goes on and raised by `report` as one
`RaceError`.  Atomic adds (``atomic=Add`` stores and puts, notifies) do not race with
each other.  The verdict does not depend on the order the ranks happened to run in.

Cost: each slice keeps its accesses in a `tensors.WindowIndex` (one for writes and
atomics, one for reads), so an access meets only the earlier ones whose byte range
meets its own, and an access ordered after an earlier one of no stronger kind that
it covers replaces it (a loop rewriting one region keeps one entry).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_pypto.ir import ranks
from pytest_pypto.ir.errors import RaceError
from pytest_pypto.runtime.locate import span_at
from pytest_pypto.runtime.races import Traced
from pytest_pypto.runtime.tensors import TensorHandle, WindowIndex, covers, overlaps

__all__ = ["READ", "WRITE", "ATOMIC", "RankRaces", "WinTraced", "recording", "task_args"]

READ, WRITE, ATOMIC = "read", "write", "atomic"
_MAX_SHOWN = 8
_VERB = {READ: "reads", WRITE: "writes", ATOMIC: "atomically adds to"}


class WinTraced(Traced):
    """A kernel's view of its rank's window slice: every read and write it makes is
    also noted for the cross-rank detector (and for `races` when that records too)."""

    _win: Any = None  # (tracker, rank, parameter name)

    def __array_finalize__(self, obj: Any) -> None:
        self._sink = getattr(obj, "_sink", None)
        self._win = getattr(obj, "_win", None)

    def _note(self, write: bool) -> None:
        if self._sink is not None:
            Traced._note(self, write)
        win = self._win
        if win is not None and self.size:
            tracker, rank, name = win
            tracker.touch(rank, self.view(np.ndarray), WRITE if write else READ, name)

    def __setitem__(self, key: Any, value: Any) -> None:
        if key is Ellipsis and _same_memory(self, value):  # a kernel's result written back
            return
        Traced.__setitem__(self, key, value)


def _same_memory(a: np.ndarray, b: Any) -> bool:
    return (isinstance(b, np.ndarray) and a.shape == b.shape and a.strides == b.strides
            and a.__array_interface__["data"][0] == b.__array_interface__["data"][0])


class _Slice:
    """One rank's slice of one window buffer, as the detector's windows name it."""

    __slots__ = ("id", "name", "itemsize", "nbytes", "shape", "writes", "reads")

    def __init__(self, key: tuple[int, int], name: str, nbytes: int) -> None:
        self.id = key
        self.name = name
        self.itemsize = 1
        self.nbytes = nbytes
        self.shape = (nbytes,)
        self.writes = WindowIndex()  # plain writes and atomics
        self.reads = WindowIndex()


class _Access:
    __slots__ = ("rank", "epoch", "kind", "what", "dispatch", "round", "kernel", "span",
                 "handle", "dtype")

    def __init__(self, rank: int, epoch: int, kind: str, what: str, dispatch: int,
                 round_: tuple[int, int], kernel: str, span: Any, handle: TensorHandle,
                 dtype: np.dtype) -> None:
        self.rank, self.epoch, self.kind, self.what = rank, epoch, kind, what
        self.dispatch, self.round, self.kernel, self.span = dispatch, round_, kernel, span
        self.handle, self.dtype = handle, dtype

    def who(self) -> str:
        at = f" at {self.span.file}:{self.span.line}" if self.span is not None else ""
        kernel = f", kernel '{self.kernel}'" if self.kernel else ""
        return f"rank {self.rank} (dispatch {self.dispatch}{kernel}: {self.what}{at})"


class RankRaces:
    """Vector clocks and window accesses of one `SimCluster`'s ranks."""

    def __init__(self, nranks: int) -> None:
        self.nranks = nranks
        self.clocks = [[1 if i == r else 0 for i in range(nranks)] for r in range(nranks)]
        self.signals: dict[tuple[int, int, int], list[int]] = {}  # cell -> released clocks
        self.meetings: dict[tuple[Any, int], list[int]] = {}  # (key, k-th call) -> joined
        self.arrivals: dict[Any, list[int]] = {}
        self.slices: dict[tuple[int, int], _Slice] = {}
        self.accesses: list[_Access] = []
        self.races: list[tuple[_Access, _Access]] = []
        self._seen: set[tuple[Any, Any]] = set()
        self.dispatches = [-1] * nranks  # the dispatch each rank runs (its k-th of the run)
        self.batch = 0  # batches of dispatches the host issued so far
        self.rounds = [(0, -1)] * nranks  # (batch, k): the rank runs its k-th of the batch
        self.where: list[tuple[str, str, dict] | None] = [None] * nranks

    # ------------------------------------------------------------- ordering
    def begin(self, jobs: dict[int, list[Callable[[], Any]]]) -> dict[int, list[Callable]]:
        """The host issues a batch: everything before it is ordered before all of it.
        Returns the jobs, each noting its dispatch number when it starts."""
        self.batch += 1
        joined = [max(c) for c in zip(*self.clocks)]
        for r in range(self.nranks):
            self.clocks[r] = list(joined)
            self.clocks[r][r] += 1
        return {r: [self._numbered(r, k, job) for k, job in enumerate(js)]
                for r, js in jobs.items()}

    def _numbered(self, rank: int, k: int, job: Callable[[], Any]) -> Callable[[], Any]:
        batch = self.batch

        def run() -> Any:
            self.dispatches[rank] += 1
            self.rounds[rank] = (batch, k)
            self.where[rank] = None
            return job()
        return run

    def release(self, rank: int, cell: tuple[int, int, int]) -> None:
        """A notify into ``cell``: the notifier's clock so far goes with it."""
        mine = self.clocks[rank]
        held = self.signals.get(cell)
        self.signals[cell] = list(mine) if held is None else [max(a, b) for a, b in zip(held, mine)]
        mine[rank] += 1

    def acquire(self, rank: int, cell: tuple[int, int, int]) -> None:
        """A satisfied wait on ``cell``: ordered after every notify into it so far."""
        held = self.signals.get(cell)
        if held is not None:
            self.clocks[rank] = [max(a, b) for a, b in zip(self.clocks[rank], held)]

    def arrive(self, rank: int, key: Any) -> tuple[Any, int]:
        """Rank ``rank`` reaches its next ``key`` meeting (a barrier, a collective)."""
        counts = self.arrivals.setdefault(key, [0] * self.nranks)
        k = counts[rank]
        counts[rank] = k + 1
        mine = self.clocks[rank]
        held = self.meetings.get((key, k))
        self.meetings[(key, k)] = list(mine) if held is None else [
            max(a, b) for a, b in zip(held, mine)]
        mine[rank] += 1
        return key, k

    def leave(self, rank: int, meeting: tuple[Any, int]) -> None:
        """Every rank has met: each leaves ordered after all of them arrived."""
        held = self.meetings[meeting]
        self.clocks[rank] = [max(a, b) for a, b in zip(self.clocks[rank], held)]

    def notify(self, rank: int, cell: np.ndarray, op: str) -> None:
        """``pld.system.notify`` wrote ``cell`` (a peer's signal cell): an atomic update
        that releases the notifier's clock."""
        self.touch(rank, cell, ATOMIC, op)
        found = ranks.window_of(cell)
        if found is not None:
            self.release(rank, (id(found[0]), found[1], found[2]))

    def wait(self, rank: int, cell: np.ndarray) -> None:
        """A ``pld.system.wait`` on ``cell`` (the rank's own signal cell) returned."""
        found = ranks.window_of(cell)
        if found is not None:
            self.acquire(rank, (id(found[0]), found[1], found[2]))

    # -------------------------------------------------------------- accesses
    def enter_task(self, rank: int, graph: Any, task: Any) -> None:
        kernel = graph.kernels.get(task.kernel)
        self.where[rank] = (task.kernel, getattr(kernel, "path", ""),
                            getattr(kernel, "spans", None) or {})

    def touch(self, rank: int, view: np.ndarray, kind: str, what: str) -> None:
        """Rank ``rank`` reads, writes or atomically updates ``view`` (window memory)."""
        found = ranks.window_of(view)
        if found is None or view.size == 0:
            return
        buf, owner, offset = found
        key = (id(buf), owner)
        part = self.slices.get(key)
        if part is None:
            part = self.slices[key] = _Slice(key, f"window buffer {buf.index}, rank {owner}'s "
                                             "slice", buf.nbytes)
        handle = _byte_window(part, view, offset)
        here = self.where[rank]
        kernel, path, spans = here if here is not None else ("", "", {})
        access = _Access(rank, self.clocks[rank][rank], kind, what, self.dispatches[rank],
                         self.rounds[rank], kernel, _user_line(path, spans), handle, view.dtype)
        clock = self.clocks[rank]
        conflicting = part.writes.overlapping(handle)
        if kind != READ:
            conflicting += part.reads.overlapping(handle)
        for entry in conflicting:
            earlier = self.accesses[entry[2]]
            if earlier.round != access.round or _before(earlier, access, clock):
                continue
            if kind == ATOMIC and earlier.kind == ATOMIC:
                continue
            if kind == READ and earlier.kind == READ:
                continue
            if overlaps(earlier.handle, handle):
                self._race(earlier, access)
        self._prune(part, access, clock)
        self.accesses.append(access)
        (part.reads if kind == READ else part.writes).add(handle, len(self.accesses) - 1)

    def _prune(self, part: _Slice, access: _Access, clock: list[int]) -> None:
        """Drop earlier accesses this one covers and follows, of no stronger kind: any
        later access racing with them races with this one too."""
        tables = (part.reads,) if access.kind == READ else (part.writes,) if \
            access.kind == ATOMIC else (part.reads, part.writes)
        for table in tables:
            for entry in table.overlapping(access.handle):
                earlier = self.accesses[entry[2]]
                if access.kind == ATOMIC and earlier.kind != ATOMIC:
                    continue
                if _follows(earlier, access, clock) and covers(access.handle, earlier.handle):
                    table.remove(entry)

    def _race(self, first: _Access, second: _Access) -> None:
        key = ((first.rank, first.what, _line(first)), (second.rank, second.what, _line(second)),
               first.handle.root.id)
        if key in self._seen:
            return
        self._seen.add(key)
        self.races.append((first, second))

    # --------------------------------------------------------------- verdict
    def report(self) -> None:
        """Raise the races found so far as one `RaceError` (nothing when none)."""
        if not self.races:
            return
        races, self.races = self.races, []
        first, second = races[0]
        error = RaceError(
            f"{len(races)} race(s) between ranks on window memory: {_describe(first, second)}",
            second.span or first.span,
            hint=_hint(first, second),
        )
        error.notes = (*error.notes,
                       *(f"also: {_describe(a, b)}" for a, b in races[1:_MAX_SHOWN]))
        error.races = [(a.who(), b.who()) for a, b in races]  # type: ignore[attr-defined]
        raise error


def _before(earlier: _Access, access: _Access, clock: list[int]) -> bool:
    """Whether ``earlier`` happens before ``access`` (made by a rank whose clock is
    ``clock``): the same rank, an earlier round of one batch, or the clocks say so."""
    if earlier.rank == access.rank or clock[earlier.rank] >= earlier.epoch:
        return True
    return earlier.round[0] == access.round[0] and earlier.round[1] < access.round[1]


def _follows(earlier: _Access, access: _Access, clock: list[int]) -> bool:
    """Whether ``access`` is ordered after ``earlier`` by the rank's program order, an
    earlier batch or the clocks: orders that also hold for accesses recorded later (an
    earlier round does not: a rank may still run it, so pruning on it would hide races)."""
    return (earlier.rank == access.rank or earlier.round[0] < access.round[0]
            or (earlier.round == access.round and clock[earlier.rank] >= earlier.epoch))


def _line(a: _Access) -> Any:
    return None if a.span is None else (a.span.file, a.span.line)


def _describe(first: _Access, second: _Access) -> str:
    region = _region(first, second)
    return (f"{second.who()} {_VERB[second.kind]} {region} of "
            f"{first.handle.root.name}, which {first.who()} {_VERB[first.kind]}, "
            "and nothing orders the two (no notify/wait, barrier or collective between them)")


def _hint(first: _Access, second: _Access) -> str:
    return (f"order them: after its access rank {first.rank} notifies rank {second.rank} "
            f"(pld.system.notify) and rank {second.rank} waits for that signal "
            f"(pld.system.wait) before its access, or both ranks meet in a pld.tensor.barrier "
            "between them (--pypto-no-race-check turns this check off)")


def _region(a: _Access, b: _Access) -> str:
    """The shared elements: index ranges per axis of the first access's view when both
    are boxes of one frame, else a byte range of the slice."""
    ha, hb = a.handle, b.handle
    if ha.strides == hb.strides and ha.coords is not None and hb.coords is not None:
        parts = []
        for ca, da, cb, db in zip(ha.coords[:-1], ha.shape[:-1], hb.coords, hb.shape):
            parts.append(f"{max(ca, cb)}:{min(ca + da, cb + db)}")
        return f"elements [{', '.join(parts)}] ({a.dtype})"
    return f"bytes [{max(ha.lo, hb.lo)}, {min(ha.hi, hb.hi)})"


def _byte_window(part: _Slice, view: np.ndarray, offset: int) -> TensorHandle:
    """``view`` as a window of its slice in bytes: its axes plus one of its item's bytes."""
    if any(s < 0 for s in view.strides) or offset < 0:
        lo = max(offset, 0)
        return TensorHandle(part, None, lo, (part.nbytes - lo,), (1,))  # type: ignore[arg-type]
    return TensorHandle(part, None, offset, (*view.shape, view.itemsize),  # type: ignore[arg-type]
                        (*view.strides, 1))


def _user_line(path: str, spans: dict) -> Any:
    """The user's line of the innermost frame running the current kernel's code."""
    if not path:
        return None
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == path:
            return span_at(spans, frame.f_lineno)
        frame = frame.f_back
    return None


# ------------------------------------------------------------- the hooks


def tracker() -> tuple[RankRaces, int] | None:
    """(detector, rank) of the rank running in this thread, None when nothing records."""
    ctx = ranks.current()
    found = getattr(ctx, "races", None) if ctx is not None else None
    return None if found is None else (found, ctx.rank)  # type: ignore[union-attr]


def recording() -> bool:
    """Whether this thread's rank records its window accesses (no fixed-schedule replay)."""
    return tracker() is not None


def task_args(graph: Any, task: Any, args: list | None) -> list | None:
    """What a task's kernel is called with on a recording rank: its window-bound
    arguments as `WinTraced` views (the others unchanged)."""
    here = tracker() if args is not None else None
    if here is None:
        return args
    races, rank = here
    races.enter_task(rank, graph, task)
    out = list(args)  # type: ignore[arg-type]
    names = task.arg_names
    for i, value in enumerate(out):
        if isinstance(value, np.ndarray) and ranks.is_window(value):
            view = value.view(WinTraced)
            name = names[i] if i < len(names) else f"argument {i}"
            view._win = (races, rank, f"parameter '{name}'")
            out[i] = view
    return out
