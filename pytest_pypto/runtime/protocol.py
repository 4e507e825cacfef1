"""The `Runtime` protocol: what the harness needs from anything that executes kernels.

A runtime executes a compiled artifact with staged arguments on one platform and
reports back.  The bundled numpy simulator is one implementation; the
process-isolating runtime and the PyPTO adapter are others; a third party ships its
own under the entry-point group ``pytest_pypto.runtimes`` (see
`pytest_pypto.runtime.registry`).  The harness picks the runtime of a cell through
that registry only, never by testing for "sim".

The contract, in full:

* ``name`` (the entry-point name), ``version`` (PEP 440, read with
  ``packaging.version``) and ``platforms`` (wire strings it serves, e.g.
  ``("a2a3", "a5")``) are attributes readable without side effects.
* ``execute(artifact, arrays, *, config, outputs_in=False, device=None)`` runs the
  artifact's entry with ``arrays`` (numpy arrays and Python scalars, in the entry's
  parameter order).  Out/InOut arrays receive their results in place, and only when
  the run succeeded; In arrays are never written.  ``config`` is the cell's
  `RunConfig`; ``device`` the leased NPU id (None on sim).  It returns an
  `Execution`.  An artifact compiled for a platform the runtime does not serve (or
  not the config's platform) is refused with `RuntimeFailure`.
* Failures are exceptions carrying ``failure_class``: ``"runtime-error"`` (the
  kernel failed: bad index, hang, crash of the executing process) or
  ``"device-error"`` (the device or runtime itself failed).  `RuntimeFailure` and
  `DeviceFailure` are the classes to raise; a runtime may raise its own
  `SimulationError` subclasses (runtime-error).  After a failure the runtime must
  accept the next ``execute``.
* ``close()`` releases what the runtime holds (child processes, device handles);
  it is idempotent, and the registry calls it at the end of the session.
* A runtime that cannot work on this host (the PyPTO adapter without PyPTO) raises
  `RuntimeUnavailable` from its constructor: it is then listed as unavailable, with
  the reason, and never chosen; any other exception there makes it *broken*.
* Optional: ``compile(program, config)`` for runtimes that bring their own
  compiler (the PyPTO adapter); the harness uses it when ``compiles`` is true.

An `Execution` is any object with ``platform``, ``outputs`` (entry Out/InOut
arrays by parameter name: the caller's arrays), ``returns`` (the entry's returned
parameters, in order) and ``tasks`` (the executed task trace as dicts, ``[]`` when
the runtime records none).  The simulator's `SimRun` is one.

Standard library only (plus `pytest_pypto.ir.errors`): the registry imports this
while collecting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, runtime_checkable

from pytest_pypto.arch import PLATFORMS
from pytest_pypto.ir.errors import SimulationError

__all__ = [
    "FAILURE_CLASSES",
    "DeviceFailure",
    "Execution",
    "Runtime",
    "RuntimeFailure",
    "RuntimeUnavailable",
    "protocol_problems",
]

FAILURE_CLASSES = ("runtime-error", "device-error")


class RuntimeFailure(SimulationError):
    """A kernel failed while a runtime executed it (failure class ``runtime-error``).

    ``runtime`` names the runtime that reported it, so a report says who failed.
    """

    failure_class = "runtime-error"

    def __init__(self, message: str, *, runtime: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.runtime = runtime


def compiled_for_another_platform(
    runtime: str, program: str, made_for: str, platform: str
) -> RuntimeFailure:
    """What every runtime raises when asked to run an artifact compiled for another
    platform than the run's (the error names both, and how to make them agree)."""
    return RuntimeFailure(
        f"artifact of '{program}' was compiled for platform '{made_for}', but the config "
        f"asks runtime '{runtime}' to run it on '{platform}'",
        runtime=runtime,
        hint=f"compile it with RunConfig(platform='{platform}'), or run it with "
        f"RunConfig(platform='{made_for}')",
    )


class DeviceFailure(RuntimeFailure):
    """The device or the runtime itself failed (failure class ``device-error``)."""

    failure_class = "device-error"


class RuntimeUnavailable(Exception):
    """Raised by a runtime's constructor when it cannot work here (its message says why)."""


@runtime_checkable
class Execution(Protocol):
    """What ``Runtime.execute`` returns."""

    platform: str
    outputs: Any  # Mapping[str, array]
    returns: tuple[Any, ...]

    @property
    def tasks(self) -> list[dict[str, Any]]: ...


@runtime_checkable
class Runtime(Protocol):
    """Executes compiled artifacts on the platforms it serves (module docstring)."""

    name: str
    version: str
    platforms: tuple[str, ...]

    def execute(
        self,
        artifact: Any,
        arrays: Sequence[Any],
        *,
        config: Any,
        outputs_in: bool = False,
        device: int | None = None,
    ) -> Execution: ...

    def close(self) -> None: ...


def protocol_problems(runtime: Any) -> list[str]:
    """What ``runtime`` lacks of the protocol (empty: it conforms).

    Checked when a runtime is loaded, so a broken one is one clear error naming the
    missing pieces instead of an AttributeError in every test.
    """
    problems = []
    for attr in ("name", "version"):
        if not isinstance(getattr(runtime, attr, None), str):
            problems.append(f"'{attr}' must be a string")
    version = getattr(runtime, "version", None)
    if isinstance(version, str):
        from packaging.version import InvalidVersion, Version  # lazy: third-party, rarely asked

        try:
            Version(version)
        except InvalidVersion:
            problems.append(f"version {version!r} is not a PEP 440 version")
    platforms = getattr(runtime, "platforms", None)
    if not isinstance(platforms, (tuple, list)) or not platforms:
        problems.append("'platforms' must be a non-empty tuple of platform strings")
    else:
        bad = [p for p in platforms if p not in PLATFORMS]
        if bad:
            problems.append(
                f"'platforms' has {', '.join(map(repr, bad))}; valid: {', '.join(PLATFORMS)}"
            )
    for method in ("execute", "close"):
        if not callable(getattr(runtime, method, None)):
            problems.append(f"'{method}' must be a method")
    if getattr(runtime, "compiles", False) and not callable(getattr(runtime, "compile", None)):
        problems.append("'compiles' is true but there is no 'compile' method")
    return problems
