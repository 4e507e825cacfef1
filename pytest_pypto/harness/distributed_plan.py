# SPDX-License-Identifier: Apache-2.0
"""What a multi-chip program's compile writes (docs/design/distributed.md §6).

At compile time the host orchestrator is traced once on the program's ranks with
placeholder arguments: nothing runs on a device, every ``self.<chip>(..., device=r)``
and every host-level ``pld.tensor.<collective>`` is recorded instead.  From that plan
the compile writes, under ``output_dir``:

- ``orchestration/<host>.py``: the host orchestrator as it runs (its Python source);
- ``next_levels/<chip orchestration>/``: that chip program's compiled artifact (the
  run reuses it) with its ``kernel_config.py``;
- ``next_levels/builtin.tensor.<variant>/kernel_config.py``: one per distinct host
  collective (``allreduce__sum__fp32``, ``broadcast__root0__fp32``, ...): the op, its
  reduce op / root / mode, dtype and window shape, the ranks, the host lines that call
  it and the simulator function that performs it.
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_pypto.harness.distributed import DistributedRun, Window
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.language.distributed import ReduceOp
from pytest_pypto.language.distributed_host import HostProgram

__all__ = ["Builtin", "Plan", "plan", "write_layout"]

# host collective -> (the simulator function that performs it, whether it reduces)
_IMPLEMENTATION = {
    "allreduce": "pytest_pypto.runtime.collectives.allreduce",
    "allreduce_ring": "pytest_pypto.runtime.collectives.allreduce",
    "reduce_scatter": "pytest_pypto.runtime.collectives.reduce_scatter",
    "allgather": "pytest_pypto.runtime.collectives.allgather",
    "broadcast": "pytest_pypto.runtime.collectives.broadcast",
    "all_to_all": "pytest_pypto.runtime.collectives.all_to_all",
    "all_to_all_v": "pytest_pypto.runtime.collectives.all_to_all_v",
    "barrier": "pytest_pypto.harness.distributed.DistributedRun.flush",
}


@dataclass
class Builtin:
    """One distinct host-level collective of a program (its ``next_levels`` variant)."""

    op: str                  # "allreduce", "allreduce_ring", "broadcast", ...
    variant: str             # "allreduce__sum__fp32": the next_levels directory's suffix
    dtype: str | None        # of the data window ("fp32"); None for a barrier
    shape: list[int | str] | None  # of the data window (a pl.dynamic dim by name)
    reduce_op: str | None = None
    root: int | None = None
    core_num: int = 1
    lines: list[int] = field(default_factory=list)


@dataclass
class Plan:
    """The chip orchestrations a host orchestrator dispatches and its host collectives."""

    host: str
    chips: list[str] = field(default_factory=list)
    builtins: dict[str, Builtin] = field(default_factory=dict)


class _Placeholder:
    """A host argument while tracing: indexing it gives another placeholder."""

    def __getitem__(self, key: Any) -> _Placeholder:
        return self

    def __repr__(self) -> str:
        return "<host argument (compile-time trace)>"


class _TracedBuffer:
    """``pld.alloc_window_buffer(n)`` while tracing: nothing is allocated."""

    def __init__(self, nbytes: Any) -> None:
        self.nbytes = nbytes


class _PlanRun(DistributedRun):
    """A `DistributedRun` that records instead of dispatching or communicating."""

    def __init__(self, program: Any, host: Any, platform: str, device_ids: list[int],
                 plan_: Plan) -> None:
        super().__init__(program, host, platform, device_ids)
        self.plan = plan_
        self._code = (host.function() if isinstance(host, HostProgram) else host).__code__

    def dispatch(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                 device: Any) -> None:
        self._rank_of(f"self.{name}", device)
        if name not in self.plan.chips:
            self.plan.chips.append(name)

    def dispatch_jit(self, jit_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     device: Any) -> None:
        self._rank_of(jit_fn.__name__, device)

    def flush(self) -> None:
        self._queued = {}

    def alloc_window_buffer(self, nbytes: Any) -> Any:
        return _TracedBuffer(nbytes)  # its size may be a pl.dynamic expression here

    def window(self, buffer: Any, shape: Any, dtype: Any) -> Window:
        if not isinstance(buffer, _TracedBuffer) or not isinstance(dtype, DataType):
            return super().window(buffer, shape, dtype)  # its errors
        dims = (shape,) if not isinstance(shape, (list, tuple)) else tuple(shape)
        return Window(buffer, tuple(d if isinstance(d, int) else str(d) for d in dims), dtype)

    def collective(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        op = name
        if name == "allreduce" and kwargs.get("mode", "mesh") == "ring":
            op = "allreduce_ring"
        data = next((a for a in args if isinstance(a, Window)), None)
        builtin = _builtin(op, data, kwargs)
        kept = self.plan.builtins.setdefault(builtin.variant, builtin)
        line = self._host_line()
        if line is not None and line not in kept.lines:
            kept.lines.append(line)
        return args[-1] if name == "barrier" else (args[1] if name in (
            "allgather", "all_to_all", "all_to_all_v") else args[0])

    def _host_line(self) -> int | None:
        frame = sys._getframe(1)
        while frame is not None and frame.f_code is not self._code:
            frame = frame.f_back
        return frame.f_lineno if frame is not None else None


def _builtin(op: str, data: Window | None, kwargs: dict[str, Any]) -> Builtin:
    if op == "barrier":  # a barrier carries no data: one fp32-named variant
        return Builtin(op, "barrier__fp32", None, None)
    dtype = data.dtype.name.lower() if data is not None else None
    shape = list(data.shape) if data is not None else None
    parts = [op]
    reduce_op = root = None
    if op in ("allreduce", "allreduce_ring", "reduce_scatter"):
        reduce_op = ReduceOp(int(kwargs.get("op", ReduceOp.Sum))).name.lower()
        parts.append(reduce_op)
    if op == "broadcast":
        root = int(kwargs.get("root", 0))
        parts.append(f"root{root}")
    parts.append(dtype or "unknown")
    return Builtin(op, "__".join(parts), dtype, shape, reduce_op, root,
                   int(kwargs.get("core_num", 1)))


def plan(program: Any, host: Any, platform: str, device_ids: list[int]) -> Plan:
    """Trace the host orchestrator once on ``device_ids``' ranks (nothing executes)."""
    fn = host.function() if isinstance(host, HostProgram) else host
    result = Plan(fn.__name__)
    nargs = fn.__code__.co_argcount - (1 if isinstance(host, HostProgram) else 0)
    run = _PlanRun(program, host, platform, device_ids, result)
    run(*[_Placeholder() for _ in range(nargs)])
    return result


def write_layout(program: Any, host: Any, platform: str, device_ids: list[int],
                 output_dir: Path, compile_chip: Callable[[str, Path], Any]) -> Plan:
    """Write the compile's files (module docstring) under ``output_dir``;
    ``compile_chip(name, directory)`` compiles one chip orchestration there."""
    fn = host.function() if isinstance(host, HostProgram) else host
    stopped = ""
    try:
        the_plan = plan(program, host, platform, device_ids)
    except Exception as exc:  # noqa: BLE001 - host code needing its real arguments
        # (e.g. a pl.dynamic dim bound from an argument's shape): the chips compile and
        # the collectives are known when the program runs, not here
        the_plan = Plan(fn.__name__)
        stopped = f"# compile-time trace stopped ({type(exc).__name__}: {exc}); nothing listed\n"
    orch = output_dir / "orchestration"
    orch.mkdir(parents=True, exist_ok=True)
    source = textwrap.dedent(inspect.getsource(fn))
    where = f"{inspect.getsourcefile(fn)}:{fn.__code__.co_firstlineno}"
    (orch / f"{the_plan.host}.py").write_text(
        f"# host orchestrator {the_plan.host} ({where}), run as Python on the host\n"
        + stopped + source, encoding="utf-8")
    levels = output_dir / "next_levels"
    for name in the_plan.chips:
        compile_chip(name, levels / name)
    for builtin in the_plan.builtins.values():
        _write_builtin(builtin, levels / f"builtin.tensor.{builtin.variant}", platform,
                       device_ids, where)
    return the_plan


def _write_builtin(builtin: Builtin, directory: Path, platform: str, device_ids: list[int],
                   where: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    entry = {
        "op": f"builtin.tensor.{builtin.op}", "variant": builtin.variant,
        "dtype": builtin.dtype, "window_shape": builtin.shape,
        "reduce_op": builtin.reduce_op, "root": builtin.root, "core_num": builtin.core_num,
        "ranks": len(device_ids), "device_ids": list(device_ids),
        "host_lines": builtin.lines, "implementation": _IMPLEMENTATION[builtin.op],
    }
    lines = [
        f"# Generated by pytest-pypto: host collective {builtin.variant} of the host",
        f"# orchestrator at {where}.  It has no device kernel: the simulator combines the",
        "# ranks' window slices with the implementation named below.",
        "KERNELS = []",
        f"ORCHESTRATION = {({'function_name': builtin.variant})!r}",
        f"BUILTIN = {entry!r}",
        f"RUNTIME_CONFIG = {({'runtime': 'sim', 'platform': platform})!r}",
    ]
    (directory / "kernel_config.py").write_text("\n".join(lines) + "\n", encoding="utf-8")
