"""The `pypto_runner` fixture's object: compile, run and check on the item's cell.

A runner dispatches on its cell's runtime (the registry's choice: the simulator on
sim cells, an installed onboard runtime on onboard cells, which are skipped before a
runner exists when none is usable).  Every failure carries a failure class (``compile-error``,
``runtime-error``, ``device-error``, ``mismatch``) as ``exc.failure_class``; the
plugin copies it into the test's ``user_properties`` (hence junitxml).  ``check``
failures also name the platform, the seed and a command that reproduces them.

Compiles go through the harness's one compile path (harness/compiling.py: the compile
cache, then ``config.save_kernels_dir`` after every compile, hit or miss) and runs
through its one dispatch door (harness/dispatch.py).  A failing
``check`` keeps its artifact with the inputs, expected and actual outputs as ``.npy``
files in ``keep_dir`` and names that directory in its report.  A kept failure also
holds the last run's task graph (``deps.json``) and its schedule (``trace.json``,
``schedule.png`` with matplotlib): a failed run's note names them there, not in the
simulator's temporary run directory.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytest_pypto.config import RunConfig
from pytest_pypto.harness.admission import admitted, declared_bytes
from pytest_pypto.harness.cache import CompileCache
from pytest_pypto.harness.cases import PTOTestCase, RunResult, TensorSpec
from pytest_pypto.harness.compare import MismatchError, find_mismatch
from pytest_pypto.harness.compiling import compile_cached, copy_artifact
from pytest_pypto.harness.dispatch import check_program, dispatch
from pytest_pypto.harness.failures import classified, failure_class_of
from pytest_pypto.harness.heatmap import HEATMAP_HINT, heatmap_names, write_heatmap
from pytest_pypto.harness.tolerance import case_tolerance, complete
from pytest_pypto.ir.artifact import CompiledProgram
from pytest_pypto.runtime import registry
from pytest_pypto.runtime.swimlane import write_dfx
from pytest_pypto.runtime.trace import PNG_HINT, write_trace

__all__ = ["Runner", "copy_artifact", "failure_class_of"]


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
        # while a kernel executes (docs/design/runtime.md §10); compiles happen outside it.
        self._lease = lease
        # Whether a dispatch held back under codegen-only ends the test (a skip); False
        # while `run_case` runs, whose RunResult reports it instead.  An attribute, not a
        # parameter of `_execute`, so the case path keeps one signature ``(case)``.
        self._ends_test = True

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
        with classified("compile-error"):
            compiled = compile_cached(program, self.config, cache=self.cache, specs=specs)
        self.last_compiled = compiled
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
        if isinstance(program, PTOTestCase):
            if arrays:
                raise TypeError("run(case) takes no arrays: the case defines its tensors")
            return self.run_case(program)
        if isinstance(program, type) and issubclass(program, PTOTestCase):
            _check_case(program, "pypto_runner.run()")
        check_program(program, "pypto_runner.run()")
        compiled = program
        if not _is_compiled(program) and not self._runtime_compiles():
            compiled = self.compile(program)
        return self._dispatch(compiled, arrays, outputs_in=outputs_in)

    def _dispatch(
        self, compiled: Any, arrays: Sequence[Any], *, outputs_in: bool, ends_test: bool = True
    ) -> Any:
        """The dispatch of ``compiled`` on this cell, its task graph remembered (kept if the
        test fails); the `CompiledProgram` itself when codegen-only holds it back."""
        __tracebackhide__ = True
        self._last_arrays = arrays
        with classified("runtime-error"):
            # Onboard, the device is leased only around the runtime's execute (dispatch.py).
            return self._recording(dispatch)(
                compiled, arrays, config=self.config, outputs_in=outputs_in, lease=self._lease,
                ends_test=ends_test,
            )

    def _runtime_compiles(self) -> bool:
        """Whether the cell's runtime brings its own compiler (``compiles``): `run` then
        hands it the program.  False under codegen-only (no runtime is looked up) and when
        no runtime is usable (the dispatch says why)."""
        if self.config.codegen_only:
            return False
        try:
            return bool(getattr(registry.runtime_for(self.config), "compiles", False))
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
        """Drop the last run's task graph and arguments (called once the test's report is
        made): the item keeps its runner for the whole session, and a large case's inputs
        must not outlive its test."""
        self._last_record = None
        self._last_arrays = ()

    def _keep_run_record(self, target: Path) -> None:
        """The last run's deps.json and its schedule (trace.json, schedule.png) in ``target``."""
        record = self._last_record
        if callable(record):  # a successful run: its record is built on demand
            record = record()
        if not isinstance(record, dict):
            return
        (target / "deps.json").write_text(json.dumps(record))
        write_trace(record, target)

    def check(self, case: Any) -> Any:
        """Build the case's inputs, run, compare every output; raise with the full report.

        Returns the `RunResult` when every output matches.  Under
        ``--pypto-codegen-only`` the test skips once the program compiled (outside a
        test: the `RunResult`, with no outputs).
        """
        __tracebackhide__ = True
        _check_case(case, "pypto_runner.check()")
        return self._execute(case)

    def run_case(self, case: Any) -> Any:
        """Like `check`, but failures come back in the `RunResult` instead of raising
        (under ``--pypto-codegen-only``: a passing one once compiled, as PyPTO's)."""
        __tracebackhide__ = True
        _check_case(case, "pypto_runner.run_case()")
        self._ends_test = False
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
        finally:
            self._ends_test = True

    def _execute(self, case: Any) -> Any:
        __tracebackhide__ = True
        specs = getattr(case, "tensor_specs", None)
        if specs is None:
            specs = case.define_tensors()
        # A large case's inputs and golden (its memory peak) run alone on the machine, the
        # rest overlaps the next one's peak (admission.py); the steps are called from this
        # frame itself, so a caller looking at _execute's callee sees the step.
        with admitted(declared_bytes(specs)) as admission:
            rng = self._rng_factory()
            specs, tensors, scalars = case._harness_inputs(rng, self.config.seed)
            expected = case._harness_golden(specs, tensors, scalars)
            admission.peak_over()
            program = case.get_program()
            started = time.perf_counter()
            try:
                compiled = program if self._runtime_compiles() else self.compile(program, specs=specs)
            except Exception as exc:
                _add_context(exc, self.context)
                raise
            inputs = _pristine_inputs(compiled, specs, tensors)
            args = [tensors[s.name] if isinstance(s, TensorSpec) else scalars[s.name] for s in specs]
            try:
                ran = self._dispatch(
                    compiled, args, outputs_in=case.outputs_in, ends_test=self._ends_test
                )
            except Exception as exc:
                kept = self.keep_failure({"inputs": inputs, "expected": expected, "actual": tensors})
                _add_context(exc, (*self.context, *_kept_line(kept)))
                raise
            elapsed = time.perf_counter() - started
            _write_swimlane(self.config, case, ran)
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
            if ran is compiled:  # held back under codegen-only: compiled, nothing to compare
                result.outputs = {}
                return result
            pair = case_tolerance(case, self.config)
            found = []
            for name, want in expected.items():
                r, a = complete(pair, tensors[name], want)
                m = find_mismatch(tensors[name], want, r, a, name=name, equal_nan=case.equal_nan)
                if m is not None:
                    found.append(m)
            if found:
                actual = {name: tensors[name] for name in expected}
                kept = self.keep_failure({"inputs": inputs, "expected": expected, "actual": actual})
                pictures = heatmap_lines(kept, found, actual, expected)
                context = (f"case: {case.get_name()}", *self.context, *_kept_line(kept), *pictures)
                raise MismatchError(found, context)
            return result


def _pristine_inputs(
    compiled: Any, specs: Sequence[Any], tensors: dict[str, np.ndarray]
) -> dict[str, np.ndarray]:
    """The inputs as the run received them, for the result and a failure report: a copy of
    each tensor the run may change (an output, or bound to an Out/InOut parameter), the
    array itself otherwise (the simulator never writes an In array: staging makes it
    read-only), so a large input is not copied once more (docs/design/runtime.md §4)."""
    entry = getattr(getattr(compiled, "manifest", None), "entry_args", None)
    tensor_specs = [s for s in specs if isinstance(s, TensorSpec)]
    if entry is None or len(entry) != len(specs):
        return {name: array.copy() for name, array in tensors.items()}
    fixed = {
        s.name for s, arg in zip(specs, entry)
        if isinstance(s, TensorSpec) and not s.is_output and arg.direction == "In"
    }
    return {
        s.name: tensors[s.name] if s.name in fixed else tensors[s.name].copy()
        for s in tensor_specs
    }


def _check_case(case: Any, call: str) -> None:
    """A TypeError naming ``call``'s case argument unless it is a `PTOTestCase` instance."""
    __tracebackhide__ = True
    if isinstance(case, PTOTestCase):
        return
    if isinstance(case, type) and issubclass(case, PTOTestCase):
        shown = f"the class '{case.__name__}'; pass an instance: {case.__name__}()"
    elif hasattr(case, "functions") and hasattr(case, "name"):  # a parsed program
        shown = f"a program ('{case.name}'); run a program with pypto_runner.run(program, ...)"
    else:
        kind = type(case).__name__
        shown = f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} ({case!r:.40})"
    raise TypeError(f"{call}: case is {shown}; pass an instance of a PTOTestCase subclass")


def _write_swimlane(config: Any, case: Any, ran: Any) -> None:
    """PyPTO's ``--enable-chip-swimlane``: the run's chip-swimlane records and name map under
    ``build_output/<case>_<timestamp>/dfx_outputs`` (runtime/swimlane.py)."""
    level = int(getattr(config, "enable_chip_swimlane", 0) or 0)
    record = getattr(ran, "record", None) if level > 0 else None
    if record:
        write_dfx(record, case.get_name(), level)


def heatmap_lines(
    kept: Path | None, found: Sequence[Any], actual: Mapping[str, Any], expected: Mapping[str, Any]
) -> tuple[str, ...]:
    """Draw each mismatching output's heatmap into the kept directory (harness/heatmap.py);
    the report lines naming the files (or what to install for them)."""
    if kept is None:
        return ()
    shaped = [m for m in found if m.shape_error is None]
    names = heatmap_names([m.name for m in shaped])
    lines = []
    for m in shaped:
        try:
            path = write_heatmap(kept / names[m.name], m.name, _host(actual[m.name]),
                                 _host(expected[m.name]), m.rtol, m.atol)
        except (OSError, ValueError) as exc:  # a picture never hides the mismatch itself
            lines.append(f"mismatch heatmap of {m.name!r} not drawn: {type(exc).__name__}: {exc}")
            continue
        if path is None:
            return (HEATMAP_HINT,)
        lines.append(f"mismatch heatmap: {path}")
    return tuple(lines)


def error_heatmap_lines(kept: Path, error: MismatchError) -> tuple[str, ...]:
    """`heatmap_lines` of an `assert_close` failure (its compared arrays, ``arrays``)."""
    actual = {name: pair[0] for name, pair in error.arrays.items()}
    expected = {name: pair[1] for name, pair in error.arrays.items()}
    return heatmap_lines(kept, error.outputs, actual, expected)


def _host(array: Any) -> Any:
    """A numpy view of an output (torch tensors via numpy)."""
    return array.detach().cpu().numpy() if hasattr(array, "detach") else array


def _kept_line(kept: Path | None) -> tuple[str, ...]:
    return (f"artifacts kept in: {kept}",) if kept is not None else ()


def _record_of(execution: Any) -> Any:
    """A callable building the run's deps.json record (None when the runtime has none)."""
    if getattr(type(execution), "record", None) is None:  # a class attribute: not built here
        return None
    return lambda: getattr(execution, "record", None)


def schedule_note(where: Path) -> str:
    """Where a failing test keeps its run's task graph and schedule picture."""
    note = (
        f"task graph: {where / 'deps.json'}; schedule: {where / 'trace.json'} "
        "(open in ui.perfetto.dev)"
    )
    if importlib.util.find_spec("matplotlib") is None:
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
    for group, arrays in groups.items():
        folder = target / group
        folder.mkdir(parents=True, exist_ok=True)
        for name, array in arrays.items():
            if hasattr(array, "detach"):  # a torch tensor
                array = array.detach().cpu().numpy()
            np.save(folder / f"{name}.npy", np.asarray(array))


def _is_compiled(program: Any) -> bool:
    return isinstance(program, (str, os.PathLike, CompiledProgram))


def _add_context(exc: BaseException, context: Sequence[str]) -> None:
    """Append the cell's context to a toolchain error (rendered as notes)."""
    notes = getattr(exc, "notes", None)
    if isinstance(notes, tuple) and context:
        exc.notes = (*notes, *context)  # type: ignore[attr-defined]
