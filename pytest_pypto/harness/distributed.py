# SPDX-License-Identifier: Apache-2.0
"""Running a multi-chip program on simulated devices (docs/design/distributed.md §2).

`DistributedRun` executes a program's host orchestrator as Python, with ``pl`` and
``pld`` answering for the host:

- ``pld.world_size()`` is the number of ranks; ``pld.alloc_window_buffer(n)`` makes a
  `WindowBuffer` on every rank; ``pld.window(buf, shape, dtype=)`` a `Window`, which a
  chip call on rank r receives as rank r's slice (bound without a copy).
- ``self.<chip function>(..., device=r)`` queues a dispatch on rank r: the chip
  orchestration (with the kernels it calls) compiled as a program of its own.
- queued dispatches run (`SimCluster.run`: ranks interleaved at their waits) before
  a host-level collective, and when the host function returns.  Before they run, each
  window buffer they use is sealed to the ranks its dispatches go to (its comm domain,
  distributed.md §3a), and each window argument becomes its rank's slice.
- ``pld.tensor.allreduce`` & co. at host level combine the ranks' window slices
  (runtime/collectives.py).
"""

from __future__ import annotations

import dataclasses
import sys
import time
import types
from collections.abc import Sequence
from typing import Any

import numpy as np

import pytest_pypto.language as pl_module
from pytest_pypto.compiler.api import compile as compile_program
from pytest_pypto.compiler.directions import returned_params
from pytest_pypto.compiler.walk import iter_calls
from pytest_pypto.config import RunConfig
from pytest_pypto.harness import context, subworkers
from pytest_pypto.harness.comm_domains import Domains, resolved
from pytest_pypto.harness.distributed_dfx import RankDfx
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.ranks import WindowBuffer
from pytest_pypto.ir.types import DynExpr, DynVar
from pytest_pypto.language.distributed import pop_hooks, push_hooks
from pytest_pypto.language.distributed_host import HostProgram
from pytest_pypto.language.jit import JITFunction
from pytest_pypto.language.surface import AnnotationForm
from pytest_pypto.runtime import collectives
from pytest_pypto.runtime.devices_sim import SimCluster

__all__ = ["DistributedRun", "Window", "chip_program"]


class Window:
    """``pld.window(buf, shape, dtype=)`` on the host: the same typed view on every rank."""

    __slots__ = ("buffer", "shape", "dtype")

    def __init__(self, buffer: WindowBuffer, shape: tuple[int, ...], dtype: DataType) -> None:
        self.buffer = buffer
        self.shape = shape
        self.dtype = dtype

    def view(self, rank: int) -> np.ndarray:
        return self.buffer.view(rank, self.shape, self.dtype.np)

    def views(self) -> list[np.ndarray]:
        return [self.view(r) for r in range(self.buffer.nranks)]

    def __repr__(self) -> str:
        return f"<window {list(self.shape)} {self.dtype.name} of {self.buffer!r}>"


def chip_program(program: n.Program, entry: str) -> n.Program:
    """``program`` cut to ``entry`` and the functions it calls: one chip's program."""
    keep: list[str] = []
    todo = [entry]
    while todo:
        name = todo.pop()
        if name in keep or name not in program.functions:
            continue
        keep.append(name)
        for _, e in iter_calls(program.functions[name].body):
            if isinstance(e, n.FuncCall):
                todo.append(e.callee)
    functions = {k: f for k, f in program.functions.items() if k in keep}
    return dataclasses.replace(program, functions=functions)


class _HostPl(types.ModuleType):
    """``pl`` as a host orchestrator sees it: ``pl.range`` is Python's range."""

    def __init__(self) -> None:
        super().__init__("pl")

    def __getattr__(self, name: str) -> Any:
        if name in ("range", "parallel", "unroll"):
            return _host_range
        if name == "create_tensor":
            return subworkers.host_create_tensor
        return getattr(pl_module, name)


def _host_range(*args: Any, **kwargs: Any) -> range:
    if kwargs:
        raise SimulationError(f"pl.range(..., {', '.join(kwargs)}=) is not supported in a host "
                              "orchestrator (plain loop bounds only)")
    return range(*(int(a) for a in args))


class _HostSelf:
    """``self`` of a host orchestrator: its chip functions dispatch to ranks."""

    def __init__(self, run: DistributedRun) -> None:
        self._run = run

    def __getattr__(self, name: str) -> Any:
        if name in getattr(self._run.host, "sub_workers", ()):  # a host task (§8)
            return lambda *args: self._run.sub_worker(name, args)
        if name not in self._run.program.functions:
            raise AttributeError(f"program '{self._run.program.name}' has no function '{name}'")

        def dispatch(*args: Any, device: Any = None, **kwargs: Any) -> Any:
            return self._run.dispatch(name, args, kwargs, device)

        return dispatch


class DistributedRun:
    """One execution of a program's host orchestrator on ``device_ids``' simulated ranks."""

    def __init__(self, program: n.Program | None, host: HostProgram | Any, platform: str,
                 device_ids: Sequence[int], *, shuffle: int | None = None,
                 compiled: dict[str, Any] | None = None,
                 windows: list[WindowBuffer] | None = None,
                 resident: dict[int, tuple[int, Any]] | None = None,
                 dfx: RankDfx | None = None,
                 callbacks: dict[str, Any] | None = None, host_arg: Any = None) -> None:
        self.program = program
        self.dfx = dfx  # per-rank DFX output of this call (harness/distributed_dfx.py)
        self.callbacks = callbacks or {}  # SubWorker name -> bound callback (subworkers.py)
        self._host_arg = host_arg  # a host tensor argument of a dispatch -> what binds
        self._commless = 0  # dispatches without device=: round-robin over the ranks
        # id(device tensor) -> (rank whose card holds it, its memory as an array):
        # tensors a prepared program made resident (alloc_stacked_tensor)
        self._resident = resident or {}
        self.host = host
        self.platform = platform
        self.cluster = SimCluster(device_ids, shuffle=shuffle, race_check=_race_check())
        self.compiled = compiled if compiled is not None else {}
        self._queued: dict[int, list[Any]] = {}
        # persistent windows (prepare(persistent=True)): the k-th allocation of every run
        # is the same buffer; None: fresh windows per run, released at its end
        self._persistent = windows
        self._allocated = 0
        # (rank, slot, start, end) of every dispatch, perf_counter seconds: the slot is
        # the dispatch's index among its rank's dispatches in this run (benchmark reads it)
        self.timings: list[tuple[int, int, float, float]] = []
        self._slots: dict[int, int] = {}
        self.new_windows = 0  # window buffers this run allocated (not reused)
        self.domains = Domains(self.cluster.nranks)  # window buffers' groups (§3a)

    # ------------------------------------------------------------ HostHooks
    def world_size(self) -> int:
        return self.cluster.nranks

    def alloc_window_buffer(self, nbytes: Any) -> WindowBuffer:
        nbytes = int(nbytes)
        keep = self._persistent
        if keep is None:
            self.new_windows += 1
            return self.cluster.alloc_window(nbytes)
        k, self._allocated = self._allocated, self._allocated + 1
        if k < len(keep) and keep[k].nbytes == nbytes:
            return keep[k]
        self.new_windows += 1
        buf = WindowBuffer(nbytes, self.cluster.nranks, k)
        keep[k:k + 1] = [buf]
        return buf

    def window(self, buffer: Any, shape: Any, dtype: Any) -> Window:
        if not isinstance(buffer, WindowBuffer):
            raise SimulationError(f"pld.window needs a buffer from pld.alloc_window_buffer, got "
                                  f"{type(buffer).__name__}")
        if not isinstance(dtype, DataType):
            raise SimulationError("pld.window needs dtype=pl.<dtype>")
        dims = (int(shape),) if isinstance(shape, int) else tuple(int(d) for d in shape)
        return Window(buffer, dims, dtype)

    def collective(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        self.flush()
        run = getattr(self, f"_{name}")
        return run(*args, **kwargs)

    # -------------------------------------------------------- collectives
    def _allreduce(self, target: Window, signal: Any = None, *, op: Any = 0, mode: str = "mesh",
                   core_num: int = 1) -> Window:
        del signal, mode, core_num
        collectives.allreduce(_views(target, "allreduce"), op)
        return target

    def _allgather(self, local: Window, target: Window, signal: Any = None) -> Window:
        del signal
        collectives.allgather(_views(local, "allgather"), _views(target, "allgather"))
        return target

    def _reduce_scatter(self, target: Window, signal: Any = None, *, op: Any = 0) -> Window:
        del signal
        collectives.reduce_scatter(_views(target, "reduce_scatter"), op)
        return target

    def _broadcast(self, target: Window, signal: Any = None, *, root: int = 0) -> Window:
        del signal
        collectives.broadcast(_views(target, "broadcast"), int(root))
        return target

    def _all_to_all(self, inputs: Window, target: Window, signal: Any = None) -> Window:
        del signal
        collectives.all_to_all(_views(inputs, "all_to_all"), _views(target, "all_to_all"))
        return target

    def _all_to_all_v(self, inputs: Window, target: Window, signal: Any, send_counts: Window,
                      recv_counts: Window) -> Window:
        del signal
        collectives.all_to_all_v(_views(inputs, "all_to_all_v"), _views(target, "all_to_all_v"),
                                 _views(send_counts, "all_to_all_v"),
                                 _views(recv_counts, "all_to_all_v"))
        return target

    def _barrier(self, signal: Any) -> Any:
        return signal  # every queued dispatch has finished: all ranks are past it

    # ------------------------------------------------------------- dispatch
    def dispatch(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any],
                 device: Any) -> Any:
        if kwargs:
            raise SimulationError(f"self.{name}(...) takes positional arguments only on the host "
                                  f"(got {', '.join(kwargs)}=)")
        rank = self._rank_of(f"self.{name}", device)
        compiled = self._compiled(name)
        bound = [self._bind(f"self.{name}", i, a, rank) for i, a in enumerate(args)]
        dfx, slot, platform = self.dfx, self._slots.get(rank, 0), self.platform
        if dfx is None:
            self._queue(rank, lambda: compiled(*resolved(bound)))
        else:
            self._queue(rank, lambda: dfx.run(compiled, resolved(bound), platform, rank, slot,
                                              name))
        # What the call gives back: the arguments its returns are (distributed.md §2).
        fn = self.program.functions.get(name)
        positions = returned_params(fn, self.program) if fn is not None else []
        given = tuple(args[i] for i in positions if i < len(args))
        return given[0] if len(given) == 1 else (given or None)

    def _bind(self, call: str, i: int, arg: Any, rank: int) -> Any:
        """What argument ``i`` of ``call`` on ``rank`` is: a window's slice of that rank
        (a `Slice`, resolved when the dispatch runs), a resident tensor's copy on that
        card (an error on another card), else itself."""
        if isinstance(arg, Window):
            return self.domains.bind(arg, rank, call, i, self._where())
        held = self._resident.get(id(arg))
        if held is None:
            return arg if self._host_arg is None else self._host_arg(arg)
        card, memory = held
        if card != rank:
            raise SimulationError(
                f"{call}(..., device={rank}): argument {i + 1} is resident on card "
                f"{card}, not on the card the call runs on (upload the stack with worker_ids "
                "naming the card each shard's consumer runs on)")
        return memory

    def _compiled(self, name: str) -> Any:
        compiled = self.compiled.get(name)
        if compiled is None:
            program = chip_program(self.program, name)
            compiled = self.compiled[name] = compile_program(
                program, RunConfig(platform=self.platform))
        return compiled

    def flush(self) -> None:
        """Run every queued dispatch (the host waits for its ranks)."""
        queued, self._queued = self._queued, {}
        self.domains.seal()
        self.cluster.run(queued)

    def _where(self) -> str:
        """`` at file:line`` of the host orchestrator's line running now ("" outside)."""
        fn = self.host.function() if isinstance(self.host, HostProgram) else self.host
        code, frame = getattr(fn, "__code__", None), sys._getframe(1)
        while frame is not None and frame.f_code is not code:
            frame = frame.f_back
        return f" at {frame.f_code.co_filename}:{frame.f_lineno}" if frame is not None else ""

    # ----------------------------------------------------------------- run
    def dispatch_jit(self, jit_fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any],
                     device: Any) -> None:
        """``per_rank(..., device=r)`` of a ``@pl.jit`` function in a ``@pl.jit.host``."""
        rank = self._rank_of(jit_fn.__name__, device)
        bound = [self._bind(jit_fn.__name__, i, a, rank) for i, a in enumerate(args)]
        platform = self.platform
        self._queue(rank, lambda: jit_fn(*resolved(bound), config=RunConfig(platform=platform),
                                         **kwargs))

    def _queue(self, rank: int, call: Any) -> None:
        """Queue ``call`` on ``rank``; running it records its wall-clock span."""
        slot = self._slots.get(rank, 0)
        self._slots[rank] = slot + 1

        def timed() -> Any:
            start = time.perf_counter()
            try:
                return call()
            finally:
                self.timings.append((rank, slot, start, time.perf_counter()))

        self._queued.setdefault(rank, []).append(timed)

    def sub_worker(self, name: str, args: tuple[Any, ...]) -> Any:
        """``self.<SubWorker>(...)``: after the queued dispatches, a task on the host."""
        self.flush()
        return subworkers.run_sub_worker(self.host, name, args, self.callbacks)

    def _rank_of(self, name: str, device: Any) -> int:
        if device is None:  # no affinity: round-robin over the ranks in issue order
            device, self._commless = self._commless % self.cluster.nranks, self._commless + 1
        rank = int(device)
        if not 0 <= rank < self.cluster.nranks:
            raise SimulationError(
                f"{name}(..., device={rank}): the program runs on {self.cluster.nranks} "
                f"rank(s), 0..{self.cluster.nranks - 1}")
        return rank

    def __call__(self, *args: Any) -> Any:
        plain = not isinstance(self.host, HostProgram)  # a @pl.jit.host function
        fn = self.host if plain else self.host.function()
        host_fn = _rebound(fn, _dims_of(fn, args), self)
        push_hooks(self)
        try:
            result = host_fn(*args) if plain else host_fn(_HostSelf(self), *args)
            self.flush()
        finally:
            pop_hooks()
            self._queued = {}
            self.domains.clear()
            self.cluster.close()
        return None if result is None or any(result is a for a in args) else result


def _race_check() -> bool:
    """The cross-rank race detector is on unless --pypto-no-race-check (distributed.md §5)."""
    session = context.current()
    return session is None or not session.settings.no_race_check


def _views(value: Any, op: str) -> list[np.ndarray]:
    if not isinstance(value, Window):
        raise SimulationError(f"pld.tensor.{op} in a host orchestrator takes windows "
                              f"(pld.window(...)), got {type(value).__name__}")
    return value.views()


def _dims_of(fn: Any, args: tuple[Any, ...]) -> dict[int, int]:
    """id(DynVar) -> size: the ``pl.dynamic`` dims of the host's parameter annotations,
    bound from the arguments' shapes (the first parameter naming a dim binds it)."""
    names = fn.__code__.co_varnames[1:fn.__code__.co_argcount]
    notes = getattr(fn, "__annotations__", {})
    bound: dict[int, int] = {}
    scope = {name: cell.cell_contents
             for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ())
             if _filled(cell)}
    for name, value in zip(names, args):
        form = notes.get(name)
        if isinstance(form, str):  # `from __future__ import annotations`
            try:
                form = eval(form, fn.__globals__, scope)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - an annotation we cannot read binds nothing
                continue
        while isinstance(form, AnnotationForm) and form.form in ("Out", "InOut"):
            form = form.args[0] if isinstance(form.args, tuple) else form.args
        if not isinstance(form, AnnotationForm) or form.form != "Tensor":
            continue
        shape = form.args[0] if isinstance(form.args, tuple) and form.args else None
        sizes = getattr(value, "shape", None)
        if not isinstance(shape, (list, tuple)) or sizes is None:
            continue
        for dim, size in zip(shape, tuple(sizes)):
            if isinstance(dim, DynVar) and not isinstance(dim, DynExpr):
                bound.setdefault(id(dim), int(size))
    return bound


def _host_value(value: Any, dims: dict[int, int], run: DistributedRun) -> Any:
    if value is pl_module:
        return _HostPl()
    if isinstance(value, DynVar) and id(value) in dims:
        return dims[id(value)]
    if isinstance(value, JITFunction):
        return _JitDispatch(value, run)
    return value


class _JitDispatch:
    """A ``@pl.jit`` function as a host orchestrator calls it: ``device=r`` dispatches."""

    def __init__(self, fn: Any, run: DistributedRun) -> None:
        self.fn = fn
        self.run = run

    def __call__(self, *args: Any, device: Any = None, **kwargs: Any) -> None:
        self.run.dispatch_jit(self.fn, args, kwargs, device)


def _rebound(fn: Any, dims: dict[int, int], run: DistributedRun) -> Any:
    """``fn`` with ``pl`` (the language module, by whatever name) seen as `_HostPl` and
    its bound ``pl.dynamic`` dims (globals or closure) as their sizes."""
    glb = {k: _host_value(v, dims, run) for k, v in fn.__globals__.items()}
    glb.setdefault("__builtins__", __builtins__)
    closure = fn.__closure__
    if closure is not None:
        closure = tuple(types.CellType(_host_value(c.cell_contents, dims, run))
                        if _filled(c) else c for c in closure)
    return types.FunctionType(fn.__code__, glb, fn.__name__, fn.__defaults__, closure)


def _filled(cell: Any) -> bool:
    try:
        cell.cell_contents  # noqa: B018 - probing an empty cell
    except ValueError:
        return False
    return True
