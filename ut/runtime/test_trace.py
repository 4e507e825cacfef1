"""`runtime.trace`: a run record as Chrome trace-event JSON (Perfetto) and a PNG swimlane.

The records here are written by hand (what deps.json holds), so every expected track,
slice and flow follows from the record's own placement and edges.
"""

from __future__ import annotations

import json
import sys
import types
from pathlib import Path

import numpy as np
import pytest

from pytest_pypto import RunConfig
from pytest_pypto.runtime import trace as trace_module
from pytest_pypto.runtime.trace import PNG_HINT, STEP_US, chrome_trace, track_name, write_trace


def _task(tid, kernel, core_type, slots, step, deps=(), block=None, args=()):
    task = {
        "id": tid, "kernel": kernel, "func_id": 0, "core_type": core_type,
        "slots": list(slots), "step": step, "order": tid, "host_us": 1.5,
        "args": list(args), "deps": [{"task": d, "kind": k} for d, k in deps],
    }
    if block is not None:
        task["block"] = {"index": block[0], "count": block[1]}
    return task


def _record(tasks, edges, **extra):
    return {
        "program": "Prog", "platform": "a5sim", "sim_backend": "numpy-functional",
        "tensors": [{"id": 0, "name": "x", "origin": "In", "dtype": "FP32", "shape": [4, 8],
                     "nbytes": 128}],
        "tasks": tasks, "edges": [{"from": a, "to": b, "kind": k} for a, b, k in edges],
        "kernels": {"mm": {"core_type": "aic", "source": "k.py:3"},
                    "fused": {"core_type": "mix", "source": "k.py:9"}},
        **extra,
    }


ARG = {"name": "a", "direction": "In", "tensor": 0, "shape": [4, 8], "bytes": [0, 128]}
RECORD = _record(
    [
        _task(0, "mm", "aic", ["aic0"], 0, args=[ARG]),
        _task(1, "ew", "aiv", ["aiv0"], 0, block=(0, 2)),
        _task(2, "ew", "aiv", ["aiv1"], 0, block=(1, 2)),
        _task(3, "fused", "mix", ["aic1", "aiv2", "aiv3"], 1, deps=[(0, "RAW"), (1, "RAW")]),
        _task(4, "ew", "aiv", ["aiv0"], 2, deps=[(3, "WAW")]),
    ],
    [(0, 3, "RAW"), (1, 3, "RAW"), (3, 4, "WAW")],
)
PHASE_KEYS = {
    "M": {"ph", "name", "pid", "args"},
    "X": {"ph", "name", "cat", "pid", "tid", "ts", "dur", "args"},
    "s": {"ph", "name", "cat", "id", "pid", "tid", "ts"},
    "f": {"ph", "name", "cat", "id", "pid", "tid", "ts", "bp"},
}


def test_the_json_object_format_with_known_phases_and_their_fields():
    trace = chrome_trace(RECORD)
    assert set(trace) >= {"traceEvents", "displayTimeUnit"}
    assert trace["displayTimeUnit"] == "ns"
    assert json.loads(json.dumps(trace)) == trace  # plain JSON
    for event in trace["traceEvents"]:
        assert PHASE_KEYS[event["ph"]] <= set(event), event
        if event["ph"] in "Xsf":
            assert isinstance(event["ts"], float) and event["ts"] >= 0


def test_one_track_per_core_used_aics_first():
    events = chrome_trace(RECORD)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    order = {e["tid"]: e["args"]["sort_index"] for e in events if e["name"] == "thread_sort_index"}
    by_order = [names[t] for t in sorted(names, key=order.get)]
    assert by_order == ["AIC 0", "AIC 1", "AIV 0", "AIV 1", "AIV 2", "AIV 3"]
    (process,) = [e for e in events if e["name"] == "process_name"]
    assert process["args"]["name"].startswith("Prog on a5sim")


def test_slices_sit_on_their_cores_at_their_step_and_carry_the_task():
    events = chrome_trace(RECORD)["traceEvents"]
    names = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    slices = [(e["args"]["task"], names[e["tid"]], e["ts"], e["dur"], e["name"])
              for e in events if e["ph"] == "X"]
    u = STEP_US
    assert sorted(slices) == [
        (0, "AIC 0", 0.0, u, "mm"),
        (1, "AIV 0", 0.0, u, "ew [0/2]"),
        (2, "AIV 1", 0.0, u, "ew [1/2]"),
        (3, "AIC 1", u, u, "fused"),  # a mix task holds one AIC and both AIVs of a cluster
        (3, "AIV 2", u, u, "fused"),
        (3, "AIV 3", u, u, "fused"),
        (4, "AIV 0", 2 * u, u, "ew"),
    ]
    mm = next(e for e in events if e["ph"] == "X" and e["args"]["task"] == 0)["args"]
    assert mm["source"] == "k.py:3" and mm["host_us"] == 1.5
    assert mm["params"] == {"a": "In x[4, 8] bytes 0..128"}
    fused = next(e for e in events if e["ph"] == "X" and e["args"]["task"] == 3)["args"]
    assert fused["deps"] == ["RAW on task 0", "RAW on task 1"]


def test_each_edge_is_a_flow_from_the_producers_slice_to_the_consumers():
    events = chrome_trace(RECORD)["traceEvents"]
    slices = [e for e in events if e["ph"] == "X"]

    def task_at(flow):
        (hit,) = {e["args"]["task"] for e in slices
                  if e["tid"] == flow["tid"] and e["ts"] < flow["ts"] < e["ts"] + e["dur"]}
        return hit

    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert sorted(starts) == sorted(ends) and len(starts) == 3  # ids pair one s with one f
    for i in starts:
        assert ends[i]["bp"] == "e"
        assert (starts[i]["name"], starts[i]["cat"]) == (ends[i]["name"], ends[i]["cat"])
    flows = sorted((task_at(starts[i]), task_at(ends[i]), starts[i]["name"]) for i in starts)
    assert flows == [(0, 3, "RAW"), (1, 3, "RAW"), (3, 4, "WAW")]


def test_a_failed_runs_record_draws_only_the_tasks_that_ran():
    record = _record(
        [_task(0, "mm", "aic", ["aic0"], 0), _task(1, "ew", "aiv", [], -1, deps=[(0, "RAW")])],
        [(0, 1, "RAW")],
        failed=True,
    )
    record["tasks"][1]["order"] = -1
    events = chrome_trace(record)["traceEvents"]
    assert [e["args"]["task"] for e in events if e["ph"] == "X"] == [0]
    assert not [e for e in events if e["ph"] in "sf"]  # no arrow into a task that never ran
    (process,) = [e for e in events if e["name"] == "process_name"]
    assert "(failed run)" in process["args"]["name"]


def test_track_names():
    assert [track_name(s) for s in ("aic0", "aiv12", "odd")] == ["AIC 0", "AIV 12", "odd"]


def test_without_matplotlib_only_the_json_is_written(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib -> ImportError
    written = write_trace(RECORD, tmp_path)
    assert written == [tmp_path / "trace.json"]
    assert not (tmp_path / "schedule.png").exists()
    assert json.loads((tmp_path / "trace.json").read_text()) == chrome_trace(RECORD)
    assert "pip install pytest-pypto[plot]" in PNG_HINT


class _FakeAxes:
    def __init__(self, calls):
        self.calls = calls

    def __getattr__(self, name):
        return lambda *a, **k: self.calls.append((name, a, k))


def _fake_matplotlib(calls):
    mpl = types.ModuleType("matplotlib")
    mpl.use = lambda backend: calls.append(("use", (backend,), {}))
    pyplot = types.ModuleType("matplotlib.pyplot")

    class Figure:
        def tight_layout(self):
            pass

        def savefig(self, path, **_):
            Path(path).write_bytes(b"\x89PNG fake")

    pyplot.subplots = lambda **_: (Figure(), _FakeAxes(calls))
    pyplot.close = lambda fig: calls.append(("close", (), {}))
    mpl.pyplot = pyplot
    return mpl, pyplot


def test_with_matplotlib_a_swimlane_bar_per_slice(tmp_path, monkeypatch):
    calls: list = []
    mpl, pyplot = _fake_matplotlib(calls)
    monkeypatch.setitem(sys.modules, "matplotlib", mpl)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", pyplot)
    written = write_trace(RECORD, tmp_path)
    assert written == [tmp_path / "trace.json", tmp_path / "schedule.png"]
    bars = sorted((a[0], k["left"]) for name, a, k in calls if name == "barh")
    # rows: AIC 0, AIC 1, AIV 0..3 -> 0..5; one bar per (task, core) at the task's step
    assert bars == [(0, 0), (1, 1), (2, 0), (2, 2), (3, 0), (4, 1), (5, 1)]
    assert ("use", ("Agg",), {}) in calls and calls[-1][0] == "close"


def test_a_traced_run_writes_trace_json_next_to_deps(tmp_path):
    import pytest_pypto
    from st.kernels import add_program

    prog = add_program(16, 32, 8)
    x = np.ones((16, 32), np.float32)
    out = np.zeros((16, 32), np.float32)
    cfg = RunConfig(platform="a2a3sim", trace=True, save_kernels_dir=str(tmp_path))
    run = pytest_pypto.run(prog, x, x, out, config=cfg)
    assert run.trace_path().parent == run.deps_path().parent
    assert tmp_path in run.trace_path().parents  # under the kept directory, not a temp dir
    trace = json.loads(run.trace_path().read_text())
    assert [e["name"] for e in trace["traceEvents"] if e["ph"] == "X"] == [
        t["kernel"] for t in run.deps()["tasks"]]


def test_module_imports_nothing_heavy():
    assert "numpy" not in trace_module.__dict__
    with pytest.raises(AttributeError):
        trace_module.matplotlib  # noqa: B018  (imported only inside render_png)
