"""The `pypto_runner` fixture's object: compile, run and check on the item's cell.

Onboard cells are skipped before a runner exists, so a runner always dispatches on
the simulator.  Every failure carries a failure class (``compile-error``,
``runtime-error``, ``device-error``, ``mismatch``) as ``exc.failure_class``; the
plugin copies it into the test's ``user_properties`` (hence junitxml).  ``check``
failures also name the platform, the seed and a command that reproduces them.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from pytest_pypto.config import RunConfig

__all__ = ["FAILURE_PROPERTY", "Runner", "failure_class_of"]

FAILURE_PROPERTY = "pypto_failure_class"


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
    ) -> None:
        self.config = config
        self._rng_factory = rng_factory
        self.context = tuple(context)  # platform, seed, reproduce: appended to reports

    @property
    def platform(self) -> str:
        return self.config.platform

    def __repr__(self) -> str:
        mode = ", codegen only" if self.config.codegen_only else ""
        return f"<pypto_runner {self.platform}{mode}>"

    def compile(self, program: Any) -> Any:
        """Compile ``program`` for this cell; a `CompiledProgram`."""
        from pytest_pypto.compiler.api import compile as compile_program

        with _classified("compile-error"):
            return compile_program(program, self.config)

    def run(self, program: Any, *arrays: Any) -> Any:
        """Run ``program`` (or a `CompiledProgram`) with ``arrays`` on this cell's simulator.

        Returns the simulator's `SimRun` (outputs written in place), or the
        `CompiledProgram` under ``--pypto-codegen-only``.  Given a `PTOTestCase`,
        returns its `RunResult` instead of raising.
        """
        from pytest_pypto.harness.cases import PTOTestCase

        if isinstance(program, PTOTestCase):
            if arrays:
                raise TypeError("run(case) takes no arrays: the case defines its tensors")
            return self.run_case(program)
        compiled = program
        if not _is_compiled(program):
            compiled = self.compile(program)
        if self.config.codegen_only:
            return compiled
        from pytest_pypto.harness.dispatch import run as dispatch

        with _classified("runtime-error"):
            return dispatch(compiled, *arrays, config=self.config)

    def check(self, case: Any) -> Any:
        """Build the case's inputs, run, compare every output; raise with the full report.

        Returns the `RunResult` when every output matches (under codegen-only: once
        the program compiled).
        """
        return self._execute(case)

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
        from pytest_pypto.harness.cases import (
            RunResult,
            TensorSpec,
            build_inputs,
            expected_outputs,
        )
        from pytest_pypto.harness.compare import MismatchError, find_mismatch

        rng = self._rng_factory()
        specs, tensors, scalars = build_inputs(case, rng)
        inputs = {name: array.copy() for name, array in tensors.items()}
        expected = expected_outputs(case, specs, tensors, scalars)
        program = case.get_program()
        started = time.perf_counter()
        try:
            compiled = self.compile(program)
            args = [
                tensors[s.name] if isinstance(s, TensorSpec) else scalars[s.name] for s in specs
            ]
            if not self.config.codegen_only:
                self.run(compiled, *args)
        except Exception as exc:
            _add_context(exc, self.context)
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
        found = [
            m
            for name, want in expected.items()
            if (
                m := find_mismatch(
                    tensors[name], want, rtol, atol, name=name, equal_nan=case.equal_nan
                )
            )
            is not None
        ]
        if found:
            raise MismatchError(found, (f"case: {case.get_name()}", *self.context))
        return result


def _tolerance(case: Any, config: RunConfig) -> tuple[float | None, float | None]:
    """The case's tolerance pair, else the RunConfig's, else None (per-dtype defaults)."""
    if (case.rtol is None) != (case.atol is None):
        raise ValueError(
            f"{case.get_name()}: rtol={case.rtol!r}, atol={case.atol!r}: give both or neither"
        )
    if case.rtol is not None:
        return case.rtol, case.atol
    return config.rtol, config.atol


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
