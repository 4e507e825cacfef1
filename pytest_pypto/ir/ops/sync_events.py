# SPDX-License-Identifier: Apache-2.0
"""Explicit cross-core events of hand-written AIC/AIV kernels (docs/design/language.md
§14): `pl.system.sync_set`, `pl.system.sync_wait` and `pl.system.set_ffts`.

``sync_set(event_id, pipe=, ffts_mode=, core_type=)`` raises an event, ``sync_wait(event_id,
pipe=, core_type=)`` waits until it was raised and consumes it; the author pairs ids and
pipes.  ``event_id`` is an int in 0-13 (14 and 15 are reserved) or a dynamic INDEX Scalar
(checked when it runs); ``ffts_mode`` (``sync_set`` only) is 0, 1 or 2; ``core_type``,
"aic" or "aiv", places the op on one lane of a mixed kernel.  ``set_ffts(workspace)``
declares the FFTS setup operand A3 needs before the first event op: a 1-D INT64 tensor of
at least 256 elements; it computes nothing here.

In the simulator, inside a Group task (runtime/lanes.py) each raise is one signal of its
event id and a wait takes one, waiting while there is none; with ``ffts_mode=2`` (the
vector lanes' reduction into the cube) a wait takes one signal per AIV kernel of the
Group.  A wait no kernel of the Group can satisfy is the Group's deadlock error, naming
the wait's line.  A kernel running alone has no peer: its program order already puts a
raise before a later wait, so both only record nothing.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.ops.cross_core import LANE
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TensorType

__all__ = ["FFTS_WORKSPACE_ELEMENTS", "USER_EVENTS"]

USER_EVENTS = 14  # ids 0..13 are the author's; 14 and 15 belong to the toolchain
FFTS_WORKSPACE_ELEMENTS = 256
_CORE_TYPES = (None, "aic", "aiv")


def _event_type(info: CallInfo) -> None:
    event = info.values.get("event_id")
    event_type = info.types.get("event_id")
    if event is None and isinstance(event_type, ScalarType):
        if not event_type.dtype.is_int:
            raise OpTypeError(f"The operator {info.op} requires an integer event_id, got "
                              f"a {event_type.dtype.name} Scalar")
    elif isinstance(event, bool) or not isinstance(event, int):
        raise OpTypeError(f"The operator {info.op} requires event_id to be an int or an INDEX "
                          f"Scalar, got {event!r}")
    elif not 0 <= event < USER_EVENTS:
        raise OpTypeError(
            f"The operator {info.op} got event_id {event}: event ids are 0 to "
            f"{USER_EVENTS - 1}; event ids 14 and 15 are reserved",
            "pick a free event id in 0-13 and use the same one on both sides")
    if info.values.get("pipe") is None:
        raise OpTypeError(f"The operator {info.op} requires pipe= (a pl.PipeType member)")
    mode = info.values.get("ffts_mode")
    if mode is not None and mode not in (0, 1, 2):
        raise OpTypeError(f"The operator {info.op}: ffts_mode must be 0, 1 or 2, got {mode!r}")
    if info.values.get("core_type") not in _CORE_TYPES:
        raise OpTypeError(f"The operator {info.op} requires core_type 'aic' or 'aiv' (or none), "
                          f"got {info.values.get('core_type')!r}")


def _ffts_type(info: CallInfo) -> None:
    ws = info.types.get("workspace")
    if not isinstance(ws, TensorType) or ws.dtype.name != "INT64" or len(ws.shape) != 1 \
            or not isinstance(ws.shape[0], int) or ws.shape[0] < FFTS_WORKSPACE_ELEMENTS:
        shown = f"{ws.dtype.name}{list(ws.shape)}" if isinstance(ws, TensorType) else repr(ws)
        raise OpTypeError(
            f"The operator {info.op} requires a 1-D workspace of a static length of at least "
            f"{FFTS_WORKSPACE_ELEMENTS} INT64 elements, got {shown}")


def _events(group: Any) -> dict[int, list[int]]:
    """The Group's raised and not yet consumed events: id -> the ffts_mode of each raise."""
    found = getattr(group, "sync_events", None)
    if found is None:
        found = group.sync_events = {}
    return found


def _checked(event_id: Any) -> int:
    event = int(event_id)
    if not 0 <= event < USER_EVENTS:
        raise SimulationError(f"system.sync_set / sync_wait event_id {event} at run time is "
                              f"outside 0-{USER_EVENTS - 1} (14 and 15 are reserved)")
    return event


def _set_execute(event_id, *, pipe=None, ffts_mode=None, core_type=None, out=None):
    endpoint = LANE.endpoint
    if endpoint is None:  # a kernel alone: nobody to signal
        return None
    with endpoint.group.cond:
        _events(endpoint.group).setdefault(_checked(event_id), []).append(ffts_mode or 0)
    return None


def _wait_execute(event_id, *, pipe=None, core_type=None, out=None):
    endpoint = LANE.endpoint
    if endpoint is None:
        return None
    group = endpoint.group
    event = _checked(event_id)
    raised = _events(group).setdefault(event, [])
    kernels = getattr(group, "kernels", ())
    lanes = max(1, sum(1 for k in kernels if getattr(k, "core_type", "") == "aiv"))

    def needed() -> int:
        return lanes if raised and raised[0] == 2 else 1

    group.wait_until(endpoint.index, lambda: len(raised) >= needed(),
                     f"system.sync_wait on event {event}, which no kernel of the group has set "
                     "(enough times)", endpoint._where())
    del raised[:needed()]
    return None


register(OpSpec(
    name="tile.sync_set",
    params=(ParamSpec("event_id", "scalar"),
            ParamSpec("pipe", "enum", default=None, keyword_only=True),
            ParamSpec("ffts_mode", "int", default=None, keyword_only=True),
            ParamSpec("core_type", "str", default=None, keyword_only=True)),
    type_rule=_event_type, mem=MemRule(), execute=_set_execute,
    spellings=("system.sync_set",),
    doc="Raise cross-core event event_id (0-13) on pipe; ffts_mode 0, 1 or 2 (2: the AIV "
        "lanes' reduction into the cube).  In a Group task one signal per raise.",
))
register(OpSpec(
    name="tile.sync_wait",
    params=(ParamSpec("event_id", "scalar"),
            ParamSpec("pipe", "enum", default=None, keyword_only=True),
            ParamSpec("core_type", "str", default=None, keyword_only=True)),
    type_rule=_event_type, mem=MemRule(), execute=_wait_execute,
    spellings=("system.sync_wait",),
    doc="Wait until cross-core event event_id was raised, and consume it (after an "
        "ffts_mode=2 raise, one raise per AIV kernel of the Group); a wait no peer can "
        "satisfy is a deadlock error.",
))
register(OpSpec(
    name="tile.set_ffts",
    params=(ParamSpec("workspace", "tensor"),),
    type_rule=_ffts_type, mem=MemRule(), execute=lambda workspace, *, out=None: None,
    spellings=("system.set_ffts",),
    doc="Declare the FFTS setup operand of explicit cross-core events (a 1-D INT64 tensor "
        "of >= 256 elements, needed on A3 before the first event op); computes nothing.",
))
