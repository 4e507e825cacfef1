"""NPUs of this host: found once per session, leased per onboard test, and the
report header's first line (cells, devices, version, base seed).

Nothing here runs a kernel or loads a runtime module before a cell needs one: the
device discovery is imported when first asked.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_pypto._version import __version__
from pytest_pypto.arch import ExecutionMode, parse_platform
from pytest_pypto.harness.cells import emulated_label
from pytest_pypto.harness.seeding import DEFAULT_BASE_SEED
from pytest_pypto.plugin.keys import EMULATED_KEY, ONBOARD_KEY
from pytest_pypto.plugin.options import settings

__all__ = [
    "device_lease",
    "emulated_cells",
    "is_emulated",
    "lease_device",
    "onboard_missing",
    "onboard_status",
]


def onboard_status(config: pytest.Config) -> Any:
    """NPUs and onboard runtimes of this host, discovered once per session (per worker)."""
    status = config.stash.get(ONBOARD_KEY, None)
    if status is None:
        from pytest_pypto.runtime import devices  # lazy: plugin import cost

        status = devices.onboard_status(requested=settings(config).devices)
        config.stash[ONBOARD_KEY] = status
    return status


def onboard_missing(config: pytest.Config, platform: str | None = None) -> str | None:
    """What this host lacks for onboard cells (of ``platform``; None: of any) (None when
    they can run).  Always None under ``--pypto-codegen-only``: onboard cells compile
    there and nothing runs, so they need no NPU and no onboard runtime."""
    if settings(config).codegen_only:
        return None
    return onboard_status(config).missing(platform)


def emulated_cells(config: pytest.Config) -> frozenset[str]:
    """The requested onboard cells that run on the simulator (``--pypto-emulate-onboard``:
    those this host cannot serve; none under ``--pypto-codegen-only``, where nothing runs)."""
    cells = config.stash.get(EMULATED_KEY, None)
    if cells is None:
        s = settings(config)
        onboard = [c for c in s.cells if parse_platform(c)[1] is ExecutionMode.ONBOARD]
        wanted = s.emulate_onboard and not s.codegen_only
        cells = frozenset(c for c in onboard if wanted and onboard_missing(config, c))
        config.stash[EMULATED_KEY] = cells
    return cells


def is_emulated(config: pytest.Config, cell: object) -> bool:
    """Whether ``cell`` is an onboard cell this session runs on the simulator."""
    return isinstance(cell, str) and cell in emulated_cells(config)


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    digits = worker.lstrip("gw")
    return int(digits) if digits.isdigit() else 0


def lease_device(config: pytest.Config, platform: str) -> Iterator[int | None]:
    """Lease an NPU for an onboard cell (None on sim and under --pypto-codegen-only):
    for the whole test when the test asks for ``pypto_device``, else only around each
    kernel the runner executes.

    Workers start probing at different devices so they spread out; the lease is an
    OS file lock (see ``pytest_pypto.runtime.devices``) released at teardown.  A lock
    dir or file that cannot be used fails the test with the message naming it.
    """
    if (
        parse_platform(platform)[1] is ExecutionMode.SIM
        or settings(config).codegen_only
        or is_emulated(config, platform)
    ):
        yield None  # nothing runs under --pypto-codegen-only: no device to lease
        return
    status = onboard_status(config)
    if not status.devices:
        pytest.skip(f"onboard cell {platform}: {status.missing()}")
    from pytest_pypto.runtime import devices as leases  # lazy: plugin import cost

    try:
        lease = leases.DeviceLease.acquire(status.devices, start=_worker_index())
    except leases.DeviceLockError as exc:  # the message names the path and what to do
        pytest.fail(str(exc), pytrace=False)
    with lease:
        yield lease.device_id


def device_lease(config: pytest.Config, platform: str) -> Any:
    """`lease_device` as a context-manager factory (what a runner leases around a run)."""
    return functools.partial(contextlib.contextmanager(lease_device), config, platform)


def header_line(config: pytest.Config) -> str:
    """The report header's line: cells, devices, package version, base seed."""
    s = settings(config)
    cells = s.cells
    if s.codegen_only:  # onboard cells compile too; nothing is leased or run
        devices = "none needed (--pypto-codegen-only: every kernel compiles, none runs)"
    elif any(parse_platform(c)[1] is ExecutionMode.ONBOARD for c in cells):
        from pytest_pypto.runtime.devices import format_device_list  # lazy: plugin import cost

        status = onboard_status(config)
        devices = format_device_list(status.devices) if status.devices else "none visible"
        runtimes = ", ".join(status.runtimes) or "none available"
        devices = f"{devices} (onboard runtime: {runtimes})"
    else:
        devices = "none needed (sim only)"
    emulated = emulated_cells(config)
    if emulated:
        devices += f"; {', '.join(sorted(emulated))} emulated on the simulator"
        cells = [emulated_label(c) if c in emulated else c for c in cells]
    seed = (
        f"{s.seed}"
        if s.seed is not None
        else f"{DEFAULT_BASE_SEED} (default; set with --pypto-seed)"
    )
    return f"pytest-pypto {__version__}: cells {', '.join(cells)}; devices {devices}; base seed {seed}"


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [header_line(config)]
