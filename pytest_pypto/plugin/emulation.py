"""``--pypto-emulate-onboard``: onboard cells this host cannot serve run on the simulator,
compiled with their arch's rules, and say so everywhere (docs/design/plugin.md §18).

Which cells are emulated is decided once per session (plugin/devices.py
`emulated_cells`).  Here: the id spelling (``a5-emulated``) of cells the plugin or the
compat lists parametrize, the ``pypto_emulated`` user property (ledger, junit), the
platform a test's RunConfig runs on, and the skips of what emulation lacks (real
hardware, PMU counters; argument dumps are the simulator's own, docs/design/scheduling.md).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_pypto.arch import ExecutionMode, parse_platform, platform_string
from pytest_pypto.harness.cells import EMULATED_ID, EMULATED_PROPERTY, emulated_label
from pytest_pypto.plugin.devices import emulated_cells, is_emulated
from pytest_pypto.plugin.keys import CELL_PROPERTY

__all__ = ["cell_id", "device_only_skip", "lacks", "run_platform"]

# RunConfig fields of device-only behaviour -> what the simulator lacks for them.
DEVICE_ONLY = {
    "enable_pmu": "PMU counters (--enable-pmu)",
}


def cell_id(config: pytest.Config, cell: str) -> str:
    """A cell's parameter id: ``a5-emulated`` for an emulated cell, else the cell."""
    return f"{cell}{EMULATED_ID}" if is_emulated(config, cell) else cell


def run_platform(config: pytest.Config, platform: str) -> str:
    """The platform a test on ``platform`` runs on: the simulator of the same arch for
    an emulated cell (the compiler reads the arch only), else ``platform``."""
    if not is_emulated(config, platform):
        return platform
    return platform_string(parse_platform(platform)[0], ExecutionMode.SIM)


def lacks(cell: str, what: str) -> str:
    """A skip reason naming what an emulated cell does not have."""
    return f"cell {cell} is emulated on the simulator, which has no {what}"


def device_only_skip(config: pytest.Config, cell: str, run_config: Any) -> str | None:
    """Why a run of ``run_config`` on ``cell`` cannot be emulated (None: it can): it
    asks for device-only output the simulator does not produce."""
    if not is_emulated(config, cell):
        return None
    for field, what in DEVICE_ONLY.items():
        if getattr(run_config, field, 0):
            return lacks(cell, what)
    return None


def pytest_make_parametrize_id(config: pytest.Config, val: object, argname: str) -> str | None:
    """A test's own ``platform`` values (``["a2a3", "a5"]``) get the emulated id too."""
    if argname == "platform" and is_emulated(config, val):
        return cell_id(config, val)  # type: ignore[arg-type]
    return None


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Label every test of an emulated cell (its cell came from plugin/cells.py)."""
    if not emulated_cells(config):
        return
    for item in items:
        cell = next((v for k, v in item.user_properties if k == CELL_PROPERTY), None)
        if is_emulated(config, cell):
            item.user_properties.append((EMULATED_PROPERTY, emulated_label(cell)))
