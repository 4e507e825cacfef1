"""Session logic of the compat plugin (PyPTO's conftest surface, `pytest_pypto.compat`).

Kept apart so the compat plugin module holds hooks and fixtures only: PyPTO's option
spellings mapped onto ours, which tests its session-scoped ``test_runner`` multiplies
per cell, and the per-test runner a ``test_runner.run(case)`` call uses.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from pytest_pypto.arch import MODE_NAMES, PLATFORMS, ExecutionMode, parse_platform
from pytest_pypto.compat.runconfig import PYPTO_ONLY_FIELDS, RunConfig
from pytest_pypto.compat.selections import MemoryPlanner
from pytest_pypto.harness.cells import needs_cells
from pytest_pypto.harness.settings import option_named
from pytest_pypto.plugin.devices import is_emulated, onboard_missing
from pytest_pypto.plugin.emulation import device_only_skip
from pytest_pypto.plugin.fixtures import config_of, runner_of
from pytest_pypto.plugin.options import refresh

__all__ = [
    "PYPTO_ONLY_FIELDS",
    "apply_pypto_options",
    "case_platform",
    "runner_for_case",
    "session_config",
    "wants_cells",
]

def apply_pypto_options(
    config: pytest.Config, values: Mapping[str, str], switches: Mapping[str, str]
) -> None:
    """Copy PyPTO's spellings (``--platform``, ``--device``, ...) into our options where
    ours were not given; ``--platform a2a3sim,a5sim`` selects those archs and modes."""
    opt = config.option
    raw = getattr(opt, "platform", None)
    if raw is not None:
        parsed = _parse_platforms(raw)
        archs = ",".join(dict.fromkeys(b.arch_name for b, _ in parsed))
        modes = ",".join(dict.fromkeys(MODE_NAMES[m] for _, m in parsed))
        _agree(raw, "arch", "architectures", archs, getattr(opt, "pypto_arch", None))
        _agree(raw, "mode", "modes", modes, getattr(opt, "pypto_mode", None))
        if getattr(opt, "pypto_arch", None) is None:
            opt.pypto_arch = archs
        if getattr(opt, "pypto_mode", None) is None:
            opt.pypto_mode = modes
    for theirs, ours in values.items():
        value = getattr(opt, theirs, None)
        if value is not None and getattr(opt, ours, None) is None:
            setattr(opt, ours, value)
    for theirs, ours in switches.items():
        if getattr(opt, theirs, False) and getattr(opt, ours, None) is None:
            setattr(opt, ours, True)
    refresh(config)  # when loaded after the plugin resolved (--pypto-alias)


def _parse_platforms(raw: str) -> list[tuple[Any, ExecutionMode]]:
    """``--platform``'s comma list; a usage error for an empty list or entry, or an
    unknown platform."""
    valid = f"Valid values: a comma list of {', '.join(PLATFORMS)}."
    parts = [p.strip() for p in raw.split(",")]
    if not any(parts) or not all(parts):
        what = "empty" if not any(parts) else "an empty entry"
        raise pytest.UsageError(f"--platform: invalid value {raw!r}: {what}. {valid}")
    try:
        return [parse_platform(p) for p in parts]
    except ValueError as exc:
        raise pytest.UsageError(f"--platform: invalid value {raw!r}: {exc}. {valid}") from None


def _agree(raw: str, name: str, what: str, implied: str, given: str | None) -> None:
    """A usage error when ``--pypto-<name>`` was given on the command line and selects
    other ``what`` than PyPTO's ``--platform`` does."""
    if given is None:
        return
    parse = option_named(name).parse
    try:
        same = set(parse(given)) == set(parse(implied))
    except ValueError:
        return  # a bad --pypto-<name> value: the option check reports it
    if not same:
        raise pytest.UsageError(
            f"--platform {raw} selects the {what} {', '.join(parse(implied))}, but "
            f"--pypto-{name} {given} selects {', '.join(parse(given))}; give one of them "
            f"(--platform is PyPTO's spelling of --pypto-arch and --pypto-mode)"
        )


def _parametrizes_platform(definition: Any) -> bool:
    for mark in definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",")]
        if "platform" in names:
            return True
    return False


def wants_cells(metafunc: pytest.Metafunc) -> bool:
    """Whether a test of the session-scoped ``test_runner`` needs one item per cell:
    it uses the runner, nothing else binds it to a cell, and it does not parametrize
    ``platform`` itself (then each variant names its platform)."""
    names = metafunc.fixturenames
    return (
        "test_runner" in names
        and not needs_cells(names)
        and not _parametrizes_platform(metafunc.definition)
    )


def case_platform(case: Any, item: Any, fallback: str) -> str:
    """Where a case runs: its own platform (PyPTO's ``get_platform()``), else the test's
    ``platform`` parameter, else the test's cell, else ``fallback``."""
    getter = getattr(case, "get_platform", None)
    chosen = getter() if callable(getter) else None
    if isinstance(chosen, str):
        return chosen
    params = getattr(getattr(item, "callspec", None), "params", {})
    for key in ("platform", "pypto_platform"):
        value = params.get(key)
        if isinstance(value, str) and value in PLATFORMS:
            return value
    return fallback


def session_config(pconfig: pytest.Config, platform: str, dfx: Mapping[str, str]) -> Any:
    """PyPTO's session ``test_config``: the cell's RunConfig with the session's options
    and PyPTO's DFX switches (``--enable-dep-gen``, ...) in their fields."""
    config = RunConfig.from_config(config_of(pconfig, None, platform))
    for option, field in dfx.items():
        value = getattr(pconfig.option, option, None)
        if value:
            setattr(config, field, value)
    planner = getattr(pconfig.option, "memory_planner", "default")
    if planner and planner != "default":
        config.memory_planner = MemoryPlanner(planner)
    return config


class _SessionNode:
    """Stands in for a test item when a runner is used outside any test."""

    nodeid = "<session>"

    def __init__(self) -> None:
        self.user_properties: list[tuple[str, Any]] = []
        self.stash: dict[Any, Any] = {}


def runner_for_case(
    pconfig: pytest.Config, item: Any, platform: str, session: Any, case: Any
) -> Any:
    """The `Runner` of one ``test_runner.run(case)``: the running test's seed and
    artifact directory, ``platform``, the session's PyPTO fields and the case's
    selections.  An onboard platform this host cannot serve skips the test, unless it
    is emulated (then device-only output skips it, saying what emulation lacks)."""
    emulated = is_emulated(pconfig, platform)
    if parse_platform(platform)[1] is not ExecutionMode.SIM and not emulated:
        missing = onboard_missing(pconfig)
        if missing:
            pytest.skip(f"onboard platform {platform}: {missing}")
    node = item if item is not None else _SessionNode()
    config = RunConfig.from_config(config_of(pconfig, node, platform))
    for name in (*PYPTO_ONLY_FIELDS, "enable_dep_gen", "enable_chip_swimlane", "dump_args"):
        setattr(config, name, getattr(session, name))
    lacking = device_only_skip(pconfig, platform, config) if emulated else None
    if lacking:
        pytest.skip(lacking)
    planner = case.get_memory_planner() if hasattr(case, "get_memory_planner") else None
    if planner is not None:  # the case's own selection wins over the session's
        config.memory_planner = planner
    return runner_of(pconfig, node, config)

