"""Per-session state the plugin's hooks and fixtures share: settings, onboard status,
the cell's RunConfig, device leases and the report header.

Kept out of ``plugin.py`` (hooks only) and imported lazily by it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import pytest

from pytest_pypto.harness.options import SETTINGS_KEY, Settings
from pytest_pypto.harness.paths import keeping_off, rooted
from pytest_pypto.harness.seeding import DEFAULT_BASE_SEED, seed_key, test_seed

_ONBOARD_KEY = pytest.StashKey[Any]()
_CACHE_KEY = pytest.StashKey[Any]()
RUNNER_KEY = pytest.StashKey[Any]()
SEED_PROPERTY = "pypto_seed"
CACHE_OUTPUT = "pypto_compile_cache"  # xdist workeroutput key: [hits, misses, damaged]
CACHE_WHERE_OUTPUT = "pypto_compile_cache_where"  # xdist workeroutput key: cache_where()

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
    "context_lines",
    "failure_context",
    "seed_key_of",
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


def onboard_missing(config: pytest.Config, platform: str | None = None) -> str | None:
    """What this host lacks for onboard cells (of ``platform``; None: of any) (None when
    they can run).  Always None
    under ``--pypto-codegen-only``: onboard cells compile there and nothing runs, so
    they need no NPU and no onboard runtime (harness/codegen_only.py)."""
    if settings(config).codegen_only:
        return None
    return onboard_status(config).missing(platform)


def cell_runtime(config: pytest.Config, node: Any, platform: str) -> Any:
    """The `RuntimeInfo` of the runtime that would execute ``node`` on ``platform``
    (None when none is usable: the dispatch then fails, saying why)."""
    from pytest_pypto.runtime.registry import default_registry

    registry = default_registry()
    name = config_of(config, node, platform).runtime
    if not name:
        serving = registry.serving(platform)
        name = serving[0] if serving else None
    if name is None or name not in registry.names():
        return None
    info = registry.info(name)
    return info if info.status == "ok" and platform in info.platforms else None


def check_runtime_option(config: pytest.Config) -> None:
    """Start the session with the installed runtimes read afresh (pytester runs
    sessions in one process), and refuse an unknown ``--pypto-runtime`` NAME."""
    import sys

    registry = sys.modules.get("pytest_pypto.runtime.registry")
    if registry is not None:
        registry.refresh()
    name = settings(config).runtime
    if name is None:
        return
    from pytest_pypto.runtime.registry import names

    installed = names()
    if name not in installed:
        raise pytest.UsageError(
            f"--pypto-runtime: no runtime named {name!r} is installed; installed runtimes: "
            f"{', '.join(installed) or 'none'} (entry-point group pytest_pypto.runtimes)"
        )


def requires_skip(item: Any) -> str | None:
    """Why ``pypto_requires`` skips ``item`` on its cell (None: it runs).  Not applied
    without a cell, under --pypto-codegen-only (nothing runs), or when no runtime is
    usable (the dispatch fails, saying why)."""
    from pytest_pypto.harness.cells import CELL_PROPERTY, requires_skip_reason

    cell = next((v for k, v in item.user_properties if k == CELL_PROPERTY), None)
    if not isinstance(cell, str) or settings(item.config).codegen_only:
        return None
    info = cell_runtime(item.config, item, cell)
    if info is None:
        return None
    return requires_skip_reason(item, info.name, info.version, cell)


def runtime_lines(config: pytest.Config) -> list[str]:
    """The header's line naming every installed runtime, its version, platforms and
    status (an unavailable or broken one with why)."""
    from pytest_pypto.runtime.registry import installed

    described = "; ".join(info.describe() for info in installed()) or "none installed"
    return [f"pytest-pypto runtimes: {described}"]


def broken_runtime_lines(config: pytest.Config) -> list[str]:
    """One line per broken runtime of this session (the terminal summary), if any
    runtime was looked at; nothing is loaded for it."""
    import sys

    registry = sys.modules.get("pytest_pypto.runtime.registry")
    if registry is None or registry._default is None:
        return []
    return [
        f"pytest-pypto runtime '{info.name}' is broken: {info.reason}"
        for info in registry._default.loaded_infos()
        if info.status == "broken"
    ]


def _path(config: pytest.Config, raw: str) -> Any:
    return rooted(config, raw)


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
            cachedir = getattr(config.cache, "_cachedir", None)  # named in the warning
            root = rooted(config, str(cachedir)) / "d" / "pypto-compile" if cachedir else None
    cache = CompileCache(root)
    if root is not None and why is None:
        why = probe_writable(root)
    if why is not None:
        cache.disable(why)
    config.stash[_CACHE_KEY] = cache
    return cache


def cache_where(config: pytest.Config) -> str:
    """Which compile cache this process used (its directory, or "off ..." and why)."""
    cache = compile_cache(config)
    if cache.root is None:
        return "off (--pypto-no-cache)" if settings(config).no_cache else "off"
    if cache.disabled_reason is not None:
        return f"off: {cache.root} is not writable"
    return str(cache.root)


def cache_summary(
    config: pytest.Config,
    hits: int,
    misses: int,
    damaged: int = 0,
    places: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The terminal summary's line about the compile cache (``damaged``: entries found
    damaged and rebuilt, each also a miss; ``places``: `cache_where` -> the xdist
    workers that used it, named when any is not this process's cache, as with
    ``-d --tx popen//chdir=DIR``)."""
    where = cache_where(config)
    if places and set(places) != {where}:
        where = "; ".join(f"{w} on {', '.join(ids)}" for w, ids in places.items())
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
    seed = test_seed(settings(config).seed, seed_key_of(config, node))
    props = node.user_properties
    if not any(key == SEED_PROPERTY for key, _ in props):
        props.append((SEED_PROPERTY, seed))
    return seed


def seed_key_of(config: pytest.Config, node: Any) -> str:
    """What the seed of ``node`` hashes (`seeding.seed_key`: stable across invocation dirs)."""
    path = getattr(node, "path", None)
    return seed_key(node.nodeid, path, config.rootpath, has_inifile=config.inipath is not None)


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
    # Dumps must be readable, and traces land next to the kept artifact.
    keep = node is not None and (s.save_kernels or s.dump_passes or s.trace)
    return RunConfig(
        platform=platform,
        seed=seed_of(config, node) if node is not None else None,
        device_id=device,
        codegen_only=s.codegen_only,
        save_kernels=s.save_kernels,
        save_kernels_dir=str(keep_dir_for(config, node.nodeid)) if keep else None,
        dump_passes=s.dump_passes,
        schedule_seed=s.shuffle,
        strict_war=s.strict_war,
        precise=s.precise,
        timeout=s.timeout,
        trace=s.trace,
        runtime=_runtime_name(s, node, platform),
    )


def _runtime_name(s: Any, node: Any, platform: str) -> str | None:
    """``"isolated"`` for a sim cell under --pypto-isolate or @pytest.mark.pypto_isolate,
    else the --pypto-runtime choice (None: the registry's default for the platform)."""
    isolate = s.isolate or (
        node is not None and node.get_closest_marker("pypto_isolate") is not None
    )
    if isolate:
        from pytest_pypto.arch import ExecutionMode, parse_platform

        if parse_platform(platform)[1] is ExecutionMode.SIM:
            return "isolated"
    return s.runtime


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
    # The switches that change how the run behaves (schedule, numerics, runtime).
    if s.shuffle is not None:
        args.append(f"--pypto-shuffle {s.shuffle}")
    for on, flag in ((s.strict_war, "--pypto-strict-war"), (s.precise, "--pypto-precise"),
                     (s.isolate, "--pypto-isolate")):
        if on:
            args.append(flag)
    if s.timeout is not None:
        args.append(f"--pypto-timeout {s.timeout:g}")
    if s.runtime is not None:
        args.append(f"--pypto-runtime {shlex.quote(s.runtime)}")
    command = " ".join(args)
    rootdir = config.rootpath
    if config.invocation_params.dir != rootdir:
        command = f"cd {shlex.quote(str(rootdir))} && {command}"
    return command


def runner_for(request: pytest.FixtureRequest, config: Any) -> Any:
    """The `Runner` of this test: its cell's config, seeded rng, and report context."""
    return runner_of(request.config, request.node, config)


def context_lines(pconfig: pytest.Config, nodeid: str, platform: str, seed: Any) -> tuple[str, ...]:
    """What a failure report of a test on ``platform`` ends with: platform, seed, repro."""
    return (
        f"platform: {platform}",
        f"seed: {seed} (base seed {settings(pconfig).seed or DEFAULT_BASE_SEED})",
        f"reproduce: {repro_command(pconfig, nodeid, platform)}",
    )


def failure_context(pconfig: pytest.Config, item: Any) -> tuple[str, ...]:
    """The context lines of a failure in test ``item``: its runner's, else from its
    cell, else (a test with only the pypto rng) its seed; () for a test of no cell."""
    runner = item.stash.get(RUNNER_KEY, None)
    if runner is not None:
        return tuple(runner.context)
    from pytest_pypto.harness.cells import CELL_PROPERTY

    platform = next((v for k, v in item.user_properties if k == CELL_PROPERTY), None)
    if isinstance(platform, str):
        return context_lines(pconfig, item.nodeid, platform, seed_of(pconfig, item))
    if "pypto_rng" in getattr(item, "fixturenames", ()):
        return (f"seed: {seed_of(pconfig, item)} (base seed "
                f"{settings(pconfig).seed or DEFAULT_BASE_SEED})",)
    return ()


def runner_of(pconfig: pytest.Config, node: Any, config: Any) -> Any:
    """The `Runner` of test item ``node`` for ``config`` (stashed on the item, so a
    failing test keeps its artifact)."""
    from pytest_pypto.harness.runner import Runner
    from pytest_pypto.harness.seeding import make_rng

    context = context_lines(pconfig, node.nodeid, config.platform, config.seed)
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
        keep_dir=None if keeping_off(pconfig) else keep_dir_for(pconfig, node.nodeid),
        lease=lease,
    )
    node.stash[RUNNER_KEY] = runner
    return runner


def _worker_index() -> int:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    digits = worker.lstrip("gw")
    return int(digits) if digits.isdigit() else 0


def lease_device(config: pytest.Config, platform: str) -> Iterator[int | None]:
    """Lease an NPU for an onboard cell (None on sim and under --pypto-codegen-only):
    for the whole test when the test asks for ``pypto_device``, else only around each
    kernel the runner executes.

    Workers start probing at different devices so they spread out; the lease is an
    OS file lock (see ``pytest_pypto.runtime.devices``) released at teardown.
    """
    from pytest_pypto.arch import ExecutionMode, parse_platform

    if parse_platform(platform)[1] is ExecutionMode.SIM or settings(config).codegen_only:
        yield None  # nothing runs under --pypto-codegen-only: no device to lease
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
    if s.codegen_only:  # onboard cells compile too; nothing is leased or run
        devices = "none needed (--pypto-codegen-only: every kernel compiles, none runs)"
    elif any(parse_platform(c)[1] is ExecutionMode.ONBOARD for c in cells):
        from pytest_pypto.runtime.devices import format_device_list

        status = onboard_status(config)
        devices = format_device_list(status.devices) if status.devices else "none visible"
        runtimes = ", ".join(status.runtimes) or "none available"
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
        *runtime_lines(config),
        *alias_header_lines(config),
    ]
