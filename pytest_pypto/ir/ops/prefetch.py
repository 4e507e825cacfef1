# SPDX-License-Identifier: Apache-2.0
"""Asynchronous GM->L2 prefetch (docs/design/language.md §21): `pl.prefetch.make_context`,
`async_prefetch`, `session` and `wait`.

``ctx = make_context()`` builds a context (the device binds it to an SDMA workspace the
runtime owns; the kernel passes none); ``evt = async_prefetch(src, ctx)`` starts pulling
the GM tensor ``src`` into L2 and returns its completion event; ``s = session(ctx)``
projects the context's session; ``wait(evt, s)`` waits for the event and yields a BOOL
Scalar, true once the data landed.  A prefetch is a cache hint: it changes no value, so
the simulator only checks the handles' wiring, and the prefetch has landed as soon as it
was started (``wait`` gives true at once).

Rules at the user's line: ``src`` is a GM Tensor of a static shape whose dims are all 1
but the last (one flat run of memory: ``[N]`` or ``[1, ..., N]``), each handle operand is
the handle its producer makes.  The ops exist where the arch has an SDMA engine for them
(`ArchSpec.sdma_prefetch`: a2a3).  Handles are values of `HandleType` and live in one
kernel.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.dtypes import BOOL
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import HandleType, ScalarType, TensorType

__all__ = ["ASYNC_EVENT", "ASYNC_SESSION", "HANDLES", "PREFETCH_CONTEXT"]

PREFETCH_CONTEXT = HandleType("PrefetchAsyncContext")
ASYNC_EVENT = HandleType("AsyncEvent")
ASYNC_SESSION = HandleType("AsyncSession")
HANDLES = (PREFETCH_CONTEXT, ASYNC_EVENT, ASYNC_SESSION)

# The PyPTO spelling of each entry, for messages (the entries are tile-level ops).
_SPELLED = {"tile.prefetch_make_context": "pl.prefetch.make_context",
            "tile.prefetch_async": "pl.prefetch.async_prefetch",
            "tile.prefetch_session": "pl.prefetch.session",
            "tile.prefetch_wait": "pl.prefetch.wait"}


def _handle(info: CallInfo, name: str, want: HandleType, producer: str) -> None:
    got = info.types.get(name)
    if got != want:
        shown = getattr(got, "kind", None) or "nothing"
        raise OpTypeError(
            f"{_SPELLED[info.op]} expects {name} to be a {want.name} (the result of "
            f"{producer}), but got a {shown}",
            f"pass the value {producer} returned")


def _context_type(info: CallInfo) -> HandleType:
    return PREFETCH_CONTEXT


def _async_type(info: CallInfo) -> HandleType:
    src = info.types.get("src")
    op = _SPELLED[info.op]
    if not isinstance(src, TensorType):
        raise OpTypeError(f"{op} expects src to be a GM Tensor (a prefetch reads global "
                          f"memory), but got a {getattr(src, 'kind', 'nothing')}",
                          "prefetch the tensor itself, before loading it into a tile")
    if not src.shape:
        raise OpTypeError(f"{op} expects src to have rank >= 1, but got a rank-0 tensor")
    for i, d in enumerate(src.shape):
        if not isinstance(d, int):
            raise OpTypeError(f"{op} expects src to have a static shape, but dim {i} is "
                              "dynamic: the prefetch needs its byte count when compiled")
    for i, d in enumerate(src.shape[:-1]):
        if d != 1:
            raise OpTypeError(
                f"{op} expects src to be one flat run of GM (every dim but the last 1), but "
                f"dim {i} of {list(src.shape)} is {d}",
                "reshape the tensor to [N] or [1, N] before prefetching it")
    _handle(info, "ctx", PREFETCH_CONTEXT, "pl.prefetch.make_context()")
    return ASYNC_EVENT


def _session_type(info: CallInfo) -> HandleType:
    _handle(info, "ctx", PREFETCH_CONTEXT, "pl.prefetch.make_context()")
    return ASYNC_SESSION


def _wait_type(info: CallInfo) -> ScalarType:
    _handle(info, "event", ASYNC_EVENT, "pl.prefetch.async_prefetch(...)")
    _handle(info, "session", ASYNC_SESSION, "pl.prefetch.session(ctx)")
    return ScalarType(BOOL)


def _sdma(arch: Any, info: CallInfo) -> None:
    if not arch.sdma_prefetch:
        raise OpArchError(
            f"{_SPELLED[info.op]} is not available on the '{arch.name}' backend: it has no "
            "SDMA engine the runtime provisions for asynchronous prefetch",
            "prefetch runs on a2a3; a prefetch changes no value, so drop it on other archs")


class _Context:
    """A prefetch context in the simulator: what its events and session belong to."""

    __slots__ = ("started",)

    def __init__(self) -> None:
        self.started = 0


class _Event:
    __slots__ = ("context",)

    def __init__(self, context: _Context) -> None:
        self.context = context


class _Session:
    __slots__ = ("context",)

    def __init__(self, context: _Context) -> None:
        self.context = context


def _context_execute(*, out: Any = None, **_: Any) -> _Context:
    return _Context()


def _async_execute(src: Any, ctx: _Context, *, out: Any = None, **_: Any) -> _Event:
    ctx.started += 1  # the simulator's GM is L2: the data has landed already
    return _Event(ctx)


def _session_execute(ctx: _Context, *, out: Any = None, **_: Any) -> _Session:
    return _Session(ctx)


def _wait_execute(event: _Event, session: _Session, *, out: Any = None, **_: Any) -> bool:
    if event.context is not session.context:
        raise SimulationError(
            "pl.prefetch.wait got an event and a session of two different prefetch contexts",
            hint="wait with pl.prefetch.session(ctx) of the ctx the prefetch was started on")
    return True


_COMMON = {"mem": MemRule(), "arch_rule": _sdma, "tier": 2}

register(OpSpec(
    name="tile.prefetch_make_context", params=(), type_rule=_context_type,
    execute=_context_execute, spellings=("prefetch.make_context",), **_COMMON,
    doc="A new asynchronous-prefetch context (a PrefetchAsyncContext handle). The device "
        "binds it to an SDMA workspace the runtime owns; the kernel passes nothing.",
))
register(OpSpec(
    name="tile.prefetch_async",
    params=(ParamSpec("src", "tensor"), ParamSpec("ctx", "handle")),
    type_rule=_async_type, execute=_async_execute, spellings=("prefetch.async_prefetch",),
    **_COMMON,
    doc="Start pulling the GM tensor src (static shape, every dim but the last 1) into L2 "
        "on context ctx; returns its AsyncEvent. Does not block and changes no value.",
))
register(OpSpec(
    name="tile.prefetch_session",
    params=(ParamSpec("ctx", "handle"),),
    type_rule=_session_type, execute=_session_execute, spellings=("prefetch.session",),
    **_COMMON,
    doc="The AsyncSession of prefetch context ctx (a projection; starts no work).",
))
register(OpSpec(
    name="tile.prefetch_wait",
    params=(ParamSpec("event", "handle"), ParamSpec("session", "handle")),
    type_rule=_wait_type, execute=_wait_execute, spellings=("prefetch.wait",), **_COMMON,
    doc="Wait until the prefetch of event (an AsyncEvent) on session (its context's "
        "AsyncSession) landed; a BOOL Scalar, true (in the simulator at once).",
))
