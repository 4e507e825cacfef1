"""`RecordedRun`: what every runtime's run result shares (outputs by name, the task
record, deps.json and trace.json written on first use).

Standard library only: the isolated runtime's module imports it without numpy.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_pypto.runtime.trace import write_trace

__all__ = ["RecordedRun"]


class RecordedRun:
    """What every run result shares: outputs by name and the executed task record, with
    ``deps.json`` / ``trace.json`` written on first use.  A subclass provides ``record``,
    ``program``, ``outputs``, ``_config`` and ``_deps_path``."""

    record: dict[str, Any]
    program: str
    outputs: dict[str, Any]
    _config: Any  # the run's RunConfig
    _deps_path: Path | None

    def __getitem__(self, name: str) -> Any:
        return self.outputs[name]

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """Executed tasks (id, kernel, func id, core type, slots, args, deps, order)."""
        return self.record["tasks"]

    @property
    def deps_path(self) -> Path:
        """Path of this run's deps.json (written on first use)."""
        if self._deps_path is None:
            from pytest_pypto.runtime.worker import _new_run_dir  # lazy: numpy (worker's)

            run_dir = _new_run_dir(self._config, self.program)
            path = run_dir / "deps.json"
            path.write_text(json.dumps(self.record))
            self._deps_path = path
        return self._deps_path

    @property
    def run_dir(self) -> Path:
        return self.deps_path.parent

    @property
    def trace_path(self) -> Path:
        """Path of this run's trace.json (Chrome trace-event JSON, `runtime.trace`), written
        next to deps.json on first use (with schedule.png when matplotlib is installed)."""
        path = self.run_dir / "trace.json"
        if not path.is_file():
            write_trace(self.record, self.run_dir)
        return path

    def deps(self) -> dict[str, Any]:
        """The parsed deps.json."""
        return json.loads(self.deps_path.read_text())
