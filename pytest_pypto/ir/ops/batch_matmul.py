# SPDX-License-Identifier: Apache-2.0
"""Batched cube ops: tile.batch_matmul and tile.batch_matmul_acc (docs/design/language.md §21,
docs/design/numerics.md §3).

Operands are ``[...batch, M, K]`` and ``[...batch, K, N]`` tiles (rank >= 2); the batch
dims broadcast right-aligned as numpy's do, and each batch element is one matmul over
the valid M/K/N, accumulated in FP32 (INT32 with wrap for INT8).  The accumulator of
``batch_matmul_acc`` is in place, so its batch dims must equal the broadcast ones.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import dims, require_dtype, require_rank, require_same_dtype, tile
from pytest_pypto.ir.ops.matmul import MATMUL_DTYPES, _acc_dtype, _matmul_acc_execute, matmul_wide
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue


def _broadcast_batch(info: CallInfo, a: tuple[int, ...], b: tuple[int, ...]) -> tuple[int, ...]:
    rank = max(len(a), len(b))
    a = (1,) * (rank - len(a)) + tuple(a)
    b = (1,) * (rank - len(b)) + tuple(b)
    out = []
    for i, (x, y) in enumerate(zip(a, b)):
        if x != y and 1 not in (x, y):
            raise OpTypeError(
                f"Cannot broadcast batch dimensions for {info.op}: lhs batch {dims(a)} and rhs "
                f"batch {dims(b)} differ at dimension {i}",
                "make the batch dims equal, or 1 on the operand that should be broadcast",
            )
        out.append(max(x, y))
    return tuple(out)


def _product(info: CallInfo) -> TileType:
    a, b = tile(info, "lhs"), tile(info, "rhs")
    require_rank(info, a, "lhs", at_least=2)
    require_rank(info, b, "rhs", at_least=2)
    if a.shape[-1] != b.shape[-2]:
        raise OpTypeError(
            f"The operator {info.op} requires matching inner dimensions, but got lhs "
            f"K={a.shape[-1]} and rhs K={b.shape[-2]}",
            "lhs is [..., M, K] and rhs is [..., K, N]; transpose or reload one operand",
        )
    if a.valid[-1] is not None and b.valid[-2] is not None and b.valid[-2] < a.valid[-1]:
        raise OpTypeError(
            f"The operator {info.op} requires rhs valid K to cover lhs valid K, but got rhs "
            f"valid K={b.valid[-2]} and lhs valid K={a.valid[-1]}"
        )
    require_same_dtype(info, a.dtype, b.dtype, "lhs and rhs")
    require_dtype(info, a.dtype, MATMUL_DTYPES, "operand dtype")
    batch = _broadcast_batch(info, a.shape[:-2], b.shape[:-2])
    shape = batch + (a.shape[-2], b.shape[-1])
    return TileType(shape, _acc_dtype(a.dtype.name), valid=batch + (a.valid[-2], b.valid[-1]))


def _acc_type(info: CallInfo) -> TileType:
    prod = _product(info)
    acc = tile(info, "acc")
    require_rank(info, acc, "acc", at_least=2)
    if acc.rank != prod.rank:
        raise OpTypeError(
            f"The operator {info.op} requires acc batch rank ({acc.rank - 2}) to equal "
            f"broadcast(lhs, rhs) batch rank ({prod.rank - 2})"
        )
    if tuple(acc.shape) != tuple(prod.shape):
        raise OpTypeError(
            f"The operator {info.op} requires acc shape {dims(prod.shape)} (the product's; acc "
            f"is accumulated in place and never broadcast), but got {dims(acc.shape)}"
        )
    if acc.dtype.name != prod.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires accumulator dtype {prod.dtype.name}, but got "
            f"{acc.dtype.name}"
        )
    return acc.with_(space=None)


def _batch_compute(lhs: Any, rhs: Any, **_: Any) -> Any:
    return matmul_wide(lhs, rhs)  # np.matmul broadcasts the leading batch dims


def _batch_acc_execute(acc, lhs, rhs, *, out=None, **_):
    if acc.data.ndim != lhs.data.ndim or acc.data.ndim != rhs.data.ndim:
        # Operands of lower batch rank broadcast: view them with leading unit dims.

        def lift(t: Any) -> Any:
            extra = acc.data.ndim - t.data.ndim
            data = t.data.reshape((1,) * extra + t.data.shape)
            return TileValue(data, (1,) * extra + tuple(t.valid), t.dtype, t.space, t.pad)

        lhs, rhs = lift(lhs), lift(rhs)
    return _matmul_acc_execute(acc, lhs, rhs, None, out=out)


register(OpSpec(
    name="tile.batch_matmul",
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile")),
    type_rule=_product,
    mem=MemRule(operands={"lhs": ("Left",), "rhs": ("Right",)}, result="Acc"),
    compute=_batch_compute,
    spellings=("batch_matmul",),
    tier=2,
    doc="Batched lhs [..., M, K] @ rhs [..., K, N] into [...broadcast batch, M, N] in Acc: "
        "batch dims broadcast like numpy's, each batch is a matmul over the valid M/K/N in "
        "FP32 (INT32 with wrap for INT8).",
))

register(OpSpec(
    name="tile.batch_matmul_acc",
    wide_safe=True,
    params=(ParamSpec("acc", "tile"), ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile")),
    type_rule=_acc_type,
    mem=MemRule(operands={"acc": ("Acc",), "lhs": ("Left",), "rhs": ("Right",)},
                result="same:acc"),
    execute=_batch_acc_execute,
    spellings=("batch_matmul_acc",),
    tier=2,
    doc="acc += lhs @ rhs per batch, in place in Acc; lhs/rhs batch dims broadcast and must "
        "broadcast to exactly acc's batch dims (acc itself is never broadcast).",
))
