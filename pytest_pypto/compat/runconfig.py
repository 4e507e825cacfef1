"""PyPTO's ``RunConfig``: ours plus the fields only PyPTO's own toolchain models.

PyPTO's tests construct ``RunConfig(platform=..., strategy=..., enable_pmu=...)`` and
read or set its DFX switches, ring sizes and compile selections.  This subclass
accepts and stores them; the simulator does not model them, so they are recorded in
the artifact's manifest (``extra["accepted_without_effect"]``, through
`accepted_without_effect`) and change nothing else, except that
``memory_planner=MemoryPlanner.PTOAS`` sets our neutral ``assembler_plans_memory``
(the compiler then refuses the declared allocations PyPTO refuses under it).
``enable_dep_gen`` has its meaning: the simulator always writes ``deps.json``;
``enable_chip_swimlane`` too: the run's chip-swimlane records are written under
``build_output/`` (runtime/swimlane.py); and ``enable_dump_args``, our ``dump_args``
(the argument dump, docs/design/scheduling.md §7).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field, fields
from typing import Any

from pytest_pypto.config import RunConfig as _RunConfig
from pytest_pypto.config import accept_platform_keywords

__all__ = ["PYPTO_ONLY_FIELDS", "RunConfig", "is_ptoas"]

# Marks the fields that select something the bundled toolchain does not model.
_ACCEPTED = {"pypto_only": True}

# Older PyPTO spellings of the same fields.
_ALIASES = {"enable_l2_swimlane": "enable_chip_swimlane", "enable_dump_args": "dump_args"}


def is_ptoas(planner: object) -> bool:
    """True for PyPTO's ``MemoryPlanner.PTOAS`` (the enum or its value)."""
    return str(getattr(planner, "value", planner)).lower() == "ptoas"


@dataclass(kw_only=True)
class RunConfig(_RunConfig):
    """`pytest_pypto.RunConfig` with PyPTO's other fields, accepted and stored."""

    # PyPTO's dependency capture: the simulator always records its task graph (deps.json).
    enable_dep_gen: bool = False
    strategy: Any = field(default=None, metadata=_ACCEPTED)
    memory_planner: Any = field(default=None, metadata=_ACCEPTED)
    # PyPTO's chip swimlane: the run's records under build_output/ (runtime/swimlane.py).
    enable_chip_swimlane: int = 0
    enable_pmu: int = field(default=0, metadata=_ACCEPTED)
    enable_scope_stats: bool = field(default=False, metadata=_ACCEPTED)
    compile_profiling: bool = field(default=False, metadata=_ACCEPTED)
    diagnostic_phase: Any = field(default=None, metadata=_ACCEPTED)
    disabled_diagnostics: Any = field(default=None, metadata=_ACCEPTED)
    golden_data_dir: str | None = field(default=None, metadata=_ACCEPTED)
    aicpu_thread_num: int | None = field(default=None, metadata=_ACCEPTED)
    ring_task_window: Any = field(default=None, metadata=_ACCEPTED)
    ring_heap: Any = field(default=None, metadata=_ACCEPTED)
    ring_dep_pool: Any = field(default=None, metadata=_ACCEPTED)
    distributed_config: Any = field(default=None, metadata=_ACCEPTED)
    analyze_auto_scopes_for_deps: bool = field(default=False, metadata=_ACCEPTED)
    dump_ptoas_passes: bool = field(default=False, metadata=_ACCEPTED)

    @property
    def enable_dump_args(self) -> int:
        """PyPTO's name of `dump_args` (True means 1, False 0)."""
        return self.dump_args

    @enable_dump_args.setter
    def enable_dump_args(self, value: Any) -> None:
        self.dump_args = int(value) if isinstance(value, bool) else value

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "memory_planner":  # the one selection the compiler honours
            object.__setattr__(self, "assembler_plans_memory", is_ptoas(value))

    @classmethod
    def from_config(cls, config: _RunConfig) -> RunConfig:
        """This class with ``config``'s fields (a PyPTO config is returned as it is)."""
        if isinstance(config, cls):
            return config
        new = cls(arch=config.arch, execution_mode=config.execution_mode)
        for f in fields(_RunConfig):
            object.__setattr__(new, f.name, getattr(config, f.name))
        return new

    def accepted_without_effect(self) -> dict[str, Any]:
        """PyPTO-only selections that differ from their defaults (recorded in artifacts)."""
        return {
            name: _plain(getattr(self, name))
            for name, default in _pypto_only_defaults()
            if getattr(self, name) != default
        }


accept_platform_keywords(RunConfig, _ALIASES)

# The fields that select something only PyPTO's own toolchain models.
PYPTO_ONLY_FIELDS: tuple[str, ...] = tuple(
    f.name for f in fields(RunConfig) if f.metadata.get("pypto_only")
)


@functools.lru_cache(maxsize=1)
def _pypto_only_defaults() -> tuple[tuple[str, Any], ...]:
    """(name, default) of the PyPTO-only fields (asked on every compile)."""
    return tuple((f.name, f.default) for f in fields(RunConfig) if f.metadata.get("pypto_only"))


def _plain(value: Any) -> Any:
    """A JSON-friendly form of a selection (enum members by name)."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else value
