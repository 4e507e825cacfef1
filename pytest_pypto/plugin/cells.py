"""Cells: the pypto markers, one item per requested cell for tests that use a
platform-bound fixture, and the skips of cells a test's markers or this host rule out
(the rules are harness/cells.py).

Another plugin whose fixtures run kernels (the compat plugin's) registers them with
`add_cell_naming_fixtures` at configure time: a test using one of them with a
``platform`` parameter then names its cell by that parameter, as one using a
platform-bound fixture does.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import pytest

from pytest_pypto.harness.cells import (
    CELL_FIXTURE,
    MARKERS,
    cell_of,
    chooses_own_cells,
    constraints_of,
    item_skip_reason,
    needs_cells,
    requires_of,
)
from pytest_pypto.plugin.devices import is_emulated, onboard_missing
from pytest_pypto.plugin.emulation import cell_id, lacks
from pytest_pypto.plugin.keys import CELL_NAMING_KEY, CELL_PROPERTY
from pytest_pypto.plugin.options import settings
from pytest_pypto.plugin.runtimes import requires_skip


def add_cell_naming_fixtures(config: pytest.Config, *names: str) -> None:
    """Let a test using one of the fixtures ``names`` name its cell by its ``platform``
    parameter (for markers, onboard skips and the ledger); it is not multiplied per cell."""
    config.stash.setdefault(CELL_NAMING_KEY, set()).update(names)


def pytest_configure(config: pytest.Config) -> None:
    for name, description in MARKERS:
        config.addinivalue_line("markers", f"{name}: {description}")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
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
    # Session scope: a suite's session fixture may depend on the cell (the compat
    # plugin's config fixture is session-scoped); pytest then groups the items by cell.
    ids = [cell_id(metafunc.config, c) for c in cells]
    metafunc.parametrize(CELL_FIXTURE, cells, ids=ids, indirect=True, scope="session")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    requested = settings(config).cells
    naming = tuple(config.stash.get(CELL_NAMING_KEY, ()))
    for item in items:
        callspec = getattr(item, "callspec", None)
        params = callspec.params if callspec is not None else None
        cell = cell_of(params, item.fixturenames, naming) if params is not None else None
        if cell is not None:
            item.user_properties.append((CELL_PROPERTY, cell))
        emulated = is_emulated(config, cell)
        reason = item_skip_reason(
            item, cell, requested,
            lambda cell=cell, emulated=emulated: None if emulated else onboard_missing(config, cell),
        )
        if reason is None and emulated and item.get_closest_marker("pypto_onboard") is not None:
            reason = f"needs an NPU: {lacks(cell, 'NPU')}"  # type: ignore[arg-type]
        if reason is None and item.get_closest_marker("pypto_requires") is not None:
            reason = requires_skip(item)  # the cell's runtime's version (loads runtimes)
        if reason is not None:
            item.add_marker(pytest.mark.skip(reason=reason))
