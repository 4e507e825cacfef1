"""The task graph of one run: dependencies as the device runtime derives them, and dispatch.

Dependencies (docs/design/runtime.md §5): an In/InOut argument waits for the latest writer of
every overlapping range (RAW); an Out/InOut argument becomes the new writer of its
range, ordered after the previous writer (WAW).  Write-after-read is deliberately
not tracked, because the device does not track it; with ``strict_war`` the graph
records each such hazard (a later writer not ordered after an earlier reader).
A `pl.spmd(n)` launch is n tasks that share the dependencies of the first and do
not order each other; each is a writer of its ranges, so later readers wait for all.

Dispatch: tasks run when their dependencies are done, in submission order by
default (always a valid order, since a task only depends on earlier ones), or in a
seeded random order among the ready tasks, which exposes missing dependencies.
Each executed task is placed on simulated cores with a unit-time list schedule:
``aic`` takes one AIC, ``aiv`` one AIV, ``mix`` one AIC plus both AIVs of the
same cluster (`placement.Cores`).  The placement is a record of concurrency, not a
timing model; each task also records the host time spent in its kernel (``host_us``,
for profiling the simulator, not the device).  `pytest_pypto.runtime.trace` draws it.

Memory: the worker's graph is eager (each task runs as it is submitted, the default
order anyway), and an executed task keeps husks of its windows, not its buffers, so a
made tensor is freed as soon as orchestration lets it go.  Sync points find the pending
tasks touching what they access through a per-root index of pending accesses, built
lazily for the roots a sync point touches (O(log n + accesses met), no scan).

Cost: each root buffer indexes its live writers by element interval
(`tensors.WindowIndex`), so an argument is checked only against writers whose byte
range meets its own; a seeded schedule keeps the ready tasks in a Fenwick tree over
their ids (the k-th ready task by id in O(log n)); placement finds the first step
with room for a core type through a union-find over full steps.  Dispatching n tasks
costs O(n log n) plus the byte-range overlaps between their windows.
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from time import perf_counter
from typing import Any

from pytest_pypto.ir.artifact import SIM_BACKEND
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.registry import OpRuleError
from pytest_pypto.runtime.argdump import capture
from pytest_pypto.runtime.deferral import Completions
from pytest_pypto.runtime.explicit import ExplicitState, explicit_record
from pytest_pypto.runtime.locate import scalar_values, span_in
from pytest_pypto.runtime.placement import Cores, Ranks
from pytest_pypto.runtime.rank_races import task_args
from pytest_pypto.runtime.records import jsonable, kernel_record
from pytest_pypto.runtime.task_batches import TaskBatches
from pytest_pypto.runtime.tensors import TensorHandle, WindowIndex, covers, overlaps

IN, OUT, INOUT, SCALAR = "In", "Out", "InOut", "Scalar"


class Task:
    """One submitted kernel call."""

    __slots__ = (
        "id", "kernel", "func_id", "core_type", "fn", "call_args", "arg_names", "directions",
        "handles", "returns", "deps", "done", "order", "step", "slots", "waiting", "dependents",
        "block", "kwargs", "seconds", "manual", "predicate", "skipped", "epoch", "dumps",
        "until",
    )

    def __init__(self, tid: int, kernel: Any, call_args: list, handles: list) -> None:
        self.id = tid
        self.kernel = kernel.name
        self.func_id = kernel.func_id
        self.core_type = kernel.core_type
        self.fn = kernel.fn
        self.arg_names = kernel.arg_names
        self.directions = kernel.directions
        self.returns = kernel.returns
        self.call_args = call_args  # numpy views and scalars, as the kernel receives them
        self.handles = handles  # TensorHandle or None (scalar) per argument
        self.deps: dict[int, str] = {}  # producer task id -> "RAW" | "WAW"
        self.done = False
        self.order = self.step = -1
        self.slots: tuple[str, ...] = ()
        self.waiting = 0  # deps not yet done (seeded schedules only)
        self.dependents: list[int] = _NO_DEPENDENTS  # (seeded schedules only; see _wait_for)
        self.block: tuple[int, int] | None = None  # (index, count) in a pl.spmd launch
        self.kwargs: dict[str, Any] | None = None  # the launch, for a kernel that reads it
        self.seconds = 0.0  # host wall time inside the kernel (measured, not a device time)
        self.manual = self.skipped = False  # explicit scheduling (runtime/explicit.py), and
        self.predicate: tuple[Any, ...] | None = None
        self.epoch = 0  # the tasks executed when this one was submitted (runtime/races.py)
        self.dumps: tuple[int, ...] = ()  # argument positions marked for the dump
        self.until: list[tuple[Any, ...]] | None = None  # deferred completion (deferral.py)

    def record(self) -> dict[str, Any]:
        """The task as it appears in deps.json."""
        args = []
        for name, direction, handle, value in zip(
            self.arg_names, self.directions, self.handles, self.call_args
        ):
            if handle is None:
                args.append({"name": name, "direction": direction, "value": jsonable(value)})
            else:
                args.append(
                    {
                        "name": name,
                        "direction": direction,
                        "tensor": handle.root.id,
                        "shape": list(handle.shape),
                        "bytes": list(handle.byte_range),
                    }
                )
        record = {
            "id": self.id,
            "kernel": self.kernel,
            "func_id": self.func_id,
            "core_type": self.core_type,
            "slots": list(self.slots),
            "step": self.step,
            "order": self.order,
            "host_us": round(self.seconds * 1e6, 3),
            "args": args,
            "deps": [{"task": t, "kind": k} for t, k in sorted(self.deps.items())],
        }
        if self.block is not None:
            record["block"] = {"index": self.block[0], "count": self.block[1]}
        if self.until:
            record["deferred_completion"] = [c[1] for c in self.until]
        record.update(explicit_record(self))
        return record


_NO_DEPENDENTS: list[int] = []  # shared and never appended to: a task gets its own list first


class TaskGraph:
    """Submission, dependency tracking and execution of one run's tasks."""

    def __init__(
        self,
        clusters: int,
        seed: int | None = None,
        strict_war: bool = False,
        kernels: dict[str, Any] | None = None,
        deferred: bool = False,
        eager: bool = False,
    ) -> None:
        self.kernels = kernels or {}
        self.tasks: list[Task] = []
        self.pending: dict[int, Task] = {}  # submitted, not yet run; in submission order
        self.executed: list[int] = []
        self.clusters = clusters
        self._cores: Cores | None = None
        self.seed = seed
        self.rng = random.Random(seed) if seed is not None else None
        self.strict_war = strict_war
        self.war_hazards: list[dict[str, Any]] = []
        self.kernel_seconds = 0.0  # host wall time inside kernels (not a device timing)
        # Deferred (the worker's default schedule: unseeded, no WAR checks): tasks run in
        # submission order, which needs neither dependencies nor core placement, so both
        # are derived from the submitted windows only when the record is asked for
        # (`settle`), with the same result as computing them while the tasks ran.
        self.deferred = deferred and seed is None and not strict_war
        # Eager (the worker's real runs with a deferred graph): each task runs as it is
        # submitted, which is the submission order a deferred graph runs in anyway, so
        # results and record are the same; an intermediate is then freed as soon as
        # orchestration lets it go, instead of living until the run drains.
        self.eager = eager and self.deferred
        self.sched = ExplicitState()  # deps=, manual scopes, races (runtime/explicit.py)
        self.dump_level = 0  # the argument dump (runtime/argdump.py) and what it copied
        self.arg_dumps: list[dict[str, Any]] = []
        self._linked = 0  # tasks whose dependencies are computed
        self._placed = 0  # executed tasks placed on cores
        # root id -> (writes, reads) of tasks not yet run, for sync points (`_pending_on`)
        self._accesses: dict[int, tuple[WindowIndex, WindowIndex]] = {}
        self._listed: dict[int, list[tuple[bool, TensorHandle, int]]] = {}  # not yet indexed
        self._indexed = 0  # tasks listed in ``_listed``
        self.completions = Completions(self)  # deferred completion (runtime/deferral.py)
        self.batches = TaskBatches.of(self)  # an eager graph's held window (task_batches.py)

    @property
    def cores(self) -> Cores:
        """The simulated cores the executed tasks were placed on."""
        if self._cores is None:
            self._cores = Cores(self.clusters)
        return self._cores

    # -- submission --------------------------------------------------------------
    def submit(self, kernel: Any, call_args: list, handles: list, sched: Any = None,
               dumps: tuple[int, ...] = (), group: Any = None) -> Task:
        """Record one task (and, eager, run or hold it); ``group``: its window group key
        and made bytes when the caller found them already (`TaskBatches.take`)."""
        task = Task(len(self.tasks), kernel, call_args, handles)
        task.dumps = dumps
        self.tasks.append(task)
        if sched is not None:
            if self.batches is not None:
                self.batches.flush()  # (what ran before explicit scheduling stays untraced)
            sched.apply(task, self.sched)
        task.epoch = len(self.executed)
        if self.eager:
            if self.batches is None \
                    or not self.batches.take(task, sched is None and not dumps, group):
                self._execute(task)
            return task
        self.pending[task.id] = task
        if not self.deferred:
            self._link(task)
        return task

    def launch(
        self, kernel: Any, call_args: list, handles: list, blocks: int, pass_block: bool,
        sched: Any = None, dumps: tuple[int, ...] = (),
    ) -> list[Task]:
        """A `pl.spmd(blocks)` launch: one task per block, all with the dependencies of
        the first (the blocks of one launch do not order each other), each a writer of
        its Out/InOut ranges, so a later task depends on every block."""
        if self.batches is not None:
            self.batches.flush()  # (held tasks run before the launch's blocks)
        eager, self.eager = self.eager, False  # every block gets its launch data first
        try:
            first = self.submit(kernel, call_args, handles, sched, dumps)
        finally:
            self.eager = eager
        tasks = [first]
        for _ in range(1, blocks):
            task = Task(len(self.tasks), kernel, call_args, handles)
            task.epoch, task.manual, task.predicate = first.epoch, first.manual, first.predicate
            task.dumps = dumps
            self.tasks.append(task)
            self.pending[task.id] = task
            tasks.append(task)
        for i, task in enumerate(tasks):
            task.block = (i, blocks)
            if pass_block:
                task.kwargs = {"_launch": (i, blocks)}
            if i and not self.deferred:
                self._link_block(task, first)
        if eager:
            for task in tasks:
                self._execute(self.pending.pop(task.id))
        return tasks

    def _link(self, task: Task) -> None:
        """Dependencies of a submitted task on the earlier ones, from the roots' writer
        (and, under strict_war, reader) indexes, which it then joins."""
        deps = task.deps
        tid = task.id
        directions, handles = self.sched.tracked(task) if task.manual or self.sched.untracking \
            else (task.directions, task.handles)  # (explicit scheduling: runtime/explicit.py)
        for direction, h in zip(directions, handles):
            if h is None or direction == OUT:
                continue
            # RAW: In / InOut wait for overlapping writers
            for _, w, wid in h.root.writers.overlapping(h):
                if wid != tid and overlaps(w, h):
                    deps[wid] = "RAW"
        ancestors: dict[int, set[int]] = {}  # len(deps) -> ancestors, when a WAR check needs it
        for direction, h in zip(directions, handles):
            if h is None or direction == IN:
                continue
            writers = h.root.writers
            for entry in writers.overlapping(h):  # WAW: the new writer follows the previous one
                _, w, wid = entry
                if wid != tid and overlaps(w, h):
                    deps.setdefault(wid, "WAW")
                    if covers(h, w):
                        writers.remove(entry)  # superseded: later readers wait for this task
            writers.add(h, tid)
            if self.strict_war:
                self._check_war(task, h, ancestors)
        if self.strict_war:
            for direction, h in zip(directions, handles):
                if h is not None and direction != OUT:
                    h.root.readers.add(h, tid)
        if self.sched.explicit and tid in self.sched.explicit:  # declared deps= edges
            deps.update(dict.fromkeys(self.sched.explicit[tid], "explicit"))
        if self.rng is not None:  # the seeded schedule's ready-task bookkeeping
            self._wait_for(task)

    def _link_block(self, task: Task, first: Task) -> None:
        """A later block of a launch: the first block's dependencies, and a writer too."""
        task.deps = dict(first.deps)
        directions, handles = self.sched.tracked(first) if task.manual or self.sched.untracking \
            else (task.directions, task.handles)
        for direction, h in zip(directions, handles):
            if h is None:
                continue
            if direction != IN:
                h.root.writers.add(h, task.id)
            if self.strict_war and direction != OUT:
                h.root.readers.add(h, task.id)
        if self.rng is not None:
            self._wait_for(task)

    def _wait_for(self, task: Task) -> None:
        tasks = self.tasks
        for d in task.deps:
            producer = tasks[d]
            if not producer.done:
                task.waiting += 1
                if producer.dependents is _NO_DEPENDENTS:
                    producer.dependents = []
                producer.dependents.append(task.id)

    def settle(self) -> None:
        """Bring every task's dependencies and every executed task's core placement up to
        date (a deferred graph computes them here, in submission and execution order)."""
        if not self.deferred:
            return
        tasks = self.tasks
        for task in tasks[self._linked:]:
            if task.block is not None and task.block[0]:
                self._link_block(task, tasks[task.id - task.block[0]])
            else:
                self._link(task)
        self._linked = len(tasks)
        for tid in self.executed[self._placed:]:
            self._place(tasks[tid])
        self._placed = len(self.executed)

    def _check_war(self, task: Task, h: TensorHandle, ancestors: dict[int, set[int]]) -> None:
        """Record each earlier reader of ``h``'s range that ``task`` is not ordered after.

        A reader that ``task`` is ordered after and whose window ``h`` covers is dropped:
        every later writer of its range is ordered after ``task`` (the WAW chain through
        the covering writers), so it can never be a hazard again."""
        readers = h.root.readers
        for entry in readers.overlapping(h):
            _, r, rid = entry
            if rid == task.id or not overlaps(r, h):
                continue
            if rid in task.deps:
                ordered = True
            else:
                known = ancestors.get(len(task.deps))
                if known is None:  # deps only grow while the task is submitted
                    ancestors.clear()
                    known = ancestors[len(task.deps)] = self._ancestors([task])
                ordered = rid in known
            if not ordered:
                self.war_hazards.append(
                    {
                        "reader": rid,
                        "writer": task.id,
                        "tensor": h.root.id,
                        "tensor_name": h.root.name,
                        "reader_bytes": list(r.byte_range),
                        "writer_bytes": list(h.byte_range),
                    }
                )
            elif covers(h, r):
                readers.remove(entry)

    def _ancestors(self, tasks: Iterable[Task], undone: bool = False) -> set[int]:
        """Ids of every task the given tasks wait for, directly or not (only those not
        yet done, with ``undone``: a done task's own dependencies are done too)."""
        seen: set[int] = set()
        stack = [d for t in tasks for d in t.deps]
        all_tasks = self.tasks
        while stack:
            t = stack.pop()
            if t not in seen:
                dep = all_tasks[t]
                if undone and dep.done:
                    continue
                seen.add(t)
                stack.extend(dep.deps)
        return seen

    # -- execution ---------------------------------------------------------------
    def drain(self) -> None:
        """Run every pending task."""
        if self.batches is not None:
            self.batches.flush()
        held = self.completions
        if self.rng is None:
            pending, self.pending = self.pending, {}
            for task in pending.values():
                if held.unmet:  # a task waits for a deferred condition: the rest in held order
                    rest = list(pending)
                    self.pending = {t: pending[t] for t in rest[rest.index(task.id):]}
                    held.run(list(self.pending))
                    break
                self._execute(task)
        else:
            self._run_random(list(self.pending))
        if held.unmet:
            held.await_all()

    def finish_writers(self, h: TensorHandle, include_readers: bool = False) -> None:
        """Blocking access from orchestration: run every pending task writing (and, for a
        write, also reading) an overlapping range, plus whatever those tasks wait for.

        The pending tasks touching ``h`` come from its root's index of pending accesses
        (`_pending_on`), so a sync point costs O(log n + accesses it meets), not a scan
        over every pending task (docs/design/runtime.md §5)."""
        if self.batches is not None and self.batches.held:  # (pending: the held tasks)
            return self.batches.sync(h, include_readers)
        if not self.pending:
            return
        index = self._pending_on(h.root.id)
        if index is None:
            return
        writes, reads = index
        tasks = self.tasks
        targets: set[int] = set()
        for table in (writes, reads) if include_readers else (writes,):
            for entry in table.overlapping(h):
                _, a, tid = entry
                if tasks[tid].done:
                    table.remove(entry)  # retired: it never blocks a sync point again
                elif overlaps(a, h):
                    targets.add(tid)
        if not targets:
            return
        if self.rng is None:
            last = max(targets)
            pending = self.pending
            run = []
            for tid in pending:
                if tid > last:
                    break
                run.append(tid)
            for i, tid in enumerate(run):
                if self.completions.unmet:  # a task waits for a deferred condition
                    self.completions.run(run[i:])
                    break
                self._execute(pending.pop(tid))
        else:
            chosen = [tasks[t] for t in sorted(targets)]
            needed = targets | self._ancestors(chosen, undone=True)
            self._run_random(sorted(needed))
        if self.completions.unmet:  # a sync point waits for completion, as dependents do
            self.completions.await_all(targets)

    def _pending_on(self, root_id: int) -> tuple[WindowIndex, WindowIndex] | None:
        """The (writes, reads) index of ``root_id``'s accesses by tasks not yet run.

        Lazy twice over: the tasks submitted since the last sync point are listed per root
        (each once), and a root's index is built only when a sync point touches it, so
        the buffers orchestration never reads (most of them) cost one list append per
        access, and a run without sync points nothing."""
        tasks = self.tasks
        listed = self._listed
        for task in tasks[self._indexed:]:
            if task.done:
                continue
            tid = task.id
            for direction, a in zip(task.directions, task.handles):
                if a is not None:
                    rid = a.root.id
                    entry = (direction == IN, a.husk(), tid)
                    waiting = listed.get(rid)
                    if waiting is None:
                        listed[rid] = [entry]
                    else:
                        waiting.append(entry)
        self._indexed = len(tasks)
        waiting = listed.pop(root_id, None)
        index = self._accesses.get(root_id)
        if waiting:
            if index is None:
                index = self._accesses[root_id] = (WindowIndex(), WindowIndex())
            for is_read, a, tid in waiting:
                if not tasks[tid].done:
                    index[is_read].add(a, tid)
        return index

    def _run_random(self, needed: list[int]) -> None:
        """Run the tasks ``needed`` (pending ids, ascending, closed under the pending tasks
        they wait for), each step picking uniformly among the ready ones listed by id
        (``rng.randrange`` over that list: the draws of ``rng.choice(ready)``)."""
        assert self.rng is not None
        randrange = self.rng.randrange
        tasks = self.tasks
        rank = {tid: i for i, tid in enumerate(needed)}
        ready = Ranks(len(needed))
        for tid in needed:
            if not tasks[tid].waiting:
                ready.add(rank[tid])
        held: list[Task] = []  # run, but waiting for their deferred conditions
        for _ in range(len(needed)):
            while not ready.count and held:  # only deferred conditions stand in the way
                for task in self.completions.await_any(held):
                    held.remove(task)
                    self._release(task, rank, ready)
            if not ready.count:  # pragma: no cover - deps always point backwards
                raise SimulationError("task graph has a cycle; no task is ready")
            task = tasks[needed[ready.pop(randrange(ready.count))]]
            del self.pending[task.id]
            self._execute(task)
            if task.id in self.completions.unmet:
                held.append(task)
                continue
            self._release(task, rank, ready)

    def _release(self, task: Task, rank: dict[int, int], ready: Ranks) -> None:
        for d in task.dependents:  # ``task`` is complete: its dependents stop waiting for it
            dependent = self.tasks[d]
            dependent.waiting -= 1
            if not dependent.waiting and d in rank:
                ready.add(rank[d])

    def _place(self, task: Task) -> None:
        earliest = 0
        tasks = self.tasks
        for d in task.deps:
            s = tasks[d].step + 1
            if s > earliest:
                earliest = s
        task.step, task.slots = self.cores.place(task.core_type, earliest) \
            if task.core_type != "dummy" else (max(earliest - 1, 0), ())  # (task_dummy: no core)

    def _execute(self, task: Task) -> None:
        if not self.deferred:
            self._place(task)
        task.order = len(self.executed)
        self.executed.append(task.id)
        start = perf_counter()
        args = self.sched.arguments(task) if self.sched.used else task.call_args
        args = task_args(self, task, args)  # a multi-chip rank's window accesses (rank_races)
        if args is None:  # a false predicate: retired unrun, its dependents still unlock
            task.done = True
            return
        level = self.dump_level
        if level and (level > 1 or task.dumps):
            self.arg_dumps += capture(task, level, before=True)
        try:
            if task.kwargs is None:
                result = task.fn(*args)
            else:
                result = task.fn(*args, **task.kwargs)
        except OpRuleError as exc:  # an op's run-time check (e.g. dynamic bounds, docs/design/checks.md §6)
            self.completions.forget()  # conditions of a failed task go with it
            kernel = self.kernels[task.kernel]
            tb = exc.__traceback__
            values = scalar_values(tb, kernel.path, kernel.scalars)
            when = f"at run time, {values}" if values else "at run time"
            raise SimulationError(
                f"{exc.message} ({when}; task {task.id}, kernel '{task.kernel}')",
                span_in(tb, kernel.path, kernel.spans),
                hint=exc.hint,
            ) from exc
        except Exception as exc:
            self.completions.forget()
            note = f"while executing task {task.id} (kernel '{task.kernel}')"
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            raise
        task.seconds = perf_counter() - start
        self.kernel_seconds += task.seconds
        if result:
            write_back(task.returns, args, result)
        self.completions.take(task)  # what its kernel registered (pld.system.defer_wait)
        if level and (level > 1 or task.dumps):
            self.arg_dumps += capture(task, level, before=False)
        task.done = True
        # Keep what the record needs (windows, scalar values), not the buffers: an
        # intermediate is freed once orchestration and the pending tasks let it go.
        handles = task.handles
        task.handles = [None if h is None else h.husk() for h in handles]
        task.call_args = [v if h is None else None for v, h in zip(task.call_args, handles)]

    # -- record ------------------------------------------------------------------
    def to_json(self, roots: list, meta: dict[str, Any]) -> dict[str, Any]:
        """The executed graph as written to deps.json."""
        self.settle()
        tasks = [t.record() for t in self.tasks]
        edges = [
            {"from": d, "to": t.id, "kind": k} for t in self.tasks for d, k in sorted(t.deps.items())
        ]
        return {
            "sim_backend": SIM_BACKEND,
            **meta,
            "tensors": [
                {
                    "id": r.id,
                    "name": r.name,
                    "origin": r.origin,
                    "dtype": r.dtype.name,
                    "shape": list(r.shape),
                    "nbytes": int(r.nbytes),
                }
                for r in roots
            ],
            "tasks": tasks,
            "edges": edges,
            "execution_order": list(self.executed),
            "war_hazards": list(self.war_hazards),
            "kernels": {name: kernel_record(k) for name, k in self.kernels.items()},
        }


def write_back(returns: Sequence[int], call_args: Sequence[Any], result: Sequence[Any]) -> None:
    """A kernel's returned values at ``returns``: one that is a fresh array (not the
    argument view it was given) is written into that view."""
    for pos, value in zip(returns, result):
        view = call_args[pos]
        if value is not view and value is not None:
            view[...] = value
