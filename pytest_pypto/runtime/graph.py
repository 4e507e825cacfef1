"""The task graph of one run: dependencies as the device runtime derives them, and dispatch.

Dependencies (DSL.md §1.5): an In/InOut argument waits for the latest writer of
every overlapping range (RAW); an Out/InOut argument becomes the new writer of its
range, ordered after the previous writer (WAW).  Write-after-read is deliberately
not tracked, because the device does not track it; with ``strict_war`` the graph
records each such hazard (a later writer not ordered after an earlier reader).

Dispatch: tasks run when their dependencies are done, in submission order by
default (always a valid order, since a task only depends on earlier ones), or in a
seeded random order among the ready tasks, which exposes missing dependencies.
Each executed task is placed on simulated cores with a unit-time list schedule:
``aic`` takes one AIC, ``aiv`` one AIV, ``mix`` one AIC plus both AIVs of the
same cluster.  The placement is a record of concurrency, not a timing model.
"""

from __future__ import annotations

import random
from time import perf_counter
from typing import Any

from pytest_pypto.ir.artifact import SIM_BACKEND
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.registry import OpRuleError
from pytest_pypto.runtime.locate import scalar_values, span_in
from pytest_pypto.runtime.tensors import TensorHandle, covers, overlaps

IN, OUT, INOUT, SCALAR = "In", "Out", "InOut", "Scalar"


class Task:
    """One submitted kernel call."""

    __slots__ = (
        "id", "kernel", "func_id", "core_type", "fn", "call_args", "arg_names", "directions",
        "handles", "returns", "deps", "done", "order", "step", "slots",
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
        self.order = -1
        self.step = -1
        self.slots: tuple[str, ...] = ()

    def record(self) -> dict[str, Any]:
        """The task as it appears in deps.json."""
        args = []
        for name, direction, handle, value in zip(
            self.arg_names, self.directions, self.handles, self.call_args
        ):
            if handle is None:
                args.append({"name": name, "direction": direction, "value": _jsonable(value)})
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
        return {
            "id": self.id,
            "kernel": self.kernel,
            "func_id": self.func_id,
            "core_type": self.core_type,
            "slots": list(self.slots),
            "step": self.step,
            "order": self.order,
            "args": args,
            "deps": [{"task": t, "kind": k} for t, k in sorted(self.deps.items())],
        }


def _jsonable(value: Any) -> Any:
    item = getattr(value, "item", None)
    return item() if item is not None else value


class Cores:
    """Simulated AIC/AIV slots with a unit-time occupancy table (step -> busy slots)."""

    def __init__(self, clusters: int) -> None:
        self.clusters = clusters
        self.busy: list[set[str]] = []

    def place(self, core_type: str, earliest: int) -> tuple[int, tuple[str, ...]]:
        step = earliest
        while True:
            while len(self.busy) <= step:
                self.busy.append(set())
            taken = self.busy[step]
            slots = self._free(core_type, taken)
            if slots is not None:
                taken.update(slots)
                return step, slots
            step += 1

    def _free(self, core_type: str, taken: set[str]) -> tuple[str, ...] | None:
        for c in range(self.clusters):
            if core_type == "aic":
                want: tuple[str, ...] = (f"aic{c}",)
            elif core_type == "aiv":
                for v in (2 * c, 2 * c + 1):
                    if f"aiv{v}" not in taken:
                        return (f"aiv{v}",)
                continue
            else:  # mix: one cluster's AIC and both of its AIVs
                want = (f"aic{c}", f"aiv{2 * c}", f"aiv{2 * c + 1}")
            if not taken.intersection(want):
                return want
        return None


class TaskGraph:
    """Submission, dependency tracking and execution of one run's tasks."""

    def __init__(
        self,
        clusters: int,
        seed: int | None = None,
        strict_war: bool = False,
        kernels: dict[str, Any] | None = None,
    ) -> None:
        self.kernels = kernels or {}
        self.tasks: list[Task] = []
        self.pending: list[Task] = []
        self.executed: list[int] = []
        self.cores = Cores(clusters)
        self.seed = seed
        self.rng = random.Random(seed) if seed is not None else None
        self.strict_war = strict_war
        self.war_hazards: list[dict[str, Any]] = []
        self.kernel_seconds = 0.0  # host wall time inside kernels (not a device timing)

    # -- submission --------------------------------------------------------------
    def submit(self, kernel: Any, call_args: list, handles: list) -> Task:
        task = Task(len(self.tasks), kernel, call_args, handles)
        deps = task.deps
        tid = task.id
        for direction, h in zip(kernel.directions, handles):
            if h is None or direction == OUT:
                continue
            for w, wid in h.root.writers:  # RAW: In / InOut wait for overlapping writers
                if wid != tid and overlaps(w, h):
                    deps[wid] = "RAW"
        for direction, h in zip(kernel.directions, handles):
            if h is None or direction == IN:
                continue
            root = h.root
            kept = []
            for w, wid in root.writers:  # WAW: the new writer follows the previous one
                if wid != tid and overlaps(w, h):
                    deps.setdefault(wid, "WAW")
                    if covers(h, w):
                        continue  # superseded: later readers wait for this task instead
                kept.append((w, wid))
            kept.append((h, tid))
            root.writers = kept
            if self.strict_war:
                self._check_war(task, h)
        if self.strict_war:
            for direction, h in zip(kernel.directions, handles):
                if h is not None and direction != OUT:
                    h.root.readers.append((h, tid))
        self.tasks.append(task)
        self.pending.append(task)
        return task

    def _check_war(self, task: Task, h: TensorHandle) -> None:
        ancestors = self._ancestors(task)
        for r, rid in h.root.readers:
            if rid != task.id and rid not in ancestors and overlaps(r, h):
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

    def _ancestors(self, task: Task) -> set[int]:
        seen: set[int] = set()
        stack = list(task.deps)
        while stack:
            t = stack.pop()
            if t not in seen:
                seen.add(t)
                stack.extend(self.tasks[t].deps)
        return seen

    # -- execution ---------------------------------------------------------------
    def drain(self) -> None:
        """Run every pending task."""
        if self.rng is None:
            pending, self.pending = self.pending, []
            for task in pending:
                self._execute(task)
        else:
            self._run_random(set(t.id for t in self.pending))

    def finish_writers(self, h: TensorHandle, include_readers: bool = False) -> None:
        """Blocking access from orchestration: run every pending task writing (and, for a
        write, also reading) an overlapping range, plus whatever those tasks wait for."""
        targets = set()
        for t in self.pending:
            for direction, a in zip(t.directions, t.handles):
                if a is None or (direction == IN and not include_readers):
                    continue
                if overlaps(a, h):
                    targets.add(t.id)
                    break
        if not targets:
            return
        if self.rng is None:
            last = max(targets)
            run = [t for t in self.pending if t.id <= last]
            self.pending = [t for t in self.pending if t.id > last]
            for task in run:
                self._execute(task)
        else:
            needed = set(targets)
            for t in targets:
                needed |= {a for a in self._ancestors(self.tasks[t]) if not self.tasks[a].done}
            self._run_random(needed)

    def _run_random(self, needed: set[int]) -> None:
        assert self.rng is not None
        while needed:
            ready = [
                t for t in self.pending
                if t.id in needed and all(self.tasks[d].done for d in t.deps)
            ]
            if not ready:  # pragma: no cover - deps always point backwards
                raise SimulationError("task graph has a cycle; no task is ready")
            task = self.rng.choice(ready)
            needed.discard(task.id)
            self.pending.remove(task)
            self._execute(task)

    def _execute(self, task: Task) -> None:
        earliest = 0
        for d in task.deps:
            s = self.tasks[d].step + 1
            if s > earliest:
                earliest = s
        task.step, task.slots = self.cores.place(task.core_type, earliest)
        task.order = len(self.executed)
        self.executed.append(task.id)
        start = perf_counter()
        try:
            result = task.fn(*task.call_args)
        except OpRuleError as exc:  # an op's run-time check (e.g. dynamic bounds, §6.4)
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
            note = f"while executing task {task.id} (kernel '{task.kernel}')"
            if hasattr(exc, "add_note"):
                exc.add_note(note)
            raise
        self.kernel_seconds += perf_counter() - start
        if result:
            for pos, value in zip(task.returns, result):
                view = task.call_args[pos]
                if value is not view and value is not None:
                    view[...] = value  # a kernel that returned a fresh array: write it back
        task.done = True

    # -- record ------------------------------------------------------------------
    def to_json(self, roots: list, meta: dict[str, Any]) -> dict[str, Any]:
        """The executed graph as written to deps.json."""
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
                    "shape": list(r.data.shape),
                    "nbytes": int(r.data.nbytes),
                }
                for r in roots
            ],
            "tasks": tasks,
            "edges": edges,
            "execution_order": list(self.executed),
            "war_hazards": list(self.war_hazards),
        }
