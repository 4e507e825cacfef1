# SPDX-License-Identifier: Apache-2.0
"""Bulk cross-rank ops of multi-chip kernels: put, get, tensor-level remote_store and
the in-kernel collectives (docs/design/distributed.md §3; the family's overview is in
ir/ops/distributed.py).

A collective meets every rank of its window's comm domain (the run's ranks, or the
group its window buffer serves: ir/ranks.py) three times (`RankContext.rendezvous`):
before anyone reads a peer, before anyone writes its own slice, and before anyone
leaves, so what it reads is every rank's data as it was on arrival and what follows
it sees every rank's result.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import ranks
from pytest_pypto.ir.ops._rules import OpBoundsError, np, tensor
from pytest_pypto.ir.ops.distributed import _peer, _races, _rank, _region, _touch
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TensorType

_REDUCE = {0: "add", 1: "maximum", 2: "minimum", 3: "multiply"}


def _is_add(atomic: Any) -> bool:
    return str(getattr(atomic, "name", atomic)) in ("Add", "1")


def _same_dtype(info: CallInfo, a: str, b: str) -> TensorType:
    ta, tb = tensor(info, a), tensor(info, b)
    if ta.dtype != tb.dtype:
        raise OpTypeError(f"The operator {info.op} requires {a} and {b} of one dtype, but got "
                          f"{ta.dtype.name} and {tb.dtype.name}")
    return ta


def _copy_regions(op: str, dst: Any, src: Any, dst_offsets: Any, src_offsets: Any,
                  shape: Any, whose_dst: str, whose_src: str) -> tuple[Any, Any]:
    if shape is None:
        if dst.shape != src.shape:
            raise OpBoundsError(f"{op} of whole slices needs equal shapes, but got "
                                f"{list(dst.shape)} and {list(src.shape)}",
                                "give dst_offsets, src_offsets and shape to copy a region")
        full = tuple(slice(None) for _ in dst.shape)
        return full, full
    zero = (0,) * len(shape)
    return (_region(op, whose_dst, dst_offsets or zero, shape, dst.shape),
            _region(op, whose_src, src_offsets or zero, shape, src.shape))


def _put_execute(dst, peer, src, *, dst_offsets=None, src_offsets=None, shape=None,
                 atomic=None, out=None, **_):
    ctx = _rank()
    remote = _peer(dst, peer, "pld.tensor.put")
    to, frm = _copy_regions("pld.tensor.put", dst, src, dst_offsets, src_offsets, shape,
                            "peer's destination", "source")
    data = np.asarray(src[frm]).astype(remote.dtype, copy=True)
    remote[to] = remote[to] + data if _is_add(atomic) else data
    _touch(ctx, remote[to], "atomic" if _is_add(atomic) else "write", "pld.tensor.put")
    return dst


def _get_execute(dst, peer, src, *, dst_offsets=None, src_offsets=None, shape=None, out=None,
                 **_):
    ctx = _rank()
    remote = _peer(src, peer, "pld.tensor.get")
    to, frm = _copy_regions("pld.tensor.get", dst, src, dst_offsets, src_offsets, shape,
                            "destination", "peer's source")
    _touch(ctx, remote[frm], "read", "pld.tensor.get")
    dst[to] = remote[frm]
    return dst


_REGION = (ParamSpec("dst_offsets", "index_list", default=None),
           ParamSpec("src_offsets", "index_list", default=None),
           ParamSpec("shape", "index_list", default=None))
_CHUNKS = (ParamSpec("chunk_rows", "int", default=0, keyword_only=True),
           ParamSpec("chunk_cols", "int", default=0, keyword_only=True),
           ParamSpec("pipeline", "bool", default=False, keyword_only=True))

register(OpSpec(
    name="tensor.pld_put",
    params=(ParamSpec("dst", "tensor"), ParamSpec("peer", "scalar"), ParamSpec("src", "tensor"),
            *_REGION, ParamSpec("atomic", "literal", default=None, keyword_only=True), *_CHUNKS),
    type_rule=lambda info: _same_dtype(info, "dst", "src"), mem=MemRule(),
    execute=_put_execute, spellings=("pld.tensor.put",),
    doc="Copy src (or its region) into peer's slice of the window-bound dst (atomic=Add: add "
        "into it). The staging chunk options have no effect on the result.",
))
register(OpSpec(
    name="tensor.pld_get",
    params=(ParamSpec("dst", "tensor"), ParamSpec("peer", "scalar"), ParamSpec("src", "tensor"),
            *_REGION, *_CHUNKS),
    type_rule=lambda info: _same_dtype(info, "dst", "src"), mem=MemRule(),
    execute=_get_execute, writes="dst", spellings=("pld.tensor.get",),
    doc="Copy peer's slice of the window-bound src (or its region) into the local dst.",
))


def _tensor_remote_store(src, target, peer, *, offsets, atomic=None, out=None, **_):
    ctx = _rank()
    remote = _peer(target, peer, "pld.tensor.remote_store")
    data = np.asarray(src)
    shape = (1,) * (target.ndim - data.ndim) + data.shape
    window = _region("pld.tensor.remote_store", "peer's", offsets, shape, target.shape)
    data = data.reshape(shape).astype(remote.dtype, copy=False)
    remote[window] = remote[window] + data if _is_add(atomic) else data
    _touch(ctx, remote[window], "atomic" if _is_add(atomic) else "write",
           "pld.tensor.remote_store")
    return target


register(OpSpec(
    name="tensor.pld_remote_store",
    params=(ParamSpec("src", "tensor"), ParamSpec("target", "tensor"), ParamSpec("peer", "scalar"),
            ParamSpec("offsets", "index_list"),
            ParamSpec("atomic", "literal", default=None, keyword_only=True)),
    type_rule=lambda info: _same_dtype(info, "target", "src"), mem=MemRule(),
    execute=_tensor_remote_store, spellings=("pld.tensor.remote_store",),
    doc="Write (atomic=Add: add) a local tensor into peer's slice of a window-bound tensor.",
))


# ------------------------------------------------------------ collectives


def _key(op: str, signal: Any) -> Any:
    found = ranks.window_of(signal) if signal is not None else None
    return (op,) if found is None else (op, found[0].index, found[2])


def _meet(ctx: ranks.RankContext, key: Any, what: str, members: Any) -> None:
    races = _races(ctx)  # a meeting orders every rank's accesses before it before all after it
    meeting = races.arrive(ctx.rank, key) if races is not None else None
    if members is None:
        ctx.rendezvous(key, what)
    else:
        ctx.rendezvous(key, what, members)
    if meeting is not None:
        races.leave(ctx.rank, meeting)


class _Place:
    """A collective's ranks: the comm domain of its first window operand."""

    __slots__ = ("rank", "nranks", "members", "whose")

    def __init__(self, rank: int, nranks: int, members: tuple[int, ...] | None) -> None:
        self.rank, self.nranks, self.members = rank, nranks, members
        self.whose = "the run" if members is None else \
            f"its comm domain (ranks {', '.join(map(str, members))})"


def _group(ctx: ranks.RankContext, arrays: tuple[Any, ...]) -> _Place:
    for a in arrays:
        handle = ranks.comm_ctx(a) if a is not None else 0
        if handle:
            try:
                return _Place(*ranks.group_place(ctx, handle))
            except ValueError as exc:
                raise OpBoundsError(str(exc)) from None
    return _Place(ctx.rank, ctx.nranks, None)


def _all(array: Any, nranks: int, op: str) -> list[Any]:
    return [_peer(array, r, op) for r in range(nranks)]


def _combine(op: Any, parts: list[Any]) -> Any:
    ufunc = getattr(np, _REDUCE[int(getattr(op, "value", op) or 0)])
    total = np.array(parts[0], copy=True)
    for part in parts[1:]:
        ufunc(total, part, out=total, casting="unsafe")
    return total


def _collective(name: str, body: Any, at: int) -> Any:
    """The execute of collective ``name``: value operands come positionally, the signal
    at position ``at`` (it only names the meeting); ``body`` returns the local write."""

    def execute(*args: Any, **kwargs: Any) -> Any:
        ctx = _rank()
        kwargs.pop("out", None)
        signal = args[at] if len(args) > at else None
        values = args[:at] + args[at + 1:]
        key = _key(name, signal)
        place = _group(ctx, (*values, signal))
        what = f"pld.tensor.{name} (every rank of {place.whose} must call it)"
        _meet(ctx, key, what, place.members)
        write = body(place, *values, **kwargs)
        _meet(ctx, key, what, place.members)
        if write is not None:
            write()
        _meet(ctx, key, what, place.members)
        return signal if name == "barrier" else values[1] if name in (
            "allgather", "all_to_all", "all_to_all_v") else values[0]

    return execute


def _allreduce(ctx, target, *, op=0, **_):
    total = _combine(op, _all(target, ctx.nranks, "pld.tensor.allreduce"))
    return lambda: target.__setitem__(Ellipsis, total)


def _reduce_scatter(ctx, target, *, op=0, **_):
    row = _combine(op, [p[ctx.rank] for p in _all(target, ctx.nranks, "pld.tensor.reduce_scatter")])
    return lambda: target.__setitem__(ctx.rank, row)


def _broadcast(ctx, target, *, root=0, **_):
    data = np.array(_peer(target, int(root), "pld.tensor.broadcast"), copy=True)
    return lambda: target.__setitem__(Ellipsis, data)


def _allgather(ctx, local, target, **_):
    peers = _all(target, ctx.nranks, "pld.tensor.allgather")
    chunk = np.array(local, copy=True).reshape(-1)

    def push() -> None:
        for p in peers:
            p[ctx.rank].reshape(-1)[...] = chunk
    return push


def _all_to_all(ctx, inputs, target, **_):
    n = ctx.nranks
    peers = _all(target, n, "pld.tensor.all_to_all")
    rows = target.shape[0] // n
    blocks = [np.array(inputs[d * rows:(d + 1) * rows], copy=True) for d in range(n)]

    def push() -> None:
        for d, p in enumerate(peers):
            p[ctx.rank * rows:(ctx.rank + 1) * rows] = blocks[d]
    return push


def _all_to_all_v(ctx, inputs, target, send_counts, recv_counts, **_):
    n = ctx.nranks
    cap = target.shape[0] // n
    push = _all_to_all(ctx, inputs, target)
    counts = np.asarray(send_counts).reshape(-1)
    cells = [_peer(recv_counts, r, "pld.tensor.all_to_all_v") for r in range(n)]
    sent = [min(max(int(counts[d]), 0), cap) for d in range(n)]

    def push_all() -> None:
        push()
        for d, peer_cells in enumerate(cells):
            peer_cells.reshape(n, -1)[ctx.rank, 0] = sent[d]
    return push_all


def _barrier(ctx, **_):
    return None


def _collective_type(info: CallInfo, result: str) -> TensorType:
    return tensor(info, result)


def _register(name: str, params: tuple[ParamSpec, ...], result: str, body: Any, doc: str) -> None:
    at = [p.name for p in params if p.kind == "tensor"].index("signal")
    register(OpSpec(
        name=f"tensor.pld_{name}", params=params,
        type_rule=lambda info: _collective_type(info, result), mem=MemRule(),
        execute=_collective(name, body, at), writes=result,
        spellings=(f"pld.tensor.{name}",), doc=doc,
    ))


_SIGNAL = ParamSpec("signal", "tensor", default=None, optional=True)
_OP = ParamSpec("op", "literal", default=0, keyword_only=True)
_register("allreduce", (ParamSpec("target", "tensor"), _SIGNAL, _OP,
                        ParamSpec("mode", "str", default="mesh", keyword_only=True),
                        ParamSpec("core_num", "int", default=1, keyword_only=True)),
          "target", _allreduce, "Every rank's slice becomes the combine (op) of all slices.")
_register("reduce_scatter", (ParamSpec("target", "tensor"), _SIGNAL, _OP), "target",
          _reduce_scatter, "Row r of rank r's slice becomes the combine of every rank's row r.")
_register("broadcast", (ParamSpec("target", "tensor"), _SIGNAL,
                        ParamSpec("root", "int", default=0, keyword_only=True)),
          "target", _broadcast, "Every rank's slice becomes a copy of rank root's.")
_register("allgather", (ParamSpec("local", "tensor"), ParamSpec("target", "tensor"), _SIGNAL),
          "target", _allgather, "Row r of every rank's target becomes rank r's local chunk.")
_register("all_to_all", (ParamSpec("input", "tensor"), ParamSpec("target", "tensor"), _SIGNAL),
          "target", _all_to_all, "Block s of rank d's target becomes block d of rank s's input.")
_register("all_to_all_v", (ParamSpec("input", "tensor"), ParamSpec("target", "tensor"),
                           ParamSpec("signal", "tensor"),
                           ParamSpec("send_counts", "tensor"), ParamSpec("recv_counts", "tensor")),
          "target", _all_to_all_v,
          "all_to_all in blocks of target.shape[0] // nranks rows; rank d's recv_counts[s] "
          "becomes rank s's send_counts[d] cut at the block size.")
_register("barrier", (ParamSpec("signal", "tensor"),), "signal", _barrier,
          "Wait until every rank of the run has reached this barrier.")
