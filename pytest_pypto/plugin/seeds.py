"""Per-test seeds (harness/seeding.py) as pytest sees them: recorded in the test's
``user_properties``, the ``pypto_rng`` fixture, and the context lines a failure ends
with (platform, seed, a command that reproduces it).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import shlex
from typing import Any

import pytest

from pytest_pypto.arch import MODE_NAMES, parse_platform
from pytest_pypto.harness.seeding import DEFAULT_BASE_SEED, make_rng, seed_key, test_seed
from pytest_pypto.plugin.keys import SEED_PROPERTY
from pytest_pypto.plugin.options import settings

__all__ = ["context_lines", "repro_command", "seed_key_of", "seed_of"]


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


def base_seed_text(config: pytest.Config) -> str:
    return f"base seed {settings(config).seed or DEFAULT_BASE_SEED}"


def repro_command(config: pytest.Config, nodeid: str, platform: str) -> str:
    """One shell command that reruns ``nodeid`` on its cell with the options in effect."""
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
                     (s.isolate, "--pypto-isolate"), (s.no_race_check, "--pypto-no-race-check")):
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


def context_lines(config: pytest.Config, nodeid: str, platform: str, seed: Any) -> tuple[str, ...]:
    """What a failure report of a test on ``platform`` ends with: platform, seed, repro."""
    return (
        f"platform: {platform}",
        f"seed: {seed} ({base_seed_text(config)})",
        f"reproduce: {repro_command(config, nodeid, platform)}",
    )


@pytest.fixture
def pypto_rng(request: pytest.FixtureRequest) -> Any:
    """A numpy Generator seeded from the base seed and this test's node id."""
    return make_rng(seed_of(request.config, request.node))
