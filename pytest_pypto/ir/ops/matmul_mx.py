# SPDX-License-Identifier: Apache-2.0
"""MX block-scale matmul: tile.matmul_mx, matmul_mx_acc, matmul_mx_bias (a5 only;
docs/design/language.md
§21, docs/design/arch.md §7).

Data tiles are FP8E4M3FN (an FP4 lhs is cast to FP8E4M3FN first, as PyPTO requires);
scales are FP8E8M0 powers of two, one per 32 consecutive K elements: lhs_scale is
``[M, ceil(K/32)]`` in LeftScale, rhs_scale ``[ceil(K/32), N]`` in RightScale, both in
their **logical** layout.  ``C[m, n] = sum_k a[m, k] * sa[m, k // 32] * b[k, n] *
sb[k // 32, n]`` over the valid K, into an FP32 Acc tile.  Every product of FP8 values
and power-of-two scales is exact in float64; the sum is taken in float64 and rounded
once to FP32, which is what PyPTO's golden computes.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.dtypes import FP32
from pytest_pypto.ir.ops._rules import dims, np, require_rank, tile
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TileType

MX_GROUP = 32  # K elements sharing one E8M0 scale


def _groups(k: int | None) -> int | None:
    return None if k is None else (k + MX_GROUP - 1) // MX_GROUP


def _check_scale(info: CallInfo, name: str, want: tuple[Any, Any], want_valid: tuple[Any, Any]) -> None:
    s = tile(info, name)
    if s.dtype.name != "FP8E8M0":
        raise OpTypeError(
            f"The operator {info.op} requires {name} dtype FP8E8M0, but got {s.dtype.name}",
            "MX scales are E8M0 exponents: load them as pl.FP8E8M0",
        )
    require_rank(info, s, name, exact=2)
    for axis, (got, exp) in enumerate(zip(s.shape, want)):
        if exp is not None and got != exp:
            raise OpTypeError(
                f"The operator {info.op} requires {name} of shape {dims(want)}, but got "
                f"{dims(s.shape)} (dimension {axis})",
                "lhs_scale is [M, ceil(K/32)], rhs_scale is [ceil(K/32), N]",
            )
    for got, exp in zip(s.valid, want_valid):
        if got is not None and exp is not None and got < exp:
            raise OpTypeError(
                f"The operator {info.op} requires {name} valid shape to cover {dims(want_valid)}, "
                f"but got {dims(s.valid)}"
            )


def _mx_product(info: CallInfo) -> TileType:
    a, b = tile(info, "lhs"), tile(info, "rhs")
    require_rank(info, a, "lhs", exact=2)
    require_rank(info, b, "rhs", exact=2)
    for name, t in (("lhs", a), ("rhs", b)):
        if t.dtype.name != "FP8E4M3FN":
            hint = ("cast the FP4 lhs first: pl.cast(x, pl.FP8E4M3FN)" if t.dtype.name == "FP4"
                    else "MX matmul multiplies FP8E4M3FN data")
            raise OpTypeError(
                f"The operator {info.op} requires {name} dtype FP8E4M3FN, but got {t.dtype.name}",
                hint,
            )
    m, k, k2, n = a.shape[0], a.shape[1], b.shape[0], b.shape[1]
    if m % 16:
        raise OpTypeError(f"The operator {info.op} requires physical M divisible by 16, but got "
                          f"M={m}")
    if n % 32:
        raise OpTypeError(f"The operator {info.op} requires physical N divisible by 32, but got "
                          f"N={n}")
    if k != k2:
        raise OpTypeError(f"The operator {info.op} requires matching physical K, but got lhs "
                          f"K={k} and rhs K={k2}")
    if k % 64:
        raise OpTypeError(f"The operator {info.op} requires physical K divisible by 64, but got "
                          f"K={k}")
    vk, vk2 = a.valid[1], b.valid[0]
    if vk is not None and vk2 is not None and vk != vk2:
        raise OpTypeError(f"The operator {info.op} requires matching valid K, but got lhs valid "
                          f"K={vk} and rhs valid K={vk2}")
    if vk is not None and _groups(vk) != _groups(k):
        raise OpTypeError(
            f"The operator {info.op} requires lhs valid K to round up to the same scale-group "
            f"count as physical K {k}, valid K={vk}"
        )
    groups = _groups(k)
    _check_scale(info, "lhs_scale", (m, groups), (a.valid[0], _groups(vk)))
    _check_scale(info, "rhs_scale", (groups, n), (_groups(vk), b.valid[1]))

    return TileType((m, n), FP32, valid=(a.valid[0], b.valid[1]))


def _mx_acc_type(info: CallInfo) -> TileType:
    prod = _mx_product(info)
    acc = tile(info, "acc")
    require_rank(info, acc, "acc", exact=2)
    if acc.dtype.name != "FP32":
        raise OpTypeError(f"The operator {info.op} requires acc dtype FP32, but got "
                          f"{acc.dtype.name}")
    if tuple(acc.shape) != tuple(prod.shape):
        raise OpTypeError(f"The operator {info.op} requires acc of the output shape "
                          f"{dims(prod.shape)}, but got {dims(acc.shape)}")
    return acc.with_(space=None)


def _mx_bias_type(info: CallInfo) -> TileType:
    prod = _mx_product(info)
    bias = tile(info, "bias")
    require_rank(info, bias, "bias", exact=2)
    if bias.dtype.name != "FP32":
        raise OpTypeError(f"The operator {info.op} requires bias dtype FP32, but got "
                          f"{bias.dtype.name}")
    if bias.shape[0] != 1 or bias.shape[1] != prod.shape[1]:
        raise OpTypeError(f"The operator {info.op} requires bias of shape [1, {prod.shape[1]}], "
                          f"but got {dims(bias.shape)}")
    return prod


def mx_product(lhs: Any, lhs_scale: Any, rhs: Any, rhs_scale: Any) -> Any:
    """float64 C = (lhs * lhs_scale per K group) @ (rhs * rhs_scale per K group) over lhs's
    valid K (operands are the valid-region arrays)."""
    k = lhs.shape[-1]
    group = np.arange(k) // MX_GROUP
    a = lhs.astype(np.float64) * lhs_scale.astype(np.float64)[:, group]
    b = rhs[:k].astype(np.float64) * rhs_scale.astype(np.float64)[group, :][:, : rhs.shape[1]]
    return a @ b


def _mx_compute(lhs: Any, lhs_scale: Any, rhs: Any, rhs_scale: Any, **_: Any) -> Any:
    return mx_product(lhs, lhs_scale, rhs, rhs_scale).astype(np.float32)


def _mx_bias_compute(lhs: Any, lhs_scale: Any, rhs: Any, rhs_scale: Any, bias: Any, **_: Any) -> Any:
    prod = mx_product(lhs, lhs_scale, rhs, rhs_scale)
    return (prod + bias[:1, : prod.shape[1]].astype(np.float64)).astype(np.float32)


def _mx_acc_execute(acc, lhs, lhs_scale, rhs, rhs_scale, *, out=None, **_):
    prod = mx_product(lhs.valid_view(), lhs_scale.valid_view(), rhs.valid_view(),
                      rhs_scale.valid_view())
    region = (slice(0, prod.shape[0]), slice(0, prod.shape[1]))
    total = acc.data[region].astype(np.float64) + prod
    acc.data[region] = total.astype(np.float32)
    return acc


_OPERANDS = {"lhs": ("Left",), "lhs_scale": ("LeftScale",), "rhs": ("Right",),
             "rhs_scale": ("RightScale",)}
_DATA = (ParamSpec("lhs", "tile"), ParamSpec("lhs_scale", "tile"), ParamSpec("rhs", "tile"),
         ParamSpec("rhs_scale", "tile"))
_DOC = ("FP8E4M3FN lhs [M, K] (Left) and rhs [K, N] (Right), FP8E8M0 scales lhs_scale "
        "[M, ceil(K/32)] (LeftScale) and rhs_scale [ceil(K/32), N] (RightScale) in logical "
        "layout, one scale per 32 K elements; M % 16, N % 32, K % 64 == 0; FP32 result in Acc. "
        "a5 only.")

register(OpSpec(
    name="tile.matmul_mx",
    params=_DATA,
    type_rule=_mx_product,
    mem=MemRule(operands=dict(_OPERANDS), result="Acc"),
    compute=_mx_compute,
    spellings=("matmul_mx",),
    tier=2,
    doc="MX block-scale matmul C = (lhs * lhs_scale) @ (rhs * rhs_scale). " + _DOC,
))

register(OpSpec(
    name="tile.matmul_mx_acc",
    params=(ParamSpec("acc", "tile"),) + _DATA,
    type_rule=_mx_acc_type,
    mem=MemRule(operands={"acc": ("Acc",), **_OPERANDS}, result="same:acc"),
    execute=_mx_acc_execute,
    spellings=("matmul_mx_acc",),
    tier=2,
    doc="acc += MX block-scale product, in place in an FP32 Acc tile. " + _DOC,
))

register(OpSpec(
    name="tile.matmul_mx_bias",
    params=_DATA + (ParamSpec("bias", "tile"),),
    type_rule=_mx_bias_type,
    mem=MemRule(operands={**_OPERANDS, "bias": ("Bias",)}, result="Acc"),
    compute=_mx_bias_compute,
    spellings=("matmul_mx_bias",),
    tier=2,
    doc="MX block-scale product + an FP32 bias row [1, N]. " + _DOC,
))
