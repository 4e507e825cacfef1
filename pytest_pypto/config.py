"""RunConfig: a platform is two axes (architecture, execution mode).

PyPTO packs both decisions into one string; consumers then re-split it and drift.
Here the two axes are stored and the string is derived, so a disagreeing platform
cannot be represented.  ``platform=`` is still accepted, because most call sites
use it, and assigning ``cfg.platform = "a5"`` sets both axes.

The dataclass is mutable, as PyPTO's is: PyPTO test cases tune their tolerances
with ``self.config.rtol = 1e-4``.  The axes are re-validated on every assignment.

PyPTO's other RunConfig fields (DFX switches, ring sizes, planner and strategy
selections, ...) belong to PyPTO's flavour: `pytest_pypto.compat.runconfig.RunConfig`
adds them to this class, and `accepted_without_effect` is where a subclass reports
the selections the bundled toolchain records without modelling.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Callable
from dataclasses import dataclass, fields
from typing import Any, ClassVar

from pytest_pypto.arch import (
    PLATFORMS,
    BackendType,
    ExecutionMode,
    parse_platform,
    platform_string,
)

__all__ = [
    "ISOLATED_TIMEOUT",
    "MAX_TIMEOUT",
    "BackendType",
    "ExecutionMode",
    "RunConfig",
    "accept_platform_keywords",
]

UNINITIALIZED_CHOICES = ("poison", "zero")

# Seconds an isolated run (runtime "isolated") may take when no timeout is given
# (--pypto-isolate-timeout): a kernel looping forever then fails only its test.
ISOLATED_TIMEOUT = 600.0
# The largest timeout (seconds, about 11.6 days).  The tightest limit of the timeout
# machinery is the isolated runtime's wait for its child: a pipe poll whose timeout, in
# milliseconds, must fit a C int (2**31 - 1 ms, about 24.8 days), with a grace period of
# 10 % + 2 s on top of the timeout; the in-process alarm (setitimer) takes far more.
MAX_TIMEOUT = 1_000_000.0


def _whole(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


# Field -> (is the type right, is the value in range, what is accepted); None always passes.
_FIELD_CHECKS: dict[str, tuple[Callable[[Any], bool], Callable[[Any], bool], str]] = {
    "device_id": (_whole, lambda v: v >= 0, "a device id, an int >= 0"),
    "seed": (_whole, lambda v: v >= 0, "an int >= 0"),
    "schedule_seed": (_whole, lambda v: v >= 0, "an int >= 0"),
    "rtol": (_real, lambda v: v >= 0, "a number >= 0 (a tolerance)"),
    "atol": (_real, lambda v: v >= 0, "a number >= 0 (a tolerance)"),
    "max_memory": (_whole, lambda v: v > 0, "a number of bytes, an int > 0"),
    "dump_args": (  # PyPTO's True / False mean 1 / 0
        lambda v: isinstance(v, numbers.Integral), lambda v: 0 <= v <= 2,
        "a dump level: 0 (off), 1 (partial) or 2 (full)",
    ),
    "timeout": (
        _real, lambda v: 0 < v <= MAX_TIMEOUT,
        f"a number of seconds > 0 and at most {MAX_TIMEOUT:.0f}",
    ),
}


def _check_field(name: str, value: Any) -> None:
    """TypeError / ValueError naming the field, the value and what it accepts."""
    check = _FIELD_CHECKS.get(name)
    if check is None or value is None:
        return
    right_type, in_range, accepted = check
    if not right_type(value):
        raise TypeError(f"RunConfig({name}={value!r}): expected {accepted}, or None")
    if not in_range(value):
        raise ValueError(f"RunConfig({name}={value!r}): must be {accepted}")


@dataclass(kw_only=True)
class RunConfig:
    """How to compile and run one kernel: the cell's axes plus harness options.

    ``arch`` and ``execution_mode`` are stored; ``platform`` is derived from them.
    Passing ``platform=`` sets both axes; an ``arch=``, ``execution_mode=`` or
    ``backend_type=`` given with it must agree with it (ValueError naming both), except
    in ``dataclasses.replace(cfg, platform="a5")``, which passes the old axes along and
    moves the config to the new cell.  PyPTO's ``backend_type=`` is accepted as the arch
    when no platform is given.  Fields are checked on every assignment: ``device_id``,
    ``seed`` and ``schedule_seed`` are ints >= 0, ``rtol``/``atol`` numbers >= 0,
    ``timeout`` seconds in (0, `MAX_TIMEOUT`], ``max_memory`` bytes > 0 (TypeError /
    ValueError naming the field).
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
    # The race detector of runs relying on explicit dependencies (docs/design/scheduling.md
    # §5): on unless --pypto-no-race-check.
    race_check: bool = True
    # The argument dump (--pypto-dump-args, docs/design/scheduling.md §7): 0 off, 1 the
    # arguments marked by pl.dump_tag / dumps=, 2 every argument of every task.
    dump_args: int = 0
    sim_clusters: int | None = None
    # Debugging switches (--pypto-precise, --pypto-timeout, --pypto-trace) and the
    # runtime that executes (None: the registry's choice for the platform).
    precise: bool = False
    timeout: float | None = None
    trace: bool = False
    runtime: str | None = None
    # The on-chip addresses are planned by the backend's assembler, not the compiler:
    # declared pl.MemRef slots that would need distinct addresses are refused
    # (compiler/memref_slots.py; PyPTO's MemoryPlanner.PTOAS sets it through compat).
    assembler_plans_memory: bool = False
    # The memory guard: a run whose simulated tensors (entry tensors plus the made ones
    # still alive) would exceed this many bytes stops with a MemoryLimitError naming the
    # tensor and line (--pypto-max-memory; None: no limit).
    max_memory: int | None = None

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
        if self.sim_clusters is not None and self.sim_clusters < 1:
            raise ValueError(f"RunConfig(sim_clusters={self.sim_clusters!r}): must be >= 1")

    def __setattr__(self, name: str, value: Any) -> None:
        _check_field(name, value)
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
        """Selections recorded in the artifact without effect on the toolchain (JSON-ready
        values).  None here; a subclass that accepts foreign fields names them."""
        return {}


def _parse(platform: Any) -> tuple[BackendType, ExecutionMode]:
    if not isinstance(platform, str):
        raise TypeError(
            f"RunConfig(platform={platform!r}): platform must be a string, one of "
            f"{', '.join(repr(p) for p in PLATFORMS)}"
        )
    return parse_platform(platform)


def _refuse_disagreement(
    platform: str,
    axes: tuple[BackendType, ExecutionMode],
    kwargs: dict[str, Any],
    backend_type: BackendType | None,
) -> None:
    """ValueError when an axis given next to ``platform=`` names another cell's axis."""
    given = (("arch", kwargs.get("arch"), axes[0]), ("backend_type", backend_type, axes[0]),
             ("execution_mode", kwargs.get("execution_mode"), axes[1]))
    for keyword, value, implied in given:
        if value is not None and value is not implied:
            raise ValueError(
                f"RunConfig(platform={platform!r}, {keyword}={value}): platform {platform!r} "
                f"means {keyword}={implied}; give one of them"
            )


def accept_platform_keywords(cls: type[RunConfig], aliases: dict[str, str] | None = None) -> None:
    """Give the dataclass ``cls`` (RunConfig or a subclass) an ``__init__`` that also takes
    ``platform=`` (sets both axes) and ``backend_type=`` (the arch), and renames the
    keywords in ``aliases`` (old spelling -> field)."""
    dataclass_init = cls.__init__
    renames = dict(aliases or {})

    def __init__(
        self: RunConfig,
        *,
        platform: str | None = None,
        backend_type: BackendType | None = None,
        **kwargs: Any,
    ) -> None:
        for old, new in renames.items():
            if old in kwargs:
                kwargs.setdefault(new, kwargs.pop(old))
        if platform is not None:
            axes = _parse(platform)
            if not _replacing(kwargs):
                _refuse_disagreement(platform, axes, kwargs, backend_type)
            kwargs["arch"], kwargs["execution_mode"] = axes
        elif backend_type is not None:
            if "arch" in kwargs and kwargs["arch"] is not backend_type:
                raise ValueError(
                    f"RunConfig(arch={kwargs['arch']}, backend_type={backend_type}): two "
                    f"different architectures; give one of them"
                )
            kwargs["arch"] = backend_type
        dataclass_init(self, **kwargs)

    init_fields = [f.name for f in fields(cls) if f.init]

    def _replacing(kwargs: dict[str, Any]) -> bool:
        # dataclasses.replace(cfg, platform=...) passes every init field: the platform
        # then moves the config to its cell (the axes passed along are the old ones).
        return all(name in kwargs for name in init_fields)

    params = list(inspect.signature(dataclass_init).parameters.values())
    extra = [
        inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=ann)
        for name, ann in (("platform", "str | None"), ("backend_type", "BackendType | None"))
    ]
    __init__.__signature__ = inspect.Signature(  # type: ignore[attr-defined]
        [*params, *extra], return_annotation=None
    )
    __init__.__doc__ = dataclass_init.__doc__
    __init__.__qualname__ = f"{cls.__name__}.__init__"
    cls.__init__ = __init__  # type: ignore[method-assign]


accept_platform_keywords(RunConfig)
