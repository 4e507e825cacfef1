"""``pypto.runtime.distributed_runner``: the runner of a multi-chip program on simulated
devices (docs/design/distributed.md §8).

`DistributedWorker` is what ``DistributedCompiledProgram.prepare()`` returns: it runs
one program, or several sharing its cards (``DistributedWorker([a, b])``,
``prepare(extra_compiled=[b])``), like the compiled program does, binds SubWorker
callbacks and keeps tensors resident on the simulated cards (``alloc_stacked_tensor``).
A host tensor argument of a dispatch goes through ``simpler_setup.torch_interop
.make_tensor_arg`` as in PyPTO's runtime.  The lower-level runner functions stay Tier 3."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_pypto.compat.device import (
    DeviceTensor,
    RegistrationHandle,
    StackedDeviceTensor,
    _Buffer,
)
from pytest_pypto.compat.simpler_setup import torch_interop
from pytest_pypto.compat.standins import tier3_class, tier3_name
from pytest_pypto.harness.distributed_program import (
    DistributedCompiledProgram,
    PreparedProgram,
)
from pytest_pypto.harness.subworkers import TensorArg

_WHY = "distributed execution"


class CompletedRun:
    """The handle of a submitted run (a simulated run completes when submitted)."""

    def __init__(self, value: Any) -> None:
        self._value = value

    def result(self) -> Any:
        return self._value


class DistributedWorker(PreparedProgram):
    """PyPTO's ``DistributedWorker(compiled)`` (or a list of compiled programs sharing
    the cards): a prepared multi-chip runner that also holds tensors resident on its
    cards.  ``rt(*args)`` runs the only program; with several, ``rt.run(compiled,
    *args)`` picks one and ``rt(*args)`` is ambiguous (TypeError)."""

    def __init__(self, compiled: DistributedCompiledProgram | Sequence[DistributedCompiledProgram],
                 config: Any = None, *, persistent: bool = False,
                 reset_persistent_windows: bool | None = None,
                 callbacks: dict[str, Any] | None = None,
                 sub_worker_overrides: dict[str, Any] | None = None,
                 inherited_host_tensors: Sequence[Any] | None = None,
                 extra_compiled: Sequence[DistributedCompiledProgram] = (),
                 **accepted: Any) -> None:
        del accepted  # startup_timeout_s: a simulated card starts at once
        many = isinstance(compiled, (list, tuple))
        programs = [*(compiled if many else [compiled]), *extra_compiled]
        if not programs:
            raise ValueError("DistributedWorker requires at least one compiled program")
        for prog in programs:
            if not isinstance(prog, DistributedCompiledProgram):
                raise TypeError(f"DistributedWorker needs DistributedCompiledProgram objects "
                                f"(ir.compile with distributed_config=), got "
                                f"{type(prog).__name__}")
            _check_compatible(prog, programs[0])
        if sub_worker_overrides is not None:
            warnings.warn("sub_worker_overrides is deprecated; use callbacks= instead.",
                          DeprecationWarning, stacklevel=2)
            callbacks = {**sub_worker_overrides, **(callbacks or {})}
        if reset_persistent_windows and not persistent:
            raise ValueError("DistributedWorker reset_persistent_windows=True requires "
                             "persistent=True")
        self._programs = programs
        super().__init__(programs[0], config, persistent=persistent,
                         reset_persistent_windows=reset_persistent_windows, callbacks=callbacks)
        self._windows_of = {id(p): ([] if persistent else None) for p in programs}
        self._windows_of[id(programs[0])] = self._windows
        self._inherited = list(inherited_host_tensors or ())
        self._stacks: list[StackedDeviceTensor] = []
        self._w = _Cards()
        self._owned_tensors: list[Any] = []
        self._registered: dict[int, Any] = {}
        self._handles: list[RegistrationHandle] = []

    def __call__(self, *args: Any, config: Any = None) -> Any:
        __tracebackhide__ = True
        if len(self._programs) > 1:
            raise TypeError("rt(*args) is ambiguous on a multi-program DistributedWorker; "
                            "dispatch explicitly with rt.run(compiled, *args).")
        return self._dispatch(self.program, args, config)

    def _dispatch(self, program: DistributedCompiledProgram, args: tuple[Any, ...],
                  config: Any) -> Any:
        __tracebackhide__ = True
        self._require_open("run")
        windows = self._windows_of[id(program)]
        if windows and self._reset:
            for buf in windows:
                buf.zero()
        try:
            return program._run(args, config or self.config, windows, self._resident,
                                self.callbacks)
        finally:
            run = program.last_run
            if run is not None and run.new_windows:
                self._w._next_alloc_id += 1  # the run allocated its comm domain

    def _hosts(self) -> list[Any]:
        return [p.host for p in self._programs]

    @property
    def nranks(self) -> int:
        return len(self.program.device_ids)

    def release_inherited_host_tensor_refs(self) -> None:
        """Drop the references to ``inherited_host_tensors`` (their data was copied)."""
        self._inherited.clear()

    def alloc_stacked_tensor(self, host: Any, *,
                             worker_ids: Sequence[int] | None = None) -> StackedDeviceTensor:
        """Upload ``host`` ([B, ...]) once: shard i becomes resident on card
        ``worker_ids[i]`` (default: card i) and is read from there by every later call."""
        self._require_open("alloc_stacked_tensor")
        data = np.ascontiguousarray(_as_numpy(host))
        if data.ndim < 2:
            raise ValueError(f"alloc_stacked_tensor needs a [B, ...] tensor, got shape "
                             f"{list(data.shape)}")
        count = data.shape[0]
        cards = list(range(count)) if worker_ids is None else [int(w) for w in worker_ids]
        if len(cards) != count:
            raise ValueError(f"alloc_stacked_tensor: {count} shards but {len(cards)} worker_ids")
        for card in cards:
            if not 0 <= card < self.nranks:
                raise ValueError(f"alloc_stacked_tensor: worker id {card} is not a card of the "
                                 f"program (0..{self.nranks - 1})")
        dtype = getattr(host, "dtype", data.dtype)
        shards = []
        for i, card in enumerate(cards):
            buf = _Buffer(data[i].nbytes)
            memory = buf.view(data.shape[1:], data.dtype)
            memory[...] = data[i]
            shard = DeviceTensor(buf.base, data.shape[1:], dtype, buffer=buf)
            self._resident[id(shard)] = (card, memory)
            shards.append(shard)
        stack = StackedDeviceTensor(shards, data.shape, cards)
        self._stacks.append(stack)
        return stack

    def copy_stacked_from(self, stack: StackedDeviceTensor, host: Any) -> None:
        """Copy every shard of ``stack`` back into ``host`` ([B, ...], in place)."""
        self._live(stack, "copy_stacked_from")
        out = _as_numpy(host)
        for i, shard in enumerate(stack.shards):
            out[i] = self._resident[id(shard)][1]

    def free_stacked_tensor(self, stack: StackedDeviceTensor) -> None:
        """Release the cards' copies of ``stack``."""
        self._live(stack, "free_stacked_tensor")
        for shard in stack.shards:
            self._resident.pop(id(shard), None)
        self._stacks.remove(stack)

    # ------------------------------------------------- tensors and dispatch
    def alloc_tensor(self, shape: Any, dtype: Any, init: Any = None, *,
                     worker_id: int = 0) -> Any:
        """A tensor resident on card ``worker_id`` (zeros, or ``init``'s data); the
        worker owns it until `free_tensor` or `close`."""
        self._require_open("alloc_tensor")
        if not 0 <= int(worker_id) < self.nranks:
            raise ValueError(f"alloc_tensor: worker id {worker_id} is not a card of the "
                             f"program (0..{self.nranks - 1})")
        import torch  # lazy: torch loads only when a tensor is allocated

        tensor = torch.zeros(tuple(shape), dtype=dtype)
        if init is not None:
            tensor.copy_(init)
        self._resident[id(tensor)] = (int(worker_id), tensor)
        self._owned_tensors.append(tensor)
        return tensor

    def free_tensor(self, tensor: Any) -> None:
        """Free a tensor made by `alloc_tensor` of this worker."""
        if not any(tensor is t for t in self._owned_tensors):
            raise ValueError("free_tensor: not a live tensor of this worker")
        self._owned_tensors = [t for t in self._owned_tensors if t is not tensor]
        self._resident.pop(id(tensor), None)

    def register(self, compiled: Any) -> RegistrationHandle:
        """A handle that runs ``compiled`` (a program this worker was made from)."""
        self._require_open("register")
        self._same_program(compiled, "register")
        handle = RegistrationHandle(self, compiled, len(self._handles) + 1)
        self._registered[handle.cid] = compiled
        self._handles.append(handle)
        return handle

    def run(self, compiled: Any, *args: Any, config: Any = None) -> Any:
        """Run ``compiled`` (a program this worker was made from) with ``args``."""
        __tracebackhide__ = True
        self._require_open("run")
        self._same_program(compiled, "run")
        return self._dispatch(compiled, args, config)

    def submit(self, compiled: Any, *args: Any, config: Any = None) -> CompletedRun:
        """Run ``compiled`` now (a simulated dispatch completes when submitted); the
        handle's ``result()`` returns its result."""
        return CompletedRun(self.run(compiled, *args, config=config))

    def _same_program(self, compiled: Any, op: str) -> None:
        if not any(compiled is p for p in self._programs):
            raise ValueError(f"DistributedWorker.{op}() requires a DistributedCompiledProgram "
                             "registered when this worker was constructed")

    def close(self) -> None:
        for stack in list(self._stacks):
            self.free_stacked_tensor(stack)
        for tensor in list(self._owned_tensors):
            self.free_tensor(tensor)
        for handle in self._handles:
            handle._closed = True
        self._registered.clear()
        for windows in self._windows_of.values():
            for buf in windows or ():
                buf.release()
        self._windows_of.clear()
        self._inherited.clear()
        self.closed = True

    def _live(self, stack: Any, op: str) -> None:
        if not any(stack is s for s in self._stacks):
            raise ValueError(f"{op}: {stack!r} is not a live stacked tensor of this worker")

    def _require_open(self, op: str) -> None:
        if self.closed:
            raise RuntimeError(f"DistributedWorker.{op}() called after close()")


def _check_compatible(prog: DistributedCompiledProgram,
                      primary: DistributedCompiledProgram) -> None:
    """Programs sharing one worker run on the same platform and cards."""
    if prog.platform != primary.platform:
        raise ValueError(f"DistributedWorker multi-program mode requires the same platform: "
                         f"{primary.platform!r} != {prog.platform!r}")
    if prog.device_ids != primary.device_ids:
        raise ValueError(f"DistributedWorker multi-program mode requires the same device_ids: "
                         f"{primary.device_ids} != {prog.device_ids}")


def _tensor_from_continuous(arg: Any) -> Any:
    """A SubWorker argument (what ``fn(args)`` receives per tensor) as a torch tensor
    sharing its memory."""
    if isinstance(arg, TensorArg):
        return arg.torch()
    raise TypeError(f"_tensor_from_continuous takes a tensor argument of a host task (an "
                    f"element of a SubWorker's args), got {type(arg).__name__}")


def _host_tensor_arg(arg: Any) -> Any:
    """A host torch tensor passed to a chip dispatch, through ``make_tensor_arg`` as in
    PyPTO's runtime (what binds is the memory the argument names)."""
    if type(arg).__module__.split(".", 1)[0] != "torch":
        return arg
    made = torch_interop.make_tensor_arg(None, arg)
    return made.value if isinstance(made, TensorArg) else made


class _Cards:
    """``DistributedWorker._w``: the simulated cards' allocation counter.
    ``_next_alloc_id`` grows by one for every call that allocated window memory (its
    comm domain): once for a persistent worker, on every call otherwise."""

    def __init__(self) -> None:
        self._next_alloc_id = 0


def _as_numpy(value: Any) -> np.ndarray:
    """``value``'s memory as an array (a CPU torch tensor shares it)."""
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        return value.detach().numpy()
    return np.asarray(value)


DistributedCompiledProgram.prepared_class = DistributedWorker  # prepare() returns one
DistributedCompiledProgram.host_arg = staticmethod(_host_tensor_arg)

DistributedRunHandle = tier3_class("runtime.DistributedRunHandle", _WHY)
execute_distributed_compiled = tier3_name("runtime.execute_distributed_compiled", _WHY)
execute_distributed = tier3_name("runtime.execute_distributed", _WHY)

__all__ = [
    "DistributedRunHandle",
    "DistributedWorker",
    "execute_distributed",
    "execute_distributed_compiled",
]
