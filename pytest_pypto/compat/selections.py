"""PyPTO's compile-time selections, and `ir.compile` with PyPTO's signature.

PyPTO lets a caller pick a pass-pipeline strategy and an on-chip memory planner.
The bundled toolchain has one pipeline and one planner (capacity checked by
liveness, docs/design/checks.md), so these selections are accepted, recorded in the
artifact's manifest (``extra["accepted_without_effect"]``) and change nothing else,
except that ``MemoryPlanner.PTOAS`` refuses the declared allocations (`pl.MemRef`)
PyPTO cannot lower under it (compat/runconfig.py turns it into our
``RunConfig.assembler_plans_memory``, which compiler/memref_slots.py reads).
"""

from __future__ import annotations

import enum
import json
from pathlib import Path
from typing import Any

from pytest_pypto.arch import BackendType, ExecutionMode
from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.language.distributed_host import host_program

__all__ = [
    "LogLevel",
    "configure_log",
    "current_log_level",
    "get_backend_type",
    "is_backend_configured",
    "reset_for_testing",
    "set_backend_type",
    "MemoryPlanner",
    "OptimizationStrategy",
    "PassDumpLevel",
    "compile_program",
    "ir_compile",
]


class OptimizationStrategy(enum.Enum):
    """PyPTO's pass-pipeline strategies (only ``Default`` exists there too)."""

    Default = "Default"


class MemoryPlanner(enum.Enum):
    """Who plans on-chip buffers in PyPTO; no effect on the simulation (PTOAS refuses
    some `pl.MemRef` declarations at compile time, as PyPTO's codegen does)."""

    PYPTO = "pypto"
    DSA_RP = "dsa-rp"
    PTOAS = "ptoas"


class LogLevel(enum.Enum):
    """PyPTO's C++ log threshold; accepted, the bundled toolchain logs nothing."""

    DEBUG = 0
    INFO = 1
    WARN = 2
    ERROR = 3
    FATAL = 4
    EVENT = 5
    NONE = 6


# PyPTO's runtime log levels by name (Python logging thresholds; "timing" sits between
# info and warn, "null" silences everything).
_LOG_LEVELS = {"debug": 10, "info": 20, "timing": 25, "warn": 30, "warning": 30,
               "error": 40, "null": 100}
_log_level = [30]


def configure_log(level: int | str = "warn", *, sync_pypto: bool = False) -> None:
    """PyPTO's runtime log threshold (a logging int or one of debug, info, timing,
    warn, error, null): checked and remembered (`current_log_level`); the simulator
    writes no runtime log, so it changes nothing else."""
    if isinstance(level, bool) or not isinstance(level, (int, str)):
        raise TypeError(f"configure_log: level must be an int or a name, got {level!r}")
    if isinstance(level, str):
        if level.lower() not in _LOG_LEVELS:
            raise ValueError(
                f"configure_log: unknown level {level!r}; valid: {', '.join(_LOG_LEVELS)}"
            )
        level = _LOG_LEVELS[level.lower()]
    _log_level[0] = level


def current_log_level() -> int:
    """The threshold `configure_log` set last (30, warn, by default)."""
    return _log_level[0]


class PassDumpLevel(enum.Enum):
    """PyPTO's ``dump_passes`` verbosity; any level but NONE dumps every pass here."""

    NONE = 0
    CONCISE = 1
    FULL = 2


# PyPTO's process-wide backend: the arch `ir_compile` targets when given none.
_backend: BackendType | None = None


def set_backend_type(backend: BackendType) -> None:
    """Select the arch later ``ir.compile`` calls target by default."""
    global _backend
    if not isinstance(backend, BackendType):
        raise TypeError(f"set_backend_type({backend!r}): expected a BackendType")
    _backend = backend


def get_backend_type() -> BackendType:
    """The selected backend (Ascend910B when none was selected)."""
    return _backend or BackendType.Ascend910B


def is_backend_configured() -> bool:
    return _backend is not None


def reset_for_testing() -> None:
    """Forget the selected backend."""
    global _backend
    _backend = None


def _dumps(level: Any) -> bool:
    if isinstance(level, PassDumpLevel):
        return level is not PassDumpLevel.NONE
    return bool(level)


def ir_compile(
    program: Any,
    output_dir: str | Path | None = None,
    strategy: OptimizationStrategy = OptimizationStrategy.Default,
    dump_passes: Any = False,
    backend_type: BackendType | None = None,
    *,
    platform: str | None = None,
    memory_planner: MemoryPlanner | None = None,
    **accepted: Any,
) -> Any:
    """PyPTO's ``ir.compile(program, output_dir, strategy, dump_passes, backend_type, ...)``.

    Returns our `CompiledProgram`.  ``platform`` (e.g. ``"a5sim"``) wins over
    ``backend_type`` (default: the `set_backend_type` selection, else Ascend910B);
    without it the artifact is for the backend's simulator cell.
    Every other PyPTO keyword (``skip_ptoas``, ``verification_level``,
    ``enable_pypto_l0c_double_buffer``, ...) is accepted and recorded.
    PyPTO dumps passes by default; here only when asked (``dump_passes=True``).
    """
    from pytest_pypto.compat.multi_orch import (  # lazy: compat plugin import cost
        MultiOrchCompiledProgram,
        orchestration_names,
    )
    from pytest_pypto.compiler.api import compile as compile_  # lazy: compat plugin import cost

    if accepted.get("distributed_config") is not None or host_program(program) is not None:
        return _distributed(program, platform, backend_type, output_dir, accepted)
    if platform is not None:
        config = RunConfig(platform=platform)
    else:
        arch = backend_type or get_backend_type()
        config = RunConfig(arch=arch, execution_mode=ExecutionMode.SIM)
    config.dump_passes = _dumps(dump_passes)
    config.memory_planner = memory_planner
    if strategy is not OptimizationStrategy.Default:
        config.strategy = strategy
    if len(orchestration_names(program)) > 1:  # L2 multi-orch (compat/multi_orch.py)
        def compile_one(part: Any, where: Path | None) -> Any:
            one = compile_(part, config, output_dir=where, accepted=accepted)
            if where is not None:
                write_kernel_config(one.manifest, where)
            return one

        return MultiOrchCompiledProgram(program, compile_one, output_dir)
    compiled = compile_(program, config, output_dir=output_dir, accepted=accepted)
    if output_dir is not None:
        write_kernel_config(compiled.manifest, Path(output_dir))
    return compiled


def _distributed(program: Any, platform: str | None, backend_type: Any, output_dir: Any,
                 accepted: dict[str, Any]) -> Any:
    """A multi-chip program (docs/design/distributed.md §2): its host orchestrator runs on
    ``distributed_config.device_ids``' simulated devices when the result is called."""
    from pytest_pypto.compat.pypto.ir.distributed_compiled_program import (  # lazy: compat plugin import cost
        DistributedCompiledProgram,
        DistributedConfig,
    )
    from pytest_pypto.compat.pypto.runtime import (  # noqa: F401  # lazy: compat plugin import cost; prepare() returns its DistributedWorker
        distributed_runner,
    )
    from pytest_pypto.harness import context  # lazy: compat plugin import cost

    host = host_program(program)
    if host is None:
        raise TypeError(f"ir.compile(..., distributed_config=...): program "
                        f"'{getattr(program, 'name', program)}' has no host orchestrator "
                        "(@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator))")
    config = accepted.get("distributed_config") or DistributedConfig(device_ids=[0])
    if platform is None:
        arch = backend_type or get_backend_type()
        platform = RunConfig(arch=arch, execution_mode=ExecutionMode.SIM).platform
    session = context.current()
    shuffle = session.settings.shuffle if session is not None else None
    compiled = DistributedCompiledProgram(program, host, platform, config, shuffle=shuffle,
                                          output_dir=output_dir)
    write_distributed_layout(compiled)
    return compiled


def write_distributed_layout(compiled: Any) -> None:
    """The files a multi-chip compile writes (docs/design/distributed.md §6) under
    ``compiled.output_dir`` (a fresh scratch directory without one); the chip programs
    compiled here are the ones the run uses."""
    from pytest_pypto.compiler.api import compile as compile_  # lazy: compat plugin import cost
    from pytest_pypto.compiler.api import scratch_dir  # lazy: compat plugin import cost
    from pytest_pypto.config import RunConfig as ChipConfig  # lazy: compat plugin import cost
    from pytest_pypto.harness.distributed import chip_program  # lazy: compat plugin import cost
    from pytest_pypto.harness.distributed_plan import (  # lazy: compat plugin import cost
        write_layout,
    )

    out = (Path(compiled.output_dir) if compiled.output_dir is not None
           else scratch_dir(compiled.program))
    compiled.output_dir = out

    def compile_chip(chip: str, where: Path) -> None:
        one = compile_(chip_program(compiled.program, chip),
                       ChipConfig(platform=compiled.platform), output_dir=where)
        write_kernel_config(one.manifest, where)
        compiled._compiled[chip] = one

    write_layout(compiled.program, compiled.host, compiled.platform, compiled.device_ids, out,
                 compile_chip)


def write_kernel_config(manifest: Any, directory: Path) -> Path:
    """PyPTO's ``kernel_config.py`` beside our ``kernel_config.json``: the kernels (by
    ``func_id``, with the names a ``name_hint`` gives them), the orchestration and the
    runtime selection, as the Python literals PyPTO's tools read."""
    lines = [
        "# Generated by pytest-pypto: PyPTO's kernel_config.py layout.  The artifact's own",
        "# manifest is kernel_config.json.",
        "KERNELS = [",
    ]
    for k in manifest.kernels:
        entry = {"func_id": k.func_id, "name": k.name, "core_type": k.core_type,
                 "source": k.source}
        lines.append(f"    {json.dumps(entry)},")
    lines.append("]")
    orchestration = {"function_name": manifest.entry, "source": manifest.orchestration}
    lines.append(f"ORCHESTRATION = {json.dumps(orchestration)}")
    lines.append('RUNTIME_CONFIG = {"runtime": "tensormap_and_ringbuffer", "aicpu_thread_num": 0}')
    path = directory / "kernel_config.py"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def compile_program(program: Any, work_dir: str | Path, **kwargs: Any) -> Any:
    """PyPTO's ``runtime.compile_program(program, work_dir, strategy=, backend_type=, ...)``."""
    return ir_compile(program, work_dir, **kwargs)
