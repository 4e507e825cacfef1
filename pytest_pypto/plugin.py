"""pytest hooks of pytest-pypto (options, markers, cells, skips, ledger).

Only hooks and fixtures live here; the logic is in the stage it belongs to
(``pytest_pypto.harness.*``, ``pytest_pypto.runtime.devices``), imported lazily so
that loading the plugin in every pytest run stays cheap.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest

# The lint stage registers its own collection hooks (cheap to import).
pytest_plugins = ["pytest_pypto.lint.hooks"]


def pytest_addoption(parser: pytest.Parser) -> None:
    from pytest_pypto.harness.options import add_options

    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """``--pypto-alias`` acts before conftests import: a suite's conftest may itself
    ``import pypto``, and the compat plugin's options (``--platform``) must be known
    when the command line is parsed."""
    from pytest_pypto.harness.options import early_switch

    if early_switch(early_config, "alias"):
        from pytest_pypto.compat.alias import configure as configure_alias

        configure_alias(early_config)


def pytest_configure(config: pytest.Config) -> None:
    from pytest_pypto.harness.cells import MARKERS

    for name, description in MARKERS:
        config.addinivalue_line("markers", f"{name}: {description}")
    if getattr(config.option, "help", False):
        return  # --help must work even with a bad PYPTO_* variable around
    from pytest_pypto.harness.options import SETTINGS_KEY, resolve

    config.stash[SETTINGS_KEY] = resolve(config)
    from pytest_pypto.harness.session import check_runtime_option

    check_runtime_option(config)  # a new session reads the installed runtimes afresh
    from pytest_pypto.harness.paths import check_paths

    controller = not hasattr(config, "workerinput")
    # A kernels/cache dir that can never work: one usage error now (harness/paths.py).
    for message in check_paths(config, config.stash[SETTINGS_KEY], strict=controller):
        if controller:
            config.issue_config_time_warning(pytest.PytestConfigWarning(message), stacklevel=2)
    config.pluginmanager.register(_CacheHooks(), "pypto-compile-cache")
    from pytest_pypto.harness.failures import FailureHooks

    config.pluginmanager.register(FailureHooks(), "pypto-failures")  # readable failures
    config.pluginmanager.register(_KeptArtifactHooks(), "pypto-kept-artifacts")
    if controller:
        from pytest_pypto.harness.remote import join_path_options

        join_path_options(config)  # before xdist hands the arguments to -d workers
    if config.stash[SETTINGS_KEY].codegen_only:
        config.pluginmanager.register(_CodegenOnlyHooks(), "pypto-codegen-only")
    from pytest_pypto.harness.jit import bind_session

    bind_session(config)  # @pl.jit / CompiledProgram calls: this session's cache and cell
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        config.pluginmanager.register(_LedgerHooks(), "pypto-ledger")
        from pytest_pypto.harness.session import compile_cache

        cache = compile_cache(config)
        if cache.disabled_reason is not None:  # workers find the same and stay quiet
            config.issue_config_time_warning(
                pytest.PytestConfigWarning(
                    f"pypto compile cache turned off: {cache.root} is not writable "
                    f"({cache.disabled_reason}); every kernel compiles afresh"
                ),
                stacklevel=2,
            )


def pytest_unconfigure(config: pytest.Config) -> None:
    from pytest_pypto.harness.jit import unbind_session

    unbind_session(config)
    registry = sys.modules.get("pytest_pypto.runtime.registry")
    if registry is not None:  # child processes, device handles: released at session end
        registry.close_all()


def pytest_terminal_summary(terminalreporter: Any) -> None:
    from pytest_pypto.harness.session import broken_runtime_lines

    for line in broken_runtime_lines(terminalreporter.config):
        terminalreporter.write_line(line, red=True)


class _CacheHooks:
    """Compile-cache hits, misses and damaged entries rebuilt: a worker ships its counts,
    the controller sums them."""

    def __init__(self) -> None:
        self.hits = 0  # reported by xdist workers
        self.misses = 0
        self.damaged = 0
        self.places: dict[str, list[str]] = {}  # cache used -> the workers that used it

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pytest_pypto.harness.session import (
            CACHE_OUTPUT,
            CACHE_WHERE_OUTPUT,
            cache_where,
            compile_cache,
        )

        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            cache = compile_cache(session.config)
            workeroutput[CACHE_OUTPUT] = [cache.hits, cache.misses, cache.damaged]
            workeroutput[CACHE_WHERE_OUTPUT] = cache_where(session.config)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from pytest_pypto.harness.session import CACHE_OUTPUT, CACHE_WHERE_OUTPUT

        output = getattr(node, "workeroutput", {})
        hits, misses, damaged = output.get(CACHE_OUTPUT, (0, 0, 0))
        self.hits += hits
        self.misses += misses
        self.damaged += damaged
        if (hits or misses) and CACHE_WHERE_OUTPUT in output:
            worker = getattr(getattr(node, "gateway", None), "id", "?")
            self.places.setdefault(output[CACHE_WHERE_OUTPUT], []).append(worker)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_pypto.harness.session import cache_summary, cache_where, compile_cache

        config = terminalreporter.config
        cache = compile_cache(config)
        hits, misses = self.hits + cache.hits, self.misses + cache.misses
        damaged = self.damaged + cache.damaged
        places = {where: list(ids) for where, ids in self.places.items()}
        if places and (cache.hits or cache.misses):
            places.setdefault(cache_where(config), []).append("the controller")
        if hits or misses:
            terminalreporter.write_line(cache_summary(config, hits, misses, damaged, places))


class _CodegenOnlyHooks:
    """--pypto-codegen-only (harness/codegen_only.py): mark the running test, so its
    first dispatch skips it; ship (worker) or fold (controller) the compiled-kernel
    counts into the coverage ledger."""

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: Any) -> Any:
        from pytest_pypto.harness.codegen_only import running

        with running(item):
            return (yield)

    def _ledger(self, config: pytest.Config) -> Any:
        hooks = config.pluginmanager.get_plugin("pypto-ledger")
        return hooks.ledger() if hooks is not None else None

    @pytest.hookimpl(tryfirst=True)  # before the ledger's --pypto-require check
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pytest_pypto.harness.codegen_only import COMPILED_OUTPUT, compiled_entries

        entries = compiled_entries(session.config)
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[COMPILED_OUTPUT] = entries
        ledger = self._ledger(session.config)
        if ledger is not None:  # the controller: its own compiles (none under xdist)
            ledger.add_compiled(entries)

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from pytest_pypto.harness.codegen_only import COMPILED_OUTPUT

        ledger = self._ledger(node.config)
        if ledger is not None:
            ledger.add_compiled(getattr(node, "workeroutput", {}).get(COMPILED_OUTPUT, ()))


class _KeptArtifactHooks:
    """Artifacts kept by xdist workers in another directory (``-d --tx popen//chdir=``)
    come back to the controller's kernels dir (harness/remote.py)."""

    def __init__(self) -> None:
        self.shipments: list[Any] = []

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        from pytest_pypto.harness.remote import configure_node

        configure_node(node.config, node)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pytest_pypto.harness.remote import KEPT_OUTPUT, ship

        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            payload = ship(session.config)
            if payload is not None:
                workeroutput[KEPT_OUTPUT] = payload

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from pytest_pypto.harness.remote import KEPT_OUTPUT, receive

        payload = getattr(node, "workeroutput", {}).get(KEPT_OUTPUT)
        if payload:
            worker = getattr(getattr(node, "gateway", None), "id", "?")
            self.shipments.append(receive(node.config, worker, payload))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_pypto.harness.remote import summary_lines

        lines = summary_lines(terminalreporter.config, self.shipments)
        if lines:
            terminalreporter.section("pypto artifacts kept by remote workers")
            for line in lines:
                terminalreporter.write_line(line)


def pytest_report_header(config: pytest.Config) -> list[str]:
    from pytest_pypto.harness.session import header_lines

    return header_lines(config)


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    from pytest_pypto.harness.cells import (
        CELL_FIXTURE,
        chooses_own_cells,
        constraints_of,
        needs_cells,
        requires_of,
    )
    from pytest_pypto.harness.session import settings

    try:
        constraints_of(metafunc.definition)
        requires_of(metafunc.definition)
    except ValueError as exc:
        pytest.fail(f"{metafunc.definition.nodeid}: {exc}", pytrace=False)
    if not needs_cells(metafunc.fixturenames) or chooses_own_cells(metafunc.definition):
        return
    if CELL_FIXTURE not in metafunc.fixturenames:
        # A platform-bound fixture overridden without the cell (e.g. a stand-in
        # pypto_runner): pull the cell fixture into the closure so the id still shows it.
        metafunc.fixturenames.append(CELL_FIXTURE)
    cells = settings(metafunc.config).cells
    # Session scope: a suite's session fixture may depend on the cell (PyPTO's
    # test_config is session-scoped); pytest then groups the items by cell.
    metafunc.parametrize(CELL_FIXTURE, cells, ids=cells, indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from pytest_pypto.harness.cells import CELL_PROPERTY, cell_of, item_skip_reason
    from pytest_pypto.harness.session import onboard_missing, settings

    requested = settings(config).cells
    for item in items:
        callspec = getattr(item, "callspec", None)
        cell = cell_of(callspec.params, item.fixturenames) if callspec is not None else None
        if cell is not None:
            item.user_properties.append((CELL_PROPERTY, cell))
        reason = item_skip_reason(
            item, cell, requested, lambda cell=cell: onboard_missing(config, cell)
        )
        if reason is None and item.get_closest_marker("pypto_requires") is not None:
            from pytest_pypto.harness.session import requires_skip

            reason = requires_skip(item)  # the cell's runtime's version (loads runtimes)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))


class _LedgerHooks:
    """Controller-side hooks of the coverage ledger (registered in pytest_configure)."""

    def __init__(self) -> None:
        self._ledger: Any = None
        self.unmet: list[str] = []

    def ledger(self) -> Any:
        """The ledger, imported on first use (--collect-only never needs it).

        A method, not a property: pluggy reads every attribute when registering.
        """
        if self._ledger is None:
            from pytest_pypto.harness.ledger import Ledger

            self._ledger = Ledger()
        return self._ledger

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        self.ledger().record(report)

    @pytest.hookimpl(optionalhook=True)
    def pytest_handlecrashitem(self, crashitem: str, report: pytest.TestReport, sched: Any) -> None:
        """xdist: a worker died running ``crashitem``; its report (logged right after this
        hook) gets the test's cell and the failure class ``worker-crash``."""
        self.ledger().worker_crashed(report)

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from pytest_pypto.harness.session import settings

        required = settings(session.config).require
        if not required:
            return
        self.unmet = self.ledger().unmet(required)
        if self.unmet:
            if session.exitstatus == pytest.ExitCode.OK:
                session.exitstatus = pytest.ExitCode.TESTS_FAILED
            if session.config.pluginmanager.get_plugin("terminalreporter") is None:
                for line in self._require_lines(session.config):
                    print(line, file=sys.stderr)

    def _require_lines(self, config: pytest.Config) -> list[str]:
        from pytest_pypto.harness.ledger import unmet_lines
        from pytest_pypto.harness.session import settings

        return unmet_lines(self.unmet, settings(config).cells)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from pytest_pypto.harness.session import settings

        s = settings(terminalreporter.config)
        if (self._ledger is None or not self._ledger.outcomes) and not s.require:
            return
        terminalreporter.section("pypto coverage ledger")
        for line in self.ledger().table(s.cells):
            terminalreporter.write_line(line)
        for line in self._require_lines(terminalreporter.config):
            terminalreporter.write_line(f"FAILED {line}", red=True, bold=True)


@pytest.fixture(scope="session")
def pypto_platform(request: pytest.FixtureRequest) -> str:
    """The cell's platform string ('a2a3sim', 'a2a3', 'a5sim' or 'a5')."""
    cell = getattr(request, "param", None)
    if cell is None:
        pytest.fail(
            f"{request._pyfuncitem.nodeid}: platform-bound pypto fixtures must be requested as "
            f"test arguments (or via usefixtures), not with getfixturevalue(), so the test "
            f"can be parametrized over cells",
            pytrace=False,
        )
    return cell


@pytest.fixture
def pypto_config(request: pytest.FixtureRequest, pypto_platform: str) -> Any:
    """The RunConfig of this item's cell, with the command-line options applied."""
    from pytest_pypto.harness.session import config_for

    return config_for(request, pypto_platform)


@pytest.fixture
def pypto_device(request: pytest.FixtureRequest, pypto_platform: str) -> Iterator[int | None]:
    """The leased NPU id onboard (held for the test), None on sim."""
    from pytest_pypto.harness.session import lease_device

    yield from lease_device(request.config, pypto_platform)


@pytest.fixture
def pypto_runner(request: pytest.FixtureRequest, pypto_config: Any) -> Any:
    """Compile, run and check kernels on this item's cell (see harness/runner.py)."""
    from pytest_pypto.harness.session import runner_for

    return runner_for(request, pypto_config)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Record the failure class of a failing pypto test in its user_properties (junitxml)."""
    report = yield
    if call.excinfo is not None and report.failed:
        from pytest_pypto.harness.runner import FAILURE_PROPERTY, failure_class_of
        from pytest_pypto.harness.session import RUNNER_KEY

        cls = failure_class_of(call.excinfo.value)
        if getattr(call.excinfo.value, "one_line", False):  # the session's error, not the test's
            report.longrepr = f"{cls}: {getattr(call.excinfo.value, 'message', call.excinfo.value)}"
        if cls is not None and not any(k == FAILURE_PROPERTY for k, _ in item.user_properties):
            item.user_properties.append((FAILURE_PROPERTY, cls))
            report.user_properties = list(item.user_properties)
        runner = item.stash.get(RUNNER_KEY, None)
        if runner is not None and call.when == "call":
            from pytest_pypto.harness.remote import failure_section

            text = failure_section(item.config, runner)
            if text is not None:
                report.sections.append(("pypto artifacts", text))
    if call.when == "call":
        from pytest_pypto.harness.remote import note_runner
        from pytest_pypto.harness.session import RUNNER_KEY

        runner = item.stash.get(RUNNER_KEY, None)
        note_runner(item.config, runner)  # shipped from -d workers
        if runner is not None:
            runner.forget_run()  # kept or not, the last run's graph is not held any longer
    return report


@pytest.fixture
def pypto_rng(request: pytest.FixtureRequest) -> Any:
    """A numpy Generator seeded from the base seed and this test's node id."""
    from pytest_pypto.harness.seeding import make_rng
    from pytest_pypto.harness.session import seed_for

    return make_rng(seed_for(request))
