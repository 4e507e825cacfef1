# SPDX-License-Identifier: Apache-2.0
"""The race detector of runs that rely on explicit dependencies (docs/design/scheduling.md §5).

In a manual scope (or with `no_dep_args=` / `manual_dep=True`) nothing orders two
tasks but the `deps=` the user wrote.  While such a run executes, each task receives
its tensor arguments as `Traced` views: slicing stays traced, and every element the
kernel reads (a copy, a cast, a ufunc input, `np.copyto`) or writes (an assignment, a
ufunc ``out=``) is recorded as a window of its root buffer.  After the run every pair
of tasks whose windows of one buffer overlap, at least one writing, must be ordered:
a dependency path from the later to the earlier (automatic or explicit edges), or the
earlier finished before the later was submitted (a blocking orchestration access in
between).  A pair that is not is a `RaceError` naming both tasks, the tensor, the
overlapping region and the kernels' lines, with the missing `deps=` as the hint.

An argument the kernel touched only through paths the views do not see (none of the
bundled ops) counts as its whole declared window, in its declared direction.  Pairs of
two automatically tracked tasks are left to `strict_war` (the device orders RAW and WAW
for them).  Cost: each root's windows sit in a `tensors.WindowIndex`, so each access
meets only the earlier windows whose element range meets its own; an ordering check
walks dependencies backwards no further than the earlier task's id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_pypto.ir.errors import RaceError
from pytest_pypto.runtime.locate import span_at
from pytest_pypto.runtime.tensors import TensorHandle, WindowIndex, overlaps

IN, OUT, INOUT = "In", "Out", "InOut"
_MAX_SHOWN = 8


class Traced(np.ndarray):
    """A task's view of a tensor argument that records the windows it reads and writes."""

    _sink: Any = None  # (list of accesses, root, root base address) of the argument

    def __array_finalize__(self, obj: Any) -> None:
        self._sink = getattr(obj, "_sink", None)

    def _note(self, write: bool) -> None:
        sink = self._sink
        if sink is None or self.size == 0:
            return
        accesses, root, base = sink
        item = self.itemsize
        offset = self.__array_interface__["data"][0] - base
        if offset < 0 or offset >= root.nbytes:
            return
        strides = tuple(s // item for s in self.strides)
        if any(s < 0 for s in strides):
            start = offset // item
            accesses.append((root, start, (root.nbytes // item - start,), (1,), write))
            return
        accesses.append((root, offset // item, self.shape, strides, write))

    def __setitem__(self, key: Any, value: Any) -> None:
        if isinstance(value, Traced):
            value._note(False)
        target = np.ndarray.__getitem__(self, key) if _is_view(self, key) else self
        if isinstance(target, Traced):
            target._note(True)
        else:  # a single element
            self._note(True)
        np.ndarray.__setitem__(self.view(np.ndarray), key, _plain(value))

    def copy(self, *args: Any, **kwargs: Any) -> np.ndarray:  # type: ignore[override]
        self._note(False)
        return self.view(np.ndarray).copy(*args, **kwargs)

    def astype(self, *args: Any, **kwargs: Any) -> np.ndarray:  # type: ignore[override]
        self._note(False)
        return self.view(np.ndarray).astype(*args, **kwargs)

    def item(self, *args: Any) -> Any:
        self._note(False)
        return self.view(np.ndarray).item(*args)

    def tolist(self) -> Any:
        self._note(False)
        return self.view(np.ndarray).tolist()

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        for x in inputs:
            if isinstance(x, Traced):
                x._note(False)
        out = kwargs.get("out")
        if out is not None:
            for o in out:
                if isinstance(o, Traced):
                    o._note(True)
            kwargs["out"] = tuple(_plain(o) for o in out)
        result = getattr(ufunc, method)(*(_plain(x) for x in inputs), **kwargs)
        if out is not None and len(out) == 1:
            return out[0]
        return result

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        if func is np.copyto:
            dst, src = args[0], args[1]
            if isinstance(src, Traced):
                src._note(False)
            if isinstance(dst, Traced):
                dst._note(True)
            return np.copyto(_plain(dst), _plain(src), *args[2:], **kwargs)
        for x in (*args, *kwargs.values()):
            if isinstance(x, Traced):
                x._note(False)
        return func(*(_plain(a) for a in args), **{k: _plain(v) for k, v in kwargs.items()})

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        self._note(False)
        plain = self.view(np.ndarray)
        return plain if dtype is None else plain.astype(dtype)


def _plain(x: Any) -> Any:
    return x.view(np.ndarray) if isinstance(x, Traced) else x


def _is_view(a: np.ndarray, key: Any) -> bool:
    """Whether ``a[key]`` is a view (basic indexing), so its window is the written one."""
    items = key if isinstance(key, tuple) else (key,)
    return all(k is Ellipsis or isinstance(k, (slice, int, np.integer)) for k in items)


def traced_args(task: Any, accesses: list) -> list:
    """The task's arguments with each tensor as a `Traced` view recording into ``accesses``."""
    out = []
    for value, h in zip(task.call_args, task.handles):
        if h is None or not isinstance(value, np.ndarray):
            out.append(value)
            continue
        view = value.view(Traced)
        # the root's first byte: this view's first element is element ``h.start`` of it
        base = value.__array_interface__["data"][0] - h.start * h.root.itemsize
        view._sink = (accesses, h.root, base)
        out.append(view)
    return out


# ---------------------------------------------------------------------- checking


def _window(root: Any, start: int, shape: tuple, strides: tuple) -> TensorHandle:
    return TensorHandle(root, None, start, tuple(shape), tuple(strides))


def task_windows(task: Any, recorded: list | None) -> list[tuple[TensorHandle, bool]]:
    """(window, writes) of what ``task`` touched: its recorded accesses, plus the declared
    window of each tensor argument it has no record for."""
    if task.skipped:
        return []
    out: dict[tuple, tuple[TensorHandle, bool]] = {}
    seen: set[int] = set()
    for root, start, shape, strides, write in recorded or ():
        key = (root.id, start, tuple(shape), strides, write)
        if key not in out:
            out[key] = (_window(root, start, shape, strides), write)
        seen.add(root.id)
    for direction, h in zip(task.directions, task.handles):
        if h is None or h.root.id in seen:
            continue
        if direction != OUT:
            out[(h.root.id, h.start, h.shape, h.strides, False)] = (h, False)
        if direction != IN:
            out[(h.root.id, h.start, h.shape, h.strides, True)] = (h, True)
    return list(out.values())


def find_races(graph: Any) -> list[dict[str, Any]]:
    """Every unordered conflicting pair (first found per pair of tasks), in task order."""
    graph.settle()
    tasks = graph.tasks
    relies = _relies(graph)
    writers: dict[int, WindowIndex] = {}
    readers: dict[int, WindowIndex] = {}
    ordered_memo: dict[int, set[int]] = {}
    found: dict[tuple[int, int], dict[str, Any]] = {}
    for task in tasks:
        j = task.id
        for h, write in task_windows(task, graph.sched.accesses.get(j)):
            rid = h.root.id
            w_index = writers.setdefault(rid, WindowIndex())
            r_index = readers.setdefault(rid, WindowIndex())
            candidates = [(e, True) for e in w_index.overlapping(h)]
            if write:
                candidates += [(e, False) for e in r_index.overlapping(h)]
            for (_, other, i), other_writes in candidates:
                if i == j or (i, j) in found or not (relies(i) or relies(j)):
                    continue
                if not overlaps(other, h) or _ordered(graph, i, j, ordered_memo):
                    continue
                kind = "WAW" if write and other_writes else "WAR" if write else "RAW"
                found[(i, j)] = {"first": i, "second": j, "kind": kind,
                                 "tensor": rid, "tensor_name": h.root.name,
                                 "region": _region(other, h)}
            (w_index if write else r_index).add(h, j)
    return sorted(found.values(), key=lambda r: (r["second"], r["first"]))


def _relies(graph: Any) -> Any:
    """Whether a task's ordering is (partly) the user's: manual, explicit deps, untracked
    arguments or buffers."""
    tasks, explicit, untracked = graph.tasks, graph.sched.explicit, graph.sched.untracked
    manual_roots = graph.sched.manual_roots

    def relies(t: int) -> bool:
        task = tasks[t]
        if task.manual or t in explicit or t in untracked:
            return True
        return bool(manual_roots) and any(
            h is not None and h.root.id in manual_roots for h in task.handles)

    return relies


def _ordered(graph: Any, i: int, j: int, memo: dict[int, set[int]]) -> bool:
    """Whether task i (earlier) is ordered before task j: j depends on it, directly or not,
    or it had run before j was submitted."""
    tasks = graph.tasks
    first = tasks[i]
    if first.done and 0 <= first.order < tasks[j].epoch:
        return True
    known = memo.setdefault(j, set())
    if i in known:
        return True
    stack = [j]
    seen = {j}
    while stack:
        t = stack.pop()
        for d in tasks[t].deps:
            if d == i:
                known.add(i)
                return True
            if d > i and d not in seen:
                seen.add(d)
                dep = tasks[d]
                if dep.done and 0 <= first.order < dep.epoch:  # i ran before d was submitted
                    known.add(i)
                    return True
                stack.append(d)
    return False


def _region(a: TensorHandle, b: TensorHandle) -> str:
    """The shared elements of two windows, as index ranges per axis when both are boxes of
    one frame, else as a byte range."""
    if a.strides == b.strides and a.coords is not None and b.coords is not None:
        parts = []
        for ca, da, cb, db in zip(a.coords, a.shape, b.coords, b.shape):
            lo, hi = max(ca, cb), min(ca + da, cb + db)
            parts.append(f"{lo}:{hi}")
        return f"[{', '.join(parts)}]"
    size = a.root.itemsize
    return f"bytes [{max(a.lo, b.lo) * size}, {min(a.hi, b.hi) * size})"


def race_error(program: str, graph: Any, races: list[dict[str, Any]],
               orchestration_spans: Any = None) -> RaceError:
    """The failure naming the first race (and up to a few more in notes), at the line
    submitting the later task of the first pair."""
    tasks = graph.tasks
    spans = orchestration_spans or {}

    def submitted(t: int) -> Any:
        block = tasks[t].block
        line = graph.sched.lines.get(t - block[0] if block else t)
        return span_at(spans, line) if line is not None else None

    def who(t: int) -> str:
        kernel = tasks[t].kernel
        at = submitted(t)
        where = f"submitted at {at.file}:{at.line}" if at is not None else ""
        body = _kernel_line(graph, kernel)
        where = ", ".join(w for w in (where, f"kernel at {body}" if body else "") if w)
        return f"task {t} (kernel '{kernel}'{', ' + where if where else ''})"

    def line(r: dict[str, Any]) -> str:
        verb = {"RAW": "reads", "WAR": "overwrites", "WAW": "overwrites"}[r["kind"]]
        prior = {"RAW": "writes", "WAR": "reads", "WAW": "writes"}[r["kind"]]
        return (f"{r['kind']} race on '{r['tensor_name']}' {r['region']}: {who(r['second'])} "
                f"{verb} what {who(r['first'])} {prior}, with no dependency path between them")

    first = races[0]
    kernel = graph.kernels.get(tasks[first["second"]].kernel)
    body = getattr(kernel, "spans", None) or {}
    error = RaceError(
        f"'{program}': {len(races)} race(s) in a run that relies on explicit dependencies: "
        f"{line(first)}",
        submitted(first["second"]) or (body[min(body)] if body else None),
        hint=f"order them: pass the TaskId of task {first['first']} "
        f"('{tasks[first['first']].kernel}') in deps=[...] of task {first['second']} "
        f"('{tasks[first['second']].kernel}'), or leave the manual scope "
        "(--pypto-no-race-check turns this check off)",
    )
    error.notes = (*error.notes, *(f"also: {line(r)}" for r in races[1:_MAX_SHOWN]))
    error.races = list(races)  # type: ignore[attr-defined]
    return error


def _kernel_line(graph: Any, kernel: str) -> str:
    spans = getattr(graph.kernels.get(kernel), "spans", None) or {}
    if not spans:
        return ""
    first = spans[min(spans)]
    return f"{first.file}:{first.line}"
