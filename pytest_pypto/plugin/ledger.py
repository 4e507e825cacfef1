"""The coverage ledger of a session (harness/ledger.py): folded on the controller from
every test report, printed as a section of the terminal summary, and the
``--pypto-require`` check that fails a session whose required cells executed nothing.

Controller only: `pytest_configure` registers `LedgerHooks` there (xdist ships every
report to the controller, so workers keep none).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pytest_pypto.harness.cells import emulated_label
from pytest_pypto.harness.ledger import Ledger, unmet_lines
from pytest_pypto.plugin import workers
from pytest_pypto.plugin.devices import emulated_cells
from pytest_pypto.plugin.keys import LEDGER_KEY
from pytest_pypto.plugin.options import settings

__all__ = ["LedgerHooks", "ledger_of"]


def ledger_of(config: pytest.Config) -> Ledger | None:
    """The controller's ledger (made on first use; None on an xdist worker)."""
    if workers.is_worker(config):
        return None
    ledger = config.stash.get(LEDGER_KEY, None)
    if ledger is None:
        ledger = config.stash[LEDGER_KEY] = Ledger()
    return ledger


def labelled_cells(config: pytest.Config) -> list[str]:
    """The requested cells as the ledger names them (``a5 (emulated)``)."""
    emulated = emulated_cells(config)
    return [emulated_label(c) if c in emulated else c for c in settings(config).cells]


def pytest_configure(config: pytest.Config) -> None:
    if not workers.is_worker(config):
        config.pluginmanager.register(LedgerHooks(config), "pypto-ledger")


class LedgerHooks:
    """The ledger's hooks on the controller (their arguments carry no config)."""

    def __init__(self, config: pytest.Config) -> None:
        self.config = config
        self.unmet: list[str] = []

    def _ledger(self) -> Ledger:
        """The ledger (a method, not a property: pluggy reads every attribute when
        registering)."""
        return ledger_of(self.config)  # type: ignore[return-value]

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self._ledger().record(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist: a worker died running ``crashitem``; its report (logged right after this
        hook) gets the test's cell and the failure class ``worker-crash``."""
        self._ledger().worker_crashed(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        s = settings(session.config)
        if not s.require:
            return
        self.unmet = self._ledger().unmet(s.require, emulated_ok=s.require_emulated)
        if self.unmet:
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if session.config.pluginmanager.get_plugin("terminalreporter") is None:
                for line in self._require_lines():
                    print(line, file=sys.stderr)

    def _require_lines(self) -> list[str]:
        return unmet_lines(self.unmet, settings(self.config).cells, self._ledger())

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        s = settings(self.config)
        ledger = self.config.stash.get(LEDGER_KEY, None)
        if (ledger is None or not ledger.outcomes) and not s.require:
            return
        terminalreporter.section("pypto coverage ledger")
        for line in self._ledger().table(labelled_cells(self.config)):
            terminalreporter.write_line(line)
        for line in self._require_lines():
            terminalreporter.write_line(f"FAILED {line}", red=True, bold=True)
