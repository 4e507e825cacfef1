"""RunConfig: a platform is two axes (architecture, execution mode).

PyPTO packs both decisions into one string; consumers then re-split it and drift.
Here the two axes are stored and the string is derived, so a disagreeing platform
cannot be represented.  ``platform=`` is still accepted, because most call sites
use it.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
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


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """How to compile and run one kernel: the cell's axes plus harness options.

    ``arch`` and ``execution_mode`` are stored; ``platform`` is derived from them.
    Passing ``platform=`` sets both axes and wins over ``arch=``/``execution_mode=``
    (so ``dataclasses.replace(cfg, platform="a5")`` works).
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
    # Toolchain knobs (DSL.md §5.5, §7): how undefined memory reads; hazard reporting;
    # a seed that shuffles ready tasks to expose missing dependencies; simulated clusters.
    uninitialized: str = "poison"
    strict_war: bool = False
    schedule_seed: int | None = None
    sim_clusters: int | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.arch, BackendType):
            raise TypeError(
                f"RunConfig(arch={self.arch!r}): arch must be a BackendType "
                f"(BackendType.Ascend910B or BackendType.Ascend950); to pass a string, "
                f"use platform=, e.g. RunConfig(platform='a5sim')"
            )
        if not isinstance(self.execution_mode, ExecutionMode):
            raise TypeError(
                f"RunConfig(execution_mode={self.execution_mode!r}): execution_mode must be "
                f"an ExecutionMode (ExecutionMode.SIM or ExecutionMode.ONBOARD); to pass a "
                f"string, use platform=, e.g. RunConfig(platform='a2a3sim')"
            )
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
        if self.sim_clusters is not None and self.sim_clusters < 1:
            raise ValueError(f"RunConfig(sim_clusters={self.sim_clusters!r}): must be >= 1")

    @property
    def platform(self) -> str:
        """The wire form of the cell: 'a2a3', 'a2a3sim', 'a5' or 'a5sim'."""
        return platform_string(self.arch, self.execution_mode)

    @property
    def backend_type(self) -> BackendType:
        """PyPTO's name for the architecture axis (same as ``arch``)."""
        return self.arch

    @property
    def is_sim(self) -> bool:
        """True when kernels run on the bundled simulator."""
        return self.execution_mode is ExecutionMode.SIM


_dataclass_init = RunConfig.__init__


def _init(self: RunConfig, *, platform: str | None = None, **fields: Any) -> None:
    if platform is not None:
        if not isinstance(platform, str):
            raise TypeError(
                f"RunConfig(platform={platform!r}): platform must be a string, one of "
                f"{', '.join(repr(p) for p in PLATFORMS)}"
            )
        fields["arch"], fields["execution_mode"] = parse_platform(platform)
    _dataclass_init(self, **fields)


def _signature() -> inspect.Signature:
    params = list(inspect.signature(_dataclass_init).parameters.values())
    extra = inspect.Parameter(
        "platform", inspect.Parameter.KEYWORD_ONLY, default=None, annotation="str | None"
    )
    return inspect.Signature([*params, extra], return_annotation=None)


_init.__signature__ = _signature()  # type: ignore[attr-defined]
_init.__doc__ = _dataclass_init.__doc__
_init.__qualname__ = "RunConfig.__init__"
RunConfig.__init__ = _init  # type: ignore[method-assign]

