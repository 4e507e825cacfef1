# SPDX-License-Identifier: Apache-2.0
"""Explicit scheduling at run time (docs/design/scheduling.md §1-§4).

What the orchestration passes to ``rt.submit`` beyond the arguments: the TaskIds the
task waits for (``deps``: ints, arrays of them, -1 for none), whether it sits in a
manual scope, the argument positions left out of automatic tracking and a dispatch
predicate.  A TaskId is the id of a task's first block; it stands for every block of
its launch.  `pl.system.task_dummy` is a task with no kernel (`DUMMY_KERNEL`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import numpy as np

from pytest_pypto.ir.errors import SimulationError

INVALID = -1


class Sched:
    """The explicit-scheduling part of one submission."""

    __slots__ = ("deps", "manual", "no_dep", "predicate")

    def __init__(self, deps: tuple[int, ...], manual: bool, no_dep: tuple[int, ...],
                 predicate: tuple[Any, ...] | None) -> None:
        self.deps = deps
        self.manual = manual
        self.no_dep = no_dep
        self.predicate = predicate

    def apply(self, task: Any, graph: Any) -> None:
        task.manual = self.manual
        task.predicate = self.predicate
        if self.deps:
            graph.explicit[task.id] = expand(self.deps, graph)
        if self.no_dep:
            graph.untracked[task.id] = self.no_dep


def task_ids(values: Iterable[Any], ntasks: int) -> tuple[int, ...]:
    """The valid TaskIds among ``values`` (TaskId Scalars and arrays of them)."""
    out: list[int] = []
    for v in values:
        items = v if isinstance(v, (list, tuple, np.ndarray)) else (v,)
        for item in items:
            t = int(item)
            if t == INVALID:
                continue
            if not 0 <= t < ntasks:
                raise SimulationError(
                    f"deps= names TaskId {t}, but only {ntasks} tasks were submitted so far",
                    hint="a TaskId comes from pl.submit, pl.at(...) as tid or "
                    "pl.system.task_dummy; an Array[TASK_ID] slot starts as None",
                )
            out.append(t)
    return tuple(dict.fromkeys(out))


def expand(deps: tuple[int, ...], graph: Any) -> tuple[int, ...]:
    """Each TaskId as the ids of every task of its launch."""
    groups = graph.groups
    if not groups:
        return deps
    out: list[int] = []
    for d in deps:
        span = groups.get(d)
        out.extend(range(*span) if span else (d,))
    return tuple(out)


class _DummyKernel:
    """The kernel record of a `pl.system.task_dummy` task: no arguments, no work."""

    name = "task_dummy"
    func_id = -1
    core_type = "dummy"
    arg_names: tuple[str, ...] = ()
    directions: tuple[str, ...] = ()
    returns: tuple[int, ...] = ()

    @staticmethod
    def fn() -> None:
        return None


DUMMY_KERNEL = _DummyKernel()
