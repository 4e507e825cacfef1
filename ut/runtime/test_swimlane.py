# SPDX-License-Identifier: Apache-2.0
"""`runtime.swimlane`: a run record as PyPTO's chip-swimlane records and name map (issue 23
item 4).  The record is written by hand, so each expected field follows from it."""

from __future__ import annotations

import json

from pytest_pypto.runtime.swimlane import chip_swimlane, name_map, write_dfx


def _task(tid, kernel, func_id, core_type, slots, step):
    return {"id": tid, "kernel": kernel, "func_id": func_id, "core_type": core_type,
            "slots": list(slots), "step": step, "order": tid, "host_us": 2.0, "args": [],
            "deps": []}


RECORD = {
    "program": "Prog", "platform": "a2a3sim",
    "tasks": [
        _task(0, "mm", 0, "aic", ["aic0"], 0),
        _task(1, "ew", 1, "aiv", ["aiv0"], 0),
        _task(2, "ew", 1, "aiv", ["aiv1"], 1),
        _task(3, "fused", 2, "mix", ["aic1", "aiv2", "aiv3"], 2),
        _task(4, "never", 1, "aiv", [], -1),  # a task a failed run never reached
    ],
    "edges": [{"from": 0, "to": 2, "kind": "RAW"}, {"from": 1, "to": 2, "kind": "RAW"},
              {"from": 0, "to": 3, "kind": "WAW"}, {"from": 2, "to": 3, "kind": "RAW"}],
}


def test_each_executed_task_is_one_record_with_the_fields_pypto_reads():
    data = chip_swimlane(RECORD, level=4)
    assert data["chip_swimlane_level"] == 4
    tasks = {t["task_id"]: t for t in data["tasks"]}
    assert sorted(tasks) == [0, 1, 2, 3]
    for t in tasks.values():
        assert t["ring_id"] == 0
        assert t["duration_us"] == t["end_time_us"] - t["start_time_us"] > 0
        assert t["dispatch_time_us"] <= t["start_time_us"]
        assert t["finish_time_us"] >= t["end_time_us"]
    assert [tasks[i]["core_type"] for i in range(4)] == ["aic", "aiv", "aiv", "mix"]
    assert [tasks[i]["func_id"] for i in range(4)] == [0, 1, 1, 2]
    # a consumer starts no earlier than its producers end (the logical schedule)
    assert tasks[2]["start_time_us"] >= tasks[0]["end_time_us"]
    assert tasks[3]["start_time_us"] >= tasks[2]["end_time_us"]
    assert tasks[0]["fanout"] == [2, 3] and tasks[0]["fanout_count"] == 2
    assert tasks[3]["fanout"] == [] and tasks[3]["fanout_count"] == 0


def test_distinct_simulated_cores_get_distinct_core_ids():
    tasks = chip_swimlane(RECORD, level=1)["tasks"]
    ids = [t["core_id"] for t in tasks]
    assert len(set(ids)) == 4  # aic0, aiv0, aiv1, aic1 (the mix task's first core)


def test_the_name_map_names_each_func_id_after_its_kernel():
    assert name_map(RECORD) == {
        "level": 2, "orchestrator_name": None,
        "callable_id_to_name": {"0": "mm", "1": "ew", "2": "fused"},
    }


def test_write_dfx_makes_a_new_run_directory_under_build_output(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("PYPTO_PROG_BUILD_DIR", raising=False)
    first = write_dfx(RECORD, "case_a", level=4)
    second = write_dfx(RECORD, "case_a", level=4)
    assert first != second  # two runs of one case never share a directory
    for dfx in (first, second):
        assert dfx.name == "dfx_outputs" and dfx.parent.parent == tmp_path / "build_output"
        assert dfx.parent.name.startswith("case_a_")
        records = json.loads((dfx / "chip_swimlane_records.json").read_text())
        assert len(records["tasks"]) == 4
        (names,) = dfx.glob("name_map_*.json")
        assert json.loads(names.read_text())["callable_id_to_name"]["1"] == "ew"


def test_write_dfx_honours_pypto_prog_build_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_PROG_BUILD_DIR", str(tmp_path / "elsewhere"))
    dfx = write_dfx(RECORD, "c", level=2)
    assert dfx.parent.parent == tmp_path / "elsewhere"
