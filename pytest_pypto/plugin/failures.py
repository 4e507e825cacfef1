"""Failures people can read: a toolchain diagnostic shows the user's code, not ours,
and every failing pypto test carries its failure class.

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
(`failure_context`), so README-style tests (``run`` + ``assert_close``) report them
as ``check(case)`` does.

The short test summary line (``-rA``, ``-rf``) and junitxml's failure message show a
diagnostic's message first, not its class path (`message_first`): an 80-column line
then says what is wrong instead of ``pytest_pypto.harness.com...``.

The failure class (harness/failures.py) goes into the test's ``user_properties``
(`note_failure_class`, also the compat plugin's way of recording a failed case's
class), hence junitxml and the coverage ledger.  Everything works on the exception
pytest is about to render (``call.excinfo``), so nothing is global and nothing leaks
between tests.  Registered in every run: classifying never imports the toolchain.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import sys
import types
from typing import Any

import pytest
from _pytest._code.code import Traceback, filter_traceback
from _pytest.reports import CollectErrorRepr

from pytest_pypto.harness.failures import failure_class_of, is_diagnostic, is_ours
from pytest_pypto.plugin.keys import CELL_PROPERTY, FAILURE_PROPERTY, RUNNER_KEY, TOLERATED_KEY
from pytest_pypto.plugin.seeds import base_seed_text, context_lines, seed_of

__all__ = ["failure_context", "note_failure_class", "trim_traceback"]


def trim_traceback(excinfo: pytest.ExceptionInfo[BaseException], config: pytest.Config) -> bool:
    """Drop our frames from the traceback pytest renders for a diagnostic, in place.

    Returns whether it trimmed.  Kept as it is: a non-diagnostic, ``--fulltrace``,
    and a traceback that would keep no frame of the user (an error raised in our
    own fixture setup): pytest's own pruning then decides.
    """
    if config.getoption("fulltrace", False) or not is_diagnostic(excinfo.value):
        return False
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


def failure_context(config: pytest.Config, item: Any) -> tuple[str, ...]:
    """The context lines of a failure in test ``item``: its runner's, else from its
    cell, else (a test with only the pypto rng) its seed; () for a test of no cell."""
    runner = item.stash.get(RUNNER_KEY, None)
    if runner is not None:
        return tuple(runner.context)
    platform = next((v for k, v in item.user_properties if k == CELL_PROPERTY), None)
    if isinstance(platform, str):
        return context_lines(config, item.nodeid, platform, seed_of(config, item))
    if "pypto_rng" in getattr(item, "fixturenames", ()):
        return (f"seed: {seed_of(config, item)} ({base_seed_text(config)})",)
    return ()


def _add_context(item: pytest.Item, exc: BaseException) -> None:
    """A mismatch in a pypto test: append the test's platform, seed and repro line."""
    compare = sys.modules.get("pytest_pypto.harness.compare")
    if compare is None or not isinstance(exc, compare.MismatchError):
        return
    exc.add_context(failure_context(item.config, item))


def note_failure_class(item: pytest.Item, report: pytest.TestReport, cls: str | None) -> None:
    """Record ``cls`` as the failing test's class (the first one recorded stands)."""
    if cls is not None and not any(k == FAILURE_PROPERTY for k, _ in item.user_properties):
        item.user_properties.append((FAILURE_PROPERTY, cls))
        report.user_properties = list(item.user_properties)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    excinfo = call.excinfo
    if excinfo is not None and is_diagnostic(excinfo.value):
        _add_context(item, excinfo.value)
        trim_traceback(excinfo, item.config)
    report = yield
    if excinfo is not None and report.failed:
        exc = excinfo.value
        cls = failure_class_of(exc)
        if getattr(exc, "one_line", False):  # the session's error, not the test's
            report.longrepr = f"{cls}: {getattr(exc, 'message', exc)}"
        elif is_diagnostic(exc):
            message_first(report, exc)
        note_failure_class(item, report, cls)
    return report


def message_first(report: pytest.TestReport, exc: BaseException) -> None:
    """The crash message of a diagnostic's report is its own text, without the class
    path: pytest's short summary shows that message's first line (cut to the terminal
    width) and junitxml its ``message``; the failure section keeps the class."""
    crash = getattr(report.longrepr, "reprcrash", None)
    text = str(exc).strip()
    if crash is not None and text and hasattr(crash, "message"):
        crash.message = text


@pytest.hookimpl(wrapper=True)
def pytest_make_collect_report(collector: pytest.Collector) -> Any:
    report = yield
    call = getattr(report, "call", None)  # pytest keeps it until collect_one_node
    excinfo = getattr(call, "excinfo", None)
    if report.failed and excinfo is not None and is_diagnostic(excinfo.value):
        stash = collector.config.stash
        stash[TOLERATED_KEY] = stash.get(TOLERATED_KEY, 0) + 1
        if trim_traceback(excinfo, collector.config):
            longrepr = collector.repr_failure(excinfo)
            if isinstance(longrepr, str):
                longrepr = CollectErrorRepr(longrepr)
            report.longrepr = longrepr
    return report


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    """pytest interrupts a run with collection errors before any test; ours are
    left out of that count (and put back, so the run still fails)."""
    tolerated = min(session.config.stash.get(TOLERATED_KEY, 0), session.testsfailed)
    session.testsfailed -= tolerated
    try:
        return (yield)
    finally:
        session.testsfailed += tolerated
