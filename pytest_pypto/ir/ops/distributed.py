# SPDX-License-Identifier: Apache-2.0
"""Cross-rank ops of multi-chip kernels: ``pld.*`` (docs/design/distributed.md §3).

They run inside a kernel on a simulated rank (`ir.ranks.current`), on window-bound
tensors (a rank's slice of a window buffer; `ir.ranks.peer_view` finds the same bytes
on another rank):

- ``pld.get_comm_ctx(t)``, ``pld.rank(ctx)``, ``pld.nranks(ctx)``: the rank's place in
  the comm domain of ``t``'s window (ranks and peers on a window count within it).
- ``pld.system.notify`` adds to (AtomicAdd) or sets (Set) a cell of the peer's signal;
  ``pld.system.wait`` waits until the rank's own cell is == (Eq) or >= (Ge) a value,
  letting the other ranks run meanwhile.
- ``pld.tile.remote_load`` reads a window of the peer's slice into a tile;
  ``pld.tile.remote_store`` writes (or, atomic=Add, adds) a tile into the peer's slice;
  ``pld.tensor.put`` / ``pld.tensor.get`` copy a region to / from the peer's slice.
- in-kernel collectives (``pld.tensor.barrier``, ``allreduce``, ``allgather``,
  ``reduce_scatter``, ``broadcast``, ``all_to_all``): every rank of the run must call
  them; ranks meet before reading their peers' slices and again before writing their
  own, so a collective sees every rank's data as it was when all ranks arrived.

A region outside the window is a bounds error at the call's line; a wait or a
collective no rank can satisfy is a `DeadlockError` naming the ranks (runtime/devices_sim.py).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import ranks
from pytest_pypto.ir.dtypes import INT32
from pytest_pypto.ir.ops._rules import OpBoundsError, dims, np, tensor, tile
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TensorType, TileType
from pytest_pypto.ir.values import TileValue

_REDUCE = {0: "add", 1: "maximum", 2: "minimum", 3: "multiply"}


def _rank() -> ranks.RankContext:
    ctx = ranks.current()
    if ctx is None:
        raise OpBoundsError(
            "a cross-rank op ran outside a multi-chip run",
            "compile the program with ir.compile(..., distributed_config=DistributedConfig(...)) "
            "and dispatch its chip functions from a host orchestrator",
        )
    return ctx


def _peer(array: Any, peer: int, op: str) -> Any:
    try:
        return ranks.peer_view(array, int(peer), op)
    except ValueError as exc:
        raise OpBoundsError(str(exc)) from None


def _region(op: str, whose: str, offsets: Any, extents: Any, shape: Any) -> tuple[slice, ...]:
    offsets = tuple(int(o) for o in offsets)
    extents = tuple(int(e) for e in extents)
    if len(offsets) != len(shape) or len(extents) != len(shape):
        raise OpBoundsError(f"{op}: {len(offsets)} offsets for the rank-{len(shape)} {whose}")
    for axis, (o, e, n) in enumerate(zip(offsets, extents, shape)):
        if o < 0 or e < 0 or o + e > n:
            raise OpBoundsError(
                f"{op} reaches outside the {whose} window {dims(shape)}: offsets "
                f"{list(offsets)}, extent {list(extents)} (axis {axis}: {o}..{o + e} of {n})",
                "keep remote accesses inside the window (pld.window's shape)",
            )
    return tuple(slice(o, o + e) for o, e in zip(offsets, extents))


def _int(value: Any) -> int:
    return int(getattr(value, "value", value))


def _races(ctx: Any) -> Any:
    """The run's cross-rank race detector (runtime/rank_races.py), None when it is off."""
    return getattr(ctx, "races", None)


def _touch(ctx: Any, view: Any, kind: str, op: str) -> None:
    """Note a window access for the race detector: kind "read", "write" or "atomic"."""
    races = getattr(ctx, "races", None)
    if races is not None:
        races.touch(ctx.rank, view, kind, op)


def _cell(cell: tuple[int, ...]) -> tuple[slice, ...]:
    return tuple(slice(c, c + 1) for c in cell)


# ------------------------------------------------------------ rank queries


def _ctx_type(info: CallInfo) -> ScalarType:
    tensor(info, "tensor")
    return ScalarType(INT32)


def _rank_type(info: CallInfo) -> ScalarType:
    return ScalarType(INT32)


register(OpSpec(
    name="tensor.pld_comm_ctx", params=(ParamSpec("tensor", "tensor"),),
    type_rule=_ctx_type, mem=MemRule(), execute=lambda tensor, out=None: ranks.comm_ctx(tensor),
    spellings=("pld.get_comm_ctx", "pld.system.get_comm_ctx"),
    doc="The communication context of a window-bound tensor (pass it to pld.rank / "
        "pld.nranks).",
))
register(OpSpec(
    name="tensor.pld_rank", params=(ParamSpec("ctx", "scalar"),),
    type_rule=_rank_type, mem=MemRule(),
    execute=lambda ctx, out=None: ranks.group_place(_rank(), ctx)[0],
    spellings=("pld.rank", "pld.system.rank"),
    doc="This rank's index in the comm domain of ctx (0 .. nranks - 1).",
))
register(OpSpec(
    name="tensor.pld_nranks", params=(ParamSpec("ctx", "scalar"),),
    type_rule=_rank_type, mem=MemRule(),
    execute=lambda ctx, out=None: ranks.group_place(_rank(), ctx)[1],
    spellings=("pld.nranks", "pld.system.nranks"),
    doc="The number of ranks of the comm domain of ctx.",
))


# ----------------------------------------------------------- notify / wait


def _signal_type(info: CallInfo, name: str) -> TensorType:
    t = tensor(info, name)
    offsets = info.values.get("offsets") or ()
    if len(offsets) != t.rank:
        raise OpTypeError(f"The operator {info.op} takes one offset per dimension of "
                          f"{name} {dims(t.shape)}, but got {len(offsets)}")
    return t


def _notify_execute(target, peer, value, *, offsets, op=0, out=None, **_):
    ctx = _rank()
    remote = _peer(target, peer, "pld.system.notify")
    cell = tuple(s.start for s in _region("pld.system.notify", "signal", offsets,
                                          (1,) * target.ndim, target.shape))
    if _int(op) == 1:  # Set
        remote[cell] = value
    else:  # AtomicAdd
        remote[cell] = remote[cell] + value
    races = _races(ctx)
    if races is not None:
        races.notify(ctx.rank, remote[_cell(cell)], "pld.system.notify")
    return target


def _wait_execute(signal, expected, *, offsets, cmp=0, out=None, **_):
    ctx = _rank()
    cell = tuple(s.start for s in _region("pld.system.wait", "signal", offsets,
                                          (1,) * signal.ndim, signal.shape))
    want = int(expected)
    if _int(cmp) == 1:
        ok, shown = (lambda: int(signal[cell]) >= want), f">= {want}"
    else:
        ok, shown = (lambda: int(signal[cell]) == want), f"== {want}"
    ctx.block_until(ok, f"pld.system.wait on signal cell {list(cell)} {shown} "
                        f"(holds {int(signal[cell])})")
    races = _races(ctx)
    if races is not None:
        races.wait(ctx.rank, signal[_cell(cell)])
    return signal


register(OpSpec(
    name="tensor.pld_notify",
    params=(ParamSpec("target", "tensor"), ParamSpec("peer", "scalar"),
            ParamSpec("offsets", "index_list"), ParamSpec("value", "scalar"),
            ParamSpec("op", "literal", default=0, keyword_only=True)),
    type_rule=lambda info: _signal_type(info, "target"), mem=MemRule(),
    execute=_notify_execute,
    spellings=("pld.system.notify",),
    doc="Add value to (op=AtomicAdd) or set (op=Set) the cell at offsets of peer's signal.",
))
register(OpSpec(
    name="tensor.pld_wait",
    params=(ParamSpec("signal", "tensor"), ParamSpec("offsets", "index_list"),
            ParamSpec("expected", "scalar"),
            ParamSpec("cmp", "literal", default=0, keyword_only=True)),
    type_rule=lambda info: _signal_type(info, "signal"), mem=MemRule(),
    execute=_wait_execute,
    spellings=("pld.system.wait",),
    doc="Wait until this rank's signal cell at offsets is == (cmp=Eq) or >= (cmp=Ge) expected.",
))


# ------------------------------------------------------- remote load/store


def _remote_load_type(info: CallInfo) -> TileType:
    src = tensor(info, "target")
    shape = tuple(info.values.get("shape") or ())
    if len(shape) != src.rank or not all(isinstance(d, int) and d > 0 for d in shape):
        raise OpTypeError(f"The operator {info.op} needs a static positive shape of rank "
                          f"{src.rank}, but got {dims(shape)}")
    valid = info.values.get("valid_shape")
    return TileType(shape, src.dtype, "Vec", tuple(valid) if valid is not None else shape)


def _remote_load_execute(target, peer, *, offsets, shape, valid_shape=None, out=None, **_):
    ctx = _rank()
    remote = _peer(target, peer, "pld.tile.remote_load")
    extents = tuple(int(v) for v in (valid_shape if valid_shape is not None else shape))
    window = _region("pld.tile.remote_load", "peer's", offsets, extents, target.shape)
    data = np.zeros(tuple(int(s) for s in shape), remote.dtype)
    data[tuple(slice(0, e) for e in extents)] = remote[window]
    _touch(ctx, remote[window], "read", "pld.tile.remote_load")
    dtype = out.dtype if out is not None else None
    return TileValue(data, extents, dtype, "Vec", None)


def _remote_store_type(info: CallInfo) -> TensorType:
    src = tile(info, "tile")
    dst = tensor(info, "target")
    if src.dtype != dst.dtype:
        raise OpTypeError(f"The operator {info.op} requires the tile dtype to match the "
                          f"target's, but got {src.dtype.name} and {dst.dtype.name}")
    return dst


def _remote_store_execute(src, target, peer, *, offsets, atomic=None, out=None, **_):
    ctx = _rank()
    remote = _peer(target, peer, "pld.tile.remote_store")
    valid = tuple(int(v) for v in src.valid)
    valid = (1,) * (target.ndim - len(valid)) + valid
    window = _region("pld.tile.remote_store", "peer's", offsets, valid, target.shape)
    region = src.valid_view().reshape(valid).astype(remote.dtype, copy=False)
    add = str(getattr(atomic, "name", atomic)) in ("Add", "1")
    remote[window] = remote[window] + region if add else region
    _touch(ctx, remote[window], "atomic" if add else "write", "pld.tile.remote_store")
    return target


register(OpSpec(
    name="tile.pld_remote_load",
    params=(ParamSpec("target", "tensor"), ParamSpec("peer", "scalar"),
            ParamSpec("offsets", "index_list"), ParamSpec("shape", "shape"),
            ParamSpec("valid_shape", "index_list", default=None)),
    type_rule=_remote_load_type, mem=MemRule(result="Vec"), execute=_remote_load_execute,
    spellings=("pld.tile.remote_load", "pld.remote_load"),
    doc="Read the window at offsets of peer's slice of a window-bound tensor into a tile.",
))
register(OpSpec(
    name="tile.pld_remote_store",
    params=(ParamSpec("tile", "tile"), ParamSpec("target", "tensor"), ParamSpec("peer", "scalar"),
            ParamSpec("offsets", "index_list"),
            ParamSpec("atomic", "literal", default=None, keyword_only=True)),
    type_rule=_remote_store_type, mem=MemRule(operands={"tile": ("Vec",)}, result=None),
    execute=_remote_store_execute,
    spellings=("pld.tile.remote_store", "pld.remote_store"),
    doc="Write (atomic=Add: add) a tile into peer's slice of a window-bound tensor at offsets.",
))
