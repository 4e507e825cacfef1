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
from pytest_pypto.runtime.races import traced_args

INVALID = -1


class Sched:
    """The explicit-scheduling part of one submission."""

    __slots__ = ("deps", "manual", "no_dep", "predicate", "blocks")

    def __init__(self, deps: tuple[int, ...], manual: bool, no_dep: tuple[int, ...],
                 predicate: tuple[Any, ...] | None, blocks: int = 1) -> None:
        self.deps = deps
        self.manual = manual
        self.no_dep = no_dep
        self.predicate = predicate
        self.blocks = blocks  # a launch of several blocks: its TaskId names them all

    def apply(self, task: Any, state: ExplicitState) -> None:
        state.used = True
        task.manual = self.manual
        task.predicate = self.predicate
        if self.deps:
            state.explicit[task.id] = expand(self.deps, state)
        if self.no_dep:
            state.untracked[task.id] = self.no_dep
            state.untracking = True
        if self.blocks > 1:
            state.groups[task.id] = (task.id, task.id + self.blocks)


class ExplicitState:
    """A task graph's explicit-scheduling bookkeeping.

    ``explicit``: declared deps per task id; ``groups``: the task range of each
    multi-block launch (its TaskId names them all); ``untracked``: argument positions
    left out of automatic tracking; ``manual_roots``: buffers made with manual_dep=True;
    ``race_check``: the race detector is on (runtime/races.py) and ``accesses`` what each
    traced task touched; ``used``: the run relies on explicit dependencies somewhere.
    """

    def __init__(self) -> None:
        self.used = False
        self.untracking = False  # some argument or buffer is left out of tracking
        self.explicit: dict[int, tuple[int, ...]] = {}
        self.groups: dict[int, tuple[int, int]] = {}
        self.untracked: dict[int, tuple[int, ...]] = {}
        self.manual_roots: set[int] = set()
        self.race_check = False
        self.accesses: dict[int, list] = {}
        self.lines: dict[int, int] = {}  # task id -> the orchestration line submitting it

    def add_manual_root(self, root_id: int) -> None:
        self.manual_roots.add(root_id)
        self.used = self.untracking = True

    def tracked(self, task: Any) -> tuple[Any, list]:
        """The arguments automatic tracking sees: none in a manual scope; else all but the
        `no_dep` positions and `manual_dep=True` buffers."""
        if task.manual:
            return (), []
        skip = self.untracked.get(task.id, ())
        manual_roots = self.manual_roots
        handles = [None if i in skip or (h is not None and h.root.id in manual_roots) else h
                   for i, h in enumerate(task.handles)]
        return task.directions, handles

    def arguments(self, task: Any) -> list | None:
        """What the task's kernel is called with: None when its predicate is false (the
        task is skipped), `Traced` views while the race detector records."""
        if task.predicate is not None and not holds(task.predicate):
            task.skipped = True
            return None
        if self.race_check and task.handles:
            return traced_args(task, self.accesses.setdefault(task.id, []))
        return task.call_args


def explicit_record(task: Any) -> dict[str, Any]:
    """A task's explicit-scheduling fields in deps.json."""
    record: dict[str, Any] = {}
    if task.manual:
        record["manual"] = True
    if task.predicate is not None:
        record["predicate_skipped"] = task.skipped
    return record


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


def expand(deps: tuple[int, ...], state: Any) -> tuple[int, ...]:
    """Each TaskId as the ids of every task of its launch."""
    groups = state.groups
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


_COMPARE = {"==": lambda a, b: a == b, "!=": lambda a, b: a != b, ">": lambda a, b: a > b,
            "<": lambda a, b: a < b, ">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b}


def holds(predicate: tuple[Any, ...]) -> bool:
    """A dispatch predicate ``(handle, indices, op, target)``, read at dispatch time."""
    handle, indices, op, target = predicate
    return bool(_COMPARE[op](handle.array[tuple(int(i) for i in indices)].item(), target))
