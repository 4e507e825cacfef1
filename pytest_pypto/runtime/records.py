"""`RecordedRun`: what every runtime's run result shares (outputs by name, the task
record, deps.json and trace.json written on first use), and the run directories
those records are written to (`new_run_dir`).

Standard library only: the isolated runtime's module imports it without numpy.  Run
directories (`new_run_dir`) are made here for every runtime's records.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import tempfile
import warnings
from pathlib import Path
from typing import Any

from pytest_pypto.runtime.trace import write_trace

__all__ = ["RecordedRun", "RecordsNotKeptWarning", "keep_records", "new_run_dir"]


class RecordedRun:
    """What every run result shares: outputs by name and the executed task record, with
    ``deps.json`` / ``trace.json`` written on first use.  A subclass provides ``record``,
    ``program``, ``outputs``, ``_config`` and ``_deps_path``."""

    record: dict[str, Any]
    program: str
    outputs: dict[str, Any]
    _config: Any  # the run's RunConfig
    _deps_path: Path | None
    # The arguments the run's dump copied (runtime/argdump.py; empty without a dump level).
    arg_dumps: list[dict[str, Any]] = []  # noqa: RUF012  (read-only default; runs set their own)

    def __getitem__(self, name: str) -> Any:
        return self.outputs[name]

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """Executed tasks (id, kernel, func id, core type, slots, args, deps, order)."""
        return self.record["tasks"]

    def deps_path(self) -> Path:
        """Path of this run's deps.json (written on the first call)."""
        if self._deps_path is None:
            run_dir = new_run_dir(self._config, self.program)
            path = run_dir / "deps.json"
            path.write_text(json.dumps(self.record))
            self._deps_path = path
        return self._deps_path

    def run_dir(self) -> Path:
        """This run's directory (made, with deps.json, on the first call)."""
        return self.deps_path().parent

    def trace_path(self) -> Path:
        """Path of this run's trace.json (Chrome trace-event JSON, `runtime.trace`), written
        next to deps.json on the first call (with schedule.png when matplotlib is installed)."""
        run_dir = self.run_dir()
        path = run_dir / "trace.json"
        if not path.is_file():
            write_trace(self.record, run_dir)
        return path

    def deps(self) -> dict[str, Any]:
        """The parsed deps.json."""
        return json.loads(self.deps_path().read_text())


class RecordsNotKeptWarning(UserWarning):
    """A run's records (deps.json, trace.json) could not be written where they are kept."""


_warned_not_kept = False


def keep_records(run: RecordedRun, trace: bool) -> None:
    """Write a kept run's deps.json (and trace.json): records of a run that worked are
    a convenience, so a full disk or a read-only kernels dir warns once per process
    instead of failing the run (later runs keep trying)."""
    global _warned_not_kept
    try:
        run.deps_path()
        if trace:
            run.trace_path()
    except OSError as exc:
        if not _warned_not_kept:
            _warned_not_kept = True
            warnings.warn(RecordsNotKeptWarning(
                f"run records of {run.program} not kept: {exc}; the results are unaffected"
            ), stacklevel=2)


# -- run directories ------------------------------------------------------------------

_run_counter = itertools.count()
temp_root: Path | None = None


def new_run_dir(cfg: Any, program: str) -> Path:
    """A fresh directory for one run's records: kept under the kernels dir when saving
    kernels, else in a per-process temporary directory removed at exit."""
    global temp_root
    n = next(_run_counter)
    if cfg.save_kernels or (cfg.trace and cfg.save_kernels_dir):
        base = Path(cfg.save_kernels_dir or "build_output") / "runs"
        path = base / f"{program}-{os.getpid()}-{n:05d}"
        path.mkdir(parents=True, exist_ok=True)
        return path
    if temp_root is None:
        temp_root = Path(tempfile.mkdtemp(prefix="pypto-runs-"))
        atexit.register(shutil.rmtree, temp_root, True)
    path = temp_root / f"{program}-{n:05d}"
    path.mkdir()
    return path


def jsonable(value: Any) -> Any:
    item = getattr(value, "item", None)
    return item() if item is not None else value


def kernel_record(kernel: Any) -> dict[str, Any]:
    """A kernel as deps.json names it: core type and the user's ``file:line`` of its first
    statement (from the generated source's span table; "" when it has none)."""
    spans = getattr(kernel, "spans", None) or {}
    source = ""
    if spans:
        first = spans[min(spans)]
        source = f"{first.file}:{first.line}"
    return {"core_type": getattr(kernel, "core_type", ""), "source": source}
