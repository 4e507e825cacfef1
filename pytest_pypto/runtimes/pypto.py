# SPDX-License-Identifier: Apache-2.0
"""`PyptoRuntime`: compile with PyPTO's own compiler and run with PyPTO's runtime.

A machine with PyPTO (and an NPU) then runs the same tests on hardware: the
registry picks this runtime for the onboard cells it serves (or any cell under
``--pypto-runtime pypto``).  Without a real ``pypto`` package the constructor
raises `RuntimeUnavailable`, so the entry point is listed and never chosen.

**Verified on hardware: nothing, so far.**  This machine has neither PyPTO's
native build nor an NPU; the adapter is exercised here only against a stand-in
of the surface below (``ut/runtime/standin_pypto``), which delegates to our own
compiler and simulator.

What the adapter uses of PyPTO 0.1 (read in PyPTO's repository, facts only):

* ``pypto.__version__`` (the same string as the
  ``version`` of PyPTO's ``pyproject.toml``), checked against `SUPPORTED`.
* ``pypto.language`` with ``@pl.program``, which parses a class into an
  ``ir.Program`` from its source: the decorator reads the class with
  ``inspect``/``linecache`` (``pypto.language.parser.source_lookup``) and resolves
  names in the caller frame's globals and locals (``pypto.language.parser.decorator``).
  `pypto_source.rebuild_program` feeds it our program's class statement.
* ``pypto.backend.BackendType.Ascend910B`` / ``.Ascend950``: the codegen backend
  (``pypto.backend``, ``pypto_core/backend.pyi``); PyPTO's
  ``RunConfig`` derives it from the platform (``a5*`` -> Ascend950),
  ``pypto.runtime.runner``, and ``ir.compile`` lets ``platform=`` pick it
  (``pypto.ir.compile``: ``_select_backend``).
* ``pypto.ir.compile(program, output_dir=..., dump_passes=..., backend_type=...,
  platform=...)`` -> ``CompiledProgram`` (``pypto.ir.compile``; called
  the same way by ``pypto.runtime.run`` and by PyPTO's
  ``test_benchmark_st``).
* ``CompiledProgram.platform`` and ``CompiledProgram(*args, config=RunConfig)``:
  the in-place calling convention (every parameter given: torch tensors for
  tensors, Python scalars for scalars; results land in the passed tensors; returns
  None), run on ``config.platform`` with ``config.device_id``
  (``pypto.ir.compiled_program``: ``__call__`` and ``_invoke_compiled``;
  PyPTO's ``test_compiled_program``).
* ``pypto.runtime.RunConfig(platform=..., device_id=...)``; its platforms are
  ``a2a3sim``, ``a2a3``, ``a5sim``, ``a5`` (``pypto.runtime.runner``).
* Failures are plain Python exceptions (``RuntimeError`` from the runtime,
  ``TypeError``/``ValueError`` for bad arguments, ``pypto.Error``): PyPTO does not
  tell a failing kernel from a failing device, so every execution failure becomes
  `DeviceFailure` (``device-error``, runtime "pypto") carrying PyPTO's message, and
  every compile failure a `CompileError` (``compile-error``).

Every call into PyPTO goes through one `PyptoApi` object, so tests substitute a
stand-in package and the seam is the whole of what must hold on hardware.
Arrays cross as torch tensors made from *copies* of the caller's numpy arrays;
Out/InOut results are copied back only after PyPTO returned, so In arrays are
never written and a failed run leaves the caller's arrays as they were.  PyPTO's
device buffers start as the passed tensors, so pure Out parameters start with
the caller's data whatever ``outputs_in`` says.
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import itertools
import os
import shutil
import tempfile
import weakref
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from pytest_pypto.arch import PLATFORMS as _ALL_PLATFORMS
from pytest_pypto.arch import ExecutionMode, parse_platform
from pytest_pypto.runtime.protocol import (
    DeviceFailure,
    RuntimeFailure,
    RuntimeUnavailable,
    compiled_for_another_platform,
)

__all__ = ["SUPPORTED", "PyptoApi", "PyptoArtifact", "PyptoRun", "PyptoRuntime"]

NAME = "pypto"
# The PyPTO versions whose public surface the adapter was written against.
SUPPORTED = SpecifierSet(">=0.1.0,<0.2")
# PyPTO's RunConfig accepts exactly the four platforms of our arch table.
PLATFORMS = tuple(_ALL_PLATFORMS)
_NOT_IMPORTABLE = "the real 'pypto' package is not importable"


class PyptoApi:
    """The seam: every call the adapter makes into a ``pypto`` package."""

    def __init__(self, module: Any) -> None:
        self.module = module

    @classmethod
    def import_real(cls) -> PyptoApi:
        """The installed PyPTO, refused (`RuntimeUnavailable`) when there is none or
        ``pypto`` is our own compat alias."""
        from pytest_pypto.compat.alias import real_pypto  # lazy: no pytest outside pytest

        if real_pypto() is None:
            raise RuntimeUnavailable(_NOT_IMPORTABLE)
        try:
            module = importlib.import_module("pypto")
        except ImportError as exc:
            raise RuntimeUnavailable(f"{_NOT_IMPORTABLE} ({type(exc).__name__}: {exc})") from None
        if is_ours(module):
            raise RuntimeUnavailable(
                f"{_NOT_IMPORTABLE} ('pypto' is pytest-pypto's compat alias)"
            )
        return cls(module)

    @property
    def version(self) -> str:
        return str(getattr(self.module, "__version__", ""))

    @property
    def location(self) -> str:
        return str(getattr(self.module, "__file__", None) or self.module)

    def language(self) -> Any:
        return importlib.import_module(f"{self.module.__name__}.language")

    def compile(self, program: Any, *, platform: str, output_dir: Path) -> Any:
        """``pypto.ir.compile`` for ``platform``, writing into ``output_dir``."""
        top = self.module.__name__
        ir = importlib.import_module(f"{top}.ir")
        # PyPTO's BackendType members have our members' names (Ascend910B, Ascend950).
        backend = importlib.import_module(f"{top}.backend").BackendType
        backend_type = getattr(backend, parse_platform(platform)[0].name)
        return ir.compile(
            program, output_dir=str(output_dir), dump_passes=False,
            backend_type=backend_type, platform=platform,
        )

    def run(self, compiled: Any, args: Sequence[Any], *, platform: str, device_id: int) -> None:
        """An in-place call of PyPTO's ``CompiledProgram`` on ``platform``/``device_id``."""
        runtime = importlib.import_module(f"{self.module.__name__}.runtime")
        compiled(*args, config=runtime.RunConfig(platform=platform, device_id=device_id))


def is_ours(module: Any) -> bool:
    """Is this module pytest-pypto's own (the compat alias of ``pypto``)?"""
    name = str(getattr(module, "__name__", ""))
    if name.startswith("pytest_pypto"):
        return True
    here = Path(__file__).resolve().parents[1]
    file = getattr(module, "__file__", None)
    return bool(file) and here in Path(file).resolve().parents


class PyptoArtifact:
    """What `PyptoRuntime.compile` builds: PyPTO's ``CompiledProgram`` plus the entry's
    parameter directions (read from our parse of the same class)."""

    def __init__(
        self, *, program: str, platform: str, compiled: Any, output_dir: Path,
        params: list[tuple[str, str]] | None, returns: list[int],
    ) -> None:
        self.program = program
        self.platform = platform
        self.compiled = compiled
        self.output_dir = output_dir
        self.params = params  # (name, direction) of the entry; None: unknown
        self.returns = returns

    @property
    def program_name(self) -> str:
        return self.program

    def __repr__(self) -> str:
        return f"<PyptoArtifact {self.program} for {self.platform} in {self.output_dir}>"


class PyptoRun:
    """The `Execution` of one PyPTO run (PyPTO reports no task trace: ``tasks`` is [])."""

    def __init__(self, *, program: str, platform: str, outputs: dict[str, Any],
                 returns: tuple[Any, ...], device: int | None) -> None:
        self.program = program
        self.platform = platform
        self.outputs = outputs
        self.returns = returns
        self.device = device
        self.tasks: list[dict[str, Any]] = []

    def __getitem__(self, name: str) -> Any:
        return self.outputs[name]

    def __repr__(self) -> str:
        return f"<PyptoRun {self.program} on {self.platform}: outputs {sorted(self.outputs)}>"


class PyptoRuntime:
    """The `Runtime` that compiles and executes with PyPTO (module docstring)."""

    name = NAME
    compiles = True

    def __init__(self, api: PyptoApi | None = None) -> None:
        self._api = api if api is not None else PyptoApi.import_real()
        found = self._api.version
        try:
            version = Version(found)
        except InvalidVersion:
            raise RuntimeUnavailable(
                f"pypto at {self._api.location} reports version {found!r}, not a PEP 440 "
                f"version; this adapter supports pypto {SUPPORTED}"
            ) from None
        if version not in SUPPORTED:
            raise RuntimeUnavailable(
                f"pypto {found} (at {self._api.location}) is outside the versions this "
                f"adapter supports: pypto {SUPPORTED}"
            )
        self.version = found
        self.platforms = PLATFORMS
        self.closed = False
        self._compiled: weakref.WeakKeyDictionary[Any, dict[tuple, PyptoArtifact]] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"PyptoRuntime(pypto {self.version})"

    # -- compile -----------------------------------------------------------------------

    def compile(self, program: Any, config: Any) -> PyptoArtifact:
        """Build PyPTO's program from ``program``'s class source and compile it with
        PyPTO for ``config.platform`` (once per program object and compile options)."""
        key = (config.platform, bool(getattr(config, "save_kernels", False)),
               getattr(config, "save_kernels_dir", None))
        try:
            per_program = self._compiled.setdefault(program, {})
        except TypeError:  # not weak-referenceable: no memo
            per_program = {}
        artifact = per_program.get(key)
        if artifact is None:
            artifact = per_program[key] = self._compile(program, config)
        return artifact

    def _compile(self, program: Any, config: Any) -> PyptoArtifact:
        from pytest_pypto.ir.errors import CompileError  # lazy: a numpy-free registry
        from pytest_pypto.ir.nodes import Program  # lazy: a numpy-free registry
        from pytest_pypto.language.deferred import DeferredProgram  # lazy: a numpy-free registry

        platform = config.platform
        self._check_serves(platform)
        if isinstance(program, DeferredProgram):
            raise program.error()
        arch = parse_platform(platform)[0].arch_name
        params: list[tuple[str, str]] | None = None
        returns: list[int] = []
        if isinstance(program, Program):
            from pytest_pypto.runtimes.pypto_source import (  # lazy: a numpy-free registry
                RebuildError,
                rebuild_program,
            )

            name, span = program.name, program.span
            params, returns = _entry_of(program)
            try:
                theirs = rebuild_program(program, self._api.language())
            except RebuildError as exc:
                raise CompileError(str(exc), span, arch=arch) from None
            except Exception as exc:  # PyPTO's parser rejected the class
                raise CompileError(
                    f"pypto could not parse program '{name}': {type(exc).__name__}: {exc}",
                    span, arch=arch,
                ) from exc
        else:  # already PyPTO's (a module importing the real pypto.language)
            theirs, span = program, None
            name = str(getattr(program, "name", type(program).__name__))
        output_dir = _output_dir(config, name)
        try:
            compiled = self._api.compile(theirs, platform=platform, output_dir=output_dir)
        except Exception as exc:
            raise CompileError(
                f"pypto could not compile program '{name}' for {platform}: "
                f"{type(exc).__name__}: {exc}",
                span, arch=arch,
            ) from exc
        return PyptoArtifact(program=name, platform=platform, compiled=compiled,
                             output_dir=output_dir, params=params, returns=returns)

    # -- execute -----------------------------------------------------------------------

    def execute(
        self, artifact: Any, arrays: Sequence[Any], *, config: Any,
        outputs_in: bool = False, device: int | None = None,
    ) -> PyptoRun:
        """Run ``artifact`` (from `compile`) with PyPTO; Out/InOut results are copied
        into ``arrays`` after PyPTO returned."""
        platform = config.platform
        self._check_serves(platform)
        if not isinstance(artifact, PyptoArtifact):
            raise RuntimeFailure(
                f"the 'pypto' runtime executes what its own compile() built; got "
                f"{type(artifact).__name__} (compiled by pytest-pypto's compiler?)",
                runtime=NAME,
                hint="pass the @pl.program itself, so the harness compiles it with PyPTO",
            )
        if artifact.platform != platform:
            raise compiled_for_another_platform(NAME, artifact.program, artifact.platform,
                                                platform)
        params = artifact.params
        if params is not None and len(arrays) != len(params):
            listed = ", ".join(n for n, _ in params)
            raise RuntimeFailure(
                f"'{artifact.program}' takes {len(params)} arguments ({listed}), "
                f"got {len(arrays)}",
                runtime=NAME,
            )
        from pytest_pypto.runtimes import pypto_tensors  # lazy: a numpy-free registry

        args = [pypto_tensors.to_pypto(a) for a in arrays]
        device_id = device if device is not None else (config.device_id or 0)
        with _deadline(config.timeout, f"pypto run of '{artifact.program}' on {platform}"):
            try:
                self._api.run(artifact.compiled, args, platform=platform, device_id=device_id)
            except RuntimeFailure:
                raise
            except Exception as exc:
                on = platform if _on_sim(platform) else f"{platform} device {device_id}"
                raise DeviceFailure(
                    f"pypto failed running '{artifact.program}' on {on}: "
                    f"{type(exc).__name__}: {exc}",
                    runtime=NAME,
                ) from exc
        outputs: dict[str, Any] = {}
        for i, (caller, arg) in enumerate(zip(arrays, args)):
            direction = params[i][1] if params is not None else "InOut"
            if direction in ("Out", "InOut") and pypto_tensors.is_array(caller):
                pypto_tensors.copy_back(caller, arg)
                if params is not None:
                    outputs[params[i][0]] = caller
        return PyptoRun(
            program=artifact.program, platform=platform, outputs=outputs,
            returns=tuple(arrays[i] for i in artifact.returns if i < len(arrays)),
            device=None if _on_sim(platform) else device,
        )

    def close(self) -> None:
        """Nothing is held between runs (PyPTO opens its worker per call); idempotent."""
        self.closed = True

    def _check_serves(self, platform: str) -> None:
        if platform not in self.platforms:
            raise RuntimeFailure(
                f"the 'pypto' runtime does not serve platform '{platform}'; it serves "
                f"{', '.join(self.platforms)}",
                runtime=NAME,
            )


# -- helpers ---------------------------------------------------------------------------


def _on_sim(platform: str) -> bool:
    return parse_platform(platform)[1] is ExecutionMode.SIM


def _entry_of(program: Any) -> tuple[list[tuple[str, str]] | None, list[int]]:
    """(name, direction) of the entry's parameters and the positions it returns, as
    PyPTO picks the entry: the Orchestration function, else the only function."""
    functions = list(program.functions.values())
    entry = next((f for f in functions if f.kind == "Orchestration"), None)
    if entry is None and len(functions) == 1:
        entry = functions[0]
    if entry is None:
        return None, []
    params = [(p.name, p.direction.value) for p in entry.params]
    try:
        from pytest_pypto.compiler.directions import returned_params  # lazy: numpy-free registry

        returns = returned_params(entry, program)
    except Exception:  # noqa: BLE001  (returns are a convenience; directions suffice)
        returns = []
    return params, returns


_dirs = itertools.count()
_temp_root: Path | None = None


def _output_dir(config: Any, program: str) -> Path:
    """Where PyPTO writes one compile: under the kernels dir when kernels are kept,
    else in a per-process temporary directory removed at exit."""
    global _temp_root
    n = next(_dirs)
    if getattr(config, "save_kernels", False):
        base = Path(getattr(config, "save_kernels_dir", None) or "build_output")
        path = base / f"{program}-pypto-{config.platform}-{os.getpid()}-{n:04d}"
    else:
        if _temp_root is None:
            _temp_root = Path(tempfile.mkdtemp(prefix="pypto-adapter-"))
            atexit.register(shutil.rmtree, _temp_root, True)
        path = _temp_root / f"{program}-{config.platform}-{n:04d}"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _deadline(seconds: float | None, what: str) -> Any:
    """`runtime.timeout.deadline` (a no-op context when that module is absent)."""
    try:
        from pytest_pypto.runtime.timeout import deadline  # lazy: that module may be absent
    except ImportError:
        return contextlib.nullcontext()
    return deadline(seconds, what, runtime=NAME)
