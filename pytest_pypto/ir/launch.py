"""The one seam from the language up to the layers above: how `@pl.jit` kernels and
`CompiledProgram(...)` calls reach the compiler, the compile cache and the simulator.

Imports go one way (upward imports are not allowed), yet calling a `@pl.jit` function
or a `CompiledProgram` must compile and run.  A higher layer registers a `Launcher`
here; the package face installs a default factory that `launcher()` calls on first
use when nothing was registered, so this layer names no module above it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["Launcher", "launcher", "register", "register_default", "set_default_factory"]


class Launcher(Protocol):
    """What the language and the IR ask of the layer that compiles and runs."""

    def config(self, config: Any) -> Any:
        """The RunConfig of a call: ``config`` itself, or the session's default cell."""

    def compile(self, program: Any, config: Any) -> Any:
        """``program`` compiled for ``config`` (through the compile cache)."""

    def lower(self, program: Any, config: Any) -> Any:
        """``program`` after every pass for ``config`` (no codegen, nothing cached)."""

    def call(self, compiled: Any, args: tuple[Any, ...], config: Any) -> Any:
        """Run ``compiled`` with PyPTO's call conventions; its outputs or None."""

    def coerce(self, compiled: Any, args: tuple[Any, ...]) -> tuple[list[Any], Any]:
        """PyPTO's argument rules for ``compiled``: the full argument list and what a
        call returns (None in place; the allocated outputs in return style)."""


_registered: Launcher | None = None
_factory: Callable[[], Launcher | None] | None = None


def register(launcher: Launcher | None) -> Launcher | None:
    """Install ``launcher`` (None: forget it); returns the one it replaces."""
    global _registered
    previous, _registered = _registered, launcher
    return previous


def register_default(launcher: Launcher) -> None:
    """Install ``launcher`` unless one is installed (a module imported twice, as an
    in-process pytester session does, keeps the first)."""
    if _registered is None:
        register(launcher)


def set_default_factory(factory: Callable[[], Launcher | None] | None) -> None:
    """Install what `launcher()` calls when no launcher is registered: it registers one
    (or returns it, to be registered); None removes it."""
    global _factory
    _factory = factory


def launcher() -> Launcher:
    """The registered launcher, asking the default factory for one on first use."""
    if _registered is None:
        if _factory is None:
            raise RuntimeError("no launcher: import pytest_pypto (it installs the default one)")
        made = _factory()
        if made is not None:
            register_default(made)
    assert _registered is not None
    return _registered
