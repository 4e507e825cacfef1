"""`Worker`: runs compiled artifacts on the bundled numpy functional simulator.

One worker serves one sim platform ('a2a3sim' or 'a5sim') and refuses artifacts
compiled for another.  A run stages the caller's arrays (`staging`), calls the
generated orchestration with an `Orchestrator` as ``rt``, executes the recorded
task graph (`graph`), copies Out/InOut results back (only when everything before
succeeded: a failed run leaves the caller's arrays as they were) and writes the
executed graph to ``deps.json`` in a run directory.

The debugging switches of the RunConfig act here: ``schedule_seed`` shuffles ready
tasks (`graph`); ``strict_war`` records write-after-read hazards and fails the run
(`WarHazardError`, runtime-error) naming them; ``precise`` runs the kernels bound to
`runtime.precise.precise_bind` with `ir.apply.PRECISE` set for the run only;
``trace`` writes ``trace.json`` (`runtime.trace`) next to ``deps.json``, under the
kept artifact directory when the config names one.

The runtime reads artifacts and the op registry only; it never imports the
compiler or the language.
"""

from __future__ import annotations

import atexit
import itertools
import json
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

import numpy as np

from pytest_pypto.arch import ExecutionMode, parse_platform, platform_string, spec
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.apply import PRECISE
from pytest_pypto.ir.artifact import SIM_BACKEND, CompiledProgram
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.values import UNINITIALIZED
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.loader import Binder, LoadedArtifact, load_artifact, registry_bind
from pytest_pypto.runtime.locate import scalar_values, span_in
from pytest_pypto.runtime.orchestrator import Orchestrator
from pytest_pypto.runtime.precise import precise_bind
from pytest_pypto.runtime.staging import stage

__all__ = ["OnboardExecutionError", "SimRun", "WarHazardError", "Worker"]


class OnboardExecutionError(SimulationError):
    """Execution was asked of an onboard platform, which the bundled simulator cannot serve."""


class SimRun:
    """The result of one simulated run.

    The executed task graph is kept in memory and written to ``deps.json`` in the
    run directory when the run saves kernels, or else the first time ``deps_path``,
    ``run_dir``, ``tasks`` or ``deps()`` is asked for: file-system work stays off
    the dispatch path of runs nobody inspects.
    """

    sim_backend: str = SIM_BACKEND

    def __init__(
        self,
        *,
        program: str,
        platform: str,
        outputs: dict[str, np.ndarray],
        returns: tuple[np.ndarray, ...],
        uninitialized: str,
        graph: TaskGraph,
        roots: list[Any],
        meta: dict[str, Any],
        config: RunConfig,
    ) -> None:
        self.program = program
        self.platform = platform
        self.outputs = outputs  # Out/InOut entry params by name (the caller's arrays)
        self.returns = returns  # the entry's returned params, in order
        self.uninitialized = uninitialized
        self.war_hazards: list[dict[str, Any]] = graph.war_hazards
        # Host wall-clock seconds spent inside kernel code (for profiling the simulator;
        # the simulator has no device timing model).
        self.kernel_seconds: float = graph.kernel_seconds
        self._graph = graph
        self._roots = roots
        self._meta = meta
        self._config = config
        self._record: dict[str, Any] | None = None
        self._deps_path: Path | None = None

    def __repr__(self) -> str:
        return (
            f"<SimRun {self.program} on {self.platform}: {len(self._graph.tasks)} tasks, "
            f"outputs {sorted(self.outputs)}>"
        )

    def __getitem__(self, name: str) -> np.ndarray:
        return self.outputs[name]

    @property
    def record(self) -> dict[str, Any]:
        """The executed graph, as written to deps.json."""
        if self._record is None:
            self._record = self._graph.to_json(self._roots, self._meta)
        return self._record

    @property
    def tasks(self) -> list[dict[str, Any]]:
        """Executed tasks (id, kernel, func id, core type, slots, args, deps, order)."""
        return self.record["tasks"]

    @property
    def deps_path(self) -> Path:
        """Path of this run's deps.json (written on first use)."""
        if self._deps_path is None:
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
            from pytest_pypto.runtime.trace import write_trace

            write_trace(self.record, self.run_dir)
        return path

    def deps(self) -> dict[str, Any]:
        """The parsed deps.json."""
        return json.loads(self.deps_path.read_text())


class Worker:
    """Executes artifacts of one sim platform."""

    def __init__(self, platform: str, *, bind: Binder = registry_bind) -> None:
        arch, mode = parse_platform(platform)
        if mode is not ExecutionMode.SIM:
            raise OnboardExecutionError(
                f"cannot execute on platform '{platform}': running kernels on hardware needs "
                f"an Ascend NPU and an onboard runtime (entry-point group "
                f"'pytest_pypto.runtimes'); the bundled toolchain only simulates",
                hint=f"compile only (RunConfig(codegen_only=True)), or run on "
                f"'{_sim_twin(arch)}' to use the numpy simulator",
            )
        self.platform = platform
        self.arch = spec(arch)
        self.bind = bind
        self._by_program: dict[int, tuple[weakref.ref, LoadedArtifact]] = {}

    def __repr__(self) -> str:
        return f"Worker(platform={self.platform!r})"

    def load(self, artifact: CompiledProgram | LoadedArtifact | str | os.PathLike) -> LoadedArtifact:
        """The built artifact, refused when it was compiled for another platform."""
        if isinstance(artifact, LoadedArtifact):
            loaded = artifact
        elif isinstance(artifact, CompiledProgram):
            # A CompiledProgram names one compile's output: built once per object.
            memo = self._by_program.get(id(artifact))
            if memo is not None and memo[0]() is artifact:
                loaded = memo[1]
            else:
                loaded = load_artifact(artifact.artifact_dir, self.bind)
                key = id(artifact)
                forget = self._by_program.pop
                self._by_program[key] = (weakref.ref(artifact, lambda _: forget(key, None)), loaded)
        else:
            loaded = load_artifact(artifact, self.bind)
        manifest = loaded.manifest
        if manifest.platform != self.platform:
            raise SimulationError(
                f"artifact of '{manifest.program}' was compiled for platform "
                f"'{manifest.platform}', but this worker runs '{self.platform}'",
                hint=f"compile it with RunConfig(platform='{self.platform}'), or run it on "
                f"Worker(platform='{manifest.platform}')",
            )
        return loaded

    def run(
        self,
        artifact: CompiledProgram | LoadedArtifact | str | os.PathLike,
        *arrays: Any,
        config: RunConfig | None = None,
        outputs_in: bool = False,
    ) -> SimRun:
        """Stage ``arrays``, run the entry and its tasks, copy results back.

        ``outputs_in``: pure Out arrays are copied in too (PyPTO's in-place calls of a
        compiled program: the device buffer starts as the caller's tensor).
        """
        cfg = config if config is not None else _DEFAULT_CONFIG
        loaded = self.load(artifact)
        if cfg.precise and self.bind is registry_bind:  # the same kernels, precise-mode ops
            loaded = load_artifact(loaded.directory, precise_bind)
        manifest = loaded.manifest
        clusters = cfg.sim_clusters or self.arch.sim_clusters
        graph = TaskGraph(
            clusters, seed=cfg.schedule_seed, strict_war=cfg.strict_war, kernels=loaded.kernels
        )
        rt = Orchestrator(loaded.kernels, graph, [])
        token = UNINITIALIZED.set(cfg.uninitialized)
        precise = PRECISE.set(bool(cfg.precise))
        try:
            entry_args, copy_back, dyn = stage(manifest, arrays, rt, outputs_in=outputs_in)
            entry = loaded.make_orchestration(rt)
            # IEEE results (inf, NaN, poison propagation) are the defined numerics of the
            # DSL (§5.1), not warnings; one errstate per run instead of one per op.
            with np.errstate(all="ignore"):
                entry(*entry_args)
                graph.drain()
            if graph.war_hazards:  # recorded under strict_war only: a failed run
                raise _war_error(manifest.program, graph)
        except SimulationError as exc:
            if exc.span is None:  # raised inside a kernel (a timeout) or by rt for a line
                _locate(exc, loaded)
            exc.notes = (*exc.notes, _partial_record(cfg, manifest.program, graph, rt, exc))
            raise
        finally:
            PRECISE.reset(precise)
            UNINITIALIZED.reset(token)
        # Only a run that succeeded reaches the caller's Out/InOut arrays (DSL.md §1.5).
        for caller, staged in copy_back:
            np.copyto(caller, staged)

        meta = {
            "program": manifest.program,
            "platform": self.platform,
            "arch": self.arch.name,
            "uninitialized": cfg.uninitialized,
            "schedule_seed": cfg.schedule_seed,
            "cores": {"clusters": clusters, "aic": clusters, "aiv": 2 * clusters},
            "dynamic_dims": dyn,
        }
        outputs = {
            a.name: value
            for a, value in zip(manifest.entry_args, arrays)
            if a.kind == "tensor" and a.direction != "In"
        }
        result = SimRun(
            program=manifest.program,
            platform=self.platform,
            outputs=outputs,
            returns=tuple(arrays[i] for i in manifest.entry_returns),
            uninitialized=cfg.uninitialized,
            graph=graph,
            roots=rt.roots,
            meta=meta,
            config=cfg,
        )
        if cfg.save_kernels or cfg.trace:
            result.deps_path  # noqa: B018  (kept runs are written now)
        if cfg.trace:
            result.trace_path  # noqa: B018
        return result


_DEFAULT_CONFIG = RunConfig()


def _locate(exc: SimulationError, loaded: LoadedArtifact) -> None:
    """Give ``exc`` the user span of the innermost generated frame it passed through:
    a kernel's (e.g. a --pypto-timeout alarm raised in a kernel's loop), else the
    orchestration line that asked ``rt`` for what failed."""
    tb = exc.__traceback__
    by_path = {k.path: k for k in loaded.kernels.values()}
    kernel = None
    while tb is not None:
        kernel = by_path.get(tb.tb_frame.f_code.co_filename, kernel)
        tb = tb.tb_next
    tb = exc.__traceback__
    if kernel is not None:
        path, spans, scalars = kernel.path, kernel.spans, kernel.scalars
    else:
        path, spans = loaded.orchestration_path, loaded.orchestration_spans
        scalars = loaded.orchestration_scalars
    exc.span = span_in(tb, path, spans)
    values = scalar_values(tb, path, scalars)
    if values:
        exc.notes = (*exc.notes, f"at run time, {values}")


def _sim_twin(arch: Any) -> str:
    return platform_string(arch, ExecutionMode.SIM)


def _partial_record(
    cfg: RunConfig, program: str, graph: TaskGraph, rt: Orchestrator, error: SimulationError
) -> str:
    """Write the graph of a failed run (tasks submitted so far, order executed) for debugging
    (and its trace under ``cfg.trace``).  The record and its path are kept on ``error``
    (``run_record``, ``deps_path``), so a harness can keep them with the failing test."""
    try:
        meta = {"program": program, "platform": cfg.platform, "failed": True}
        record = graph.to_json(rt.roots, meta)
        error.run_record = record  # type: ignore[attr-defined]
        run_dir = _new_run_dir(cfg, program)
        path = run_dir / "deps.json"
        path.write_text(json.dumps(record))
        error.deps_path = path  # type: ignore[attr-defined]
        if cfg.trace:
            from pytest_pypto.runtime.trace import write_trace

            write_trace(record, run_dir)
    except Exception as exc:  # the original error matters more than this record
        return f"task graph not recorded ({exc})"
    done = len(graph.executed)
    return f"{done} of {len(graph.tasks)} submitted tasks ran before the error; graph: {path}"


class WarHazardError(SimulationError):
    """A strict_war run found a write-after-read the device does not order (runtime-error)."""


def _war_error(program: str, graph: TaskGraph) -> WarHazardError:
    """The failure of a strict_war run: every hazard named (reader, writer, tensor, bytes),
    at the writer kernel's first line."""
    hazards = graph.war_hazards
    tasks = graph.tasks

    def who(tid: int) -> str:
        return f"task {tid} (kernel '{tasks[tid].kernel}')"

    lines = [
        f"{who(h['writer'])} writes '{h['tensor_name']}' bytes {h['writer_bytes']} that "
        f"{who(h['reader'])} reads (bytes {h['reader_bytes']}) without depending on it"
        for h in hazards
    ]
    first = hazards[0]
    writer = graph.kernels.get(tasks[first["writer"]].kernel)
    spans = getattr(writer, "spans", None) or {}
    error = WarHazardError(
        f"'{program}': {len(hazards)} write-after-read hazard(s) the device does not order: "
        f"{lines[0]}",
        spans[min(spans)] if spans else None,
        hint="the runtime orders only RAW and WAW: make the writer take the reader's output "
        "as an input (or write into another tensor), so the overwrite waits for the read",
    )
    error.notes = (*error.notes, *(f"also: {line}" for line in lines[1:8]))
    error.war_hazards = list(hazards)  # type: ignore[attr-defined]
    return error


# -- run directories ------------------------------------------------------------------

_run_counter = itertools.count()
_temp_root: Path | None = None


def _new_run_dir(cfg: RunConfig, program: str) -> Path:
    """A fresh directory for one run's records: kept under the kernels dir when saving
    kernels, else in a per-process temporary directory removed at exit."""
    global _temp_root
    n = next(_run_counter)
    if cfg.save_kernels or (cfg.trace and cfg.save_kernels_dir):
        base = Path(cfg.save_kernels_dir or "build_output") / "runs"
        path = base / f"{program}-{os.getpid()}-{n:05d}"
        path.mkdir(parents=True, exist_ok=True)
        return path
    if _temp_root is None:
        _temp_root = Path(tempfile.mkdtemp(prefix="pypto-runs-"))
        atexit.register(shutil.rmtree, _temp_root, True)
    path = _temp_root / f"{program}-{n:05d}"
    path.mkdir()
    return path
