"""Cube ops: tile.matmul, matmul_acc, matmul_bias and the GEMV forms (docs/design/language.md §21,
docs/design/numerics.md §3).

Operands are widened exactly (floats to float32; INT8 through float64, where every
partial sum of int8 products is exact) and multiplied over the valid M/K/N; the
accumulator is FP32, or INT32 with wrap.
"""

from __future__ import annotations

import threading
from typing import Any

from pytest_pypto.ir.apply import QUIET_FLOATS, convert_array
from pytest_pypto.ir.dtypes import FP32, INT32
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
from pytest_pypto.ir.values import widen

MATMUL_DTYPES = ("INT8", "FP16", "BF16", "FP32")
ACC_DTYPES = ("FP32", "INT32")  # what a matmul accumulates in (_acc_dtype)


def _acc_dtype(name: str):
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


_SCRATCH = threading.local()  # per thread: product shape -> a reused float32 buffer
_SCRATCH_SHAPES = 8  # distinct product shapes kept per thread before the cache restarts


def _scratch(shape: tuple[int, ...]) -> Any:
    """A C-contiguous float32 buffer of ``shape``, reused across calls: the product a
    matmul_acc adds into its accumulator lives only inside the call, so keeping it
    saves an allocation per call (and its page faults, in a fresh process)."""
    cache = getattr(_SCRATCH, "buffers", None)
    if cache is None:
        cache = _SCRATCH.buffers = {}
    buf = cache.get(shape)
    if buf is None:
        if len(cache) >= _SCRATCH_SHAPES:
            cache.clear()
        buf = cache[shape] = np.empty(shape, np.float32)
    return buf


def _acc_in_place(acc, lhs: Any, rhs: Any, overwrite: bool) -> bool:
    """FP32 ``acc (+)= lhs @ rhs`` without temporaries, when bit-identical to the wide path.

    float32 operands, an FP32 accumulator stored as float32: the wide path computes the
    float32 product (a fresh C-contiguous array), adds it in float32 and stores the sum
    unchanged.  Here the product goes into a reused C-contiguous buffer of the same shape
    (the same BLAS call), and ``np.add(..., out=)`` writes the same float32 sums in place.
    Returns False (nothing done) where that does not hold.
    """
    if lhs.dtype != np.float32 or rhs.dtype != np.float32 or acc.data.dtype != np.float32:
        return False
    k = lhs.shape[-1]
    if rhs.shape[-2] < k:
        return False  # matmul_wide raises the error
    rhs = rhs[..., :k, :]
    lead = lhs.shape[:-2] if rhs.ndim == 2 else np.broadcast_shapes(lhs.shape[:-2],
                                                                    rhs.shape[:-2])
    shape = (*lead, lhs.shape[-2], rhs.shape[-1])
    dst = acc.data[(Ellipsis, slice(0, shape[-2]), slice(0, shape[-1]))]
    if dst.shape != shape:
        return False
    _product_into(dst, lhs, rhs, overwrite)
    return True


def _product_into(dst: Any, lhs: Any, rhs: Any, overwrite: bool) -> None:
    """``dst (+)= lhs @ rhs`` in float32, the product in a reused buffer of dst's shape."""
    prod = _scratch(dst.shape)
    np.matmul(lhs, rhs, out=prod)
    if overwrite:
        np.copyto(dst, prod)
    else:
        np.add(dst, prod, out=dst)


def _matmul_acc_execute(acc, lhs, rhs, init_cond=None, *, out=None, **_):
    if QUIET_FLOATS.get():  # inside a run: floating-point errors are silenced already
        return _matmul_acc(acc, lhs, rhs, init_cond)
    with np.errstate(all="ignore"):
        return _matmul_acc(acc, lhs, rhs, init_cond)


def _matmul_acc(acc, lhs, rhs, init_cond):
    overwrite = init_cond is not None and bool(init_cond)
    a, b, dst = lhs.data, rhs.data, acc.data
    # The common case, decided without views or broadcasting: fully valid float32
    # operands whose product is exactly the float32 accumulator (what `_acc_in_place`
    # computes for them, the same BLAS call on the same arrays).
    if a.dtype.char == b.dtype.char == dst.dtype.char == "f" and lhs.valid == a.shape \
            and rhs.valid == b.shape and b.ndim == 2 and a.ndim >= 2 and b.shape[0] == a.shape[-1] \
            and dst.shape == (*a.shape[:-1], b.shape[1]):
        _product_into(dst, a, b, overwrite)
        return acc

    a, b = widen(lhs.valid_view(), lhs.dtype), widen(rhs.valid_view(), rhs.dtype)
    if _acc_in_place(acc, a, b, overwrite):
        return acc
    prod = matmul_wide(a, b)
    region = (Ellipsis, *(slice(0, n) for n in prod.shape[-2:]))
    if not overwrite:
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
    wide_safe=True,
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


# ------------------------------------------------------------------ matmul_bias / gemv


def _bias_check(info: CallInfo, prod: TileType, exact_one_row: bool = False) -> None:
    """bias is [1, N] in the accumulator dtype, its valid N covering the product's."""
    bias = tile(info, "bias")
    require_rank(info, bias, "bias", exact=2)
    if bias.shape[0] != 1:
        raise OpTypeError(
            f"The operator {info.op} requires bias to have shape [1, N], but got "
            f"{dims(bias.shape)}",
            "load the bias as one row: pl.load(bias, [0, 0], [1, N])",
        )
    if bias.shape[1] != prod.shape[1]:
        raise OpTypeError(
            f"The operator {info.op} requires bias N dimension to match output "
            f"N={prod.shape[1]}, but got bias N={bias.shape[1]}"
        )
    vn, bn = prod.valid[1], bias.valid[1]
    if vn is not None and bn is not None and bn < vn:
        raise OpTypeError(
            f"The operator {info.op} requires bias valid N to cover output valid N={vn}, "
            f"but got bias valid N={bn}"
        )
    if exact_one_row and bias.valid[0] is not None and bias.valid[0] != 1:
        raise OpTypeError(
            f"The operator {info.op} requires bias to have exactly one valid row, but got "
            f"{bias.valid[0]}"
        )
    if bias.dtype.name != prod.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires bias dtype {prod.dtype.name} to match the "
            f"accumulator, but got {bias.dtype.name}",
            f"load the bias as pl.{prod.dtype.name} (the accumulator of "
            f"{tile(info, 'lhs').dtype.name} operands)",
        )


def _matmul_bias_type(info: CallInfo) -> TileType:
    prod = _product_type(info)
    _bias_check(info, prod)
    return prod


def _matmul_bias_compute(lhs: Any, rhs: Any, bias: Any, **_: Any) -> Any:
    prod = matmul_wide(lhs, rhs)
    return prod + bias[..., :1, : prod.shape[-1]]


register(OpSpec(
    name="tile.matmul_bias",
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"), ParamSpec("bias", "tile")),
    type_rule=_matmul_bias_type,
    mem=MemRule(operands={"lhs": ("Left",), "rhs": ("Right",), "bias": ("Bias",)}, result="Acc"),
    compute=_matmul_bias_compute,
    spellings=("matmul_bias",),
    doc="lhs [M, K] @ rhs [K, N] + bias [1, N] into a new Acc tile: the bias row (in the "
        "accumulator dtype, FP32 or INT32) is added once to every row of the FP32/INT32 product.",
))

ACC_PHASES = ("unspecified", "partial", "final")
GEMV_ROWS = 16  # the cube's output fractal: a GEMV result occupies 16 physical rows


def _acc_phase(info: CallInfo) -> None:
    phase = info.values.get("acc_phase", "unspecified")
    if phase not in ACC_PHASES:
        raise OpTypeError(
            f"The operator {info.op} requires acc_phase to be one of "
            f"{{{', '.join(ACC_PHASES)}}}, but got {phase!r}"
        )


def _gemv_type(info: CallInfo) -> TileType:
    """[1, K] @ [K, N]: physical rows of lhs and its valid rows must be exactly 1;
    the result is [16, N] (the cube's row fractal) with valid [1, vN]."""
    _acc_phase(info)
    prod = _product_type(info)
    lhs = tile(info, "lhs")
    if lhs.shape[0] != 1:
        raise OpTypeError(
            f"The operator {info.op} requires lhs physical row extent to be exactly 1, but got "
            f"shape {dims(lhs.shape)}",
            "use pl.matmul for more than one row",
        )
    if lhs.valid[0] is not None and lhs.valid[0] != 1:
        raise OpTypeError(
            f"The operator {info.op} requires lhs logical row extent to be exactly 1, but got "
            f"valid_shape {dims(lhs.valid)}"
        )
    return TileType((GEMV_ROWS, prod.shape[1]), prod.dtype, valid=(1, prod.valid[1]))


def _gemv_acc_type(info: CallInfo) -> TileType:
    want = _gemv_type(info)
    acc = tile(info, "acc")
    require_rank(info, acc, "acc", exact=2)
    if tuple(acc.shape) != tuple(want.shape):
        raise OpTypeError(
            f"The operator {info.op} requires accumulator physical shape {dims(want.shape)}, "
            f"but got {dims(acc.shape)}",
            "create the accumulator with pl.tile.gemv first",
        )
    if acc.dtype.name != want.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires accumulator dtype {want.dtype.name}, but got "
            f"{acc.dtype.name}"
        )
    if None not in acc.valid and None not in want.valid and tuple(acc.valid) != tuple(want.valid):
        raise OpTypeError(
            f"The operator {info.op} requires accumulator valid_shape {dims(want.valid)}, "
            f"but got {dims(acc.valid)}"
        )
    return acc.with_(space=None)


def _gemv_bias_type(info: CallInfo) -> TileType:
    want = _gemv_type(info)
    _bias_check(info, want, exact_one_row=True)
    return want


def _gemv_acc_execute(acc, lhs, rhs, *, out=None, **_):
    return _matmul_acc_execute(acc, lhs, rhs, None, out=out)


_GEMV_DOC = ("lhs must have exactly one physical and one valid row; the result is a [16, N] "
             "Acc tile (the cube's row fractal) whose valid region is [1, vN]. INT8/FP16/BF16/"
             "FP32 operands accumulate in FP32 (INT32 with wrap for INT8); acc_phase "
             "(unspecified, partial, final) is a scheduling hint and does not change values.")

register(OpSpec(
    name="tile.gemv",
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"),
            ParamSpec("acc_phase", "str", default="unspecified")),
    type_rule=_gemv_type,
    mem=MemRule(operands={"lhs": ("Left",), "rhs": ("Right",)}, result="Acc"),
    compute=_matmul_compute,
    spellings=("gemv",),
    tier=2,
    doc="Matrix-vector product C[1, N] = A[1, K] @ B[K, N]. " + _GEMV_DOC,
))

register(OpSpec(
    name="tile.gemv_acc",
    wide_safe=True,
    params=(ParamSpec("acc", "tile"), ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"),
            ParamSpec("acc_phase", "str", default="unspecified")),
    type_rule=_gemv_acc_type,
    mem=MemRule(operands={"acc": ("Acc",), "lhs": ("Left",), "rhs": ("Right",)},
                result="same:acc"),
    execute=_gemv_acc_execute,
    spellings=("gemv_acc",),
    tier=2,
    doc="acc[1, N] += A[1, K] @ B[K, N] in place; acc is the [16, N] tile a gemv made. "
        + _GEMV_DOC,
))

register(OpSpec(
    name="tile.gemv_bias",
    params=(ParamSpec("lhs", "tile"), ParamSpec("rhs", "tile"), ParamSpec("bias", "tile"),
            ParamSpec("acc_phase", "str", default="unspecified")),
    type_rule=_gemv_bias_type,
    mem=MemRule(operands={"lhs": ("Left",), "rhs": ("Right",), "bias": ("Bias",)},
                result="Acc"),
    compute=_matmul_bias_compute,
    spellings=("gemv_bias",),
    tier=2,
    doc="C[1, N] = A[1, K] @ B[K, N] + bias[1, N] (bias in the accumulator dtype, one valid "
        "row). " + _GEMV_DOC,
))
