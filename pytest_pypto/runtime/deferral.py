# SPDX-License-Identifier: Apache-2.0
"""Deferred task completion (``pld.system.defer_wait``; docs/design/distributed.md §3b).

A kernel that calls ``pld.system.defer_wait`` registers conditions on its task
(`ir.ranks.defer`); the graph hands them to `Completions.register` when the kernel
returns.  A task whose conditions do not all hold yet has run but is not complete:
the graph stops running tasks as they are submitted, and runs each pending task only
once every task it depends on is complete (`run`), in submission order otherwise, so
work that does not depend on the waiter (the publisher the waiter waits for) goes on.
When nothing else can run, the rank waits for a condition to hold, letting the other
ranks run (`RankContext.block_until`; a condition no rank will meet is a deadlock at
the ``defer_wait`` line).  A dispatch ends only when every condition held.
"""

from __future__ import annotations

import weakref
from typing import Any

from pytest_pypto.ir import ranks
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.locate import span_at

__all__ = ["Completions"]


class Completions:
    """The deferred conditions of one task graph's tasks."""

    def __init__(self, graph: Any) -> None:
        # A proxy, not a reference: the graph holds this object, and a cycle would keep a
        # finished run's graph (its tasks' arguments: the run's tensors) alive until the
        # cyclic collector ran, which a run turns off (runtime/worker.py).
        self.graph = weakref.proxy(graph)
        self.unmet: dict[int, Any] = {}  # task id -> task whose conditions do not all hold
        self.used = False  # any task registered one (a fixed schedule cannot replay it)

    def take(self, task: Any) -> None:
        """Give ``task`` the conditions its kernel registered (`ir.ranks.defer`), if any."""
        conditions = ranks.take_deferred()
        if conditions is not None:
            self.register(task, conditions)

    @staticmethod
    def forget() -> None:
        """Drop what a failed kernel registered."""
        ranks.take_deferred()

    def register(self, task: Any, conditions: list[tuple[Any, ...]]) -> None:
        """``task``'s kernel registered ``conditions`` (pred, what, holds, frames)."""
        self.used = True
        kernel = self.graph.kernels.get(task.kernel)
        task.until = [(pred, what, holds, _span(kernel, frames))
                      for pred, what, holds, frames in conditions]
        if not _holds(task):
            self.unmet[task.id] = task
            self.graph.eager = False  # later tasks wait in `pending` until they may run

    def complete(self, tid: int) -> bool:
        task = self.unmet.get(tid)
        if task is None:
            return True
        if _holds(task):
            del self.unmet[tid]
            return True
        return False

    def run(self, ids: list[int]) -> None:
        """Run the pending tasks ``ids`` (ascending, closed under what they wait for),
        each once the tasks it depends on are complete."""
        graph = self.graph
        graph.settle()  # every task's dependencies (a deferred graph links them here)
        tasks, pending = graph.tasks, graph.pending
        todo = list(ids)
        while todo:
            rest = []
            for tid in todo:
                if any(d in pending or not self.complete(d) for d in tasks[tid].deps):
                    rest.append(tid)
                else:
                    graph._execute(pending.pop(tid))
            if len(rest) == len(todo):
                if not self.unmet:  # pragma: no cover - deps always point backwards
                    raise SimulationError("task graph has a cycle; no task is ready")
                self.await_any(list(self.unmet.values()))
            todo = rest

    def await_any(self, tasks: list[Any]) -> list[Any]:
        """Wait (other ranks running) until one of ``tasks`` is complete; those that are."""
        done = [t for t in tasks if self.complete(t.id)]
        if done:
            return done
        first = tasks[0]
        pred, what, holds, span = next(c for c in first.until if not c[0]())
        shown = f"{what} (holds {holds()}), task {first.id} (kernel '{first.kernel}')"
        if len(tasks) > 1:
            shown += f" and {len(tasks) - 1} other deferred task(s)"
        ctx = ranks.current()
        if ctx is None:  # pragma: no cover - the op runs only on a rank
            raise SimulationError(f"{shown} can never be satisfied outside a multi-chip run", span)
        ctx.block_until(lambda: any(_holds(t) for t in tasks), shown, span)
        return [t for t in tasks if self.complete(t.id)]

    def await_all(self, tids: Any = None) -> None:
        """Wait until every task of ``tids`` (None: every task) is complete."""
        while True:
            waiting = [t for tid, t in self.unmet.items() if tids is None or tid in tids]
            if not waiting:
                return
            self.await_any(waiting)


def _holds(task: Any) -> bool:
    return all(c[0]() for c in task.until)


def _span(kernel: Any, frames: tuple[tuple[str, int], ...]) -> Any:
    """The user's span of the defer_wait call: the kernel's generated line mapped back."""
    path = getattr(kernel, "path", None)
    spans = getattr(kernel, "spans", None)
    if not path or not spans:
        return None
    for file, line in frames:
        if file == path:
            return span_at(spans, line)
    return None
