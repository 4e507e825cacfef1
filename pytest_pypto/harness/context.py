"""What a running pytest session lends the harness library: the session context.

The library never reads pytest's config and never imports the plugin.  The plugin
builds one `SessionContext` per session (its settings, its compile cache, how a test
ends as a skip) and binds it here for the session's lifetime; `@pl.jit` calls,
``CompiledProgram(...)`` calls and the codegen-only gate ask `current()`.  Outside
pytest there is none and they use their documented defaults.

Sessions nest (pytester runs sessions in-process), so the bound contexts form a stack
and the innermost one answers.  This module is imported by the plugin at startup, so
the stack outlives any module an in-process session drops and re-imports.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from pytest_pypto.arch import ExecutionMode, parse_platform
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.settings import Settings

__all__ = ["SessionContext", "bind", "current", "run_config", "unbind"]


class SessionContext:
    """One pytest session as the library sees it.

    ``cache_factory`` builds the session's `CompileCache` on first use (a session that
    compiles nothing probes no directory); ``skip`` ends the running test as skipped
    (``pytest.skip``).  ``running`` is the test item in progress (set by the plugin
    around each test), ``compiled`` what was compiled under ``--pypto-codegen-only``:
    ``(platform, program, digest) -> kernels``.
    """

    def __init__(
        self,
        settings: Settings,
        *,
        cache_factory: Callable[[], Any],
        skip: Callable[[str], NoReturn],
    ) -> None:
        self.settings = settings
        self._cache_factory = cache_factory
        self._cache: Any = None
        self.skip = skip
        self.running: Any = None
        self.compiled: dict[tuple[str, str, str], int] = {}

    def cache(self) -> Any:
        """The session's compile cache (built on first use)."""
        if self._cache is None:
            self._cache = self._cache_factory()
        return self._cache

    @property
    def codegen_only(self) -> bool:
        """Whether the session runs with ``--pypto-codegen-only``."""
        return self.settings.codegen_only

    def default_config(self) -> RunConfig:
        """The RunConfig of the session's first cell (``RunConfig()`` without one)."""
        cells = self.settings.cells
        return run_config(self.settings, cells[0]) if cells else RunConfig()

    def compiled_entries(self) -> list[list[Any]]:
        """What `compiled` holds as ``[platform, program, digest, kernels]`` lists (plain
        data an xdist worker can ship)."""
        return [[*key, kernels] for key, kernels in sorted(self.compiled.items())]


# The bound contexts, innermost last.
_contexts: list[SessionContext] = []


def bind(context: SessionContext) -> None:
    """Make ``context`` the current one (its session started)."""
    _contexts.append(context)


def unbind(context: SessionContext) -> None:
    """Forget ``context`` (its session ended)."""
    if context in _contexts:
        _contexts.remove(context)


def current() -> SessionContext | None:
    """The innermost running session's context (None outside pytest)."""
    return _contexts[-1] if _contexts else None


def run_config(
    settings: Settings,
    platform: str,
    *,
    seed: int | None = None,
    keep_dir: str | Path | None = None,
    device: int | None = None,
    isolate: bool = False,
) -> RunConfig:
    """The RunConfig of ``platform`` with the session's options applied.

    ``keep_dir``: where the test's artifact goes when the options keep every one
    (saved, dumped or traced: dumps must be readable, traces land next to the
    artifact); ``isolate``: the test asks for a child process (on sim cells).
    """
    keep = keep_dir is not None and (
        settings.save_kernels or settings.dump_passes or settings.trace
    )
    # "isolated" for a sim cell under --pypto-isolate or the pypto_isolate marker,
    # else the --pypto-runtime choice (None: the registry's default for the platform).
    isolated = (settings.isolate or isolate) and parse_platform(platform)[1] is ExecutionMode.SIM
    runtime = "isolated" if isolated else settings.runtime
    timeout = settings.timeout
    if timeout is None and runtime == "isolated":  # a hang fails only the test
        timeout = settings.isolate_timeout
    return RunConfig(
        platform=platform,
        seed=seed,
        device_id=device,
        codegen_only=settings.codegen_only,
        save_kernels=settings.save_kernels,
        save_kernels_dir=str(keep_dir) if keep else None,
        dump_passes=settings.dump_passes,
        schedule_seed=settings.shuffle,
        strict_war=settings.strict_war,
        race_check=not settings.no_race_check,
        dump_args=settings.dump_args,
        precise=settings.precise,
        timeout=timeout,
        trace=settings.trace,
        runtime=runtime,
        max_memory=settings.max_memory,
    )
