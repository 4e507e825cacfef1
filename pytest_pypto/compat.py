"""PyPTO's harness fixture names, for suites migrating from PyPTO's in-tree harness.

Opt in from a conftest::

    pytest_plugins = ["pytest_pypto.compat"]

and PyPTO-style tests run unchanged except for their imports::

    def test_add(test_runner):
        result = test_runner.run(AddCase())
        assert result.passed, f"add failed: {result.error}"

What carries over, and what differs from PyPTO's own ``tests/st/conftest.py``:

- ``test_config`` is the cell's `RunConfig` (the same object as ``pypto_config``);
  ``test_runner`` has PyPTO's ``TestRunner`` surface: ``.config`` and
  ``run(test_case)`` returning a `RunResult` (``.passed``, ``.error``,
  ``.test_name``, ``.execution_time``) that never raises for a failing case.
- Both are function-scoped and platform-bound (one item per requested cell, the
  platform from ``--pypto-arch``/``--pypto-mode``), where PyPTO's were
  session-scoped and took ``--platform``.  A session-scoped fixture of the suite
  that requests them gets pytest's ScopeMismatch; make it function-scoped.
- They are platform-bound through their dependency on ``pypto_runner`` (the fixture
  closure contains ``pypto_platform``), so they are *not* listed in
  ``harness.cells.PLATFORM_BOUND_FIXTURES``: a suite that defines its own
  ``test_runner`` without this plugin keeps its node ids.
- ``result.error`` of a failing case is our full report (worst elements, platform,
  seed, repro command), so ``assert result.passed, result.error`` shows it; the
  failure class of the failed case is recorded in ``user_properties`` (junitxml and
  the ledger) although the test itself raises a plain ``AssertionError``.

Cheap to import: the toolchain and numpy load only when a fixture is used.
"""

from __future__ import annotations

from typing import Any

import pytest

__all__ = ["TestRunner"]

_RUNNER_KEY = pytest.StashKey["TestRunner"]()


class TestRunner:
    """PyPTO's ``TestRunner`` surface over the cell's `pypto_runner`."""

    __test__ = False  # not a test class

    def __init__(self, runner: Any) -> None:
        self.runner = runner  # the `pytest_pypto.harness.runner.Runner` of this item
        self.results: list[Any] = []  # every RunResult this test produced, in order

    @property
    def config(self) -> Any:
        """The cell's RunConfig (PyPTO: ``TestRunner.config``)."""
        return self.runner.config

    def run(self, test_case: Any) -> Any:
        """Build, compile, run and compare ``test_case``; a `RunResult`, never raises
        for a failing case (``passed=False``, ``error`` = the full report)."""
        __tracebackhide__ = True
        result = self.runner.run_case(test_case)
        self.results.append(result)
        return result

    def last_failure_class(self) -> str | None:
        """The failure class of the last failed case run by this test (None: none failed)."""
        for result in reversed(self.results):
            if not result.passed:
                return result.failure_class
        return None

    def __repr__(self) -> str:
        return f"<pypto TestRunner {self.runner.platform}>"


@pytest.fixture
def test_config(pypto_config: Any) -> Any:
    """PyPTO's ``test_config``: the RunConfig of this item's cell (= ``pypto_config``)."""
    return pypto_config


@pytest.fixture
def test_runner(request: pytest.FixtureRequest, pypto_runner: Any) -> TestRunner:
    """PyPTO's ``test_runner``: ``run(case)`` on this item's cell, returning a RunResult."""
    runner = TestRunner(pypto_runner)
    request.node.stash[_RUNNER_KEY] = runner
    return runner


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test that failed after a failed ``test_runner.run`` carries that case's class.

    PyPTO tests turn a failed RunResult into a plain ``assert``, which the plugin
    cannot classify by itself; the runner remembers what failed.
    """
    report = yield
    runner = item.stash.get(_RUNNER_KEY, None)
    if runner is None or not report.failed or call.when != "call":
        return report
    from pytest_pypto.harness.runner import FAILURE_PROPERTY

    cls = runner.last_failure_class()
    # Outermost wrapper (tryfirst): the plugin's own hook has already classified
    # an exception that carries a class; that one wins.
    if cls is not None and not any(k == FAILURE_PROPERTY for k, _ in item.user_properties):
        item.user_properties.append((FAILURE_PROPERTY, cls))
        report.user_properties = list(item.user_properties)
    return report
