"""The one seam from the language up to the harness: how `@pl.jit` kernels and
`CompiledProgram(...)` calls reach the compiler, the compile cache and the simulator.

Imports go one way (language -> ir -> compiler -> runtime -> harness), yet calling a
`@pl.jit` function or a `CompiledProgram` must compile and run.  The harness
registers a `Launcher` here (``pytest_pypto.harness.jit``, which registers itself
when imported); `launcher()` imports that module on first use when nothing was
registered.  That lazy import is the single place a lower layer names the harness.
"""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["Launcher", "launcher", "register", "register_default"]


class Launcher(Protocol):
    """What the language and the IR ask of the harness."""

    def config(self, config: Any) -> Any:
        """The RunConfig of a call: ``config`` itself, or the session's default cell."""

    def compile(self, program: Any, config: Any) -> Any:
        """``program`` compiled for ``config`` (through the compile cache)."""

    def call(self, compiled: Any, args: tuple[Any, ...], config: Any) -> Any:
        """Run ``compiled`` with PyPTO's call conventions; its outputs or None."""


_registered: Launcher | None = None


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


def launcher() -> Launcher:
    """The registered launcher, importing the harness's on first use."""
    if _registered is None:
        import importlib

        importlib.import_module("pytest_pypto.harness.jit")  # registers itself
    assert _registered is not None
    return _registered
