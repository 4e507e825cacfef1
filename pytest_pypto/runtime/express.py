"""Express runs: a fixed schedule replayed without building its task graph.

Most orchestrations only submit tasks on the entry's own tensors.  What runs then,
in which order and on which arguments, depends on nothing but the arguments' shapes
and scalar values: generated orchestration code reads nothing else (no tensor data,
no state), and the worker's default schedule runs tasks in submission order.  So after
such a run (`record`) the worker keeps its `Schedule`, keyed by the `signature` of
the staged arguments, and a later run with the same signature calls the kernels in
that order on its staged arrays (`replay`): no handles, roots, task objects or graph.

The task graph of an express run is still there for whoever asks (`SimRun.record`,
``deps.json``): `dry_graph` submits the same orchestration into a fresh graph and
marks its tasks executed in order without running them (the kernels' host times are
the replay's own), which gives exactly the record a full run gives.

Not express: seeded schedules, strict WAR checks, precise mode, runs that save kernels
or trace (those need the full run's bookkeeping), and any orchestration that makes a
tensor, reads or writes one, assembles, or hands a task a window of a tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from operator import itemgetter
from time import perf_counter
from typing import Any

from pytest_pypto.runtime.graph import TaskGraph, write_back
from pytest_pypto.runtime.orchestrator import Orchestrator
from pytest_pypto.runtime.staging import EntryPlan, entry_handles

__all__ = ["Schedule", "dry_graph", "record", "replay", "signature"]


class Schedule:
    """A recorded run's kernel calls, in order: for each, the kernel function, what
    picks its arguments from a run's staged values, launch keywords and the positions
    of the arguments it returns."""

    __slots__ = ("steps",)

    def __init__(self, steps: tuple[tuple[Callable, Callable, dict | None, tuple], ...]) -> None:
        self.steps = steps


def _picker(spec: list[tuple[bool, Any]]) -> Callable[[Sequence[Any]], tuple]:
    """``values -> kernel arguments``: entry positions taken from the values, scalars
    as recorded (a tuple getter when every argument is one of several tensors)."""
    if len(spec) > 1 and all(is_tensor for is_tensor, _ in spec):
        return itemgetter(*[position for _, position in spec])
    frozen = tuple(spec)
    return lambda values: tuple([values[x] if is_tensor else x for is_tensor, x in frozen])


def keyed_params(plan: EntryPlan) -> tuple[tuple[int, bool], ...]:
    """(position, is a scalar) of every value that can change the schedule: scalars and
    tensors with dynamic dims (every static tensor was checked to have its declared shape)."""
    return tuple((i, p.scalar) for i, p in enumerate(plan.params) if p.scalar or p.static is None)


def signature(keyed: tuple[tuple[int, bool], ...], values: Sequence[Any]) -> tuple:
    """The schedule key of one run's staged values: shapes of the keyed tensors, class and
    value of the scalars (1 and True differ)."""
    if not keyed:
        return ()
    return tuple([(values[i].__class__, values[i]) if scalar else values[i].shape
                  for i, scalar in keyed])


def record(plan: EntryPlan, rt: Orchestrator, graph: TaskGraph) -> Schedule | None:
    """The schedule of a finished run, or None when it is no fixed schedule (module
    docstring): every task argument a whole entry tensor or a scalar."""
    if rt.beyond_submits or graph.pending or len(graph.executed) != len(graph.tasks) \
            or graph.completions.used:  # deferred completions order the run: no replay
        return None
    tensor_positions = [i for i, p in enumerate(plan.params) if not p.scalar]
    if len(rt.roots) != len(tensor_positions):
        return None
    steps = []
    tasks = graph.tasks
    for tid in graph.executed:
        task = tasks[tid]
        spec = []
        for handle, value in zip(task.handles, task.call_args):
            if handle is None:
                spec.append((False, value))
                continue
            root = handle.root
            if not handle.is_plain_whole:  # a window: its view would differ per run
                return None
            spec.append((True, tensor_positions[root.id]))
        steps.append((task.fn, _picker(spec), task.kwargs, task.returns))
    return Schedule(tuple(steps))


def replay(schedule: Schedule, values: Sequence[Any]) -> list[float]:
    """Run the schedule's kernels on one run's staged ``values``; their host seconds."""
    seconds = []
    for fn, pick, kwargs, returns in schedule.steps:
        args = pick(values)
        start = perf_counter()
        result = fn(*args) if kwargs is None else fn(*args, **kwargs)
        seconds.append(perf_counter() - start)
        if result:
            write_back(returns, args, result)
    return seconds


def dry_graph(
    make_orchestration: Callable[[Orchestrator], Callable[..., Any]],
    kernels: dict[str, Any], clusters: int, plan: EntryPlan, values: Sequence[Any],
    seconds: Sequence[float],
) -> tuple[TaskGraph, list]:
    """The graph and roots a full run of the same schedule would have left: the
    orchestration submitted again, its tasks marked executed in submission order."""
    graph = TaskGraph(clusters, kernels=kernels, deferred=True)
    rt = Orchestrator(kernels, graph, [])
    make_orchestration(rt)(*entry_handles(plan, values, rt.roots))
    pending, graph.pending = graph.pending, {}
    total = 0.0
    for task, spent in zip(pending.values(), seconds):
        task.order = len(graph.executed)
        graph.executed.append(task.id)
        task.seconds = spent
        task.done = True
        total += spent
    graph.kernel_seconds = total
    return graph, rt.roots
