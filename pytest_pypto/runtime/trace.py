# SPDX-License-Identifier: Apache-2.0
"""The schedule of one run as a picture: Chrome trace-event JSON and a PNG swimlane.

`chrome_trace` turns a run's deps.json record (`graph.TaskGraph.to_json`) into the
JSON Object Format of the Trace Event Format, which ui.perfetto.dev and
chrome://tracing open:

* one process (``pid`` 1) named after the program and platform, one thread per
  simulated core the run used (``M`` metadata events ``thread_name`` "AIC 0",
  "AIV 1", ... and ``thread_sort_index``: AICs first, in core order);
* one complete event (``ph: "X"``) per executed task on its core (a ``mix`` task
  occupies one AIC and both AIVs of its cluster: one event on each), named after
  the kernel, with ``args``: task id, kernel, core type, the kernel's ``file:line``,
  its parameters (name -> direction, tensor, shape), its dependencies, execution
  order and the host time spent in it;
* one flow (``ph: "s"`` on the producer, ``ph: "f"`` with ``bp: "e"`` on the
  consumer, a shared ``id``) per RAW/WAW edge, so the UI draws an arrow; a declared
  ``deps=`` edge (kind "explicit", docs/design/scheduling.md §2) has the category
  "explicit dependency", apart from the inferred ones.

Timing: the simulator has no device timing model.  The clock is *logical*: a
task's start is its placement step (`placement.Cores`: a unit-time list schedule
honouring dependencies and core counts) times `STEP_US`, its duration one step.
Tasks drawn side by side are tasks the schedule lets run at once; the lengths say
nothing about the device.  The measured host time of each task is in its args
(``host_us``).  Flow ends sit mid-slice so each binds to its own task's slice.

`render_png` draws the same placement as a small matplotlib swimlane when
matplotlib is importable (the ``plot`` extra), and reports False otherwise.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

__all__ = [
    "PNG_HINT", "STEP_US", "chrome_trace", "render_png", "track_name", "write_trace",
]

STEP_US = 1.0  # one placement step of the logical clock, in trace microseconds
PNG_HINT = "schedule.png needs matplotlib: pip install pytest-pypto[plot]"
_PID = 1
_SLOT = re.compile(r"(aic|aiv)(\d+)$")


def track_name(slot: str) -> str:
    """``"aiv3"`` -> ``"AIV 3"`` (the track of a simulated core)."""
    m = _SLOT.match(slot)
    return f"{m.group(1).upper()} {int(m.group(2))}" if m else slot


def _slot_key(slot: str) -> tuple[int, int, str]:
    m = _SLOT.match(slot)
    if m is None:
        return (2, 0, slot)
    return (0 if m.group(1) == "aic" else 1, int(m.group(2)), slot)


def _executed(record: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in record.get("tasks", ()) if t.get("step", -1) >= 0 and t.get("slots")]


def _params(task: dict[str, Any], tensors: dict[int, dict[str, Any]]) -> dict[str, str]:
    out = {}
    for arg in task.get("args", ()):
        if "tensor" in arg:
            root = tensors.get(arg["tensor"], {})
            name = root.get("name", f"tensor {arg['tensor']}")
            lo, hi = arg.get("bytes", (0, 0))
            out[arg["name"]] = (
                f"{arg['direction']} {name}{list(arg.get('shape', ()))} bytes {lo}..{hi}"
            )
        else:
            out[arg["name"]] = f"{arg['direction']} = {arg.get('value')!r}"
    return out


def chrome_trace(record: dict[str, Any]) -> dict[str, Any]:
    """The Chrome trace-event JSON (``{"traceEvents": [...], "displayTimeUnit": "ns"}``)
    of a run's deps.json record; tasks that never ran (a failed run) are left out."""
    tasks = _executed(record)
    by_id = {t["id"]: t for t in tasks}
    tensors = {r["id"]: r for r in record.get("tensors", ())}
    kernels = record.get("kernels", {})
    slots = sorted({s for t in tasks for s in t["slots"]}, key=_slot_key)
    tid = {s: i + 1 for i, s in enumerate(slots)}
    program = record.get("program", "program")
    platform = record.get("platform", "")
    title = f"{program} on {platform}" if platform else program
    if record.get("failed"):
        title += " (failed run)"
    events: list[dict[str, Any]] = [
        {"ph": "M", "name": "process_name", "pid": _PID, "tid": 0,
         "args": {"name": f"{title} - simulated, logical clock (1 step = {STEP_US:g} us)"}},
    ]
    for s in slots:
        events.append({"ph": "M", "name": "thread_name", "pid": _PID, "tid": tid[s],
                       "args": {"name": track_name(s)}})
        events.append({"ph": "M", "name": "thread_sort_index", "pid": _PID, "tid": tid[s],
                       "args": {"sort_index": tid[s]}})
    for t in tasks:
        name = t["kernel"]
        block = t.get("block")
        if block:
            name = f"{name} [{block['index']}/{block['count']}]"
        args = {
            "task": t["id"],
            "kernel": t["kernel"],
            "core_type": t.get("core_type", ""),
            "source": kernels.get(t["kernel"], {}).get("source", ""),
            "params": _params(t, tensors),
            "deps": [f"{d['kind']} on task {d['task']}" for d in t.get("deps", ())],
            "order": t.get("order"),
            "step": t["step"],
            "host_us": t.get("host_us"),
        }
        for s in t["slots"]:
            events.append({"ph": "X", "name": name, "cat": t.get("core_type") or "task",
                           "pid": _PID, "tid": tid[s], "ts": t["step"] * STEP_US,
                           "dur": STEP_US, "args": args})
    for n, edge in enumerate(record.get("edges", ()), start=1):
        src, dst = by_id.get(edge["from"]), by_id.get(edge["to"])
        if src is None or dst is None or not src["slots"] or not dst["slots"]:
            continue  # (a pl.system.task_dummy occupies no core: its edges show in args)
        # a declared deps= edge is its own category, apart from the inferred RAW/WAW ones
        cat = "explicit dependency" if edge["kind"] == "explicit" else "dependency"
        common = {"name": edge["kind"], "cat": cat, "id": n, "pid": _PID}
        events.append({**common, "ph": "s", "tid": tid[src["slots"][0]],
                       "ts": (src["step"] + 0.5) * STEP_US})
        events.append({**common, "ph": "f", "bp": "e", "tid": tid[dst["slots"][0]],
                       "ts": (dst["step"] + 0.5) * STEP_US})
    return {
        "traceEvents": events,
        "displayTimeUnit": "ns",
        "otherData": {
            "program": program,
            "platform": platform,
            "sim_backend": record.get("sim_backend", ""),
            "clock": f"logical: ts = placement step x {STEP_US:g} us, one step per task; "
                     "host_us in args is measured host time",
        },
    }


def render_png(record: dict[str, Any], path: str | Path) -> bool:
    """Draw the run's placement as a swimlane PNG at ``path``; False (nothing written)
    when matplotlib is not installed."""
    try:
        import matplotlib  # lazy: optional dependency

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt  # lazy: optional dependency
    except ImportError:
        return False
    tasks = _executed(record)
    slots = sorted({s for t in tasks for s in t["slots"]}, key=_slot_key)
    row = {s: i for i, s in enumerate(slots)}
    steps = max((t["step"] for t in tasks), default=0) + 1
    fig, ax = plt.subplots(figsize=(min(2 + 0.6 * steps, 24), 1 + 0.4 * max(len(slots), 1)))
    try:
        for t in tasks:
            for s in t["slots"]:
                ax.barh(row[s], 0.9, left=t["step"], height=0.8, align="center")
                ax.text(t["step"] + 0.45, row[s], t["kernel"], ha="center", va="center",
                        fontsize=7, clip_on=True)
        ax.set_yticks(list(range(len(slots))))
        ax.set_yticklabels([track_name(s) for s in slots])
        ax.invert_yaxis()
        ax.set_xlabel("placement step (logical clock, not device time)")
        ax.set_title(f"{record.get('program', '')} {record.get('platform', '')}".strip())
        fig.tight_layout()
        fig.savefig(str(path), dpi=100)
    finally:
        plt.close(fig)
    return True


def write_trace(record: dict[str, Any], directory: str | Path) -> list[Path]:
    """Write ``trace.json`` (and ``schedule.png`` when matplotlib is installed) into
    ``directory``; the paths written."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    trace = directory / "trace.json"
    trace.write_text(json.dumps(chrome_trace(record)))
    written = [trace]
    png = directory / "schedule.png"
    if render_png(record, png):
        written.append(png)
    return written
