"""The plugin's options: ``addoption``, ini keys, env mirrors and resolution.

The table itself (names, parsers, help, `Settings`) is harness/settings.py.
Precedence: command line > env > ini > default.  A bad value is a
``pytest.UsageError`` naming the option, where the value came from, the value and the
valid choices (exit status 4, no traceback).  ``--pypto-alias`` acts before conftests
import (`pytest_load_initial_conftests`), through the compat plugin loaded by name.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_pypto.harness.settings import OPTIONS, Option, Settings, option_named, parse_bool
from pytest_pypto.harness.settings import settings_from as _settings_from
from pytest_pypto.plugin.keys import CONTEXT_KEY, SETTINGS_KEY

__all__ = ["add_options", "early_switch", "resolve", "resolved", "settings", "source_of"]

ALIAS_PLUGIN = "pytest_pypto.compat.alias"


def settings(config: pytest.Config) -> Settings:
    """The resolved options (defaults when configure did not resolve them, e.g. --help)."""
    return config.stash.get(SETTINGS_KEY, None) or Settings()


def resolved(config: pytest.Config) -> bool:
    """Whether this session resolved its options (not under ``--help``)."""
    return SETTINGS_KEY in config.stash


def add_options(parser: pytest.Parser) -> None:
    """Register every option with its ini key (env mirrors are read at resolution)."""
    group = parser.getgroup("pypto", "pytest-pypto")
    for opt in OPTIONS:
        default = f" (default: {opt.default})" if opt.default else ""
        if opt.switch:
            group.addoption(
                opt.flag,
                dest=opt.dest,
                action="store_true",
                default=None,
                help=f"{opt.help}; env {opt.env}, ini {opt.ini} (1/true/yes/on)",
            )
        else:
            bare = {} if opt.bare is None else {"nargs": "?", "const": opt.bare}
            group.addoption(
                opt.flag,
                dest=opt.dest,
                metavar=opt.metavar,
                default=None,
                **bare,
                help=f"{opt.help}: {opt.choices}{default}; env {opt.env}, ini {opt.ini}",
            )
        parser.addini(opt.ini, f"{opt.help} (same as {opt.flag})", type="string", default="")


def _raw(
    config: pytest.Config, opt: Option, env: Mapping[str, str], namespace: Any = None
) -> tuple[str | None, str]:
    """(value, where it came from) by precedence; ``namespace``: parsed arguments to read
    instead of ``config.option`` (before the full parse)."""
    if namespace is not None:
        value = getattr(namespace, opt.dest, None)
    else:
        value = config.getoption(opt.dest, None)
    if value is not None:
        return value, "the command line"
    if env.get(opt.env):
        return env[opt.env], f"environment variable {opt.env}"
    ini = config.getini(opt.ini)
    if ini:
        return ini, f"ini key {opt.ini}"
    return opt.default, "the default"


def source_of(config: pytest.Config, name: str, env: Mapping[str, str] | None = None) -> str:
    """Where option ``name``'s value came from ("the command line", "ini key ...", ...),
    for messages about a value that parsed but cannot be used (plugin/paths.py)."""
    return _raw(config, option_named(name), os.environ if env is None else env)[1]


def early_switch(config: pytest.Config, name: str, env: Mapping[str, str] | None = None) -> bool:
    """A switch as seen before conftests load (pytest_load_initial_conftests): the
    command line as parsed so far, then env, then ini.  A bad value reads as off here;
    `resolve` reports it later as a usage error."""
    opt = option_named(name)
    raw, _ = _raw(config, opt, os.environ if env is None else env, config.known_args_namespace)
    try:
        return parse_bool(raw or False)
    except ValueError:
        return False


def resolve(config: pytest.Config, env: Mapping[str, str] | None = None) -> Settings:
    """Apply command line > env > ini > default to every option, validating each."""
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    for opt in OPTIONS:
        raw, source = _raw(config, opt, env)
        if raw is None:
            continue
        try:
            values[opt.name] = opt.parse(raw)
        except ValueError as exc:
            raise pytest.UsageError(
                f"{opt.flag}: invalid value {raw!r} (from {source}): {exc}. "
                f"Valid values: {opt.choices}."
            ) from None
    return _settings_from(values)


def refresh(config: pytest.Config) -> None:
    """Resolve again after options changed (the compat plugin maps PyPTO's spellings
    onto ours; loaded after the plugin resolved, as by ``--pypto-alias``)."""
    if resolved(config):
        config.stash[SETTINGS_KEY] = resolve(config)
        context = config.stash.get(CONTEXT_KEY, None)
        if context is not None:
            context.settings = config.stash[SETTINGS_KEY]


def pytest_addoption(parser: pytest.Parser) -> None:
    add_options(parser)


@pytest.hookimpl(tryfirst=True)
def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """``--pypto-alias`` acts before conftests import: a suite's conftest may itself
    ``import pypto``, and the compat plugin's options (``--platform``) must be known
    when the command line is parsed."""
    if early_switch(early_config, "alias"):
        manager = early_config.pluginmanager
        manager.import_plugin(ALIAS_PLUGIN)
        alias = manager.get_plugin(ALIAS_PLUGIN)
        if alias is not None:  # None: blocked with -p no:pytest_pypto.compat.alias
            alias.configure(early_config)


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    """Resolve the options before any other hook of the plugin reads them."""
    if getattr(config.option, "help", False):
        return  # --help must work even with a bad PYPTO_* variable around
    config.stash[SETTINGS_KEY] = resolve(config)
