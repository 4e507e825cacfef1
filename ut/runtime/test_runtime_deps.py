"""Task dependencies as the device runtime derives them: RAW, WAW, no WAR, byte ranges."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from runtime_artifacts import K, T

from pytest_pypto import RunConfig
from pytest_pypto.runtime.worker import WarHazardError, Worker

F = [64, 64]


def _edges(run):
    return {(e["from"], e["to"], e["kind"]) for e in run.deps()["edges"]}


def _pipeline(artifact):
    """x -> k1 (tmp = x + 1) -> k2 (out = tmp * 2), tmp a create_tensor intermediate."""
    return artifact(
        entry_args=[T("x", F), T("out", F, direction="Out")],
        kernels=[
            K("k1", [T("a", F), T("t", F, direction="Out")], "t[...] = a + 1"),
            K("k2", [T("t", F), T("o", F, direction="Out")], "o[...] = t * 2"),
        ],
        orchestration="""
            tmp = rt.create_tensor([64, 64], "FP32")
            tmp = rt.submit("k1", (x, tmp), returns=(1,))
            out = rt.submit("k2", (tmp, out), returns=(1,))
            return (out,)
        """,
    )


def test_create_tensor_intermediate_gives_a_raw_edge(artifact, rng):
    x = rng.standard_normal(F).astype(np.float32)
    out = np.zeros(F, np.float32)
    run = Worker("a2a3sim").run(_pipeline(artifact), x, out)
    np.testing.assert_array_equal(out, (x + 1) * 2)
    deps = run.deps()
    assert deps["sim_backend"] == "numpy-functional"
    assert _edges(run) == {(0, 1, "RAW")}
    tmp = next(t for t in deps["tensors"] if t["origin"] == "create_tensor")
    # the intermediate is argument 1 of task 0 (written) and argument 0 of task 1 (read)
    assert deps["tasks"][0]["args"][1]["tensor"] == tmp["id"]
    assert deps["tasks"][1]["args"][0] == {
        "name": "t", "direction": "In", "tensor": tmp["id"], "shape": F, "bytes": [0, 64 * 64 * 4]
    }
    assert deps["tasks"][1]["deps"] == [{"task": 0, "kind": "RAW"}]
    assert deps["execution_order"] == [0, 1]
    assert [t["kernel"] for t in run.tasks] == ["k1", "k2"]
    assert [t["func_id"] for t in run.tasks] == [0, 1]


def test_second_writer_is_ordered_by_waw(artifact, rng):
    x, y = (rng.standard_normal(F).astype(np.float32) for _ in range(2))
    art = artifact(
        entry_args=[T("x", F), T("y", F), T("out", F, direction="Out")],
        kernels=[K("copy", [T("a", F), T("o", F, direction="Out")], "o[...] = a")],
        orchestration="""
            out = rt.submit("copy", (x, out), returns=(1,))
            out = rt.submit("copy", (y, out), returns=(1,))
            return (out,)
        """,
    )
    for seed in (None, *range(8)):
        out = np.zeros(F, np.float32)
        run = Worker("a2a3sim").run(art, x, y, out, config=RunConfig(schedule_seed=seed))
        np.testing.assert_array_equal(out, y)  # the later writer wins under every schedule
        assert _edges(run) == {(0, 1, "WAW")}


def _war(artifact):
    """k_read reads buf; k_write then overwrites buf: a WAR the runtime does not order."""
    return artifact(
        entry_args=[T("buf", F, direction="InOut"), T("r", F, direction="Out")],
        kernels=[
            K("k_read", [T("b", F), T("o", F, direction="Out")], "o[...] = b"),
            K("k_write", [T("b", F, direction="Out")], "b[...] = -1.0"),
        ],
        orchestration="""
            r = rt.submit("k_read", (buf, r), returns=(1,))
            buf = rt.submit("k_write", (buf,), returns=(0,))
            return (buf, r)
        """,
    )


def test_write_after_read_is_not_an_edge(artifact):
    buf = np.full(F, 3.0, np.float32)
    r = np.zeros(F, np.float32)
    run = Worker("a2a3sim").run(_war(artifact), buf, r)
    assert _edges(run) == set()
    assert run.war_hazards == []
    np.testing.assert_array_equal(r, 3.0)  # submission order: the read ran first
    np.testing.assert_array_equal(buf, -1.0)


def test_strict_war_reports_the_hazard(artifact):
    buf = np.full(F, 3.0, np.float32)
    r = np.zeros(F, np.float32)
    with pytest.raises(WarHazardError, match="write-after-read") as caught:
        Worker("a2a3sim").run(_war(artifact), buf, r, config=RunConfig(strict_war=True))
    assert "task 1 (kernel 'k_write') writes 'buf'" in caught.value.message
    assert "task 0 (kernel 'k_read') reads" in caught.value.message
    (hazard,) = caught.value.war_hazards
    assert (hazard["reader"], hazard["writer"], hazard["tensor_name"]) == (0, 1, "buf")
    assert caught.value.run_record["war_hazards"] == [hazard]


def test_schedule_seed_exposes_a_missing_dependency(artifact):
    art = _war(artifact)
    results = set()
    for seed in range(16):
        buf = np.full(F, 3.0, np.float32)
        r = np.zeros(F, np.float32)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            Worker("a2a3sim").run(art, buf, r, config=RunConfig(schedule_seed=seed))
        results.add(float(r[0, 0]))
    assert results == {3.0, -1.0}  # some schedule ran the writer before the reader


HALF = [64, 32]


def _halves(artifact, reader_shape, reader_offsets):
    """Two writers of the column halves of one buffer, then one reader of a window."""
    rs = list(reader_shape)
    return artifact(
        entry_args=[T("out", rs, direction="Out")],
        kernels=[
            K("fill", [T("o", HALF, direction="Out")], "o[...] = 1.0"),
            K("fill2", [T("o", HALF, direction="Out")], "o[...] = 2.0"),
            K("readw", [T("b", rs), T("o", rs, direction="Out")], "o[...] = b"),
        ],
        orchestration=f"""
            buf = rt.create_tensor([64, 64], "FP32")
            rt.submit("fill", (rt.slice(buf, [64, 32], [0, 0]),))
            rt.submit("fill2", (rt.slice(buf, [64, 32], [0, 32]),))
            w = rt.slice(buf, {rs}, {list(reader_offsets)})
            out = rt.submit("readw", (w, out), returns=(1,))
            return (out,)
        """,
    )


@pytest.mark.parametrize(
    ("shape", "offsets", "producers", "value"),
    [
        ([64, 64], [0, 0], {0, 1}, None),  # whole buffer: both halves
        ([64, 16], [0, 8], {0}, 1.0),  # inside the left half only
        ([64, 16], [0, 40], {1}, 2.0),  # inside the right half only
        ([8, 16], [10, 24], {0, 1}, None),  # straddles the boundary
    ],
)
def test_column_windows_overlap_by_elements_not_byte_interval(
    artifact, shape, offsets, producers, value
):
    out = np.zeros(shape, np.float32)
    run = Worker("a2a3sim").run(_halves(artifact, shape, offsets), out)
    deps = run.deps()
    assert {d["task"] for d in deps["tasks"][2]["deps"]} == producers
    assert all(d["kind"] == "RAW" for d in deps["tasks"][2]["deps"])
    assert _edges(run) - {(p, 2, "RAW") for p in producers} == set()  # fills are independent
    # byte ranges: first byte to one past the last byte of each window (row pitch 256 bytes)
    assert deps["tasks"][0]["args"][0]["bytes"] == [0, (63 * 64 + 31 + 1) * 4]
    assert deps["tasks"][1]["args"][0]["bytes"] == [32 * 4, (63 * 64 + 63 + 1) * 4]
    if value is not None:
        np.testing.assert_array_equal(out, value)
    else:
        expected = np.where(np.arange(64)[offsets[1]:offsets[1] + shape[1]] < 32, 1.0, 2.0)
        np.testing.assert_array_equal(out, np.broadcast_to(expected, shape))


def test_read_of_whole_buffer_after_partial_rewrite_waits_for_both_writers(artifact):
    """A later writer of part of a range supersedes only that part."""
    art = artifact(
        entry_args=[T("out", F, direction="Out")],
        kernels=[
            K("fill", [T("o", F, direction="Out")], "o[...] = 1.0"),
            K("fill_half", [T("o", HALF, direction="Out")], "o[...] = 2.0"),
            K("copy", [T("b", F), T("o", F, direction="Out")], "o[...] = b"),
        ],
        orchestration="""
            buf = rt.create_tensor([64, 64], "FP32")
            rt.submit("fill", (buf,))
            rt.submit("fill_half", (rt.slice(buf, [64, 32], [0, 0]),))
            out = rt.submit("copy", (buf, out), returns=(1,))
            return (out,)
        """,
    )
    out = np.zeros(F, np.float32)
    run = Worker("a2a3sim").run(art, out)
    assert _edges(run) == {(0, 1, "WAW"), (0, 2, "RAW"), (1, 2, "RAW")}
    np.testing.assert_array_equal(out[:, :32], 2.0)
    np.testing.assert_array_equal(out[:, 32:], 1.0)


def _fan(artifact, n):
    """n independent row-block producers, then one consumer of the whole buffer."""
    return artifact(
        entry_args=[T("x", [8 * n, 16]), T("out", [8 * n, 16], direction="Out")],
        kernels=[
            K("scale", [T("a", [8, 16]), T("o", [8, 16], direction="Out")], "o[...] = a * 3"),
            K("shift", [T("a", [8 * n, 16]), T("o", [8 * n, 16], direction="Out")],
              "o[...] = a - 1"),
        ],
        orchestration=f"""
            tmp = rt.create_tensor([{8 * n}, 16], "FP32")
            for i in range({n}):
                rt.submit("scale", (rt.slice(x, [8, 16], [8 * i, 0]),
                                    rt.slice(tmp, [8, 16], [8 * i, 0])))
            out = rt.submit("shift", (tmp, out), returns=(1,))
            return (out,)
        """,
    )


def test_schedule_seed_keeps_results_when_dependencies_are_right(artifact, rng):
    n = 6
    art = _fan(artifact, n)
    x = rng.standard_normal([8 * n, 16]).astype(np.float32)
    orders = set()
    for seed in range(12):
        out = np.zeros_like(x)
        run = Worker("a2a3sim").run(
            art, x, out, config=RunConfig(schedule_seed=seed)
        )
        np.testing.assert_array_equal(out, x * 3 - 1)
        order = run.deps()["execution_order"]
        assert order[-1] == n  # the consumer always runs last
        orders.add(tuple(order))
    assert len(orders) > 1  # the seed really reorders ready tasks
    unseeded = Worker("a2a3sim").run(art, x, np.zeros_like(x)).deps()["execution_order"]
    assert unseeded == list(range(n + 1))
