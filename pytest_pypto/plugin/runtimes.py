"""Installed runtimes as a session sees them: ``--pypto-runtime`` checked at configure,
``pypto_requires`` skips, the header line naming every runtime, broken runtimes in the
summary, and every runtime closed at the session's end.

The registry is imported only when a hook needs it (``sys.modules`` first: a session
that never looked a runtime up loads none).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import sys
from typing import Any

import pytest

from pytest_pypto.harness.cells import requires_skip_reason
from pytest_pypto.harness.context import run_config
from pytest_pypto.plugin.keys import CELL_PROPERTY
from pytest_pypto.plugin.options import resolved, settings

__all__ = ["cell_runtime", "check_runtime_option", "isolated", "requires_skip"]

_REGISTRY = "pytest_pypto.runtime.registry"


def isolated(node: Any) -> bool:
    """Whether a test asks for a child process (``@pytest.mark.pypto_isolate``)."""
    return node is not None and node.get_closest_marker("pypto_isolate") is not None


def cell_runtime(config: pytest.Config, node: Any, platform: str) -> Any:
    """The `RuntimeInfo` of the runtime that would execute ``node`` on ``platform``
    (None when none is usable: the dispatch then fails, saying why)."""
    from pytest_pypto.runtime.registry import default_registry  # lazy: plugin import cost

    registry = default_registry()
    name = run_config(settings(config), platform, isolate=isolated(node)).runtime
    if not name:
        serving = registry.serving(platform)
        name = serving[0] if serving else None
    if name is None or name not in registry.names():
        return None
    info = registry.info(name)
    return info if info.status == "ok" and platform in info.platforms else None


def check_runtime_option(config: pytest.Config) -> None:
    """Start the session with the installed runtimes read afresh (pytester runs
    sessions in one process), and refuse an unknown ``--pypto-runtime`` NAME or one
    that serves none of the requested cells it would run."""
    registry = sys.modules.get(_REGISTRY)
    if registry is not None:
        registry.refresh()
    name = settings(config).runtime
    if name is None:
        return
    from pytest_pypto.runtime.registry import names  # lazy: plugin import cost

    installed = names()
    if name not in installed:
        raise pytest.UsageError(
            f"--pypto-runtime: no runtime named {name!r} is installed; installed runtimes: "
            f"{', '.join(installed) or 'none'} (entry-point group pytest_pypto.runtimes)"
        )
    _check_serves_a_cell(config, name)


def _check_serves_a_cell(config: pytest.Config, name: str) -> None:
    """A usage error when runtime ``name`` would run some requested cells but serves
    none of them (every test on them would fail).  Cells that run elsewhere (sim cells
    under --pypto-isolate) and --pypto-codegen-only (nothing runs) need nothing."""
    s = settings(config)
    if s.codegen_only:
        return
    cells = [cell for cell in s.cells if run_config(s, cell).runtime == name]
    if not cells:
        return
    from pytest_pypto.runtime.registry import default_registry  # lazy: plugin import cost

    info = default_registry().info(name)
    if set(info.platforms) & set(cells):
        return
    serves = (
        f"serves {', '.join(info.platforms)}, none of the"
        if info.platforms
        else f"serves no cell ({info.status}: {info.reason});"
    )
    raise pytest.UsageError(
        f"--pypto-runtime: runtime {name!r} {serves} requested cells {', '.join(cells)} "
        f"(choose the cells with --pypto-arch / --pypto-mode, or another runtime)"
    )


def requires_skip(item: Any) -> str | None:
    """Why ``pypto_requires`` skips ``item`` on its cell (None: it runs).  Not applied
    without a cell, under --pypto-codegen-only (nothing runs), or when no runtime is
    usable (the dispatch fails, saying why)."""
    cell = next((v for k, v in item.user_properties if k == CELL_PROPERTY), None)
    if not isinstance(cell, str) or settings(item.config).codegen_only:
        return None
    info = cell_runtime(item.config, item, cell)
    if info is None:
        return None
    return requires_skip_reason(item, info.name, info.version, cell)


def runtime_lines() -> list[str]:
    """The header's line naming every installed runtime, its version, platforms and
    status (an unavailable or broken one with why)."""
    from pytest_pypto.runtime.registry import installed  # lazy: plugin import cost

    described = "; ".join(info.describe() for info in installed()) or "none installed"
    return [f"pytest-pypto runtimes: {described}"]


def broken_runtime_lines() -> list[str]:
    """One line per broken runtime of this session (the terminal summary), if any
    runtime was looked at; nothing is loaded for it."""
    registry = sys.modules.get(_REGISTRY)
    if registry is None or registry._default is None:
        return []
    return [
        f"pytest-pypto runtime '{info.name}' is broken: {info.reason}"
        for info in registry._default.loaded_infos()
        if info.status == "broken"
    ]


def pytest_configure(config: pytest.Config) -> None:
    if resolved(config):
        check_runtime_option(config)  # a new session reads the installed runtimes afresh


def pytest_report_header(config: pytest.Config) -> list[str]:
    return runtime_lines()


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any) -> None:
    for line in broken_runtime_lines():
        terminalreporter.write_line(line, red=True)


def pytest_unconfigure(config: pytest.Config) -> None:
    registry = sys.modules.get(_REGISTRY)
    if registry is not None:  # child processes, device handles: released at session end
        registry.close_all()
