"""PyPTO's manual-dispatch surface of a `CompiledProgram` (docs/design/plugin.md §16).

PyPTO lets a caller drive its runtime by hand: ``compiled.chip_callable`` (what a
runtime worker registers), ``runtime_name`` / ``runtime_config``,
``build_call_config(config, aicpu_thread_num=...)`` and ``build_orch_args(*args,
worker=w)`` (the argument pack a worker runs).  Here those objects only carry the
program and its arguments to the simulator: the compat ``simpler`` worker
(pytest_pypto/compat/simpler/worker.py) runs ``OrchArgs`` of a registered
``ChipCallable`` as an in-place call of the program.  `CompiledProgram` mixes this in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_pypto.ir.launch import launcher

__all__ = ["RUNTIME_NAME", "CallConfig", "ChipCallable", "OrchArgs", "RuntimeFacade"]

# The runtime PyPTO compiles single-chip programs for; the simulator models its task
# semantics (tensor-map dependencies, ring-buffered task submission).
RUNTIME_NAME = "tensormap_and_ringbuffer"


@dataclass
class CallConfig:
    """The per-run settings a worker takes (PyPTO's runtime call config); recorded, the
    simulator has no AICPU threads and writes no DFX output."""

    aicpu_thread_num: int | None = None
    enable_chip_swimlane: int = 0
    enable_dump_args: int = 0
    enable_pmu: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False
    output_prefix: str | None = None


@dataclass(frozen=True, eq=False)
class ChipCallable:
    """What a worker registers: the compiled program it stands for."""

    compiled: Any


@dataclass(frozen=True, eq=False)
class OrchArgs:
    """A run's arguments: every entry argument, in order (outputs allocated)."""

    compiled: Any
    args: tuple[Any, ...]
    worker: Any


class RuntimeFacade:
    """The manual-dispatch properties and builders of a compiled program."""

    _chip_callable: ChipCallable | None = None

    @property
    def chip_callable(self) -> ChipCallable:
        """The registrable callable (the same object on every access)."""
        if self._chip_callable is None:
            self._chip_callable = ChipCallable(self)
        return self._chip_callable

    @property
    def runtime_name(self) -> str:
        return RUNTIME_NAME

    @property
    def runtime_config(self) -> dict[str, Any]:
        """The runtime settings baked into the artifact: none here (an empty dict)."""
        return {}

    def load(self) -> None:
        """Nothing to build or load ahead of the first run."""

    def build_call_config(self, config: Any = None, *, aicpu_thread_num: int | None = None,
                          dfx_dir: Any = None) -> CallConfig:
        """The call config of ``config`` (a RunConfig; its DFX switches and
        ``aicpu_thread_num``), ``aicpu_thread_num`` winning over the config's."""
        threads = aicpu_thread_num
        if threads is None:
            threads = getattr(config, "aicpu_thread_num", None)
        fields = ("enable_chip_swimlane", "enable_dump_args", "enable_pmu", "enable_dep_gen",
                  "enable_scope_stats")
        dfx = {f: getattr(config, f) for f in fields if hasattr(config, f)}
        return CallConfig(aicpu_thread_num=threads,
                          output_prefix=None if dfx_dir is None else str(dfx_dir), **dfx)

    def build_orch_args(self, *args: Any, worker: Any = None) -> tuple[OrchArgs, list[Any], bool]:
        """``(orch_args, coerced, return_style)`` for ``args`` (all the entry's arguments,
        or the inputs only: then the outputs are allocated into ``coerced`` at
        `output_indices`, and ``return_style`` is True).  ``worker`` is the worker that
        will run them (required, as in PyPTO)."""
        if worker is None:
            raise TypeError("build_orch_args needs worker=, the worker that will run the arguments")
        full, returned = launcher().coerce(self, args)
        return OrchArgs(self, tuple(full), worker), list(full), returned is not None
