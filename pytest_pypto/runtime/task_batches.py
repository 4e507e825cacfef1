"""Task batching: a window of submitted tasks run as few batched kernel calls.

An eager graph (`graph.TaskGraph`) runs each task as it is submitted.  With task
batching (docs/design/runtime.md §6) it holds the submitted tasks instead, up to
`MAX_TASKS` tasks and `MAX_HELD_BYTES` bytes of the made tensors' windows they hold
(a window of an entry tensor keeps no memory alive), and runs the window
when it is full, at a sync point that touches what a held task writes (or, for a
write, reads), at a launch, at explicit scheduling, when the memory guard would stop a
made tensor (held tasks keep theirs alive) and when the run drains.

Order: running the window must give the bits submission order gives.  So every held
task is ordered after each earlier held task it conflicts with -- it reads what the
other writes (RAW), writes what the other writes (WAW) or writes what the other
reads (WAR): the device graph does not track WAR, but the results must not depend on
that -- found through per-root indexes of the held accesses (`tensors.WindowIndex`; a
writer that covers an earlier access supersedes it, the order being transitive).  Reads
of an entry In tensor (a KV pool read in thousands of windows) are not indexed: its root
keeps the highest level of a held task reading it, and a write of it (the compiler
refuses one) is ordered after every such read.
Each held task gets a level, one past the highest level of the tasks it follows (0:
none), and the window runs level by level; a level's tasks never conflict with each
other, and each level runs as groups, in the order of their first task: the tasks of one
kernel function with equal scalar arguments (type and value) and equal window shapes.
One call of the kernel's task-batched variant
(compiler/codegen_tasks.py: ``fn.tasks``) stands for theirs: the tensor arguments go in
as stacks of the tasks' windows (copies), the written stacks go back into each task's
window.  A group of one, a kernel without a variant, and a task that writes a window
another of its own arguments overlaps run as before (`TaskGraph._execute`).  A batched
call that raises reruns its tasks one by one, so the first failing task raises the
usual error (its kernel, task id and the user's line).  A group holds at most
`ir.batch.MAX_BATCH_BYTES` of the variant's tiles (its ``task_bytes`` per task): a
larger one is called in parts.  A task that leaves a deferred condition unmet stops the
window: the rest stay pending, where the graph runs them once they may.

Records: each task gets its share of the batched call's host time; the graph's
execution order is the submission order (which the run is equivalent to), so deps.json,
core placement and the trace are those of an unbatched run.

Not batched (each task runs at submit, as before): seeded or strict-WAR schedules,
precise mode, multi-chip ranks, explicit scheduling (deps=, manual scopes, predicates,
TaskIds: the race detector records only those runs), argument dumps, launches, and
``PYPTO_BATCH_TASKS=0``.
"""

from __future__ import annotations

import os
import weakref
from sys import getrefcount
from time import perf_counter
from typing import Any

import numpy as np

from pytest_pypto.ir import ranks
from pytest_pypto.ir.apply import PRECISE
from pytest_pypto.ir.batch import MAX_BATCH_BYTES
from pytest_pypto.runtime.tensors import WindowIndex, covers, overlaps
from pytest_pypto.runtime.timeout import RunTimedOut

ENV_VAR = "PYPTO_BATCH_TASKS"
MAX_TASKS = 16384  # tasks one window holds
MAX_HELD_BYTES = 256 << 20  # bytes of the made tensors' windows its tasks hold
IN, OUT = "In", "Out"

# Diagnostics: batched calls made in this process and the tasks they stood for.
STATS = {"calls": 0, "tasks": 0}


def enabled_by_env() -> bool:
    """Task batching is on unless ``PYPTO_BATCH_TASKS`` is 0/false/off/no."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "off", "no")


class TaskBatches:
    """The held window of one eager graph (module docstring)."""

    def __init__(self, graph: Any, max_tasks: int = MAX_TASKS,
                 max_bytes: int = MAX_HELD_BYTES) -> None:
        self.graph = weakref.proxy(graph)  # (no cycle: a finished run's graph goes by refcount)
        self.max_tasks, self.max_bytes = max_tasks, max_bytes
        self.held: list[Any] = []
        self.bytes = 0
        self._levels: list[int] = []  # per held task: 1 + the highest level it follows
        # per level, its groups in the order of their first task: group key (a task that
        # runs alone: its own key) -> the group's tasks
        self._steps: list[dict[Any, list[Any]]] = []
        self._writes: dict[int, _Accesses] = {}  # root id -> held writes
        self._reads: dict[int, _Accesses] = {}  # root id -> held reads
        # root id -> the highest level of a held task reading that entry In tensor: its
        # reads are not indexed one by one (thousands of windows of a KV pool), since
        # only a write of it (which PyPTO programs do not make) would meet them
        self._in_reads: dict[int, int] = {}

    @classmethod
    def of(cls, graph: Any) -> TaskBatches | None:
        """The window of a new graph, or None when its tasks must run at submit."""
        if not graph.eager or graph.rng is not None or graph.strict_war \
                or not enabled_by_env() or PRECISE.get() or ranks.current() is not None:
            return None
        return cls(graph)

    # -- holding -------------------------------------------------------------------
    def take(self, task: Any, plain: bool, group: Any = None) -> bool:
        """Hold ``task`` (True), or run the window so it may run at once (False).
        ``group``: (its group key as a list, the made bytes it holds) when the caller
        found them (`Orchestrator._arguments`), else found here."""
        g = self.graph
        if not plain or task.kwargs is not None or task.block is not None or task.manual \
                or task.predicate is not None or g.dump_level or g.sched.used \
                or not g.eager or (not self.held and ranks.current() is not None):
            self.flush()  # (a rank's thread is set before its orchestration starts: once)
            return False
        key, size = group if group is not None else group_of(task)
        if self.held and (len(self.held) >= self.max_tasks
                          or self.bytes + size > self.max_bytes):
            self.flush()
        self._link(task, key)
        self.held.append(task)
        self.bytes += size
        g.pending[task.id] = task
        return True

    def _link(self, task: Any, key: list[Any]) -> None:
        """The level of ``task`` (one past the held tasks it must follow) and its group,
        then its own accesses indexed."""
        idx = len(self.held)
        levels = self._levels
        levels.append(-1)  # (its own accesses, met by its later arguments, raise nothing)
        level = 0
        writes, reads, in_reads = self._writes, self._reads, self._in_reads
        handles = task.handles
        roots = set()
        count = 0
        entry_reads = None
        for direction, h in zip(task.directions, handles):
            if h is None:
                continue
            root = h.root
            rid = root.id
            roots.add(rid)
            count += 1
            w = writes.get(rid)
            if direction == IN:
                if w is not None:
                    level = w.meet(h, levels, level, False)
                if root.origin == "In":  # (summarized once the level is known, below)
                    if entry_reads is None:
                        entry_reads = [rid]
                    else:
                        entry_reads.append(rid)
                    continue
                r = reads.get(rid)
                if r is None:
                    reads[rid] = _Accesses(h, idx)
                else:
                    r.add(h, idx)
                continue
            r = reads.get(rid)
            if r is not None:
                level = r.meet(h, levels, level, True)
            seen = in_reads.get(rid)
            if seen is not None and seen >= level:  # after every held read of it (a
                level = seen + 1  # conservative order: only fewer tasks per group)
            if w is None:
                writes[rid] = _Accesses(h, idx)
            else:
                level = w.meet(h, levels, level, True)
                w.add(h, idx)
            if direction != OUT:  # InOut: a read too
                if r is None:
                    reads[rid] = _Accesses(h, idx)
                else:
                    r.add(h, idx)
        levels[idx] = level
        if entry_reads is not None:
            for rid in entry_reads:
                if in_reads.get(rid, -1) < level:
                    in_reads[rid] = level
        group: Any = -1 - idx  # (runs alone)
        if getattr(task.fn, "tasks", None) is not None \
                and not (len(roots) != count and _aliased(task)):
            whole = tuple(key)
            try:
                hash(whole)
                group = whole
            except TypeError:  # an unhashable scalar: runs alone
                pass
        steps = self._steps
        while len(steps) <= level:
            steps.append({})
        members = steps[level].get(group)
        if members is None:
            steps[level][group] = [task]
        else:
            members.append(task)

    def sync(self, h: Any, include_readers: bool) -> None:
        """A blocking access of ``h`` from orchestration: run the window when a held task
        writes (or, with ``include_readers``, reads) what it touches."""
        rid = h.root.id
        if include_readers and rid in self._in_reads:  # (held reads of an In tensor are
            self.flush()  # not indexed: any of them may overlap)
            return
        for table in (self._writes, self._reads) if include_readers else (self._writes,):
            index = table.get(rid)
            if index is not None and index.meet(h, self._levels, -1, False) >= 0:
                self.flush()
                return

    # -- running -------------------------------------------------------------------
    def flush(self) -> None:
        """Run every held task (module docstring: order, groups, records)."""
        held = self.held
        if not held:
            return
        steps = self._steps
        self.held, self._levels, self._steps = [], [], []
        self._writes, self._reads, self._in_reads = {}, {}, {}
        self.bytes = 0
        g = self.graph
        start = len(g.executed)
        # level by level (a task follows only tasks of lower levels), each level's groups
        # in the order of their first task
        for step in steps:
            for group in step.values():
                self._run(group)
                if g.completions.unmet:  # a task waits for a deferred condition: the rest
                    break  # stay pending, where the graph runs them once they may
            else:
                continue
            break
        # the record: submission order, which the run is equivalent to
        ran = [t for t in held if t.done]
        g.executed[start:] = [t.id for t in ran]
        for k, task in enumerate(ran):
            task.order = start + k

    def _run(self, tasks: list[Any]) -> None:
        g = self.graph
        if len(tasks) == 1:
            g._execute(g.pending.pop(tasks[0].id))
            return
        fn = tasks[0].fn
        per = max(1, MAX_BATCH_BYTES // max(1, getattr(fn, "task_bytes", 1)))
        for k in range(0, len(tasks), per):  # memory in proportion: the variant's tiles
            part = tasks[k:k + per]
            if len(part) == 1:
                g._execute(g.pending.pop(part[0].id))
            else:
                self._call(fn.tasks, part)

    def _call(self, variant: Any, tasks: list[Any]) -> None:
        """One call of the variant for ``tasks`` (mutually independent, one group)."""
        g = self.graph
        first = tasks[0]
        args: list[Any] = []
        stacks: dict[int, Any] = {}
        fills = getattr(first.fn, "task_fills", None) or {}
        columns = list(zip(*[t.call_args for t in tasks]))  # per argument, every task's
        for pos, (h, value) in enumerate(zip(first.handles, first.call_args)):
            if h is None:
                args.append(value)
                continue
            if fills.get(pos) == value.shape:  # overwritten whole before any read
                stack = np.empty((len(tasks), *value.shape), value.dtype)
            elif value.ndim:  # (one shape: the group's; concatenate is np.stack's copy
                # without a view per window, a quarter of its time on small windows)
                stack = np.concatenate(columns[pos]).reshape(len(tasks), *value.shape)
            else:
                stack = np.stack(columns[pos])
            stacks[pos] = stack
            args.append(stack)
        start = perf_counter()
        try:
            result = variant(len(tasks), *args)
        except RunTimedOut:
            raise
        except Exception:  # each task alone: the first failing one raises the usual error
            for t in tasks:
                g._execute(g.pending.pop(t.id))
            return
        spent = perf_counter() - start
        for pos, value in zip(first.returns, result or ()):
            stack = stacks.get(pos)
            if stack is not None and value is not stack and value is not None:
                stack[...] = value
        directions = first.directions
        for pos, stack in stacks.items():
            if directions[pos] != IN:
                for view, row in zip(columns[pos], stack):
                    view[...] = row
        STATS["calls"] += 1
        STATS["tasks"] += len(tasks)
        share = spent / len(tasks)
        g.kernel_seconds += spent
        pending = g.pending
        positions = range(len(first.handles))
        tensors = [pos for pos in positions if first.handles[pos] is not None]
        alone = _ALONE
        for t in tasks:  # (the order and the record's execution order are set when the
            del pending[t.id]  # window is done: `flush`)
            t.seconds = share
            t.done = True
            # what the record needs, not the buffers (as TaskGraph._execute): a handle
            # nothing else holds (nor can get again) drops its array in place; one the
            # orchestration or another task still holds is replaced by its husk
            handles, call_args = t.handles, t.call_args
            for pos in tensors:
                h = handles[pos]
                if getrefcount(h) <= alone:
                    h.array = None
                else:
                    handles[pos] = h.husk()
                call_args[pos] = None


def group_of(task: Any) -> tuple[list[Any], int]:
    """``task``'s group key (its kernel, each scalar's type and value, each window's shape)
    and the bytes of made tensors' windows it holds (a window of an entry tensor keeps no
    memory alive), in one pass.  `Orchestrator._arguments` finds the same in its own pass
    over a submit's arguments (ut/runtime/test_task_batches.py checks they agree)."""
    size = 0
    key: list[Any] = [task.fn]
    for h, value in zip(task.handles, task.call_args):
        if h is None:
            key.append((value.__class__, value))
        else:
            if h.root.origin == "create_tensor":
                size += value.nbytes
            key.append(value.shape)
    return key, size


def _alone_count() -> int:
    """What `getrefcount` reports, inside `TaskBatches._call`'s loop, for a handle held
    only by its task's list (measured the same way: the count differs across CPython
    versions)."""
    handles = [object()]
    h = handles[0]
    return getrefcount(h)


_ALONE = _alone_count()


class _Accesses:
    """The held accesses of one root: a list while short (most roots: a made tensor
    one or two tasks touch, or an input only read), a `WindowIndex` once a query would
    scan many (O(log n + met) from then on)."""

    __slots__ = ("items", "index")

    SHORT = 16

    def __init__(self, h: Any, idx: int) -> None:
        self.items: list[tuple[Any, int]] | None = [(h, idx)]
        self.index: WindowIndex | None = None

    def add(self, h: Any, idx: int) -> None:
        if self.index is not None:
            self.index.add(h, idx)
        else:
            self.items.append((h, idx))  # type: ignore[union-attr]

    def meet(self, h: Any, levels: list[int], level: int, supersede: bool) -> int:
        """``level`` raised to one past the level of every held access overlapping
        ``h`` (a sync point passes -1: whether any does); with ``supersede`` (``h`` is
        written) drop the accesses it covers: later ones follow its task."""
        items = self.items
        if items is not None and len(items) > self.SHORT:
            index = self.index = WindowIndex()
            for a, i in items:
                index.add(a, i)
            items = self.items = None
        if items is not None:
            if len(items) == 1:  # (the common case: one earlier access, often the same
                a, i = items[0]  # handle: a chain's InOut tensor, a made tensor's writer)
                if a is h or (a.lo == h.lo and a.hi == h.hi and a.shape == h.shape
                              and a.strides == h.strides):  # (one root: the table's key)
                    if levels[i] >= level:
                        level = levels[i] + 1
                    if supersede:
                        items.clear()
                    return level
            lo, hi = h.lo, h.hi
            dropped = None
            shape, strides = h.shape, h.strides
            for k, (a, i) in enumerate(items):
                if a.lo < hi and lo < a.hi:
                    same = a.lo == lo and a.hi == hi and a.shape == shape \
                        and a.strides == strides  # (one window: the common case)
                    if not same and not overlaps(a, h):
                        continue
                    if levels[i] >= level:
                        level = levels[i] + 1
                    if supersede and (same or covers(h, a)):
                        if dropped is None:
                            dropped = set()
                        dropped.add(k)
            if dropped:
                self.items = [e for k, e in enumerate(items) if k not in dropped]
            return level
        index = self.index
        for entry in index.overlapping(h):  # type: ignore[union-attr]
            a = entry[1]
            if overlaps(a, h):
                i = entry[2]
                if levels[i] >= level:
                    level = levels[i] + 1
                if supersede and covers(h, a):
                    index.remove(entry)  # type: ignore[union-attr]
        return level


def _aliased(task: Any) -> bool:
    """Whether a window ``task`` writes overlaps another of its own arguments (the
    stacks of a batched call are copies: such a task runs alone)."""
    handles = task.handles
    for i, (direction, h) in enumerate(zip(task.directions, handles)):
        if h is not None and direction != IN:
            for j, other in enumerate(handles):
                if other is not None and j != i and overlaps(other, h):
                    return True
    return False
