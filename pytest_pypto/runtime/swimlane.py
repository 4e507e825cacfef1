# SPDX-License-Identifier: Apache-2.0
"""A run's schedule as PyPTO's chip-swimlane records (docs/design/runtime.md §11).

PyPTO's tests run with ``--enable-chip-swimlane`` read
``build_output/<run>/dfx_outputs/chip_swimlane_records.json`` (top-level
``chip_swimlane_level`` and ``tasks``) and a sibling ``name_map_<run>.json``
(``callable_id_to_name``).  `chip_swimlane` builds the records from a run's deps.json
record, on the same logical clock as `runtime.trace` (a task's start is its
placement step times `STEP_US`, its duration one step): the order and the overlap of
tasks are the simulated schedule's, the times say nothing about the device.

Per executed task: ``task_id``, ``func_id``, ``core_id`` (cluster-major: cluster c
holds AIC c as id 3c and AIVs 2c, 2c+1 as ids 3c+1, 3c+2; a mix task is drawn on its
first core), ``core_type``, ``ring_id`` (0: one ring), start/end/duration,
dispatch/finish (the start and end: no queueing is modelled), and ``fanout`` /
``fanout_count`` (the tasks depending on it).
"""

from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from typing import Any

from pytest_pypto.runtime.trace import STEP_US

__all__ = ["RECORDS_NAME", "chip_swimlane", "name_map", "new_dfx_dir", "write_dfx"]

RECORDS_NAME = "chip_swimlane_records.json"
_SLOT = re.compile(r"(aic|aiv)(\d+)$")


def _core_id(slot: str) -> int:
    m = _SLOT.match(slot)
    if m is None:
        return -1
    k = int(m.group(2))
    return 3 * k if m.group(1) == "aic" else 3 * (k // 2) + 1 + k % 2


def chip_swimlane(record: dict[str, Any], level: int) -> dict[str, Any]:
    """The chip-swimlane records of a deps.json ``record`` at collection ``level``."""
    executed = [t for t in record.get("tasks", ()) if t.get("step", -1) >= 0 and t.get("slots")]
    fanout: dict[int, list[int]] = {t["id"]: [] for t in executed}
    for edge in record.get("edges", ()):
        if edge["from"] in fanout:
            fanout[edge["from"]].append(edge["to"])
    tasks = []
    for t in executed:
        start = t["step"] * STEP_US
        end = start + STEP_US
        consumers = sorted(set(fanout[t["id"]]))
        tasks.append({
            "task_id": t["id"],
            "func_id": int(t.get("func_id") or 0),
            "kernel": t["kernel"],
            "core_id": _core_id(t["slots"][0]),
            "core_type": t.get("core_type", ""),
            "ring_id": 0,
            "start_time_us": start,
            "end_time_us": end,
            "duration_us": end - start,
            "dispatch_time_us": start,
            "finish_time_us": end,
            "fanout": consumers,
            "fanout_count": len(consumers),
        })
    return {
        "chip_swimlane_level": level,
        "tasks": tasks,
        "metadata": {
            "program": record.get("program", ""),
            "platform": record.get("platform", ""),
            "clock": f"logical: start = placement step x {STEP_US:g} us (simulated schedule)",
        },
    }


def name_map(record: dict[str, Any]) -> dict[str, Any]:
    """PyPTO's name map of a run: func id (a string key) -> kernel name."""
    names: dict[str, str] = {}
    for t in record.get("tasks", ()):
        names.setdefault(str(int(t.get("func_id") or 0)), t["kernel"])
    return {"level": 2, "orchestrator_name": None,
            "callable_id_to_name": dict(sorted(names.items(), key=lambda kv: int(kv[0])))}


def write_dfx(record: dict[str, Any], name: str, level: int) -> Path:
    """Write the records and name map of one run into a new `new_dfx_dir`; its path."""
    dfx = new_dfx_dir(name)
    (dfx / RECORDS_NAME).write_text(json.dumps(chip_swimlane(record, level), indent=1))
    (dfx / f"name_map_{dfx.parent.name}.json").write_text(json.dumps(name_map(record), indent=2))
    return dfx


def new_dfx_dir(name: str) -> Path:
    """A new ``$PYPTO_PROG_BUILD_DIR/<name>_<timestamp>/dfx_outputs`` (``build_output`` when
    the variable is unset or empty, relative to the working directory, as PyPTO's)."""
    base = Path.cwd() / (os.environ.get("PYPTO_PROG_BUILD_DIR") or "build_output")
    stamp = time.strftime("%Y%m%d_%H%M%S")
    run_dir = base / f"{name}_{stamp}"
    k = 0
    while run_dir.exists():
        k += 1
        run_dir = base / f"{name}_{stamp}_{k}"
    dfx = run_dir / "dfx_outputs"
    dfx.mkdir(parents=True)
    return dfx
