"""RunConfig: a platform is two axes (architecture, execution mode).

PyPTO packs both decisions into one string; consumers then re-split it and drift.
Here the two axes are stored and the string is derived, so a disagreeing platform
cannot be represented.  ``platform=`` is still accepted, because most call sites
use it, and assigning ``cfg.platform = "a5"`` sets both axes.

The dataclass is mutable, as PyPTO's is: PyPTO test cases tune their tolerances
with ``self.config.rtol = 1e-4``.  The axes are re-validated on every assignment.

PyPTO's other RunConfig fields (DFX switches, ring sizes, planner and strategy
selections, ...) are accepted and kept; the ones the simulator does not model have
no effect on it (README, "Migrating a PyPTO suite").
"""

from __future__ import annotations

import functools
import inspect
from dataclasses import dataclass, field, fields
from typing import Any, ClassVar

from pytest_pypto.arch import (
    PLATFORMS,
    BackendType,
    ExecutionMode,
    parse_platform,
    platform_string,
)

__all__ = ["BackendType", "ExecutionMode", "RunConfig"]

UNINITIALIZED_CHOICES = ("poison", "zero")

# Marks PyPTO's RunConfig fields that select something the bundled toolchain does not
# model: accepted, stored, recorded where they would apply, no effect on the simulator.
_ACCEPTED = {"pypto_only": True}

# Older PyPTO spellings of the same fields.
_ALIASES = {"enable_l2_swimlane": "enable_chip_swimlane", "dump_args": "enable_dump_args"}


@dataclass(kw_only=True)
class RunConfig:
    """How to compile and run one kernel: the cell's axes plus harness options.

    ``arch`` and ``execution_mode`` are stored; ``platform`` is derived from them.
    Passing ``platform=`` sets both axes and wins over ``arch=``/``execution_mode=``
    (so ``dataclasses.replace(cfg, platform="a5")`` works); PyPTO's ``backend_type=``
    is accepted as the arch when no platform is given.
    """

    __test__: ClassVar[bool] = False

    arch: BackendType = BackendType.Ascend910B
    execution_mode: ExecutionMode = ExecutionMode.SIM
    device_id: int | None = None
    rtol: float | None = None
    atol: float | None = None
    save_kernels: bool = False
    save_kernels_dir: str | None = None
    dump_passes: bool = False
    codegen_only: bool = False
    seed: int | None = None
    # Toolchain knobs (docs/design/numerics.md §6, §1): how undefined memory reads; hazard
    # reporting;
    # a seed that shuffles ready tasks to expose missing dependencies; simulated clusters.
    uninitialized: str = "poison"
    strict_war: bool = False
    schedule_seed: int | None = None
    sim_clusters: int | None = None
    # Debugging switches (--pypto-precise, --pypto-timeout, --pypto-trace) and the
    # runtime that executes (None: the registry's choice for the platform).
    precise: bool = False
    timeout: float | None = None
    trace: bool = False
    runtime: str | None = None
    # PyPTO's dependency capture: the simulator always records its task graph (deps.json).
    enable_dep_gen: bool = False
    # Accepted without effect on the simulator (compat/session.py PYPTO_ONLY_FIELDS).
    strategy: Any = field(default=None, metadata=_ACCEPTED)
    memory_planner: Any = field(default=None, metadata=_ACCEPTED)
    enable_chip_swimlane: int = field(default=0, metadata=_ACCEPTED)
    enable_dump_args: int = field(default=0, metadata=_ACCEPTED)
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

    def __post_init__(self) -> None:
        if (self.rtol is None) != (self.atol is None):
            raise ValueError(
                f"RunConfig(rtol={self.rtol!r}, atol={self.atol!r}): give both rtol and atol, "
                f"or neither (None = per-dtype defaults)"
            )
        if self.uninitialized not in UNINITIALIZED_CHOICES:
            raise ValueError(
                f"RunConfig(uninitialized={self.uninitialized!r}): expected one of "
                f"{', '.join(UNINITIALIZED_CHOICES)}"
            )
        if self.timeout is not None and not self.timeout > 0:
            raise ValueError(f"RunConfig(timeout={self.timeout!r}): must be > 0 seconds")
        if self.sim_clusters is not None and self.sim_clusters < 1:
            raise ValueError(f"RunConfig(sim_clusters={self.sim_clusters!r}): must be >= 1")

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "arch" and not isinstance(value, BackendType):
            raise TypeError(
                f"RunConfig(arch={value!r}): arch must be a BackendType "
                f"(BackendType.Ascend910B or BackendType.Ascend950); to pass a string, "
                f"use platform=, e.g. RunConfig(platform='a5sim')"
            )
        if name == "execution_mode" and not isinstance(value, ExecutionMode):
            raise TypeError(
                f"RunConfig(execution_mode={value!r}): execution_mode must be "
                f"an ExecutionMode (ExecutionMode.SIM or ExecutionMode.ONBOARD); to pass a "
                f"string, use platform=, e.g. RunConfig(platform='a2a3sim')"
            )
        object.__setattr__(self, name, value)
        if name == "arch" or name == "execution_mode":
            self.__dict__.pop("_platform", None)  # derived from the two axes

    @property
    def platform(self) -> str:
        """The wire form of the cell: 'a2a3', 'a2a3sim', 'a5' or 'a5sim'."""
        # remembered (every dispatch asks); forgotten whenever an axis is set
        cached = self.__dict__.get("_platform")
        if cached is None:
            cached = self.__dict__["_platform"] = platform_string(self.arch, self.execution_mode)
        return cached

    @platform.setter
    def platform(self, value: str) -> None:
        self.arch, self.execution_mode = _parse(value)

    @property
    def backend_type(self) -> BackendType:
        """PyPTO's name for the architecture axis (same as ``arch``)."""
        return self.arch

    @backend_type.setter
    def backend_type(self, value: BackendType) -> None:
        self.arch = value

    @property
    def is_sim(self) -> bool:
        """True when kernels run on the bundled simulator."""
        return self.execution_mode is ExecutionMode.SIM

    def accepted_without_effect(self) -> dict[str, Any]:
        """PyPTO-only selections that differ from their defaults (recorded in artifacts)."""
        return {
            name: _plain(getattr(self, name))
            for name, default in _pypto_only_defaults()
            if getattr(self, name) != default
        }


@functools.lru_cache(maxsize=1)
def _pypto_only_defaults() -> tuple[tuple[str, Any], ...]:
    """(name, default) of RunConfig's PyPTO-only fields (asked on every compile)."""
    return tuple((f.name, f.default) for f in fields(RunConfig) if f.metadata.get("pypto_only"))


def _plain(value: Any) -> Any:
    """A JSON-friendly form of a selection (enum members by name)."""
    name = getattr(value, "name", None)
    return name if isinstance(name, str) else value


def _parse(platform: Any) -> tuple[BackendType, ExecutionMode]:
    if not isinstance(platform, str):
        raise TypeError(
            f"RunConfig(platform={platform!r}): platform must be a string, one of "
            f"{', '.join(repr(p) for p in PLATFORMS)}"
        )
    return parse_platform(platform)


_dataclass_init = RunConfig.__init__


def _init(
    self: RunConfig,
    *,
    platform: str | None = None,
    backend_type: BackendType | None = None,
    **kwargs: Any,
) -> None:
    for old, new in _ALIASES.items():
        if old in kwargs:
            kwargs.setdefault(new, kwargs.pop(old))
    if platform is not None:
        kwargs["arch"], kwargs["execution_mode"] = _parse(platform)
    elif backend_type is not None:
        kwargs["arch"] = backend_type
    _dataclass_init(self, **kwargs)


def _signature() -> inspect.Signature:
    params = list(inspect.signature(_dataclass_init).parameters.values())
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ann)
        for name, ann in (("platform", "str | None"), ("backend_type", "BackendType | None"))
    ]
    return inspect.Signature([*params, *extra], return_annotation=None)


_init.__signature__ = _signature()  # type: ignore[attr-defined]
_init.__doc__ = _dataclass_init.__doc__
_init.__qualname__ = "RunConfig.__init__"
RunConfig.__init__ = _init  # type: ignore[method-assign]
