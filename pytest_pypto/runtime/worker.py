"""`Worker`: runs compiled artifacts on the bundled numpy functional simulator.

One worker serves one sim platform ('a2a3sim' or 'a5sim') and refuses artifacts
compiled for another.  A run stages the caller's arrays (`staging`), calls the
generated orchestration with an `Orchestrator` as ``rt``, executes the recorded
task graph (`graph`), copies staged Out/InOut results back (only when everything
before succeeded; a pure Out written in place holds poison after a failed run, see
`staging`) and writes the executed graph to ``deps.json`` when it is asked for.

The debugging switches of the RunConfig act here: ``schedule_seed`` shuffles ready
tasks (`graph`); ``strict_war`` records write-after-read hazards and fails the run
(`WarHazardError`, runtime-error) naming them; ``precise`` runs the kernels bound to
`runtime.precise.precise_bind` with `ir.apply.PRECISE` set for the run only;
``trace`` writes ``trace.json`` (`runtime.trace`) next to ``deps.json``, under the
kept artifact directory when the config names one.

A run whose orchestration only submitted tasks on the entry's own tensors is kept as
a fixed schedule (`runtime.express`): a later run with the same argument signature
calls the kernels in that order directly, and its task graph is built only when its
record is asked for (the same record a full run gives).

The runtime reads artifacts and the op registry only; it never imports the
compiler or the language.
"""

from __future__ import annotations

import functools
import gc
import json
import os
import weakref
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pytest_pypto.arch import ExecutionMode, parse_platform, platform_string, spec
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.apply import PRECISE, QUIET_FLOATS
from pytest_pypto.ir.artifact import SIM_BACKEND, CompiledProgram
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.values import UNINITIALIZED
from pytest_pypto.runtime import heap, rank_races
from pytest_pypto.runtime.express import (
    Schedule,
    dry_graph,
    keyed_params,
    record,
    replay,
    signature,
)
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.loader import Binder, LoadedArtifact, load_artifact, registry_bind
from pytest_pypto.runtime.locate import scalar_values, span_in
from pytest_pypto.runtime.orchestrator import Orchestrator
from pytest_pypto.runtime.precise import precise_bind
from pytest_pypto.runtime.races import find_races, race_error
from pytest_pypto.runtime.records import RecordedRun, keep_records, new_run_dir
from pytest_pypto.runtime.staging import (
    POOL,
    EntryPlan,
    entry_handles,
    entry_span,
    refill,
    stage_values,
)
from pytest_pypto.runtime.timeout import RunTimedOut
from pytest_pypto.runtime.trace import write_trace

__all__ = ["OnboardExecutionError", "Prepared", "SimRun", "WarHazardError", "Worker"]


class OnboardExecutionError(SimulationError):
    """Execution was asked of an onboard platform, which the bundled simulator cannot serve."""


class SimRun(RecordedRun):
    """The result of one simulated run.

    The executed task graph is kept in memory and written to ``deps.json`` in the
    run directory when the run saves kernels, or else the first time ``deps_path()``,
    ``run_dir()``, ``tasks`` or ``deps()`` is asked for: file-system work stays off
    the dispatch path of runs nobody inspects.
    """

    sim_backend: str = SIM_BACKEND

    def __init__(
        self,
        program: str,
        platform: str,
        plan: EntryPlan,
        arrays: tuple[Any, ...],
        graph: TaskGraph | Callable[[], tuple[TaskGraph, list[Any]]],
        roots: list[Any],
        meta: tuple[str, int, dict[str, int]],
        config: RunConfig,
        kernel_seconds: float | None = None,
    ) -> None:
        self.program = program
        self.platform = platform
        self._plan, self._arrays = plan, arrays  # (`outputs` and `returns` when asked for)
        self._outputs: dict[str, np.ndarray] | None = None
        self.uninitialized = config.uninitialized
        # ``graph`` is the executed graph, or (an express run, `runtime.express`) what
        # builds it and the roots when the record is asked for.
        self._made = graph if callable(graph) else None
        self.war_hazards: list[dict[str, Any]] = [] if self._made else graph.war_hazards
        # Host wall-clock seconds spent inside kernel code (for profiling the simulator;
        # the simulator has no device timing model).
        self.kernel_seconds: float = (
            graph.kernel_seconds if kernel_seconds is None else kernel_seconds)
        self._graph_roots = None if self._made else (graph, roots)
        self._meta = meta  # (arch name, clusters, dynamic dims): the header's own facts
        self._config = config
        self._record: dict[str, Any] | None = None
        self._deps_path: Path | None = None

    @property
    def outputs(self) -> dict[str, np.ndarray]:
        """Out/InOut entry params by name (the caller's arrays)."""
        if self._outputs is None:
            arrays = self._arrays
            self._outputs = {name: arrays[i] for i, name in self._plan.outputs}
        return self._outputs

    @property
    def returns(self) -> tuple[np.ndarray, ...]:
        """The entry's returned params, in order."""
        arrays = self._arrays
        return tuple([arrays[i] for i in self._plan.returns])

    def __repr__(self) -> str:
        return (
            f"<SimRun {self.program} on {self.platform}: {len(self._graph.tasks)} tasks, "
            f"outputs {sorted(self.outputs)}>"
        )

    @property
    def _graph(self) -> TaskGraph:
        """The executed task graph (an express run builds it now)."""
        if self._graph_roots is None:
            self._graph_roots = self._made()
        return self._graph_roots[0]

    @property
    def _roots(self) -> list[Any]:
        """The run's root buffers (entry arrays, created tensors), in id order."""
        if self._graph_roots is None:
            self._graph_roots = self._made()
        return self._graph_roots[1]

    @property
    def record(self) -> dict[str, Any]:
        """The executed graph, as written to deps.json."""
        if self._record is None:
            self._record = self._graph.to_json(self._roots, self._header())
        return self._record

    def _header(self) -> dict[str, Any]:
        """The deps.json header (built when a record is asked for, not per run)."""
        arch, clusters, dyn = self._meta
        cfg = self._config
        return {
            "program": self.program,
            "platform": self.platform,
            "arch": arch,
            "uninitialized": cfg.uninitialized,
            "schedule_seed": cfg.schedule_seed,
            "cores": {"clusters": clusters, "aic": clusters, "aiv": 2 * clusters},
            "dynamic_dims": dyn,
        }

class Prepared:
    """A loaded artifact plus what every run of it needs that no argument changes (the
    staging plan), built once per loaded artifact and per worker; runs never change it."""

    __slots__ = ("loaded", "manifest", "plan", "keyed", "schedules", "__weakref__")

    def __init__(self, loaded: LoadedArtifact) -> None:
        self.loaded = loaded
        self.manifest = loaded.manifest
        self.plan = EntryPlan(loaded.manifest)
        self.keyed = keyed_params(self.plan)
        # signature -> the fixed schedule of runs with it (`runtime.express`); the only
        # part that runs add to, a few entries at most
        self.schedules: dict[tuple, Schedule] = {}


def age_young_objects() -> None:
    """Move the objects the collector tracks as young into its oldest generation, unscanned.

    A run made them while the collector was off: its record (tasks, husks of their windows,
    made buffers' roots), a few per task, so hundreds of thousands for a large run.  Left
    young, the first collections after the run would scan every one of them, and again when
    they age (1.4 s after a 131k-task paged-attention run); and their promotion would start
    full collections of the whole process.  ``gc.freeze`` then ``gc.unfreeze`` moves them
    to the oldest generation without a scan: they are still freed by reference counting,
    and any garbage cycle among them by the next full collection.  Nothing is done when
    objects are frozen already (someone else's `gc.freeze`, e.g. the lint runner's shared
    trees: unfreezing would release theirs too), nor after a small run (fewer than
    `AGE_MIN_OBJECTS` young objects: a collection scans those quickly, while asking whether
    objects are frozen walks every frozen one).  (docs/design/runtime.md §4)
    """
    if gc.get_count()[0] < AGE_MIN_OBJECTS:  # (O(1): the young objects made since)
        return
    if gc.get_freeze_count() == 0:
        gc.freeze()
        gc.unfreeze()


# Young objects a run leaves before `age_young_objects` moves them (a few per task: some
# thousand tasks).
AGE_MIN_OBJECTS = 50_000


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
        heap.tune()  # batched kernel calls reuse heap pages (runtime.heap)
        # id(CompiledProgram) -> (its weakref, Prepared); id(LoadedArtifact) -> the same
        self._by_program: dict[int, tuple[weakref.ref, Prepared]] = {}
        self._by_loaded: dict[int, tuple[weakref.ref, Prepared]] = {}

    def __repr__(self) -> str:
        return f"Worker(platform={self.platform!r})"

    def load(self, artifact: CompiledProgram | LoadedArtifact | str | os.PathLike) -> LoadedArtifact:
        """The built artifact, refused when it was compiled for another platform."""
        return self.prepare(artifact).loaded

    def prepare(self, artifact: CompiledProgram | LoadedArtifact | str | os.PathLike) -> Prepared:
        """The built artifact and its run plan (refused when compiled for another platform).

        A CompiledProgram names one compile's output: it is built and planned once per
        object (until it is garbage); a directory goes through the loader's cache."""
        if artifact.__class__ is CompiledProgram or isinstance(artifact, CompiledProgram):
            memo = self._by_program.get(id(artifact))
            if memo is not None and memo[0]() is artifact:
                return memo[1]
            prepared = self._prepared(load_artifact(artifact, self.bind))  # in memory
            _remember(self._by_program, artifact, prepared)
            return prepared
        if isinstance(artifact, LoadedArtifact):
            return self._prepared(artifact)
        return self._prepared(load_artifact(artifact, self.bind))

    def _prepared(self, loaded: LoadedArtifact) -> Prepared:
        memo = self._by_loaded.get(id(loaded))
        if memo is not None and memo[0]() is loaded:
            return memo[1]
        manifest = loaded.manifest
        if manifest.platform != self.platform:
            raise SimulationError(
                f"artifact of '{manifest.program}' was compiled for platform "
                f"'{manifest.platform}', but this worker runs '{self.platform}'",
                hint=f"compile it with RunConfig(platform='{self.platform}'), or run it on "
                f"Worker(platform='{manifest.platform}')",
            )
        prepared = Prepared(loaded)
        _remember(self._by_loaded, loaded, prepared)
        return prepared

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
        return self.dispatch(artifact, arrays, config, outputs_in)

    def dispatch(self, artifact: Any, arrays: tuple, config: RunConfig | None = None,
                 outputs_in: bool = False, express: bool = True) -> SimRun:
        """`run` with the arrays as one tuple (the runtimes' call); ``express=False``
        never replays a fixed schedule (`runtime.express`)."""
        # The cyclic garbage collector is off for the run (docs/design/runtime.md §4): a run
        # allocates a few objects per op and keeps a record per task, so collections would
        # rescan the growing task list again and again (a fifth of a large run's time), while
        # what a run frees is acyclic and goes by reference counting anyway.
        if not gc.isenabled():
            return self._dispatch(artifact, arrays, config, outputs_in, express)
        gc.disable()
        try:
            return self._dispatch(artifact, arrays, config, outputs_in, express)
        finally:
            age_young_objects()
            gc.enable()

    def _dispatch(self, artifact: Any, arrays: tuple, config: RunConfig | None,
                  outputs_in: bool, express: bool) -> SimRun:
        cfg = config if config is not None else _DEFAULT_CONFIG
        prepared = self.prepare(artifact)
        precise_run = cfg.precise
        if precise_run and self.bind is registry_bind:  # the same kernels, precise-mode ops
            prepared = self._prepared(load_artifact(prepared.loaded, precise_bind))
        loaded, manifest, plan = prepared.loaded, prepared.manifest, prepared.plan
        kernels = loaded.kernels
        clusters = cfg.sim_clusters or self.arch.sim_clusters
        # A fixed schedule may replace the task graph only where the run's own
        # bookkeeping is not asked for (`runtime.express`).
        schedules = prepared.schedules if express and not (
            precise_run or cfg.schedule_seed is not None or cfg.strict_war or cfg.save_kernels
            or cfg.trace or getattr(cfg, "dump_args", 0) or rank_races.recording()) else None
        # The run's choices for the ops (contextvars), set only where they differ from
        # what holds already (the defaults, for most runs).
        uninitialized = cfg.uninitialized
        token = UNINITIALIZED.set(uninitialized) if UNINITIALIZED.get() != uninitialized else None
        precise_run = bool(precise_run)
        precise = PRECISE.set(precise_run) if PRECISE.get() is not precise_run else None
        in_place: list = []
        graph = rt = schedule = None
        try:
            values, copy_back, dyn, in_place = stage_values(
                manifest, arrays, outputs_in=outputs_in, plan=plan
            )
            if schedules is not None:
                key = signature(prepared.keyed, values)
                schedule = schedules.get(key)
            # IEEE results (inf, NaN, poison propagation) are the defined numerics of the
            # DSL (docs/design/numerics.md §2), not warnings; one errstate per run instead of one
            # per op.
            quiet = _quiet_floats()
            quiet_ops = QUIET_FLOATS.set(True)  # so the ops do not silence them again
            try:
                if schedule is not None:
                    seconds = replay(schedule, values)
                else:
                    graph = TaskGraph(clusters, seed=cfg.schedule_seed, strict_war=cfg.strict_war,
                                      kernels=kernels, deferred=True,
                                      eager=not manifest.extra.get("explicit_scheduling"))
                    graph.sched.race_check = cfg.race_check
                    graph.dump_level = int(getattr(cfg, "dump_args", 0) or 0)
                    rt = Orchestrator(kernels, graph, [], max_memory=cfg.max_memory)
                    entry = loaded.make_orchestration(rt)
                    handles = entry_handles(plan, values, rt.roots)
                    rt.admit_entry(entry_span(manifest))
                    entry(*handles)
                    del handles  # the entry's own names hold what it still uses
                    graph.drain()
                    if graph.sched.race_check and graph.sched.used:
                        races = find_races(graph)
                        if races:
                            raise race_error(manifest.program, graph, races,
                                             loaded.orchestration_spans)
            finally:
                QUIET_FLOATS.reset(quiet_ops)
                _loud_floats(quiet)
            if graph is not None and graph.war_hazards:  # strict_war only: a failed run
                raise _war_error(manifest.program, graph)
        except BaseException as exc:
            if in_place:  # no partial result left where the caller looks for results
                refill(in_place)
            if schedule is not None and isinstance(exc, Exception) \
                    and not isinstance(exc, RunTimedOut):
                # a replayed kernel failed: the full run reports it (its task, line, graph)
                return self._dispatch(artifact, arrays, cfg, outputs_in, express=False)
            if isinstance(exc, SimulationError):
                if exc.span is None:  # raised inside a kernel (a timeout) or by rt for a line
                    _locate(exc, loaded)
                if graph is None:
                    graph = TaskGraph(clusters, kernels=kernels)
                    rt = Orchestrator(kernels, graph, [])
                note = _partial_record(cfg, manifest.program, graph, rt, exc) \
                    if schedule is None else (
                    "task graph not recorded: the run stopped inside a replay of its fixed "
                    "schedule (runtime.express); a run with RunConfig(trace=True) records it")
                exc.notes = (*exc.notes, note)
            raise
        finally:
            if precise is not None:
                PRECISE.reset(precise)
            if token is not None:
                UNINITIALIZED.reset(token)
        # Only a run that succeeded reaches the caller's staged Out/InOut arrays
        # (docs/design/runtime.md §4).
        if copy_back:
            for caller, staged in copy_back:
                np.copyto(caller, staged)
            POOL.give([staged for _, staged in copy_back])  # free for the next run
        if schedule is not None:
            made = functools.partial(dry_graph, loaded.make_orchestration, kernels, clusters,
                                     plan, values, seconds)
            return SimRun(manifest.program, self.platform, plan, arrays, made, [],
                          (self.arch.name, clusters, dyn), cfg, sum(seconds))
        if schedules is not None:
            fixed = record(plan, rt, graph)
            if fixed is not None:
                if len(schedules) >= _SCHEDULES:
                    schedules.clear()
                schedules[key] = fixed
        result = SimRun(manifest.program, self.platform, plan, arrays, graph, rt.roots,
                        (self.arch.name, clusters, dyn), cfg)
        result.arg_dumps = graph.arg_dumps
        if cfg.save_kernels or cfg.trace:
            keep_records(result, cfg.trace)  # kept runs are written now
        return result


def _remember(memo: dict[int, tuple[weakref.ref, Prepared]], key: Any, prepared: Prepared) -> None:
    """``memo[id(key)] = prepared`` until ``key`` is garbage (its id may then be reused)."""
    k = id(key)
    forget = memo.pop
    memo[k] = (weakref.ref(key, lambda _: forget(k, None)), prepared)


def _floats_switch() -> tuple[Callable[[], Any], Callable[[Any], None]]:
    """(quiet, restore): numpy's floating-point errors ignored for a run, and put back.

    numpy 2 keeps that state in a context variable; setting it directly is what
    ``np.errstate(all="ignore")`` does, without the Python-level context manager
    (2 us of every dispatch).  Elsewhere: ``np.errstate`` itself."""
    try:
        from numpy._core._ufunc_config import _extobj_contextvar, _make_extobj  # lazy: private

        _extobj_contextvar.reset(_extobj_contextvar.set(_make_extobj(all="ignore")))
    except Exception:  # noqa: BLE001  (another numpy: the public context manager)
        def quiet() -> Any:
            state = np.errstate(all="ignore")
            state.__enter__()
            return state

        return quiet, lambda state: state.__exit__(None, None, None)
    var_set, var_reset = _extobj_contextvar.set, _extobj_contextvar.reset
    ignore_all = _make_extobj(all="ignore")  # an immutable state object: made once
    return (lambda: var_set(ignore_all)), var_reset


_quiet_floats, _loud_floats = _floats_switch()
_DEFAULT_CONFIG = RunConfig()
_SCHEDULES = 8  # fixed schedules kept per artifact (distinct shapes or scalars)


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
        run_dir = new_run_dir(cfg, program)
        path = run_dir / "deps.json"
        path.write_text(json.dumps(record))
        error.deps_path = path  # type: ignore[attr-defined]
        if cfg.trace:
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
