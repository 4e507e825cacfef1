"""Failures people can read: a toolchain diagnostic shows the user's code, not ours.

A diagnostic of the toolchain (a `PyptoError`: parse, compile or run error; or the
`MismatchError` of ``assert_close``) already says what is wrong and where: the
user's ``file:line``, a caret, a hint.  The frames of ``pytest_pypto`` under it (~15
parser frames, the pass manager with its ``Program(...)`` arguments,
``assert_close``'s own source) say nothing to the kernel author, so for these
exceptions the plugin drops them from the traceback pytest shows:

* frames of modules named ``pytest_pypto`` / ``pytest_pypto.*`` and of generated
  kernel code (``pypto_generated.*``) go; every other frame stays, so the test's
  own line (``> pypto_runner.run(...)``) carries the error;
* any other exception (a bug of ours, a user's ``TypeError``) keeps every frame;
* ``--fulltrace`` shows everything, as pytest promises.

A module whose import raises a diagnostic (a ``@pl.program`` built at import time
inside a function or class: module-level programs defer their parse error to their
tests, language/deferred.py) is one collection error showing that diagnostic, and
it does not interrupt the session: the other modules still run, the run still
fails.

A mismatch raised in a pytest-pypto test (one with a cell, a runner or the pypto
rng) gets the test's context lines appended: platform, seed, reproduce command
(`session.failure_context`), so README-style tests (``run`` + ``assert_close``)
report them as ``check(case)`` does.

Everything works on the exception pytest is about to render (``call.excinfo``), so
nothing is global and nothing leaks between tests.  Standard library and pytest
only: the plugin registers `FailureHooks` in every run.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest

__all__ = ["FailureHooks", "is_diagnostic", "is_ours", "trim_traceback"]

_OUR_MODULES = ("pytest_pypto", "pypto_generated")


def is_diagnostic(exc: BaseException) -> bool:
    """Whether ``exc`` is one of the toolchain's reports for people (their frames go).

    Looks only at modules already loaded: classifying never imports the toolchain.
    """
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


def trim_traceback(excinfo: pytest.ExceptionInfo[BaseException], config: pytest.Config) -> bool:
    """Drop our frames from the traceback pytest renders for a diagnostic, in place.

    Returns whether it trimmed.  Kept as it is: a non-diagnostic, ``--fulltrace``,
    and a traceback that would keep no frame of the user (an error raised in our
    own fixture setup): pytest's own pruning then decides.
    """
    if config.getoption("fulltrace", False) or not is_diagnostic(excinfo.value):
        return False
    from _pytest._code.code import Traceback, filter_traceback

    entries = list(excinfo.traceback)
    kept = [entry for entry in entries if not is_ours(entry)]
    if len(kept) == len(entries) or not any(filter_traceback(e) for e in kept):
        return False
    # A fresh chain of raw entries: pytest's `Traceback.cut` re-walks ``tb_next`` from
    # the entry it cuts at, so a filtered list alone would bring our frames back.
    chain = None
    for entry in reversed(kept):
        raw = entry._rawentry
        chain = types.TracebackType(chain, raw.tb_frame, raw.tb_lasti, raw.tb_lineno)
    assert chain is not None
    excinfo.traceback = Traceback(chain)
    return True


def _add_context(item: pytest.Item, exc: BaseException) -> None:
    """A mismatch in a pypto test: append the test's platform, seed and repro line."""
    compare = sys.modules.get("pytest_pypto.harness.compare")
    if compare is None or not isinstance(exc, compare.MismatchError):
        return
    from pytest_pypto.harness.session import failure_context

    exc.add_context(failure_context(item.config, item))


class FailureHooks:
    """The hooks of this module (registered by the plugin in ``pytest_configure``)."""

    def __init__(self) -> None:
        # Collection errors that are our diagnostics: they must not interrupt the run.
        self.tolerated = 0

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        excinfo = call.excinfo
        if excinfo is not None and is_diagnostic(excinfo.value):
            _add_context(item, excinfo.value)
            trim_traceback(excinfo, item.config)
        return (yield)

    @pytest.hookimpl(wrapper=True)
    def pytest_make_collect_report(self, collector: pytest.Collector) -> Any:
        report = yield
        call = getattr(report, "call", None)  # pytest keeps it until collect_one_node
        excinfo = getattr(call, "excinfo", None)
        if report.failed and excinfo is not None and is_diagnostic(excinfo.value):
            self.tolerated += 1
            if trim_traceback(excinfo, collector.config):
                from _pytest.reports import CollectErrorRepr

                longrepr = collector.repr_failure(excinfo)
                if isinstance(longrepr, str):
                    longrepr = CollectErrorRepr(longrepr)
                report.longrepr = longrepr
        return report

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Any:
        """pytest interrupts a run with collection errors before any test; ours are
        left out of that count (and put back, so the run still fails)."""
        tolerated = min(self.tolerated, session.testsfailed)
        session.testsfailed -= tolerated
        try:
            return (yield)
        finally:
            session.testsfailed += tolerated
