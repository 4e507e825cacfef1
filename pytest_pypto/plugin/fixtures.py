"""The platform-bound fixtures: ``pypto_platform`` (the cell), ``pypto_config``,
``pypto_device`` and ``pypto_runner`` (harness/runner.py).

A test requesting any of them runs once per requested cell (plugin/cells.py).  The
runner is stashed on the test item, so a failing test keeps its artifact.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from pytest_pypto.harness.context import run_config
from pytest_pypto.harness.seeding import make_rng
from pytest_pypto.plugin.cache import compile_cache
from pytest_pypto.plugin.devices import device_lease, lease_device
from pytest_pypto.plugin.emulation import run_platform
from pytest_pypto.plugin.keys import RUNNER_KEY
from pytest_pypto.plugin.options import settings
from pytest_pypto.plugin.paths import keep_dir_for, keeping_off
from pytest_pypto.plugin.runtimes import isolated
from pytest_pypto.plugin.seeds import context_lines, seed_of

__all__ = ["config_of", "runner_of"]


def config_of(config: pytest.Config, node: Any, platform: str, *, device: Any = None) -> Any:
    """The RunConfig of test item ``node`` on ``platform`` with the session's options
    (``node`` None: a session-wide config, with no test seed or artifact directory).
    An emulated onboard cell's config is the simulator's of the same arch."""
    platform = run_platform(config, platform)
    if node is None:
        return run_config(settings(config), platform, device=device)
    return run_config(
        settings(config),
        platform,
        seed=seed_of(config, node),
        keep_dir=keep_dir_for(config, node.nodeid),
        device=device,
        isolate=isolated(node),
    )


def runner_of(pconfig: pytest.Config, node: Any, config: Any) -> Any:
    """The `Runner` of test item ``node`` for ``config`` (stashed on the item, so a
    failing test keeps its artifact)."""
    from pytest_pypto.harness.runner import Runner  # lazy: plugin import cost

    runner = Runner(
        config,
        rng_factory=lambda: make_rng(config.seed),
        context=context_lines(pconfig, node.nodeid, config.platform, config.seed),
        cache=compile_cache(pconfig),
        keep_dir=None if keeping_off(pconfig) else keep_dir_for(pconfig, node.nodeid),
        lease=None if config.is_sim else device_lease(pconfig, config.platform),
    )
    node.stash[RUNNER_KEY] = runner
    return runner


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
    device = None
    if "pypto_device" in request.fixturenames:
        device = request.getfixturevalue("pypto_device")
    return config_of(request.config, request.node, pypto_platform, device=device)


@pytest.fixture
def pypto_device(request: pytest.FixtureRequest, pypto_platform: str) -> Iterator[int | None]:
    """The leased NPU id onboard (held for the test), None on sim."""
    yield from lease_device(request.config, pypto_platform)


@pytest.fixture
def pypto_runner(request: pytest.FixtureRequest, pypto_config: Any) -> Any:
    """Compile, run and check kernels on this item's cell (see harness/runner.py)."""
    return runner_of(request.config, request.node, pypto_config)
