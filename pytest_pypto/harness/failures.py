"""Failure classes: which kind of failure an exception of a pypto test is.

Every toolchain failure has a class, ``compile-error``, ``runtime-error``,
``device-error`` or ``mismatch`` (a runtime may set its own on ``exc.failure_class``).
The runner tags what it raises (`classified`); the plugin records the class of a
failing test in its ``user_properties`` (junitxml) and the coverage ledger counts it.

Classifying looks only at modules already loaded (``sys.modules``), so it never
imports the toolchain: the plugin asks on every failing test of any suite.
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["classified", "failure_class_of", "is_diagnostic", "is_ours"]

_OUR_MODULES = ("pytest_pypto", "pypto_generated")


def failure_class_of(exc: BaseException) -> str | None:
    """The failure class of an exception raised by a pypto test (None: not ours)."""
    cls = getattr(exc, "failure_class", None)
    if isinstance(cls, str):
        return cls
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


def is_diagnostic(exc: BaseException) -> bool:
    """Whether ``exc`` is one of the toolchain's reports for people (a `PyptoError`,
    or the `MismatchError` of ``assert_close``): its traceback need not show our
    frames."""
    errors = sys.modules.get("pytest_pypto.ir.errors")
    if errors is not None and isinstance(exc, errors.PyptoError):
        return True
    compare = sys.modules.get("pytest_pypto.harness.compare")
    return compare is not None and isinstance(exc, compare.MismatchError)


def is_ours(entry: Any) -> bool:
    """Whether a traceback entry runs code of pytest_pypto or a generated kernel."""
    try:
        name = entry.frame.f_globals.get("__name__", "")
    except Exception:  # noqa: BLE001  (a frame whose globals cannot be read: not ours)
        return False
    if not isinstance(name, str):
        return False
    return any(name == m or name.startswith(m + ".") for m in _OUR_MODULES)


class classified:  # noqa: N801  (used like a function: ``with classified("..."):``)
    """Tag toolchain errors raised inside with a failure class (unless they have one):
    a compile step's `PyptoError` is a compile error, a run's is the step's class."""

    def __init__(self, failure_class: str) -> None:
        self.failure_class = failure_class

    def __enter__(self) -> None:
        return None

    def __exit__(self, typ: Any, exc: BaseException | None, tb: Any) -> bool:
        if exc is not None and getattr(exc, "failure_class", None) is None:
            found = failure_class_of(exc)
            if found is not None:
                if found == "compile-error" and self.failure_class != "compile-error":
                    found = self.failure_class
                try:
                    exc.failure_class = found  # type: ignore[attr-defined]
                except AttributeError:
                    pass
        return False
