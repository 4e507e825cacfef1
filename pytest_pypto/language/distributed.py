# SPDX-License-Identifier: Apache-2.0
"""`pld` (PyPTO's ``pypto.language.distributed``): multi-chip programs (docs/design/distributed.md).

What runs here (docs/design/distributed.md §2-§4):

- ``pld.DistributedTensor[[shape], dtype]``: a window-bound tensor parameter.  The
  parser reads it as a ``pl.Tensor``; at run time the argument is the rank's own slice
  of a window buffer, bound without a copy.
- The host orchestrator's calls (``pld.world_size()``, ``pld.alloc_window_buffer``,
  ``pld.window``, the host-level collectives ``pld.tensor.allreduce`` & co.) run in
  plain Python while a multi-chip program executes; they ask the active `HostHooks`.
- The enums ``ReduceOp``, ``NotifyOp``, ``WaitCmp``, ``AtomicType``.

In kernel code ``pld.system.notify``, ``pld.tile.remote_load``, ``pld.tensor.put`` & co.
are ops (pytest_pypto/ir/ops/distributed.py); any other name is an inert Tier-3 marker.
"""

from __future__ import annotations

import enum
from typing import Any, Protocol

from pytest_pypto.language.surface import (
    AnnotationForm,
    AtomicType,
    NotRunnable,
    OpStub,
    Unsupported,
)

__all__ = [
    "AtomicType",
    "DistributedTensor",
    "HostHooks",
    "NotifyOp",
    "ReduceOp",
    "WaitCmp",
    "alloc_window_buffer",
    "host_hooks",
    "tensor",
    "window",
    "world_size",
]

_REASON = "in-kernel cross-rank ops on simulated devices"


class ReduceOp(enum.IntEnum):
    """How a reducing collective combines the ranks' slices."""

    Sum = 0
    Max = 1
    Min = 2
    Prod = 3


class NotifyOp(enum.IntEnum):
    """What ``pld.system.notify`` does to the peer's signal cell."""

    AtomicAdd = 0
    Set = 1


class WaitCmp(enum.IntEnum):
    """The predicate ``pld.system.wait`` waits for on the rank's own signal cell."""

    Eq = 0
    Ge = 1


class WindowForm(AnnotationForm):
    """What `pld.DistributedTensor[...]` evaluates to: a pl.Tensor form that marks window
    memory; a kernel may write a window parameter declared without pl.InOut (PyPTO's
    rule: it is shared memory, not an input), so the parser reads it as InOut."""

    window = True


class _DistributedMeta(type):
    def __getitem__(cls, args: Any) -> AnnotationForm:
        # The parser types it as a pl.Tensor; the window binding happens at run time.
        return WindowForm("Tensor", args)

    def __repr__(cls) -> str:
        return "pld.DistributedTensor"


class DistributedTensor(metaclass=_DistributedMeta):
    """`pld.DistributedTensor[[d0, d1], dtype]`: a window-bound tensor parameter."""

    pl_annotation_form = "Tensor"  # what the parser reads it as (language/expressions.py)


class HostHooks(Protocol):
    """What the host orchestrator's ``pld`` calls do while a program runs (the harness
    installs one per run: pytest_pypto/harness/distributed.py)."""

    def world_size(self) -> int: ...
    def alloc_window_buffer(self, nbytes: int) -> Any: ...
    def window(self, buffer: Any, shape: Any, dtype: Any) -> Any: ...
    def collective(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any: ...


_ACTIVE: list[HostHooks] = []


def host_hooks() -> HostHooks:
    """The running host orchestrator's hooks; NotRunnable outside one."""
    if not _ACTIVE:
        raise NotRunnable(
            "pld host calls run inside a host orchestrator "
            "(@pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)) while its "
            "program executes, never from plain Python"
        )
    return _ACTIVE[-1]


def push_hooks(hooks: HostHooks) -> None:
    _ACTIVE.append(hooks)


def pop_hooks() -> None:
    _ACTIVE.pop()


def world_size() -> int:
    """``pld.world_size()``: how many ranks the program runs on."""
    return host_hooks().world_size()


def alloc_window_buffer(size: Any, *, dtype: Any = None, name: str = "") -> Any:
    """``pld.alloc_window_buffer(nbytes)`` or ``(shape, dtype=)``: window memory of that
    many bytes (or of a ``shape`` of ``dtype`` elements) on every rank."""
    del name
    if isinstance(size, (list, tuple)):
        if dtype is None:
            raise TypeError("pld.alloc_window_buffer(shape, dtype=...) needs dtype= with a shape")
        count = 1
        for d in size:
            count = count * d
        return host_hooks().alloc_window_buffer(count * dtype.itemsize)
    if dtype is not None:
        raise TypeError("pld.alloc_window_buffer(nbytes) takes dtype= only with a shape")
    return host_hooks().alloc_window_buffer(size)  # the hooks make it a number of bytes


def window(buffer: Any, shape: Any, dtype: Any = None, **kwargs: Any) -> Any:
    """``pld.window(buf, [shape], dtype=)``: a typed view of a window buffer on every rank."""
    del kwargs
    return host_hooks().window(buffer, shape, dtype)


_COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all",
                "all_to_all_v", "barrier")


class _HostOp(OpStub):
    # A ``pld`` op: parsed as an op in kernel code (ir/ops/distributed.py); called from a
    # host orchestrator, a collective is that host-level call.  (No docstring: the
    # instances' __doc__ is OpStub's rendered op reference.)
    __doc__ = OpStub.__dict__["__doc__"]

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self.op_name in _COLLECTIVES and self.namespace == "pld.tensor":
            return host_hooks().collective(self.op_name, args, kwargs)
        return super().__call__(*args, **kwargs)


class _Namespace:
    """``pld.tensor`` / ``pld.tile`` / ``pld.system``: op stubs (kernel code) that are
    also the host-level collectives and window helpers (host code)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._stubs: dict[str, OpStub] = {}

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if self._name == "tensor" and name in ("alloc_window_buffer", "window"):
            return globals()[name]
        if self._name == "system" and name == "world_size":
            return world_size
        return _stub(self._stubs, name, f"pld.{self._name}")

    def __repr__(self) -> str:
        return f"pld.{self._name}"


def _stub(cache: dict[str, OpStub], name: str, namespace: str) -> OpStub:
    stub = cache.get(name)
    if stub is None:
        stub = cache[name] = _HostOp(name, namespace)
    return stub


tensor = _Namespace("tensor")
tile = _Namespace("tile")
system = _Namespace("system")
_TOP: dict[str, OpStub] = {}
_OPS = ("get_comm_ctx", "rank", "nranks", "remote_load", "remote_store")


def __getattr__(name: str) -> Any:
    if name.startswith("__"):
        raise AttributeError(name)
    if name in _OPS:
        return _stub(_TOP, name, "pld")
    return Unsupported(f"distributed.{name}", 3, _REASON)
