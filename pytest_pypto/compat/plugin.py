"""The compat pytest plugin: PyPTO's conftest surface (fixtures, option spellings).

Loaded through `pytest_pypto.compat` (``pytest_plugins = ["pytest_pypto.compat"]``, or
``--pypto-alias``), whose ``pytest_plugins`` names this module; see that package's
docstring for what carries over from PyPTO's conftest.

PYTEST_DONT_REWRITE (plugin code, no asserts; imported by name by the package).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_pypto.arch import ExecutionMode, parse_platform
from pytest_pypto.compat import alias
from pytest_pypto.compat.session import (
    apply_pypto_options,
    case_platform,
    runner_for_case,
    session_config,
    wants_cells,
)
from pytest_pypto.harness.cells import CELL_FIXTURE
from pytest_pypto.plugin.cells import add_cell_naming_fixtures
from pytest_pypto.plugin.devices import onboard_status
from pytest_pypto.plugin.emulation import cell_id
from pytest_pypto.plugin.failures import note_failure_class
from pytest_pypto.plugin.options import settings

__all__ = ["TestRunner"]

_RESULTS_KEY = pytest.StashKey[list]()
_current: dict[str, Any] = {}  # the item whose test is running (session-scoped runner)

# PyPTO option -> our option dest (value options) / switches.
_VALUE_OPTIONS = {"device": "pypto_device", "kernels_dir": "pypto_kernels_dir",
                  "dump_args": "pypto_dump_args"}
_SWITCHES = {
    "save_kernels": "pypto_save_kernels",
    "dump_passes": "pypto_dump_passes",
    "codegen_only": "pypto_codegen_only",
}
# PyPTO's DFX/pipeline options -> RunConfig field (accepted; see session.PYPTO_ONLY_FIELDS).
_DFX = {
    "enable_dep_gen": "enable_dep_gen",
    "enable_chip_swimlane": "enable_chip_swimlane",
    "chip_swimlane_level": "enable_chip_swimlane",
    "enable_l2_swimlane_deprecated": "enable_chip_swimlane",
    "enable_pmu": "enable_pmu",
    "enable_scope_stats": "enable_scope_stats",
    "analyze_auto_scopes_for_deps": "analyze_auto_scopes_for_deps",
}


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("pypto-compat", "pytest-pypto: PyPTO's option spellings")
    ours = "same as --pypto-{}"
    group.addoption("--platform", default=None, metavar="PLATFORMS",
                    help="PyPTO: comma list of platform strings (sets --pypto-arch/--pypto-mode)")
    group.addoption("--device", default=None, metavar="IDS", help=ours.format("device"))
    group.addoption("--kernels-dir", default=None, metavar="PATH", help=ours.format("kernels-dir"))
    for flag in ("save-kernels", "dump-passes", "codegen-only"):
        group.addoption(f"--{flag}", action="store_true", default=False, help=ours.format(flag))
    accepted = "PyPTO: accepted, no effect on the simulator"
    group.addoption("--strategy", default="Default", help=accepted)
    group.addoption("--memory-planner", default="default",
                    choices=["default", "pypto", "dsa-rp", "ptoas"], help=accepted)
    group.addoption("--precompile-workers", type=int, default=None, help=accepted)
    group.addoption("--pypto-log-level", default="ERROR", help=accepted)
    group.addoption("--runtime-log-level", default=None, help=accepted)
    group.addoption("--enable-dep-gen", action="store_true", default=False,
                    help="PyPTO: capture deps.json (the simulator always records its task graph)")
    group.addoption("--enable-chip-swimlane", action="store_const", const=4, default=0, help=accepted)
    group.addoption("--chip-swimlane-level", type=int, default=None, help=accepted)
    group.addoption("--enable-l2-swimlane", dest="enable_l2_swimlane_deprecated",
                    action="store_const", const=4, default=0, help=accepted)
    group.addoption("--dump-args", nargs="?", const="1", default=None, metavar="LEVEL",
                    help=ours.format("dump-args"))
    group.addoption("--enable-pmu", nargs="?", type=int, const=2, default=0, help=accepted)
    group.addoption("--enable-scope-stats", action="store_true", default=False, help=accepted)
    group.addoption("--analyze-auto-scopes-for-deps", action="store_true", default=False,
                    help=accepted)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Map PyPTO's option spellings onto ours (before the plugin resolves them); a test
    using ``test_runner``/``test_config`` with a ``platform`` parameter (PyPTO's
    ``PLATFORMS``) names its cell by that parameter."""
    apply_pypto_options(config, _VALUE_OPTIONS, _SWITCHES)
    add_cell_naming_fixtures(config, "test_runner", "test_config")
    # PyPTO's runtime backend (``import simpler``, imported by tests that dispatch by
    # hand) resolves to the compat stand-in when none is installed.
    if alias.install_backend():
        config.add_cleanup(alias.uninstall_backend)


@pytest.hookimpl(trylast=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """``PLATFORMS`` lists this session's cells (test modules import it later)."""
    from pytest_pypto.compat.cases import set_requested_cells  # lazy: compat import cost

    cells = settings(session.config).cells
    set_requested_cells(cells, {c: cell_id(session.config, c) for c in cells})


@pytest.hookimpl(tryfirst=True)
def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A test using the session-scoped ``test_runner`` runs once per cell, unless it
    is parametrized over ``platform`` itself (PyPTO's ``PLATFORMS``)."""
    if wants_cells(metafunc):
        metafunc.fixturenames.append(CELL_FIXTURE)  # the plugin parametrizes it


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    _current["item"] = item


def pytest_runtest_teardown(item: pytest.Item) -> None:
    if _current.get("item") is item:
        _current.pop("item", None)


class TestRunner:
    """PyPTO's ``TestRunner``: ``run(case)`` on the case's platform, or the running
    test's ``platform`` parameter, or its cell; a `RunResult`, never raises for a
    failing case (``passed=False``, ``error`` = the full report)."""

    __test__ = False  # not a test class

    def __init__(self, pconfig: pytest.Config, config: Any) -> None:
        self._pconfig = pconfig
        self.config = config  # PyPTO: TestRunner.config (the session's test_config)

    def run(self, test_case: Any) -> Any:
        __tracebackhide__ = True
        item = _current.get("item")
        platform = case_platform(test_case, item, self.config.platform)
        runner = runner_for_case(self._pconfig, item, platform, self.config, test_case)
        result = runner.run_case(test_case)
        if item is not None:
            item.stash.setdefault(_RESULTS_KEY, []).append(result)
        return result

    def __repr__(self) -> str:
        return f"<pypto TestRunner {self.config.platform}>"


@pytest.fixture(scope="session")
def test_config(request: pytest.FixtureRequest, pypto_platform: str) -> Any:
    """PyPTO's ``test_config``: the RunConfig of the item's cell (session-scoped, one
    per cell) with PyPTO's DFX options applied."""
    return session_config(request.config, pypto_platform, _DFX)


@pytest.fixture(scope="session")
def test_runner(request: pytest.FixtureRequest) -> TestRunner:
    """PyPTO's ``test_runner`` (session-scoped): ``run(case)`` returns a RunResult."""
    cells = settings(request.config).cells
    return TestRunner(request.config, session_config(request.config, cells[0], _DFX))


@pytest.fixture(scope="session")
def device_ids(request: pytest.FixtureRequest) -> list[int]:
    """PyPTO's ``device_ids``: the devices a multi-chip test may spread its ranks over.

    A session with a sim cell simulates them (docs/design/distributed.md §1): the ids
    ``--pypto-device`` names, else ``0 .. --pypto-devices - 1``; a session of onboard
    cells only gets the NPUs it may lease."""
    opts = settings(request.config)
    if any(parse_platform(c)[1] is ExecutionMode.SIM for c in opts.cells):
        return list(opts.devices) if opts.devices else list(range(opts.sim_devices))
    return list(onboard_status(request.config).devices)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A test that failed after a failed ``test_runner.run`` carries that case's class.

    PyPTO tests turn a failed RunResult into a plain ``assert``, which the plugin
    cannot classify by itself; the runner remembers what failed, and the plugin's
    classifier records it.
    """
    report = yield
    if call.when != "call":
        return report
    # Taken off the item now: its results hold the case's arrays, which must not outlive
    # the test (the item lives to the end of the session).
    results = item.stash.get(_RESULTS_KEY, None)
    if results is not None:
        del item.stash[_RESULTS_KEY]
    if not results or not report.failed:
        return report
    cls = next((r.failure_class for r in reversed(results) if not r.passed), None)
    # Outermost wrapper (tryfirst): the plugin's own hook has already classified
    # an exception that carries a class; that one wins.
    note_failure_class(item, report, cls)
    return report
