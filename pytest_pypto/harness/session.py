"""Per-session state the plugin's hooks and fixtures share: settings, onboard status,
the cell's RunConfig, device leases and the report header.

Kept out of ``plugin.py`` (hooks only) and imported lazily by it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_pypto.harness.options import SETTINGS_KEY, Settings
from pytest_pypto.harness.seeding import DEFAULT_BASE_SEED, test_seed

_ONBOARD_KEY = pytest.StashKey[Any]()
_CACHE_KEY = pytest.StashKey[Any]()
RUNNER_KEY = pytest.StashKey[Any]()
SEED_PROPERTY = "pypto_seed"
CACHE_OUTPUT = "pypto_compile_cache"  # xdist workeroutput key: [hits, misses, damaged]

__all__ = [
    "RUNNER_KEY",
    "compile_cache",
    "config_for",
    "keep_dir_for",
    "header_lines",
    "lease_device",
    "onboard_missing",
    "onboard_status",
    "repro_command",
    "runner_for",
    "runner_of",
    "config_of",
    "seed_of",
    "settings",
    "seed_for",
]


def settings(config: pytest.Config) -> Settings:
    """The resolved options (defaults when configure did not resolve them, e.g. --help)."""
    return config.stash.get(SETTINGS_KEY, None) or Settings()


def onboard_status(config: pytest.Config) -> Any:
    """NPUs and onboard runtimes of this host, discovered once per session (per worker)."""
    status = config.stash.get(_ONBOARD_KEY, None)
    if status is None:
        from pytest_pypto.runtime.devices import onboard_status as discover

        status = discover(requested=settings(config).devices)
        config.stash[_ONBOARD_KEY] = status
    return status


def onboard_missing(config: pytest.Config) -> str | None:
    """What this host lacks for onboard cells (None when they can run)."""
    return onboard_status(config).missing()


def _path(config: pytest.Config, raw: str) -> Any:
    from pathlib import Path

    path = Path(raw).expanduser()
    return path if path.is_absolute() else config.rootpath / path


def compile_cache(config: pytest.Config) -> Any:
    """This process's `CompileCache` (root probed once; unwritable: no cache, with why)."""
    cache = config.stash.get(_CACHE_KEY, None)
    if cache is not None:
        return cache
    from pytest_pypto.harness.cache import CompileCache, probe_writable

    s = settings(config)
    root = None
    why = None
    if s.no_cache:
        pass
    elif s.cache_dir is not None:
        root = _path(config, s.cache_dir)
    elif getattr(config, "cache", None) is not None:
        try:
            root = config.cache.mkdir("pypto-compile")
        except OSError as exc:
            why = f"{type(exc).__name__}: {exc}"
    cache = CompileCache(root)
    if root is not None:
        why = probe_writable(root)
    if why is not None:
        cache.disable(why)
    config.stash[_CACHE_KEY] = cache
    return cache


def cache_summary(config: pytest.Config, hits: int, misses: int, damaged: int = 0) -> str:
    """The terminal summary's line about the compile cache (``damaged``: entries found
    damaged and rebuilt, each also a miss)."""
    cache = compile_cache(config)
    if cache.root is None:
        where = "off (--pypto-no-cache)" if settings(config).no_cache else "off"
    elif cache.disabled_reason is not None:
        where = f"off: {cache.root} is not writable"
    else:
        where = str(cache.root)
    rebuilt = ""
    if damaged:
        rebuilt = f", {damaged} damaged {'entry' if damaged == 1 else 'entries'} rebuilt"
    return f"pypto compile cache: {hits} hits, {misses} misses{rebuilt} ({where})"


def _sanitize(nodeid: str) -> str:
    import hashlib
    import re

    name = re.sub(r"[^\w.\-]+", "_", nodeid).strip("_") or "test"
    if len(name) > 120:
        name = f"{name[:100]}-{hashlib.sha256(nodeid.encode()).hexdigest()[:16]}"
    return name


def keep_dir_for(config: pytest.Config, nodeid: str) -> Any:
    """Where this test's artifacts are kept: ``<kernels dir>/<sanitized node id>``."""
    return _path(config, settings(config).kernels_dir) / _sanitize(nodeid)


def seed_for(request: pytest.FixtureRequest) -> int:
    """This test's seed; recorded once in ``user_properties`` (junitxml, reports)."""
    return seed_of(request.config, request.node)


def seed_of(config: pytest.Config, node: Any) -> int:
    """The seed of the test item ``node`` (recorded once in its ``user_properties``)."""
    seed = test_seed(settings(config).seed, node.nodeid)
    props = node.user_properties
    if not any(key == SEED_PROPERTY for key, _ in props):
        props.append((SEED_PROPERTY, seed))
    return seed


def config_for(request: pytest.FixtureRequest, platform: str) -> Any:
    """The RunConfig of the item's cell with the session's options applied."""
    device = None
    if "pypto_device" in request.fixturenames:
        device = request.getfixturevalue("pypto_device")
    return config_of(request.config, request.node, platform, device=device)


def config_of(
    config: pytest.Config, node: Any, platform: str, *, device: Any = None
) -> Any:
    """The RunConfig of test item ``node`` on ``platform`` with the session's options
    (``node`` None: a session-wide config, with no test seed or artifact directory)."""
    from pytest_pypto.config import RunConfig

    s = settings(config)
    keep = node is not None and (s.save_kernels or s.dump_passes)  # dumps must be readable
    return RunConfig(
        platform=platform,
        seed=seed_of(config, node) if node is not None else None,
        device_id=device,
        codegen_only=s.codegen_only,
        save_kernels=s.save_kernels,
        save_kernels_dir=str(keep_dir_for(config, node.nodeid)) if keep else None,
        dump_passes=s.dump_passes,
    )


def repro_command(config: pytest.Config, nodeid: str, platform: str) -> str:
    """One shell command that reruns ``nodeid`` on its cell with the options in effect."""
    import shlex

    from pytest_pypto.arch import MODE_NAMES, parse_platform

    s = settings(config)
    backend, mode = parse_platform(platform)
    base = DEFAULT_BASE_SEED if s.seed is None else s.seed
    args = [
        "pytest",
        shlex.quote(nodeid),
        f"--pypto-arch {backend.arch_name}",
        f"--pypto-mode {MODE_NAMES[mode]}",
        f"--pypto-seed {base}",
    ]
    if s.codegen_only:
        args.append("--pypto-codegen-only")
    if s.alias:  # the test imports pypto: without the alias it would not collect
        args.append("--pypto-alias")
    command = " ".join(args)
    rootdir = config.rootpath
    if config.invocation_params.dir != rootdir:
        command = f"cd {shlex.quote(str(rootdir))} && {command}"
    return command


def runner_for(request: pytest.FixtureRequest, config: Any) -> Any:
    """The `Runner` of this test: its cell's config, seeded rng, and report context."""
    return runner_of(request.config, request.node, config)


def runner_of(pconfig: pytest.Config, node: Any, config: Any) -> Any:
    """The `Runner` of test item ``node`` for ``config`` (stashed on the item, so a
    failing test keeps its artifact)."""
    from pytest_pypto.harness.runner import Runner
    from pytest_pypto.harness.seeding import make_rng

    context = (
        f"platform: {config.platform}",
        f"seed: {config.seed} (base seed {settings(pconfig).seed or DEFAULT_BASE_SEED})",
        f"reproduce: {repro_command(pconfig, node.nodeid, config.platform)}",
    )
    lease = None
    if not config.is_sim:
        import contextlib
        import functools

        lease = functools.partial(
            contextlib.contextmanager(lease_device), pconfig, config.platform
        )
    runner = Runner(
        config,
        rng_factory=lambda: make_rng(config.seed),
        context=context,
        cache=compile_cache(pconfig),
        keep_dir=keep_dir_for(pconfig, node.nodeid),
        lease=lease,
    )
    node.stash[RUNNER_KEY] = runner
    return runner


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    digits = worker.lstrip("gw")
    return int(digits) if digits.isdigit() else 0


def lease_device(config: pytest.Config, platform: str) -> Iterator[int | None]:
    """Lease an NPU for an onboard cell (None on sim): for the whole test when the test
    asks for ``pypto_device``, else only around each kernel the runner executes.

    Workers start probing at different devices so they spread out; the lease is an
    OS file lock (see ``pytest_pypto.runtime.devices``) released at teardown.
    """
    from pytest_pypto.arch import ExecutionMode, parse_platform

    if parse_platform(platform)[1] is ExecutionMode.SIM:
        yield None
        return
    status = onboard_status(config)
    if not status.devices:
        pytest.skip(f"onboard cell {platform}: {status.missing()}")
    from pytest_pypto.runtime.devices import DeviceLease

    with DeviceLease.acquire(status.devices, start=_worker_index()) as lease:
        yield lease.device_id


def header_lines(config: pytest.Config) -> list[str]:
    """The report header: cells, devices, package version, base seed."""
    from pytest_pypto import __version__
    from pytest_pypto.arch import ExecutionMode, parse_platform
    from pytest_pypto.compat.alias import header_lines as alias_header_lines

    s = settings(config)
    cells = s.cells
    if any(parse_platform(c)[1] is ExecutionMode.ONBOARD for c in cells):
        from pytest_pypto.runtime.devices import format_device_list

        status = onboard_status(config)
        devices = format_device_list(status.devices) if status.devices else "none visible"
        runtimes = ", ".join(status.runtimes) or "none installed"
        devices = f"{devices} (onboard runtime: {runtimes})"
    else:
        devices = "none needed (sim only)"
    seed = (
        f"{s.seed}"
        if s.seed is not None
        else f"{DEFAULT_BASE_SEED} (default; set with --pypto-seed)"
    )
    cache = compile_cache(config)
    if cache.root is None:
        where = "off"
    elif cache.disabled_reason is not None:
        where = f"off ({cache.root} is not writable)"
    else:
        where = str(cache.root)
    return [
        f"pytest-pypto {__version__}: cells {', '.join(cells)}; devices {devices}; base seed {seed}",
        f"pytest-pypto compile cache: {where}",
        *alias_header_lines(config),
    ]
