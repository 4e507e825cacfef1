"""pytest-pypto: the test harness for PyPTO tile kernels.

Importing this package is cheap: the toolchain (numpy, the compiler, the simulator)
loads only when one of its entry points is first used.  The package face also installs
the default launcher (`ir.launch`): calling a `@pl.jit` function or a `CompiledProgram`
imports the harness then, so the language and the IR never name it.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from pytest_pypto._version import __version__
from pytest_pypto.config import BackendType, ExecutionMode, RunConfig
from pytest_pypto.ir import launch as _launch

__all__ = [
    "BackendType",
    "ExecutionMode",
    "RunConfig",
    "__version__",
    "assert_close",
    "compile",
    "run",
]

# Public names served lazily: name -> module that defines it.
_LAZY = {
    "compile": "pytest_pypto.compiler.api",
    "run": "pytest_pypto.harness.dispatch",
    "CompiledProgram": "pytest_pypto.ir.artifact",
    "assert_close": "pytest_pypto.harness.compare",
}

if TYPE_CHECKING:  # pragma: no cover
    from pytest_pypto.compiler.api import compile  # noqa: F401
    from pytest_pypto.harness.compare import assert_close  # noqa: F401
    from pytest_pypto.harness.dispatch import run
    from pytest_pypto.ir.artifact import CompiledProgram  # noqa: F401


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_pypto' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def _harness_launcher() -> _launch.Launcher | None:
    """The harness's launcher: importing `harness.jit` registers it (and importing
    `harness.distributed_program` the compiler of `@pl.jit.host` programs)."""
    importlib.import_module("pytest_pypto.harness.jit")  # lazy: the face stays cheap to import
    importlib.import_module("pytest_pypto.harness.distributed_program")  # lazy: as above
    return None


_launch.set_default_factory(_harness_launcher)
