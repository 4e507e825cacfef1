"""The session context the plugin lends the harness library (harness/context.py).

Built at configure from the resolved options, this process's compile cache (made on
first use) and ``pytest.skip``; bound for the session's lifetime, so `@pl.jit` and
``CompiledProgram(...)`` calls compile through the session's cache and default to its
first cell, and the codegen-only gate knows whether a test is running.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from pytest_pypto.harness import context as library
from pytest_pypto.plugin.cache import compile_cache
from pytest_pypto.plugin.keys import CONTEXT_KEY
from pytest_pypto.plugin.options import resolved, settings

__all__ = ["context_of"]


def context_of(config: pytest.Config) -> Any:
    """This session's `SessionContext` (None before configure, or under --help)."""
    return config.stash.get(CONTEXT_KEY, None)


def pytest_configure(config: pytest.Config) -> None:
    if not resolved(config):
        return
    context = library.SessionContext(
        settings(config),
        cache_factory=functools.partial(compile_cache, config),
        skip=pytest.skip,
    )
    config.stash[CONTEXT_KEY] = context
    library.bind(context)


def pytest_unconfigure(config: pytest.Config) -> None:
    context = context_of(config)
    if context is not None:
        library.unbind(context)
