"""Task batching (docs/design/runtime.md §6): a window of submitted tasks run as batched
calls of each kernel's task-batched variant must give the bytes submission order gives,
keep the run's records, report errors as a task does, and hold a bounded window.

Each program runs twice on the same inputs, first with ``PYPTO_BATCH_TASKS=0`` (every
task at submit), then batched; the counter `task_batches.STATS` shows the batched run
really made batched calls, so an equality cannot hold vacuously."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile
from pytest_pypto.ir import ranks
from pytest_pypto.ir.apply import PRECISE
from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime import task_batches
from pytest_pypto.runtime.graph import IN, INOUT, OUT, TaskGraph
from pytest_pypto.runtime.tensors import slice_view, whole_root
from ut.helpers import line_of

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import scale_kernels as sk  # noqa: E402

CFG = RunConfig(platform="a2a3sim")
FP32 = dtype_by_name("FP32")


def _both(monkeypatch, compiled, make_args):
    """Outputs (and records) of an unbatched then a batched run, and the batched run's
    (calls, tasks) from the counter."""
    results = []
    for flag in ("0", "1"):
        monkeypatch.setenv(task_batches.ENV_VAR, flag)
        args = make_args()
        before = dict(task_batches.STATS)
        result = run(compiled, *args, config=CFG)
        made = (task_batches.STATS["calls"] - before["calls"],
                task_batches.STATS["tasks"] - before["tasks"])
        results.append((args, result, made))
    assert results[0][2] == (0, 0)  # the switch turns it off
    return results


def _same_bytes(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


# ---------------------------------------------------------------- the bench's programs


@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_paged_attention_is_byte_identical_batched(monkeypatch, dynamic):
    batch, heads, dim, block, pool = 4, 32, 64, 32, 64
    lens = [70, 128, 33, 100]  # ragged: partial last blocks, one- and many-block requests
    compiled = compile(sk.attention_program(heads, dim, block, batch, pool, pool // batch,
                                            dynamic=dynamic), CFG)
    inputs = sk.make_inputs(batch, heads, dim, block, pool, lens)

    def make_args():
        return [inputs[n].copy() for n in sk.ORDER]

    (plain, _, _), (batched, _, (calls, tasks)) = _both(monkeypatch, compiled, make_args)
    _same_bytes(plain[-1], batched[-1])
    assert calls > 0 and tasks > 2 * calls  # many tasks per call
    assert tasks == sk.task_count(batch, heads, block, lens)  # every task went batched
    want = sk.reference(*[inputs[n] for n in sk.ORDER[:5]], heads, block)
    np.testing.assert_allclose(batched[-1], want, rtol=2e-2, atol=2e-2)


def test_the_record_is_the_unbatched_one(monkeypatch):
    batch, heads, dim, block, pool = 2, 16, 32, 16, 16
    compiled = compile(sk.attention_program(heads, dim, block, batch, pool, pool // batch), CFG)
    inputs = sk.make_inputs(batch, heads, dim, block, pool, [40, 20])

    def make_args():
        return [inputs[n].copy() for n in sk.ORDER]

    (_, plain, _), (_, batched, (calls, _)) = _both(monkeypatch, compiled, make_args)
    assert calls > 0
    a, b = plain.record, batched.record
    assert a["execution_order"] == b["execution_order"] == list(range(len(a["tasks"])))
    assert a["edges"] == b["edges"]

    def strip(tasks):
        return [{k: v for k, v in t.items() if k != "host_us"} for t in tasks]

    assert strip(a["tasks"]) == strip(b["tasks"])  # ids, order, placement, args, deps
    assert all(t["host_us"] > 0 for t in b["tasks"])  # each its share of its call


# ------------------------------------------------------- in place, fallback, errors

R, C = 8, 16


def accumulate_program():
    """``acc += x`` in place (InOut), chained on one accumulator per row block."""

    @pl.program
    class Accumulate:
        @pl.function(type=pl.FunctionType.InCore)
        def add_into(self, x: pl.Tensor[[R, C], pl.FP32],
                     acc: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            a = pl.load(acc, [0, 0], [R, C])
            b = pl.load(x, [0, 0], [R, C])
            acc = pl.store(pl.add(pl.mul(a, 0.5), b), [0, 0], acc)
            return acc

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4 * R, C], pl.FP32],
                 acc: pl.InOut[pl.Tensor[[2 * R, C], pl.FP32]]) -> pl.Tensor[[2 * R, C], pl.FP32]:
            for step in pl.range(4):
                for blk in pl.range(2):
                    xs = pl.slice(x, [R, C], [step * R, 0])
                    dst = pl.slice(acc, [R, C], [blk * R, 0])
                    dst = self.add_into(xs, dst)
            return acc

    return Accumulate


def test_in_place_updates_are_byte_identical(monkeypatch):
    compiled = compile(accumulate_program(), CFG)
    rng = np.random.default_rng(1)
    x = rng.standard_normal((4 * R, C)).astype(np.float32)
    acc = rng.standard_normal((2 * R, C)).astype(np.float32)
    (plain, _, _), (batched, _, (calls, tasks)) = _both(
        monkeypatch, compiled, lambda: [x.copy(), acc.copy()])
    _same_bytes(plain[1], batched[1])
    assert (calls, tasks) == (4, 8)  # the two blocks of each step together
    want = acc.copy()
    for step in range(4):
        want = (want * np.float32(0.5) + np.tile(x[step * R:(step + 1) * R], (2, 1)))
    np.testing.assert_allclose(batched[1], want, rtol=1e-6)


def no_variant_program():
    """A clamped load: the kernel has no task-batched variant."""

    @pl.program
    class Clamped:
        @pl.function(type=pl.FunctionType.InCore)
        def edge(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            t = pl.load(x, [0, 0], [R, C], clamp=True)
            out = pl.store(pl.fillpad(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4 * R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
            for i in pl.range(4):
                dst = pl.slice(out, [R, C], [i * R, 0])
                dst = self.edge(pl.slice(x, [R, C], [i * R, 0]), dst)
            return out

    return Clamped


def test_a_kernel_without_variant_runs_task_by_task(monkeypatch):
    compiled = compile(no_variant_program(), CFG)
    x = np.arange(4 * R * C, dtype=np.float32).reshape(4 * R, C)
    (plain, _, _), (batched, _, made) = _both(
        monkeypatch, compiled, lambda: [x.copy(), np.zeros_like(x)])
    assert made == (0, 0)
    _same_bytes(plain[1], batched[1])
    np.testing.assert_array_equal(batched[1], x)


SHIFT_SOURCE = Path(__file__)


def shift_program():
    @pl.program
    class Shift:
        @pl.function(type=pl.FunctionType.InCore)
        def shift(self, x: pl.Tensor[[R, C], pl.FP32], k: pl.Scalar[pl.INDEX],
                  out: pl.Out[pl.Tensor[[4, C], pl.FP32]]) -> pl.Tensor[[4, C], pl.FP32]:
            t = pl.load(x, [k, 0], [4, C])  # shift-load
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4 * R, C], pl.FP32], k: pl.Scalar[pl.INDEX],
                 out: pl.Out[pl.Tensor[[16, C], pl.FP32]]) -> pl.Tensor[[16, C], pl.FP32]:
            for i in pl.range(4):
                dst = pl.slice(out, [4, C], [i * 4, 0])
                dst = self.shift(pl.slice(x, [R, C], [i * R, 0]), k, dst)
            return out

    return Shift


def test_batched_shift_runs_and_an_error_inside_a_batch_names_task_and_line(monkeypatch):
    compiled = compile(shift_program(), CFG)
    x = np.arange(4 * R * C, dtype=np.float32).reshape(4 * R, C)
    (plain, _, _), (batched, _, made) = _both(
        monkeypatch, compiled, lambda: [x.copy(), 2, np.zeros((16, C), np.float32)])
    assert made == (1, 4)
    _same_bytes(plain[2], batched[2])
    monkeypatch.setenv(task_batches.ENV_VAR, "1")
    with pytest.raises(SimulationError) as info:  # rows 6..10 of an 8-row window
        run(compiled, x.copy(), 6, np.zeros((16, C), np.float32), config=CFG)
    text = str(info.value)
    assert "kernel 'shift'" in text and "task 0" in text
    assert info.value.span is not None
    assert info.value.span.line == line_of(SHIFT_SOURCE, "shift-load")


def test_a_submits_one_pass_group_is_the_windows_own(monkeypatch):
    """`Orchestrator._arguments` builds each task's group key and held bytes in its own
    pass over the arguments; they must be what `task_batches.group_of` finds for the task."""
    batch, heads, dim, block, pool = 2, 16, 64, 32, 16
    compiled = compile(sk.attention_program(heads, dim, block, batch, pool, pool // batch,
                                            dynamic=True), CFG)
    inputs = sk.make_inputs(batch, heads, dim, block, pool, [70, 33])
    seen = []
    real_take = task_batches.TaskBatches.take

    def take(self, task, plain, group=None):
        seen.append((group, task_batches.group_of(task)))
        return real_take(self, task, plain, group)

    monkeypatch.setenv(task_batches.ENV_VAR, "1")
    monkeypatch.setattr(task_batches.TaskBatches, "take", take)
    run(compiled, *[inputs[n].copy() for n in sk.ORDER], config=CFG)
    given = [(g, own) for g, own in seen if g is not None]
    assert len(given) == len(seen) == sk.task_count(batch, heads, block, [70, 33])
    assert any(size for (_, size), _ in given)  # made tensors held (not all zero)
    for (key, size), (own_key, own_size) in given:
        assert (key, size) == (own_key, own_size)


# ---------------------------------------------------------------- the graph's window


def _kernel(name, directions, fn):
    return SimpleNamespace(
        name=name, func_id=0, core_type="aiv", fn=fn,
        arg_names=[f"a{i}" for i in range(len(directions))],
        directions=list(directions), returns=[i for i, d in enumerate(directions) if d != IN])


def _copy_kernel(calls):
    """out = in + 1, with a batched variant that logs the stacks it gets."""
    def fn(a, out):
        out[...] = a + 1
        return (out,)

    def tasks(n, a, out):
        calls.append(n)
        out[...] = a + 1
        return (out,)

    fn.tasks, fn.task_bytes, fn.task_fills = tasks, 64, {}
    return _kernel("copy", [IN, OUT], fn)


def _graph(monkeypatch, **bounds):
    monkeypatch.setenv(task_batches.ENV_VAR, "1")
    graph = TaskGraph(clusters=2, deferred=True, eager=True)
    if bounds:
        graph.batches = task_batches.TaskBatches(graph, **bounds)
    return graph, []


def test_a_write_after_read_of_another_kernel_is_not_reordered(monkeypatch):
    graph, roots = _graph(monkeypatch)
    calls: list[int] = []
    copy, shift = _copy_kernel(calls), _copy_kernel(calls)  # two kernels (one body)
    fill = _kernel("fill", [OUT], lambda o: (np.copyto(o, 7.0), o)[1:])

    def made(name, value=0.0):
        return whole_root(roots, np.full((4, 8), value, np.float32), FP32, name,
                          "create_tensor")

    buf, other = made("buf"), made("other", 1.0)
    o = [made(f"o{i}") for i in range(4)]
    graph.submit(shift, [other.array, o[0].array], [other, o[0]])  # 0: free
    graph.submit(fill, [o[1].array], [o[1]])  # 1
    graph.submit(copy, [buf.array, o[1].array], [buf, o[1]])  # 2: after 1 (WAW), reads buf
    graph.submit(shift, [other.array, buf.array], [other, buf])  # 3: writes buf: WAR on 2
    graph.submit(copy, [buf.array, o[2].array], [buf, o[2]])  # 4: RAW on 3
    graph.submit(shift, [other.array, o[3].array], [other, o[3]])  # 5: free: joins task 0
    assert graph.executed == [] and len(graph.batches.held) == 6
    graph.drain()
    # task 3 (another kernel than task 2) is ready once task 2 ran, not with task 0
    assert calls == [2]
    np.testing.assert_array_equal(o[0].array, 2.0)
    np.testing.assert_array_equal(o[1].array, 1.0)  # buf read before task 3 wrote it
    np.testing.assert_array_equal(buf.array, 2.0)
    np.testing.assert_array_equal(o[2].array, 3.0)  # and after
    np.testing.assert_array_equal(o[3].array, 2.0)
    assert graph.executed == list(range(6))
    assert [graph.tasks[i].order for i in range(6)] == list(range(6))


def test_a_sync_point_runs_the_window_only_when_it_touches_a_held_write(monkeypatch):
    graph, roots = _graph(monkeypatch)
    copy = _copy_kernel([])
    src = whole_root(roots, np.zeros((8, 8), np.float32), FP32, "src", "In")
    dst = whole_root(roots, np.zeros((8, 8), np.float32), FP32, "dst", "create_tensor")
    for r in range(4):
        s, d = slice_view(src, [2, 8], [2 * r, 0]), slice_view(dst, [2, 8], [2 * r, 0])
        graph.submit(copy, [s.array, d.array], [s, d])
    graph.finish_writers(slice_view(src, [1, 8], [0, 0]))  # a read nobody writes
    assert graph.executed == []
    graph.finish_writers(slice_view(src, [1, 8], [0, 0]), include_readers=True)  # a write
    assert graph.executed == [0, 1, 2, 3] and not graph.pending


def test_a_write_of_an_entry_input_follows_every_held_read_of_it(monkeypatch):
    """Reads of an entry In tensor are kept as one level per root, not indexed: a write of
    it (the compiler refuses one; the graph still orders it) runs after all of them."""
    graph, roots = _graph(monkeypatch)
    calls: list[int] = []
    copy, shift = _copy_kernel(calls), _copy_kernel(calls)  # two kernels: two groups
    src = whole_root(roots, np.zeros((8, 8), np.float32), FP32, "src", "In")

    def made(name, value=0.0, shape=(2, 8)):
        return whole_root(roots, np.full(shape, value, np.float32), FP32, name, "create_tensor")

    five, o0 = made("five", 5.0), made("o0")
    graph.submit(shift, [five.array, o0.array], [five, o0])  # 0: its group runs first
    outs = [made(f"out{r}") for r in range(4)]
    for r in range(4):  # 1-4: read src
        s, d = slice_view(src, [2, 8], [2 * r, 0]), outs[r]
        graph.submit(copy, [s.array, d.array], [s, d])
    top = slice_view(src, [2, 8], [0, 0])
    graph.submit(shift, [five.array, top.array], [five, top])  # 5: writes src
    after = made("after")
    graph.submit(copy, [top.array, after.array], [top, after])  # 6: reads the write
    graph.drain()
    np.testing.assert_array_equal(outs[0].array, 1.0)  # read before task 5 wrote
    np.testing.assert_array_equal(src.array[:2], 6.0)
    np.testing.assert_array_equal(after.array, 7.0)
    assert graph.executed == list(range(7))


@pytest.mark.parametrize("bounds", [{"max_tasks": 3}, {"max_bytes": 3 * 64 + 1}])
def test_the_window_respects_its_bound(monkeypatch, bounds):
    graph, roots = _graph(monkeypatch, **bounds)
    copy = _copy_kernel([])
    src = whole_root(roots, np.zeros((16, 8), np.float32), FP32, "src", "In")
    dst = whole_root(roots, np.zeros((16, 8), np.float32), FP32, "dst", "create_tensor")
    held = []
    for r in range(8):  # each task: two windows of 2x8 FP32 = 64 bytes each, one of
        # them (dst's) of a made tensor: a window of an entry tensor holds no memory
        s, d = slice_view(src, [2, 8], [2 * r, 0]), slice_view(dst, [2, 8], [2 * r, 0])
        graph.submit(copy, [s.array, d.array], [s, d])
        held.append(len(graph.batches.held))
        assert graph.batches.bytes <= 3 * 64 + 1
    assert max(held) == 3
    assert held == [1, 2, 3, 1, 2, 3, 1, 2]
    graph.drain()
    np.testing.assert_array_equal(dst.array, 1.0)


def test_a_task_writing_a_window_its_own_input_overlaps_runs_alone(monkeypatch):
    graph, roots = _graph(monkeypatch)
    calls: list[int] = []
    copy = _copy_kernel(calls)
    buf = whole_root(roots, np.zeros((8, 8), np.float32), FP32, "buf", "create_tensor")
    for r in range(2):
        w = slice_view(buf, [4, 8], [4 * r, 0])
        graph.submit(copy, [w.array, w.array], [w, w])
    graph.drain()
    assert calls == []  # each on its own buffer window: never stacked
    np.testing.assert_array_equal(buf.array, 1.0)


def test_an_inout_chain_runs_in_submission_order(monkeypatch):
    graph, roots = _graph(monkeypatch)
    calls: list[int] = []

    def fn(acc):
        acc *= 2
        acc += 1
        return (acc,)

    def tasks(n, acc):
        calls.append(n)
        acc *= 2
        acc += 1
        return (acc,)

    fn.tasks, fn.task_bytes, fn.task_fills = tasks, 64, {}
    step = _kernel("step", [INOUT], fn)
    acc = whole_root(roots, np.zeros((2, 8), np.float32), FP32, "acc", "create_tensor")
    for _ in range(3):
        for r in range(2):
            w = slice_view(acc, [1, 8], [r, 0])
            graph.submit(step, [w.array], [w])
    graph.drain()
    assert calls == [2, 2, 2]
    np.testing.assert_array_equal(acc.array, 7.0)


def test_the_switch_and_the_schedules_that_keep_tasks_at_submit(monkeypatch):
    monkeypatch.setenv(task_batches.ENV_VAR, "0")
    assert TaskGraph(clusters=2, deferred=True, eager=True).batches is None
    monkeypatch.setenv(task_batches.ENV_VAR, "1")
    assert TaskGraph(clusters=2, deferred=True, eager=True).batches is not None
    assert TaskGraph(clusters=2, seed=3, deferred=True, eager=True).batches is None
    assert TaskGraph(clusters=2, strict_war=True, deferred=True, eager=True).batches is None
    assert TaskGraph(clusters=2, deferred=True).batches is None  # not eager
    token = PRECISE.set(True)
    try:
        assert TaskGraph(clusters=2, deferred=True, eager=True).batches is None
    finally:
        PRECISE.reset(token)
    ranks.set_current(SimpleNamespace(rank=0, nranks=2))  # a multi-chip rank's thread
    try:
        assert TaskGraph(clusters=2, deferred=True, eager=True).batches is None
    finally:
        ranks.set_current(None)
    assert os.environ[task_batches.ENV_VAR] == "1"


def test_a_task_marked_for_the_argument_dump_runs_after_the_window_at_submit(monkeypatch):
    graph, roots = _graph(monkeypatch)
    copy = _copy_kernel([])
    src = whole_root(roots, np.zeros((4, 8), np.float32), FP32, "src", "In")
    dst = whole_root(roots, np.zeros((4, 8), np.float32), FP32, "dst", "create_tensor")
    graph.submit(copy, [src.array, dst.array], [src, dst])
    assert len(graph.batches.held) == 1
    graph.submit(copy, [src.array, dst.array], [src, dst], dumps=(0,))  # an argument dump
    assert graph.executed == [0, 1] and not graph.batches.held


def test_a_handle_still_held_keeps_its_array_after_its_window_ran(monkeypatch):
    """A batched call drops the arrays of the handles only its tasks held (in place);
    one the orchestration still holds must keep its array for the tasks it submits
    after the window ran."""
    graph, roots = _graph(monkeypatch)
    calls: list[int] = []
    copy = _copy_kernel(calls)
    src = whole_root(roots, np.zeros((4, 8), np.float32), FP32, "src", "In")
    mid = [whole_root(roots, np.full((1, 8), -1.0, np.float32), FP32, f"m{r}",
                      "create_tensor") for r in range(4)]
    for r in range(4):  # held: the test keeps every `mid` handle
        s = slice_view(src, [1, 8], [r, 0])
        graph.submit(copy, [s.array, mid[r].array], [s, mid[r]])
    graph.batches.flush()
    assert calls == [4] and all(m.array is not None for m in mid)
    out = whole_root(roots, np.zeros((4, 8), np.float32), FP32, "out", "create_tensor")
    for r in range(4):  # submitted after the window ran: they read the held handles
        o = slice_view(out, [1, 8], [r, 0])
        graph.submit(copy, [mid[r].array, o.array], [mid[r], o])
    graph.drain()
    assert calls == [4, 4]
    np.testing.assert_array_equal(out.array, 2.0)
    # the record keeps every task's windows, without buffers
    assert all(h.array is None for t in graph.tasks for h in t.handles)
    assert [t.handles[1].root.name for t in graph.tasks[:4]] == ["m0", "m1", "m2", "m3"]
