"""Sync points of orchestration (`pl.tensor.read` / `write`, assemble): they run exactly the
pending tasks that touch what they access, found through the per-root index of pending
accesses, never by scanning every pending task (docs/design/runtime.md §5)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.runtime import graph as graph_module
from pytest_pypto.runtime.graph import IN, OUT, TaskGraph
from pytest_pypto.runtime.tensors import element_window, slice_view, whole_root

FP32 = dtype_by_name("FP32")


def _kernel(name, directions, fn):
    return SimpleNamespace(
        name=name, func_id=0, core_type="aiv", fn=fn, arg_names=[f"a{i}" for i in
                                                                range(len(directions))],
        directions=list(directions), returns=[i for i, d in enumerate(directions) if d != IN],
    )


def _fill(value):
    def fn(out):
        out[...] = value
        return (out,)
    return fn


def _blocks(graph, roots, n, rows=4):
    """n tasks, task i writing rows [rows*i, rows*(i+1)) of one buffer with the value i."""
    buf = whole_root(roots, np.zeros((rows * n, 8), np.float32), FP32, "buf", "create_tensor")
    for i in range(n):
        window = slice_view(buf, [rows, 8], [rows * i, 0])
        graph.submit(_kernel(f"w{i}", [OUT], _fill(i)), [window.array], [window])
    return buf


@pytest.mark.parametrize("seed", [None, 3])
def test_a_read_runs_only_the_writers_of_its_element(seed):
    graph, roots = TaskGraph(clusters=2, seed=seed, deferred=seed is None), []
    buf = _blocks(graph, roots, 10)
    graph.finish_writers(element_window(buf, (4 * 6 + 1, 3)))
    ran = set(graph.executed)
    if seed is None:  # submission order: everything up to the element's writer
        assert ran == set(range(7))
    else:  # a seeded order runs the writer and what it waits for: here nothing else
        assert ran == {6}
    assert buf.array[4 * 6 + 1, 3] == 6
    assert not (buf.array[4 * 7:] != 0).any()  # later writers have not run
    graph.drain()
    assert sorted(graph.executed) == list(range(10))
    np.testing.assert_array_equal(buf.array[::4, 0], np.arange(10))


def test_a_write_also_waits_for_the_pending_readers_of_its_element():
    graph, roots = TaskGraph(clusters=2, deferred=True), []
    src = whole_root(roots, np.ones((8, 8), np.float32), FP32, "src", "In")
    dst = whole_root(roots, np.zeros((8, 8), np.float32), FP32, "dst", "Out")
    copy = _kernel("copy", [IN, OUT], lambda a, o: (np.add(a, 0, out=o),))
    for r in range(8):
        s, d = slice_view(src, [1, 8], [r, 0]), slice_view(dst, [1, 8], [r, 0])
        graph.submit(copy, [s.array, d.array], [s, d])
    graph.finish_writers(element_window(src, (2, 0)))  # a read: nobody writes src
    assert graph.executed == []
    graph.finish_writers(element_window(src, (2, 0)), include_readers=True)  # a write
    assert graph.executed == [0, 1, 2]


def test_a_sync_point_does_not_look_at_tasks_of_other_buffers(monkeypatch):
    graph, roots = TaskGraph(clusters=2, deferred=True), []
    _blocks(graph, roots, 2000)
    table = whole_root(roots, np.arange(16, dtype=np.float32), FP32, "table", "In")
    calls = []
    real = graph_module.overlaps
    monkeypatch.setattr(graph_module, "overlaps", lambda a, b: calls.append(1) or real(a, b))
    for i in range(16):  # 16 reads of a table no task writes, 2,000 tasks pending
        graph.finish_writers(element_window(table, (i,)))
    assert calls == []
    assert graph.executed == []


def test_retired_writers_leave_the_index_as_they_are_met():
    graph, roots = TaskGraph(clusters=2, deferred=True), []
    buf = _blocks(graph, roots, 50)
    graph.finish_writers(element_window(buf, (4 * 49, 0)))  # runs all 50
    writes, _ = graph._pending_on(buf.root.id)
    met = len(writes.overlapping(buf))
    _blocks(graph, roots, 1)  # something pending elsewhere, so the sync point looks
    graph.finish_writers(buf)
    assert met == 50 and len(writes) == 0  # met once, then dropped: never scanned again
