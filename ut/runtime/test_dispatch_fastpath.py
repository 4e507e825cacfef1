# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""The lean dispatch path (#13): what it precomputes and defers must not show.

The worker plans each artifact once (`worker.Prepared`, `staging.EntryPlan`), runs an
unseeded graph without computing dependencies or core placement until the record is
asked for (`TaskGraph(deferred=True)`), and reuses large staged buffers between runs
(`staging.POOL`).  Each is checked here against the general path (an eager graph,
fresh buffers), on both sims, with numpy references written in the tests.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime import graph as graph_module
from pytest_pypto.runtime import staging, worker
from pytest_pypto.runtime.worker import Worker
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")


line_of = line_finder(__file__)


M = pl.dynamic("M")
N, TM = 32, 8


@pl.program
class Rows:
    """out = 2x, then its first TM rows + 1 (reading out: RAW; writing it: WAW), after a
    blocking read of out in the orchestration; the row count is dynamic."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],  # entry-line
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        rows = pl.tensor.dim(x, 0)
        r = 0
        while r < rows:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="double"):
                t = pl.load(x, [r, 0], [TM, N])
                out = pl.store(pl.add(t, t), [r, 0], out)
            r = r + TM
        first = pl.tensor.read(out, [0, 0])
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="bump"):
            u = pl.load(out, [0, 0], [TM, N])
            out = pl.store(pl.add(u, 1.0), [0, 0], out)
        return out


BLOCKS, BR, BN = 4, 16, 32


@pl.program
class Launch:
    """A pl.spmd launch of four blocks, then one task reading all of them."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[BLOCKS * BR, BN], pl.FP32],
              mid: pl.Out[pl.Tensor[[BLOCKS * BR, BN], pl.FP32]]
              ) -> pl.Tensor[[BLOCKS * BR, BN], pl.FP32]:
        i = pl.tile.get_block_idx()
        t = pl.load(a, [i * BR, 0], [BR, BN])
        mid = pl.store(pl.mul(t, 3.0), [i * BR, 0], mid)
        return mid

    @pl.function(type=pl.FunctionType.InCore)
    def negate(self, a: pl.Tensor[[BLOCKS * BR, BN], pl.FP32],
               out: pl.Out[pl.Tensor[[BLOCKS * BR, BN], pl.FP32]]
               ) -> pl.Tensor[[BLOCKS * BR, BN], pl.FP32]:
        out = pl.store(pl.neg(pl.load(a, [0, 0], [BLOCKS * BR, BN])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[BLOCKS * BR, BN], pl.FP32],
             out: pl.Out[pl.Tensor[[BLOCKS * BR, BN], pl.FP32]]
             ) -> pl.Tensor[[BLOCKS * BR, BN], pl.FP32]:
        mid = pl.create_tensor([BLOCKS * BR, BN], dtype=pl.FP32)
        with pl.spmd(BLOCKS):
            mid = self.scale(a, mid)
        out = self.negate(mid, out)
        return out


PR, PC = 256, 128  # 128 KiB of FP32: large enough for the staging pool


@pl.program
class WholeOut:
    """Writes all of a [PR, PC] Out (fully written: staged unfilled)."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[PR, PC], pl.FP32],
             out: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        for r in pl.range(0, PR, 64):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
                out = pl.store(pl.load(x, [r, 0], [64, PC]), [r, 0], out)
        return out


@pl.program
class HalfOut:
    """Writes the first 64 rows of a [PR, PC] Out and adds x into an InOut: the rest of
    the Out is whatever staging filled it with."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[PR, PC], pl.FP32],
             acc: pl.InOut[pl.Tensor[[PR, PC], pl.FP32]],
             out: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="head"):
            out = pl.store(pl.load(x, [0, 0], [64, PC]), [0, 0], out)
        for r in pl.range(0, PR, 64):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="accumulate"):
                s = pl.add(pl.load(acc, [r, 0], [64, PC]), pl.load(x, [r, 0], [64, PC]))
                acc = pl.store(s, [r, 0], acc)
        return out


class _Sub(np.ndarray):
    """An ndarray subclass (staged as a plain ndarray of its memory)."""


def _compiled(program, platform):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def _without_timing(record: dict) -> dict:
    """A run record minus host times (measured, so different in every run)."""
    return {**record, "tasks": [{**t, "host_us": 0} for t in record["tasks"]]}


@pytest.fixture
def eager_graph(monkeypatch: pytest.MonkeyPatch):
    """Make the worker build the general (eager) graph: dependencies and placement
    computed as tasks are submitted and executed."""

    class Eager(graph_module.TaskGraph):
        def __init__(self, *args, **kwargs):
            kwargs["deferred"] = False
            super().__init__(*args, **kwargs)

    def use() -> None:
        monkeypatch.setattr(worker, "TaskGraph", Eager)

    return use


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows", [16, 40])
def test_deferred_graph_gives_the_outputs_and_record_of_the_eager_one(
    platform, rows, eager_graph
):
    x = np.random.default_rng(rows).standard_normal((rows, N)).astype(np.float32)
    expected = x + x
    expected[:TM] += 1.0
    compiled = _compiled(Rows, platform)
    lean_out = np.empty_like(x)
    lean = pytest_pypto.run(compiled, x, lean_out, config=RunConfig(platform=platform))
    lean_record = _without_timing(lean.record)
    eager_graph()
    eager_out = np.empty_like(x)
    eager = Worker(platform).run(compiled, x, eager_out, config=RunConfig(platform=platform))
    np.testing.assert_array_equal(lean_out, expected)
    np.testing.assert_array_equal(eager_out, expected)
    assert lean_record == _without_timing(eager.record)
    tasks = lean_record["tasks"]
    assert [t["kernel"] for t in tasks] == ["double"] * (rows // TM) + ["bump"]
    # each double task writes all of out (the region's parameter is the whole tensor), so
    # the bump reads (RAW) what the last one wrote, which superseded the earlier ones
    assert tasks[-1]["deps"] == [{"task": rows // TM - 1, "kind": "RAW"}]
    assert list(lean_record["dynamic_dims"].values()) == [rows]  # the one pl.dynamic M
    assert all(t["step"] >= 0 and t["slots"] for t in tasks)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_deferred_launch_records_blocks_as_the_eager_graph_does(platform, eager_graph):
    a = np.random.default_rng(5).standard_normal((BLOCKS * BR, BN)).astype(np.float32)
    compiled = _compiled(Launch, platform)
    out = np.empty_like(a)
    lean = Worker(platform).run(compiled, a, out)
    np.testing.assert_array_equal(out, -(a * np.float32(3.0)))
    eager_graph()
    again = np.empty_like(a)
    eager = Worker(platform).run(compiled, a, again)
    np.testing.assert_array_equal(again, out)
    assert _without_timing(lean.record) == _without_timing(eager.record)
    blocks = [t for t in lean.tasks if t["kernel"] == "scale"]
    assert [t["block"]["index"] for t in blocks] == list(range(BLOCKS))
    (last,) = [t for t in lean.tasks if t["kernel"] == "negate"]
    assert sorted(d["task"] for d in last["deps"]) == [t["id"] for t in blocks]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_seeded_or_strict_run_still_tracks_dependencies_eagerly(platform):
    x = np.random.default_rng(2).standard_normal((24, N)).astype(np.float32)
    compiled = _compiled(Rows, platform)
    for cfg in (RunConfig(platform=platform, schedule_seed=3),
                RunConfig(platform=platform, strict_war=True)):
        out = np.empty_like(x)
        run = pytest_pypto.run(compiled, x, out, config=cfg)
        assert not run._graph.deferred
        expected = x + x
        expected[:TM] += 1.0
        np.testing.assert_array_equal(out, expected)
        assert run.tasks[-1]["deps"] == [{"task": 24 // TM - 1, "kind": "RAW"}]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dynamic_dims_bind_per_call_of_one_prepared_artifact(platform):
    compiled = _compiled(Rows, platform)
    w = Worker(platform)
    for rows in (8, 32, 16):
        x = np.arange(rows * N, dtype=np.float32).reshape(rows, N)
        out = np.empty_like(x)
        run = w.run(compiled, x, out)
        expected = 2 * x
        expected[:TM] += 1
        np.testing.assert_array_equal(out, expected)
        assert list(run.deps()["dynamic_dims"].values()) == [rows]
        assert len(run.tasks) == rows // TM + 1
    assert w.prepare(compiled) is w.prepare(compiled)  # planned once


@pytest.mark.parametrize("platform", PLATFORMS)
def test_staging_errors_name_the_entry_line_and_the_next_run_is_correct(platform):
    compiled = _compiled(Rows, platform)
    x = np.ones((16, N), np.float32)
    out = np.full((16, N), 7.0, np.float32)
    with pytest.raises(SimulationError) as ei:
        pytest_pypto.run(compiled, x.astype(np.float64), out, config=RunConfig(platform=platform))
    assert "has dtype FP32 (float32), but the array has dtype float64" in ei.value.message
    assert ei.value.span.line == line_of("# entry-line")  # the def line
    np.testing.assert_array_equal(out, 7.0)  # untouched
    with pytest.raises(SimulationError) as ei:
        pytest_pypto.run(compiled, x, out[:, :5], config=RunConfig(platform=platform))
    assert "dimension 1: expected 32, got 5" in ei.value.message
    assert ei.value.span.line == line_of("# entry-line")
    pytest_pypto.run(compiled, x, out, config=RunConfig(platform=platform))
    expected = np.full((16, N), 2.0, np.float32)
    expected[:TM] = 3.0
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_non_contiguous_or_subclass_input_takes_the_general_checks(platform):
    compiled = _compiled(Rows, platform)
    wide = np.random.default_rng(9).standard_normal((16, 2 * N)).astype(np.float32)
    x = wide[:, ::2]  # not C-contiguous
    out = np.empty((16, N), np.float32)
    pytest_pypto.run(compiled, x, out, config=RunConfig(platform=platform))
    expected = x + x
    expected[:TM] += 1.0
    np.testing.assert_array_equal(out, expected)
    out2 = np.empty((16, N), np.float32)
    pytest_pypto.run(compiled, np.ascontiguousarray(x).view(_Sub), out2,
                     config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out2, expected)
    assert not x.flags.c_contiguous and wide.flags.writeable  # the caller's arrays as given


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("uninitialized", ["poison", "zero"])
def test_a_reused_staging_buffer_is_refilled_as_a_fresh_one(platform, uninitialized):
    """WholeOut leaves its buffers in the pool; HalfOut, of the same shape, then gets one:
    its unwritten rows must not show WholeOut's data, its InOut must be the caller's."""
    cfg = RunConfig(platform=platform, uninitialized=uninitialized)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((PR, PC)).astype(np.float32)
    whole = np.empty_like(x)
    pytest_pypto.run(_compiled(WholeOut, platform), x, whole, config=cfg)
    np.testing.assert_array_equal(whole, x)
    assert staging.POOL.kept_bytes >= x.nbytes
    half = _compiled(HalfOut, platform)
    for k in range(2):
        acc = rng.standard_normal((PR, PC)).astype(np.float32)
        want_acc = acc + x
        out = np.full_like(x, 5.0)
        pytest_pypto.run(half, x, acc, out, config=cfg)
        np.testing.assert_array_equal(out[:64], x[:64])
        rest = out[64:]
        assert (np.isnan(rest).all() if uninitialized == "poison" else (rest == 0).all()), k
        np.testing.assert_array_equal(acc, want_acc)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pooled_and_fresh_buffers_give_identical_outputs(platform, monkeypatch):
    x = np.random.default_rng(8).standard_normal((PR, PC)).astype(np.float32)
    acc0 = np.random.default_rng(9).standard_normal((PR, PC)).astype(np.float32)
    compiled = _compiled(HalfOut, platform)

    def outputs() -> tuple[np.ndarray, np.ndarray]:
        acc, out = acc0.copy(), np.zeros_like(x)
        pytest_pypto.run(compiled, x, acc, out, config=RunConfig(platform=platform))
        return acc, out

    pooled = [outputs() for _ in range(3)]
    monkeypatch.setattr(staging.POOL, "min_bytes", 1 << 62)  # nothing is pooled
    staging.POOL.clear()
    fresh = outputs()
    for acc, out in pooled:
        assert acc.tobytes() == fresh[0].tobytes()
        assert out.tobytes() == fresh[1].tobytes()  # NaN poison bit for bit


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_failed_run_gives_nothing_back_and_the_next_run_is_correct(platform, monkeypatch):
    """A kernel failing mid-run: outputs untouched, its staged buffers not reused while a
    record may refer to them, and the next run of the same prepared artifact correct."""
    compiled = _compiled(HalfOut, platform)
    x = np.random.default_rng(1).standard_normal((PR, PC)).astype(np.float32)
    staging.POOL.clear()
    prepared = Worker(platform).prepare(compiled)
    real = prepared.loaded.kernels["accumulate"].fn
    calls = []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == 2:
            raise SimulationError("injected failure")
        return real(*args, **kwargs)

    monkeypatch.setattr(prepared.loaded.kernels["accumulate"], "fn", failing)
    w = Worker(platform)
    acc, out = np.ones_like(x), np.full_like(x, 9.0)
    with pytest.raises(SimulationError, match="injected failure"):
        w.run(prepared.loaded, x, acc, out)
    np.testing.assert_array_equal(acc, 1.0)
    np.testing.assert_array_equal(out, 9.0)
    assert staging.POOL.kept_bytes == 0
    monkeypatch.undo()
    w.run(prepared.loaded, x, acc, out)
    np.testing.assert_array_equal(acc, 1.0 + x)
    np.testing.assert_array_equal(out[:64], x[:64])


def test_the_pool_keeps_at_most_its_limit_and_drops_the_oldest_first():
    pool = staging.BufferPool(limit_bytes=3 * 4096, min_bytes=1024)
    a, b, c, d = (np.empty(1024, np.float32) for _ in range(4))  # 4 KiB each
    small = np.empty(16, np.float32)
    pool.give([a, b, small])
    pool.give([c, d])  # over the limit by one: a (the oldest) goes
    assert pool.kept_bytes == 3 * 4096
    taken = [pool.take((1024,), np.dtype(np.float32)) for _ in range(4)]
    assert all(t is e for t, e in zip(taken, [d, c, b])) and taken[3] is None  # not a
    assert pool.take((16,), np.dtype(np.float32)) is None and pool.kept_bytes == 0
