# SPDX-License-Identifier: Apache-2.0
"""Per-rank DFX output of a multi-chip run (docs/design/distributed.md §9).

A multi-chip call whose config turns a DFX switch on (``enable_dep_gen``,
``enable_scope_stats``, ``enable_chip_swimlane``) writes, for the k-th dispatch of
rank r in that run, under ``<output_dir>/dfx_outputs/rank{r}/d{k}/``:

- ``dispatch_program.json``: the chip orchestration that ran there (its
  ``next_levels/<program>``);
- ``deps.json``: that dispatch's executed task graph, the same record a one-chip run
  keeps (with ``enable_dep_gen``, and with the swimlane, which needs it);
- ``chip_swimlane_records.json`` and ``name_map_<program>.json``: its schedule as
  PyPTO's chip-swimlane records (runtime/swimlane.py), with ``enable_chip_swimlane``;
- ``scope_stats/scope_stats.jsonl``: line 1 the dispatch's metadata, then one line for
  its orchestration scope with what the simulated run counted (tasks, dependency
  edges, tensors made and their bytes).  The simulator has no rings, so PyPTO's ring
  capacities and fill peaks are not there (the metadata says so).

Each call of the program starts its directories afresh (``d0`` again).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

from pytest_pypto.config import RunConfig
from pytest_pypto.harness.dispatch import dispatch
from pytest_pypto.harness.jit import coerce_args
from pytest_pypto.runtime.swimlane import RECORDS_NAME, chip_swimlane, name_map, new_dfx_dir

__all__ = ["RankDfx"]

_ENTRY = ("In", "Out", "InOut")


class RankDfx:
    """The DFX switches of one multi-chip call and where its per-dispatch output goes."""

    def __init__(self, base: Path, deps: bool, scope_stats: bool, swimlane: int) -> None:
        self.base = base
        self.deps = deps or swimlane > 0  # the swimlane's task graph comes with it
        self.scope_stats = scope_stats
        self.swimlane = swimlane

    @classmethod
    def of(cls, config: Any, output_dir: Any, name: str) -> RankDfx | None:
        """The call's DFX output (None: no switch on) under ``output_dir/dfx_outputs``
        (a new ``build_output/<name>_<timestamp>/dfx_outputs`` without one); the rank
        directories a previous call left there are removed."""
        deps = bool(getattr(config, "enable_dep_gen", False))
        stats = bool(getattr(config, "enable_scope_stats", False))
        level = getattr(config, "enable_chip_swimlane", 0)
        swimlane = 4 if level is True else int(level or 0)  # True: the full level, as PyPTO's
        if not (deps or stats or swimlane):
            return None
        base = Path(output_dir) / "dfx_outputs" if output_dir is not None else new_dfx_dir(name)
        if base.is_dir():
            for old in base.glob("rank*"):
                shutil.rmtree(old, ignore_errors=True)
        base.mkdir(parents=True, exist_ok=True)
        return cls(base, deps, stats, swimlane)

    def run(self, compiled: Any, args: list[Any], platform: str, rank: int, slot: int,
            program: str) -> None:
        """Run one dispatch (as a chip call does) and write its output."""
        full, _ = coerce_args(compiled, tuple(args))
        ran = dispatch(compiled, full, config=RunConfig(platform=platform), outputs_in=True)
        record = getattr(ran, "record", None)
        if record is not None:
            self.write(rank, slot, program, record)

    def write(self, rank: int, slot: int, program: str, record: dict[str, Any]) -> Path:
        leaf = self.base / f"rank{rank}" / f"d{slot}"
        leaf.mkdir(parents=True, exist_ok=True)
        (leaf / "dispatch_program.json").write_text(json.dumps(
            {"program": program, "next_level": f"next_levels/{program}", "rank": rank,
             "dispatch": slot}, indent=1))
        if self.deps:
            (leaf / "deps.json").write_text(json.dumps(record))
        if self.swimlane:
            (leaf / RECORDS_NAME).write_text(json.dumps(chip_swimlane(record, self.swimlane),
                                                        indent=1))
            (leaf / f"name_map_{program}.json").write_text(json.dumps(name_map(record), indent=2))
        if self.scope_stats:
            stats = leaf / "scope_stats"
            stats.mkdir(exist_ok=True)
            (stats / "scope_stats.jsonl").write_text(
                "".join(json.dumps(line) + "\n" for line in _scope_lines(record, rank, slot,
                                                                          program)))
        return leaf


def _scope_lines(record: dict[str, Any], rank: int, slot: int,
                 program: str) -> list[dict[str, Any]]:
    made = [t for t in record.get("tensors", ()) if t.get("origin") not in _ENTRY]
    meta = {
        "kind": "metadata", "program": program, "rank": rank, "dispatch": slot,
        "platform": record.get("platform", ""), "sim_backend": record.get("sim_backend", ""),
        "task_window_max": None, "heap_max": None, "dep_pool_max": None,
        "note": "simulated run: no rings are modelled, so no ring capacities or fill peaks; "
                "the scope line counts what the run did",
    }
    scope = {
        "kind": "scope", "scope": "orchestration", "tasks": len(record.get("tasks", ())),
        "dependencies": len(record.get("edges", ())), "tensors_made": len(made),
        "bytes_made": sum(int(t.get("nbytes", 0)) for t in made),
    }
    return [meta, scope]
