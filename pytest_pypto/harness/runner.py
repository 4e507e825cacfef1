"""The `pypto_runner` fixture's object: compile, run and check on the item's cell.

A runner dispatches on its cell's runtime (the registry's choice: the simulator on
sim cells, an installed onboard runtime on onboard cells, which are skipped before a
runner exists when none is usable).  Every failure carries a failure class (``compile-error``,
``runtime-error``, ``device-error``, ``mismatch``) as ``exc.failure_class``; the
plugin copies it into the test's ``user_properties`` (hence junitxml).  ``check``
failures also name the platform, the seed and a command that reproduces them.

Compiles go through the compile cache (harness/cache.py); where output goes
(``config.save_kernels_dir``) is applied after every compile, hit or miss.  A failing
``check`` keeps its artifact with the inputs, expected and actual outputs as ``.npy``
files in ``keep_dir`` and names that directory in its report.  A kept failure also
holds the last run's task graph (``deps.json``) and its schedule (``trace.json``,
``schedule.png`` with matplotlib): a failed run's note names them there, not in the
simulator's temporary run directory.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_pypto.config import RunConfig
from pytest_pypto.harness.ledger import FAILURE_PROPERTY

__all__ = ["FAILURE_PROPERTY", "Runner", "failure_class_of"]



def failure_class_of(exc: BaseException) -> str | None:
    """The failure class of an exception raised by a pypto test (None: not ours).

    Looks only at modules already loaded, so classifying never imports the toolchain.
    """
    cls = getattr(exc, "failure_class", None)
    if isinstance(cls, str):
        return cls
    import sys

    errors = sys.modules.get("pytest_pypto.ir.errors")
    if errors is None:
        return None
    worker = sys.modules.get("pytest_pypto.runtime.worker")
    if worker is not None and isinstance(exc, worker.OnboardExecutionError):
        return "device-error"
    if isinstance(exc, errors.SimulationError):
        return "runtime-error"
    if isinstance(exc, errors.PyptoError):
        return "compile-error"
    return None


class Runner:
    """Compile, run and check kernels on one cell (``config``) for one test."""

    def __init__(
        self,
        config: RunConfig,
        *,
        rng_factory: Callable[[], Any],
        context: Sequence[str] = (),
        cache: Any = None,
        keep_dir: str | Path | None = None,
        lease: Callable[[], Any] | None = None,
    ) -> None:
        from pytest_pypto.harness.cache import CompileCache

        self.config = config
        self._rng_factory = rng_factory
        self.context = tuple(context)  # platform, seed, reproduce: appended to reports
        self.cache = cache if cache is not None else CompileCache(None)
        self.keep_dir = Path(keep_dir) if keep_dir is not None else None
        self.last_compiled: Any = None  # the artifact a failure keeps
        self.kept: Path | None = None  # where it was kept
        self.keep_error: str | None = None  # why it could not be kept
        self._last_arrays: Sequence[Any] = ()
        self._last_record: Any = None  # the last run's deps.json record (or its builder)
        # Onboard: a context manager factory leasing a device (yields its id) held only
        # while a kernel executes (PLUGIN.md §9); compiles happen outside it.
        self._lease = lease

    @property
    def platform(self) -> str:
        return self.config.platform

    def __repr__(self) -> str:
        mode = ", codegen only" if self.config.codegen_only else ""
        return f"<pypto_runner {self.platform}{mode}>"

    def compile(self, program: Any, *, specs: Sequence[Any] = ()) -> Any:
        """Compile ``program`` for this cell (through the cache); a `CompiledProgram`.

        ``specs``: a case's tensor specs, part of the cache key.
        """
        __tracebackhide__ = True  # a failing test shows its own line and the report
        with _classified("compile-error"):
            compiled = self.cache.compile(program, self.config, specs=specs)
        self.last_compiled = compiled
        from pytest_pypto.harness.codegen_only import note_compiled

        note_compiled(compiled)  # the coverage ledger's count under --pypto-codegen-only
        if self.config.save_kernels_dir:
            copy_artifact(compiled, Path(self.config.save_kernels_dir))
        return compiled

    def keep_failure(
        self,
        arrays: Mapping[str, Mapping[str, Any]] | None = None,
    ) -> Path | None:
        """Keep the last artifact (and ``arrays``: group -> name -> array) for a failure.

        Without arrays, the arguments of the last `run` are kept as ``arguments/``.
        Returns the directory (None when nothing was compiled or there is nowhere to
        keep it); keeping twice is a no-op.  A directory that cannot be written leaves
        the failure as it is: why is in ``keep_error`` (the report names it).
        """
        if self.kept is not None or self.keep_error is not None:
            return self.kept
        if self.last_compiled is None:
            return None
        target = self.config.save_kernels_dir or self.keep_dir
        if target is None:
            return None
        target = Path(target)
        try:
            copy_artifact(self.last_compiled, target)
            if arrays is None:
                arrays = {"arguments": _named_args(self.last_compiled, self._last_arrays)}
            _save_arrays(target, arrays)
            self._keep_run_record(target)
        except OSError as exc:
            self.keep_error = f"{target}: {type(exc).__name__}: {exc}"
            return None
        self.kept = target.resolve()
        return self.kept

    def run(self, program: Any, *arrays: Any, outputs_in: bool = False) -> Any:
        """Run ``program`` (or a `CompiledProgram`) with ``arrays`` on this cell's simulator.

        Returns the simulator's `SimRun` (outputs written in place).  Under
        ``--pypto-codegen-only`` nothing runs: inside a test this call ends it as a skip
        naming the program and cell (harness/codegen_only.py); elsewhere it returns the
        `CompiledProgram`.  Given a `PTOTestCase`,
        returns its `RunResult` instead of raising.  ``outputs_in``: pure Out arrays
        are copied in (their data is the buffer's start) instead of poisoned.
        """
        __tracebackhide__ = True
        from pytest_pypto.harness.cases import PTOTestCase

        if isinstance(program, PTOTestCase):
            if arrays:
                raise TypeError("run(case) takes no arrays: the case defines its tensors")
            return self.run_case(program)
        compiled = program
        if not _is_compiled(program) and not self._runtime_compiles():
            compiled = self.compile(program)
        from pytest_pypto.harness.codegen_only import held

        if held(compiled, self.config):  # --pypto-codegen-only: the test skips here
            return compiled
        from pytest_pypto.harness.dispatch import run as dispatch

        dispatch = self._recording(dispatch)  # the run's task graph, kept if the test fails
        self._last_arrays = arrays
        with _classified("runtime-error"):
            # Onboard, the device is leased only around the runtime's execute (dispatch.py).
            return dispatch(
                compiled, *arrays, config=self.config, outputs_in=outputs_in, lease=self._lease
            )

    def _runtime_compiles(self) -> bool:
        """Whether the cell's runtime brings its own compiler (``compiles``): `run` then
        hands it the program.  False under codegen-only (no runtime is looked up) and when
        no runtime is usable (the dispatch says why)."""
        if self.config.codegen_only:
            return False
        from pytest_pypto.runtime.registry import runtime_for

        try:
            return bool(getattr(runtime_for(self.config), "compiles", False))
        except Exception:  # noqa: BLE001  (reported by the dispatch)
            return False

    def _recording(self, dispatch: Callable[..., Any]) -> Callable[..., Any]:
        """``dispatch`` remembering the record (deps.json content) of the run it makes, or
        of the run that failed; a failure's note then names where the test keeps it."""

        def recorded(*args: Any, **kwargs: Any) -> Any:
            __tracebackhide__ = True
            self._last_record = None
            try:
                result = dispatch(*args, **kwargs)
            except Exception as exc:
                self._last_record = getattr(exc, "run_record", None)
                _point_notes_at_kept(exc, self.config.save_kernels_dir or self.keep_dir)
                raise
            self._last_record = _record_of(result)
            return result

        return recorded

    def forget_run(self) -> None:
        """Drop the last run's task graph (called once the test's report is made)."""
        self._last_record = None

    def _keep_run_record(self, target: Path) -> None:
        """The last run's deps.json and its schedule (trace.json, schedule.png) in ``target``."""
        record = self._last_record
        if callable(record):  # a successful run: its record is built on demand
            record = record()
        if not isinstance(record, dict):
            return
        import json

        from pytest_pypto.runtime.trace import write_trace

        (target / "deps.json").write_text(json.dumps(record))
        write_trace(record, target)

    def check(self, case: Any) -> Any:
        """Build the case's inputs, run, compare every output; raise with the full report.

        Returns the `RunResult` when every output matches.  Under
        ``--pypto-codegen-only`` the test skips once the program compiled (outside a
        test: the `RunResult`, with no outputs).
        """
        __tracebackhide__ = True
        result = self._execute(case)
        if self.config.codegen_only and self.last_compiled is not None:
            from pytest_pypto.harness.codegen_only import held

            held(self.last_compiled, self.config)  # a skip inside a test
        return result

    def run_case(self, case: Any) -> Any:
        """Like `check`, but failures come back in the `RunResult` instead of raising."""
        from pytest_pypto.harness.cases import RunResult

        try:
            return self._execute(case)
        except Exception as exc:  # noqa: BLE001  (reported, not swallowed)
            return RunResult(
                passed=False,
                test_name=case.get_name(),
                error=str(exc),
                failure_class=failure_class_of(exc),
                platform=self.platform,
                seed=self.config.seed,
            )

    def _execute(self, case: Any) -> Any:
        __tracebackhide__ = True
        from pytest_pypto.harness.cases import RunResult, TensorSpec
        from pytest_pypto.harness.compare import MismatchError, default_tolerance, find_mismatch

        rng = self._rng_factory()
        specs, tensors, scalars = case._harness_inputs(rng, self.config.seed)
        inputs = {name: array.copy() for name, array in tensors.items()}
        expected = case._harness_golden(specs, tensors, scalars)
        program = case.get_program()
        started = time.perf_counter()
        try:
            compiled = program if self._runtime_compiles() else self.compile(program, specs=specs)
        except Exception as exc:
            _add_context(exc, self.context)
            raise
        args = [tensors[s.name] if isinstance(s, TensorSpec) else scalars[s.name] for s in specs]
        try:
            if not self.config.codegen_only:
                self.run(compiled, *args, outputs_in=case.outputs_in)
        except Exception as exc:
            kept = self.keep_failure({"inputs": inputs, "expected": expected, "actual": tensors})
            _add_context(exc, (*self.context, *_kept_line(kept)))
            raise
        elapsed = time.perf_counter() - started
        result = RunResult(
            passed=True,
            test_name=case.get_name(),
            execution_time=elapsed,
            platform=self.platform,
            seed=self.config.seed,
            inputs=inputs,
            expected=expected,
            outputs={name: tensors[name] for name in expected},
        )
        if self.config.codegen_only:
            result.outputs = {}
            return result
        rtol, atol = _tolerance(case, self.config)
        found = []
        for name, want in expected.items():
            r, a = rtol, atol
            if (r is None) != (a is None):  # one set by the case: the other per dtype
                dr, da = default_tolerance(tensors[name].dtype, want.dtype)
                r, a = (dr if r is None else r), (da if a is None else a)
            m = find_mismatch(tensors[name], want, r, a, name=name, equal_nan=case.equal_nan)
            if m is not None:
                found.append(m)
        if found:
            actual = {name: tensors[name] for name in expected}
            kept = self.keep_failure({"inputs": inputs, "expected": expected, "actual": actual})
            context = (f"case: {case.get_name()}", *self.context, *_kept_line(kept))
            raise MismatchError(found, context)
        return result


def copy_artifact(artifact: Any, target: Path) -> None:
    """Put an artifact's files into ``target`` (created; files replaced): a
    `CompiledProgram` (written straight from memory when it is there) or a directory."""
    save_to = getattr(artifact, "save_to", None)
    if save_to is not None:
        save_to(target)
        return
    target.mkdir(parents=True, exist_ok=True)
    shutil.copytree(artifact, target, dirs_exist_ok=True)


def _kept_line(kept: Path | None) -> tuple[str, ...]:
    return (f"artifacts kept in: {kept}",) if kept is not None else ()


def _record_of(execution: Any) -> Any:
    """A callable building the run's deps.json record (None when the runtime has none)."""
    if getattr(type(execution), "record", None) is None:  # a class attribute: not built here
        return None
    return lambda: getattr(execution, "record", None)


def schedule_note(where: Path) -> str:
    """Where a failing test keeps its run's task graph and schedule picture."""
    import importlib.util

    note = (
        f"task graph: {where / 'deps.json'}; schedule: {where / 'trace.json'} "
        "(open in ui.perfetto.dev)"
    )
    if importlib.util.find_spec("matplotlib") is None:
        from pytest_pypto.runtime.trace import PNG_HINT

        note += f"; {PNG_HINT}"
    else:
        note += f", {where / 'schedule.png'}"
    return note


def _point_notes_at_kept(exc: BaseException, target: Any) -> None:
    """A failed run's note names its deps.json in a temporary run directory, removed at
    exit: point it at the test's kept directory, where `keep_failure` writes it."""
    deps = getattr(exc, "deps_path", None)
    notes = getattr(exc, "notes", None)
    if deps is None or target is None or not isinstance(notes, tuple):
        return
    target = Path(target).resolve()
    if target in Path(deps).resolve().parents:
        return  # already written under the kept directory (--pypto-save-kernels, --pypto-trace)
    old = f"graph: {deps}"
    exc.notes = tuple(  # type: ignore[attr-defined]
        n.replace(old, schedule_note(target)) if old in n else n for n in notes
    )


def _named_args(compiled: Any, arrays: Sequence[Any]) -> dict[str, Any]:
    names = [a.name for a in compiled.manifest.entry_args]
    return {name: a for name, a in zip(names, arrays) if hasattr(a, "shape")}


def _save_arrays(target: Path, groups: Mapping[str, Mapping[str, Any]]) -> None:
    """``<target>/<group>/<name>.npy`` for every array (torch tensors via numpy)."""
    import numpy as np

    for group, arrays in groups.items():
        folder = target / group
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in arrays.items():
            if hasattr(array, "detach"):  # a torch tensor
                array = array.detach().cpu().numpy()
            np.save(folder / f"{name}.npy", np.asarray(array))


def _tolerance(case: Any, config: RunConfig) -> tuple[float | None, float | None]:
    """The case's tolerance pair (class attributes), else its own ``case.config``'s (PyPTO
    cases tune ``self.config.rtol``), else the cell's RunConfig's, else None (per-dtype
    defaults).  A config with one of the two set keeps the per-dtype default for the other."""
    if (case.rtol is None) != (case.atol is None):
        raise ValueError(
            f"{case.get_name()}: rtol={case.rtol!r}, atol={case.atol!r}: give both or neither"
        )
    if case.rtol is not None:
        return case.rtol, case.atol
    own = getattr(case, "config", None)
    for source in (own, config):
        pair = (getattr(source, "rtol", None), getattr(source, "atol", None))
        if pair != (None, None):
            return pair
    return None, None


def _is_compiled(program: Any) -> bool:
    import os

    if isinstance(program, (str, os.PathLike)):
        return True
    from pytest_pypto.ir.artifact import CompiledProgram

    return isinstance(program, CompiledProgram)


def _add_context(exc: BaseException, context: Sequence[str]) -> None:
    """Append the cell's context to a toolchain error (rendered as notes)."""
    notes = getattr(exc, "notes", None)
    if isinstance(notes, tuple) and context:
        exc.notes = (*notes, *context)  # type: ignore[attr-defined]


class _classified:
    """Tag toolchain errors raised inside with a failure class (unless they have one)."""

    def __init__(self, failure_class: str) -> None:
        self.failure_class = failure_class

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is not None and getattr(exc, "failure_class", None) is None:
            found = failure_class_of(exc)
            if found is not None:
                # A compile step's PyptoError is a compile error; a run's is runtime.
                if found == "compile-error" and self.failure_class != "compile-error":
                    found = self.failure_class
                try:
                    exc.failure_class = found  # type: ignore[attr-defined]
                except AttributeError:
                    pass
        return False
