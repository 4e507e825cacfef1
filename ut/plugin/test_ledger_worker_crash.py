"""The coverage ledger counts a test whose xdist worker died as failed (``worker-crash``)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_pypto.harness.ledger import WORKER_CRASH, Ledger, cell_of_nodeid
from pytest_pypto.plugin.keys import FAILURE_PROPERTY

CRASHING = """
import os
import signal
import threading


def test_exit(pypto_config):
    os._exit(1)


def test_sigkill(pypto_config):
    os.kill(os.getpid(), signal.SIGKILL)


def test_timeout_thread(pypto_config):
    # a pytest-timeout-style watchdog: a thread that ends the process while the test blocks
    threading.Timer(0.05, os._exit, (1,)).start()
    threading.Event().wait(120)


def test_pass(pypto_config):
    pass
"""

LEDGER = [
    "*= pypto coverage ledger =*",
    "cell     passed  failed  xfailed  skipped",
    "a2a3sim       1       3        0        0",
    "a5sim         1       3        0        0",
    "a2a3sim: 3 failed: worker-crash",
    "a5sim: 3 failed: worker-crash",
]


def test_crashed_workers_count_as_failed_for_their_cell(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_crashing=CRASHING)
    # One session with six real worker deaths over two workers (three ways to die, each in
    # both cells): the bug lost the crashes on every run, so one run shows it; each worker
    # restart costs a whole Python start-up, so the session is not repeated.  Restarts are
    # allowed beyond the six crashes so xdist never stops the session early.
    result = pytester.runpytest_subprocess(
        "--pypto-arch=all", "-n", "2", "-p", "xdist", "--max-worker-restart=20"
    )
    out = result.stdout.str()
    assert out.count("crashed while running") >= 6, out
    result.assert_outcomes(passed=2, failed=6)
    result.stdout.fnmatch_lines(LEDGER, consecutive=True)


def _crash_report(nodeid: str, props: list | None = None) -> SimpleNamespace:
    """What xdist's DSession.handle_crashitem builds: no user_properties, when '???'."""
    return SimpleNamespace(
        nodeid=nodeid, when="???", outcome="failed", passed=False, failed=True, skipped=False,
        longrepr=f"worker 'gw0' crashed while running {nodeid!r}", user_properties=props or [],
    )


def _setup_passed(nodeid: str, cell: str) -> SimpleNamespace:
    return SimpleNamespace(
        nodeid=nodeid, when="setup", outcome="passed", passed=True, failed=False, skipped=False,
        user_properties=[("pypto_platform", cell)],
    )


def test_crash_report_takes_the_cell_of_the_tests_earlier_report() -> None:
    ledger = Ledger()
    # a custom id that does not name the cell: only the setup report knows it
    ledger.record(_setup_passed("t.py::test_x[custom]", "a5sim"))
    crash = _crash_report("t.py::test_x[custom]")
    ledger.worker_crashed(crash)
    ledger.record(crash)
    assert ("pypto_platform", "a5sim") in crash.user_properties
    assert (FAILURE_PROPERTY, WORKER_CRASH) in crash.user_properties
    assert dict(ledger.counts("a5sim")) == {"failed": 1}
    assert dict(ledger.failure_classes("a5sim")) == {"worker-crash": 1}


def test_crash_before_any_report_takes_the_cell_from_the_node_id() -> None:
    ledger = Ledger()
    for nodeid in ("t.py::test_a[a2a3sim]", "t.py::TestC::test_b[3-a5]", "t.py::test_c[a5sim-x]"):
        crash = _crash_report(nodeid)
        ledger.worker_crashed(crash)
        ledger.record(crash)
    assert dict(ledger.failure_classes("a2a3sim")) == {"worker-crash": 1}
    assert dict(ledger.failure_classes("a5")) == {"worker-crash": 1}
    assert dict(ledger.failure_classes("a5sim")) == {"worker-crash": 1}


def test_crash_overrides_an_earlier_outcome_of_the_same_test() -> None:
    ledger = Ledger()
    call = _setup_passed("t.py::test_x[a5sim]", "a5sim")
    call.when = "call"
    ledger.record(call)  # passed, then its worker died in teardown
    crash = _crash_report("t.py::test_x[a5sim]")
    ledger.worker_crashed(crash)
    ledger.record(crash)
    assert dict(ledger.counts("a5sim")) == {"failed": 1}


@pytest.mark.parametrize(
    ("nodeid", "cell"),
    [
        ("t.py::test_x[a5sim]", "a5sim"),
        ("t.py::test_x[a5]", "a5"),
        ("t.py::test_x[1-a2a3]", "a2a3"),
        ("dir[a5sim]/t.py::test_x", None),  # brackets outside the test name's ids
        ("t.py::test_x", None),
        ("t.py::test_x[a5sim-a5]", None),  # ambiguous: two platform ids
        ("t.py::test_x[a5simx]", None),
    ],
)
def test_cell_of_nodeid(nodeid: str, cell: str | None) -> None:
    assert cell_of_nodeid(nodeid) == cell


def test_a_crash_of_a_test_without_a_cell_is_not_in_the_ledger() -> None:
    ledger = Ledger()
    crash = _crash_report("t.py::test_plain")
    ledger.worker_crashed(crash)
    ledger.record(crash)
    assert ledger.outcomes == {}
    assert crash.user_properties == [(FAILURE_PROPERTY, WORKER_CRASH)]


def test_non_final_outcomes_are_not_folded() -> None:
    ledger = Ledger()
    rerun = _crash_report("t.py::test_x[a5sim]")
    ledger.worker_crashed(rerun)
    rerun.outcome, rerun.failed = "rerun", False  # e.g. pytest-rerunfailures rescheduled it
    ledger.record(rerun)
    assert ledger.outcomes == {}
