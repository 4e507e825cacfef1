"""`pytest_pypto.run`: compile when needed, then dispatch on the simulator of the platform.

The harness sits above both the compiler and the runtime, so this is where a
parsed program meets a `Worker`.  The compiler is imported lazily: dispatching an
already compiled artifact never loads it.  A program passed again with the same
compile options reuses its artifact (an in-process memo per program object), so
calling ``run`` in a loop compiles once.
"""

from __future__ import annotations

import os
import weakref
from typing import TYPE_CHECKING, Any

from pytest_pypto.config import RunConfig
from pytest_pypto.ir.artifact import CompiledProgram

if TYPE_CHECKING:  # pragma: no cover
    from pytest_pypto.runtime.worker import SimRun, Worker

__all__ = ["run", "worker_for"]

_DEFAULT = RunConfig()
_workers: dict[str, Worker] = {}
_compiled: weakref.WeakKeyDictionary[Any, dict[tuple, CompiledProgram]] = (
    weakref.WeakKeyDictionary()
)


def _compile(program: Any, config: RunConfig) -> CompiledProgram:
    """Compile ``program`` for ``config`` once per (program object, compile options)."""
    key = (config.platform, config.dump_passes, config.save_kernels, config.save_kernels_dir)
    try:
        per_program = _compiled.setdefault(program, {})
    except TypeError:  # not weak-referenceable: no memo
        per_program = {}
    compiled = per_program.get(key)
    if compiled is None or not (compiled.artifact_dir / "kernel_config.json").is_file():
        from pytest_pypto.compiler.api import compile as compile_program

        compiled = per_program[key] = compile_program(program, config)
    return compiled


def worker_for(platform: str) -> Worker:
    """The process-wide `Worker` of a platform (raises for onboard platforms)."""
    worker = _workers.get(platform)
    if worker is None:
        from pytest_pypto.runtime.worker import Worker

        worker = _workers[platform] = Worker(platform=platform)
    return worker


def run(
    program_or_compiled: Any, *arrays: Any, config: RunConfig = _DEFAULT,
    outputs_in: bool = False,
) -> SimRun | CompiledProgram:
    """Run a kernel program on ``config.platform`` with ``arrays`` bound to the entry's params.

    ``program_or_compiled`` is a parsed program (``@pl.program``; compiled here with
    ``config``), a `CompiledProgram`, or an artifact directory.  Out/InOut arrays
    (numpy arrays or CPU torch tensors) receive the results in place; the returned `SimRun` also holds them by name, the
    executed task graph and the path of its ``deps.json``.  ``outputs_in``: pure Out
    arrays start with the caller's data instead of poison (PyPTO's cases).  With
    ``config.codegen_only`` nothing is dispatched and the `CompiledProgram` is returned.
    """
    if isinstance(program_or_compiled, (CompiledProgram, str, os.PathLike)):
        compiled = program_or_compiled
    else:
        compiled = _compile(program_or_compiled, config)
    if config.codegen_only:
        if not isinstance(compiled, CompiledProgram):
            raise TypeError("codegen_only needs a program or a CompiledProgram, not a path")
        return compiled
    arrays = tuple(_at_boundary(a) for a in arrays)
    return worker_for(config.platform).run(compiled, *arrays, config=config, outputs_in=outputs_in)


def _at_boundary(value: Any) -> Any:
    """torch tensors become numpy views of their memory (results written in place)."""
    from pytest_pypto.harness.tensors import is_torch, torch_view

    return torch_view(value) if is_torch(value) and hasattr(value, "detach") else value
