"""Cube ops: tile.matmul and tile.matmul_acc (DSL.md §4.1, numerics §5.2).

Operands are widened exactly (floats to float32; INT8 through float64, where every
partial sum of int8 products is exact) and multiplied over the valid M/K/N; the
accumulator is FP32, or INT32 with wrap.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import (
    dims,
    np,
    require_dtype,
    require_rank,
    require_same_dtype,
    tile,
)
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TileType

MATMUL_DTYPES = ("INT8", "FP16", "BF16", "FP32")
ACC_DTYPES = ("FP32", "INT32")  # what a matmul accumulates in (_acc_dtype)


def _acc_dtype(name: str):
    from pytest_pypto.ir.dtypes import FP32, INT32

    return INT32 if name == "INT8" else FP32


def _product_type(info: CallInfo) -> TileType:
    a, b = tile(info, "lhs"), tile(info, "rhs")
    require_rank(info, a, "lhs", exact=2)
    require_rank(info, b, "rhs", exact=2)
    if a.shape[1] != b.shape[0]:
        raise OpTypeError(
            f"The operator {info.op} requires lhs K to equal rhs K, but got lhs K={a.shape[1]} "
            f"and rhs K={b.shape[0]}",
            "lhs is [M, K] and rhs is [K, N]; transpose or reload one operand",
        )
    if a.valid[1] is not None and b.valid[0] is not None and b.valid[0] < a.valid[1]:
        raise OpTypeError(
            f"The operator {info.op} requires rhs valid K to cover lhs valid K, but got rhs "
            f"valid K={b.valid[0]} and lhs valid K={a.valid[1]}"
        )
    require_same_dtype(info, a.dtype, b.dtype, "lhs and rhs")
    require_dtype(info, a.dtype, MATMUL_DTYPES, "operand dtype")
    return TileType((a.shape[0], b.shape[1]), _acc_dtype(a.dtype.name),
                    valid=(a.valid[0], b.valid[1]))


def _matmul_acc_type(info: CallInfo) -> TileType:
    prod = _product_type(info)
    acc = tile(info, "acc")
    if acc.dtype.name != prod.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires acc dtype {prod.dtype.name} (the accumulator of "
            f"{tile(info, 'lhs').dtype.name} operands), but got {acc.dtype.name}"
        )
    if tuple(acc.shape) != tuple(prod.shape):
        raise OpTypeError(
            f"The operator {info.op} requires acc shape {dims(prod.shape)} (the product's), "
            f"but got {dims(acc.shape)}"
        )
    for d, (va, vp) in enumerate(zip(acc.valid, prod.valid)):
        if va is not None and vp is not None and va < vp:
            raise OpTypeError(
                f"The operator {info.op} requires acc's valid region to cover the product's, "
                f"but got {dims(acc.valid)} for product {dims(prod.valid)} (dimension {d})"
            )
    cond = info.types.get("init_cond")
    if cond is not None and (not hasattr(cond, "dtype") or cond.dtype.is_float):
        raise OpTypeError(
            f"The operator {info.op} requires init_cond to be a BOOL or int scalar, but got "
            f"{getattr(getattr(cond, 'dtype', None), 'name', cond.kind)}",
            "compare a loop variable, e.g. init_cond=(k == 0)",
        )
    return acc.with_(space=None)


def matmul_wide(lhs: Any, rhs: Any) -> Any:
    """Wide product over lhs's valid K: float32, or int64 (exact) for integer operands."""
    k = lhs.shape[-1]  # trailing axes: a leading batch axis broadcasts (batched loops)
    if rhs.shape[-2] < k:
        raise ValueError(f"rhs valid K={rhs.shape[-2]} does not cover lhs valid K={k}")
    rhs = rhs[..., :k, :]
    if lhs.dtype.kind == "f":
        return np.matmul(lhs, rhs, dtype=np.float32)
    return np.matmul(lhs.astype(np.float64), rhs.astype(np.float64)).astype(np.int64)


def _matmul_compute(lhs: Any, rhs: Any, **_: Any) -> Any:
    return matmul_wide(lhs, rhs)


def _matmul_acc_execute(acc, lhs, rhs, init_cond=None, *, out=None, **_):
    from pytest_pypto.ir.apply import convert_array
    from pytest_pypto.ir.values import widen

    with np.errstate(all="ignore"):
        prod = matmul_wide(widen(lhs.valid_view(), lhs.dtype), widen(rhs.valid_view(), rhs.dtype))
        region = (Ellipsis, *(slice(0, n) for n in prod.shape[-2:]))
        if init_cond is None or not bool(init_cond):
            prod = widen(acc.data[region], acc.dtype) + prod
        acc.data[region] = convert_array(prod, acc.dtype)
    return acc


register(OpSpec(
    name="tile.matmul",
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile")),
    type_rule=_product_type,
    mem=MemRule(operands={"lhs": ("Left",), "rhs": ("Right",)}, result="Acc"),
    compute=_matmul_compute,
    batchable=True,
    spellings=("matmul",),
    doc="lhs [M, K] @ rhs [K, N] into a new Acc tile over the valid M/K/N: INT8/FP16/BF16/FP32 "
        "operands, accumulated in FP32 (INT32 with wrap for INT8).",
))

register(OpSpec(
    name="tile.matmul_acc",
    params=(
        ParamSpec("acc", "tile"),
        ParamSpec("lhs", "tile"),
        ParamSpec("rhs", "tile"),
        ParamSpec("init_cond", "scalar", default=None, optional=True),
    ),
    type_rule=_matmul_acc_type,
    mem=MemRule(operands={"acc": ("Acc",), "lhs": ("Left",), "rhs": ("Right",)},
                result="same:acc"),
    execute=_matmul_acc_execute,
    batchable=True,
    spellings=("matmul_acc",),
    doc="acc += lhs @ rhs in place in Acc (FP32, or INT32 with wrap); when init_cond is true "
        "the product overwrites acc instead.",
))
