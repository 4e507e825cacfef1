# SPDX-License-Identifier: Apache-2.0
"""`SimRuntime`: the bundled numpy simulator behind the `Runtime` protocol.

It is registered like any runtime (entry point ``sim`` in the group
``pytest_pypto.runtimes``) and is the registry's default for the sim platforms.  It
keeps one `Worker` per platform (a worker caches built artifacts), refuses an
artifact or a config of a platform it does not serve with `RuntimeFailure` naming
both, and bounds each run by ``config.timeout`` (``runtime.timeout.deadline``).

Constructing it is cheap: numpy and the worker load on the first ``execute``.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence
from typing import Any

from pytest_pypto._version import __version__
from pytest_pypto.arch import SIM_PLATFORMS  # re-exported: the platforms it serves
from pytest_pypto.ir.artifact import CompiledProgram
from pytest_pypto.runtime.loader import LoadedArtifact, load_artifact
from pytest_pypto.runtime.protocol import RuntimeFailure, compiled_for_another_platform
from pytest_pypto.runtime.timeout import deadline

__all__ = ["SIM_PLATFORMS", "SimRuntime"]


class SimRuntime:
    """The in-process numpy functional simulator (one `Worker` per sim platform)."""

    name = "sim"
    platforms = SIM_PLATFORMS

    def __init__(self) -> None:
        self.version: str = __version__
        self._workers: dict[str, Any] = {}

    def __repr__(self) -> str:
        return f"<SimRuntime {self.version}: {', '.join(self.platforms)}>"

    def worker(self, platform: str) -> Any:
        """The `Worker` of ``platform`` (created on first use, kept until `close`)."""
        worker = self._workers.get(platform)
        if worker is None:
            from pytest_pypto.runtime.worker import Worker  # lazy: numpy, loaded with the first run

            worker = self._workers[platform] = Worker(platform=platform)
        return worker

    def execute(
        self,
        artifact: Any,
        arrays: Sequence[Any],
        *,
        config: Any,
        outputs_in: bool = False,
        device: int | None = None,
    ) -> Any:
        """Run ``artifact`` on the worker of ``config.platform``; returns its `SimRun`."""
        platform = config.platform
        worker = self._workers.get(platform)
        manifest = getattr(artifact, "manifest", None)  # a CompiledProgram or LoadedArtifact
        if (worker is not None and manifest is not None and manifest.platform == platform
                and getattr(config, "timeout", None) is None):
            return worker.dispatch(artifact, arrays, config, outputs_in)
        if platform not in self.platforms:
            raise RuntimeFailure(
                f"runtime 'sim' serves {', '.join(self.platforms)}, not platform "
                f"'{platform}' (the config's)",
                runtime=self.name,
                hint="run on a sim platform, or pick a runtime serving this one "
                "(--pypto-runtime; the report header lists them)",
            )
        manifest, artifact = _manifest_of(artifact)
        if manifest.platform != platform:
            raise compiled_for_another_platform(
                self.name, manifest.program, manifest.platform, platform
            )
        worker = self.worker(platform)
        what = f"'{manifest.program}' on {platform}"
        with _deadline(getattr(config, "timeout", None), what):
            return worker.dispatch(artifact, arrays, config, outputs_in)

    def close(self) -> None:
        """Forget the workers (and the artifacts they built); idempotent."""
        self._workers.clear()


def _manifest_of(artifact: Any) -> tuple[Any, Any]:
    """(its manifest, what the worker runs): a directory is loaded once, here."""
    if isinstance(artifact, (str, os.PathLike)):
        artifact = load_artifact(artifact)
    if isinstance(artifact, (CompiledProgram, LoadedArtifact)):
        return artifact.manifest, artifact
    raise TypeError(
        f"runtime 'sim' executes a CompiledProgram or an artifact directory, "
        f"not {type(artifact).__name__}"
    )


def _deadline(seconds: float | None, what: str) -> Any:
    """``runtime.timeout.deadline``, or no bound when ``seconds`` is None."""
    if seconds is None:
        return contextlib.nullcontext()
    return deadline(seconds, what, runtime=SimRuntime.name)
