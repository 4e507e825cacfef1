"""Express runs (`runtime.express`): a run whose orchestration only submits tasks on the
entry's own tensors is kept as a fixed schedule, and later runs with the same signature
replay it.  They must give the same results, the same record and the same errors as a
full run, and anything that is no fixed schedule must never be replayed."""

from __future__ import annotations

import numpy as np
import pytest
from runtime_artifacts import K, S, T

from pytest_pypto import RunConfig
from pytest_pypto.ir.artifact import read_manifest, write_manifest
from pytest_pypto.runtime.worker import Worker

F = [8, 16]


def _chain(artifact):
    """y = (x + 1) * 2 through a middle InOut tensor: two tasks, one RAW edge."""
    return artifact(
        entry_args=[T("x", F), T("m", F, direction="InOut"), T("y", F, direction="Out")],
        kernels=[
            K("inc", [T("a", F), T("m", F, direction="InOut")], "m[...] = a + 1"),
            K("dbl", [T("m", F), T("y", F, direction="Out")], "y[...] = m * 2"),
        ],
        orchestration="""
            m = rt.submit("inc", (x, m), returns=(1,))
            y = rt.submit("dbl", (m, y), returns=(1,))
            return (m, y)
        """,
    )


def _without_host_times(record: dict) -> dict:
    tasks = [{k: v for k, v in t.items() if k != "host_us"} for t in record["tasks"]]
    return {**record, "tasks": tasks}


def test_a_replayed_run_gives_the_full_runs_results_and_record(artifact, rng):
    art = _chain(artifact)
    worker = Worker("a2a3sim")
    runs = []
    for _ in range(3):
        x = rng.standard_normal(F).astype(np.float32)
        m, y = np.zeros(F, np.float32), np.zeros(F, np.float32)
        runs.append(worker.run(art, x, m, y))
        np.testing.assert_array_equal(m, x + 1)
        np.testing.assert_array_equal(y, (x + 1) * 2)
    assert len(worker.prepare(art).schedules) == 1  # one signature: one schedule
    first, *replayed = runs
    for run in replayed:
        assert _without_host_times(run.record) == _without_host_times(first.record)
        assert [e["kind"] for e in run.record["edges"]] == ["RAW"]
        assert run.kernel_seconds > 0
        assert all(t["host_us"] >= 0 for t in run.record["tasks"])
        assert run.deps()["execution_order"] == [0, 1]


@pytest.mark.parametrize("orchestration", [
    # a task gets a window of a tensor
    """
        top = rt.slice(x, (4, 16), (0, 0))
        o = rt.submit("half", (top, o), returns=(1,))
        return (o,)
    """,
    # the orchestration reads a tensor
    """
        if rt.read(x, (0, 0)) > 100.0:
            return (o,)
        o = rt.submit("half", (rt.slice(x, (4, 16), (4, 0)), o), returns=(1,))
        return (o,)
    """,
    # it makes a tensor
    """
        t = rt.create_tensor((4, 16), "FP32", 0.0)
        o = rt.submit("half", (t, o), returns=(1,))
        o = rt.submit("half", (rt.slice(x, (4, 16), (0, 0)), o), returns=(1,))
        return (o,)
    """,
], ids=["window", "read", "create_tensor"])
def test_what_is_no_fixed_schedule_is_never_replayed(artifact, orchestration):
    art = artifact(
        entry_args=[T("x", F), T("o", [4, 16], direction="Out")],
        kernels=[K("half", [T("a", [4, 16]), T("o", [4, 16], direction="Out")], "o[...] = a / 2")],
        orchestration=orchestration, platform="a5sim",
    )
    worker = Worker("a5sim")
    for big in (False, True, False):
        x = np.arange(128, dtype=np.float32).reshape(F) + (1000 if big else 0)
        o = np.zeros((4, 16), np.float32)
        worker.run(art, x, o)
        if "read" in orchestration and big:
            assert np.isnan(o).all()  # nothing wrote the Out: it holds poison
        else:
            np.testing.assert_array_equal(o, x[:4] / 2 if "read" not in orchestration else x[4:] / 2)
    assert worker.prepare(art).schedules == {}


def test_scalars_and_dynamic_shapes_key_their_own_schedules(artifact):
    """The orchestration branches on a scalar: each value replays its own branch."""
    art = artifact(
        entry_args=[T("x", ["N", 16]), S("s"), T("o", ["N", 16], direction="Out")],
        kernels=[
            K("scale", [T("a", ["N", 16]), S("s"), T("o", ["N", 16], direction="Out")],
              "o[...] = a * s"),
            K("neg", [T("a", ["N", 16]), T("o", ["N", 16], direction="Out")], "o[...] = -a"),
        ],
        orchestration="""
            if s > 0:
                o = rt.submit("scale", (x, s, o), returns=(2,))
            else:
                o = rt.submit("neg", (x, o), returns=(1,))
            return (o,)
        """,
    )
    worker = Worker("a2a3sim")
    for s, rows in [(3.0, 4), (-1.0, 4), (3.0, 8), (3.0, 4), (-1.0, 4), (2.0, 4)]:
        x = np.arange(rows * 16, dtype=np.float32).reshape(rows, 16)
        o = np.zeros_like(x)
        run = worker.run(art, x, s, o)
        np.testing.assert_array_equal(o, x * s if s > 0 else -x)
        assert [t["kernel"] for t in run.tasks] == (["scale"] if s > 0 else ["neg"])
    assert len(worker.prepare(art).schedules) == 4  # (3, 4 rows) (-1, 4) (3, 8) (2, 4)


def test_a_failing_replay_is_reported_as_the_full_run_reports_it(artifact):
    """A kernel failing on some data only: the replay's failure is run again in full,
    so the error names its task and carries the graph record; the Out written in place
    holds poison, not a partial result."""
    art = artifact(
        entry_args=[T("x", F), T("o", F, direction="Out")],
        kernels=[K("check", [T("a", F), T("o", F, direction="Out")],
                   "o[:4] = a[:4]\nif (a < 0).any():\n    raise ValueError('negative input')\n"
                   "o[4:] = a[4:]")],
        orchestration="""
            o = rt.submit("check", (x, o), returns=(1,))
            return (o,)
        """, platform="a5sim",
    )
    manifest = read_manifest(art)
    manifest.entry_args[1].fully_written = True
    write_manifest(art, manifest)
    worker = Worker("a5sim")
    x = np.ones(F, np.float32)
    o = np.zeros(F, np.float32)
    worker.run(art, x, o)
    assert worker.prepare(art).schedules  # the next run replays
    x[5, 5] = -1.0
    with pytest.raises(ValueError, match="negative input") as info:
        worker.run(art, x, o)
    assert any("while executing task 0 (kernel 'check')" in note
               for note in getattr(info.value, "__notes__", []))
    assert np.isnan(o).all()


@pytest.mark.parametrize("config", [
    RunConfig(platform="a2a3sim", schedule_seed=7),
    RunConfig(platform="a2a3sim", strict_war=True),
], ids=["schedule_seed", "strict_war"])
def test_runs_with_their_own_schedule_bookkeeping_are_full_runs(artifact, rng, config):
    art = _chain(artifact)
    worker = Worker("a2a3sim")
    for _ in range(2):
        x = rng.standard_normal(F).astype(np.float32)
        m, y = np.zeros(F, np.float32), np.zeros(F, np.float32)
        worker.run(art, x, m, y, config=config)
        np.testing.assert_array_equal(y, (x + 1) * 2)
    assert worker.prepare(art).schedules == {}


def test_a_one_argument_kernel_replays_on_its_own_inout(artifact):
    art = artifact(
        entry_args=[T("x", F, direction="InOut")],
        kernels=[K("negate", [T("x", F, direction="InOut")], "x[...] = -x")],
        orchestration="""
            x = rt.submit("negate", (x,), returns=(0,))
            return (x,)
        """,
    )
    worker = Worker("a2a3sim")
    x = np.arange(128, dtype=np.float32).reshape(F)
    for sign in (-1, 1, -1):  # each run negates what the caller holds
        worker.run(art, x)
        np.testing.assert_array_equal(x, sign * np.arange(128, dtype=np.float32).reshape(F))
    assert len(worker.prepare(art).schedules) == 1
