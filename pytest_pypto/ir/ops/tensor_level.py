"""Explicit tensor-level entries (docs/design/language.md §10, §21): what a tile form lacks.

Vector ops get their tensor forms derived from the tile entries (`ir.tensor_forms`).
These are the tensor ops with facts of their own:

* ``tensor.matmul`` / ``tensor.matmul_acc``: ``a_trans``/``b_trans`` (an operand
  stored transposed), ``out_dtype`` (the result tensor's dtype: the accumulator is
  rounded once to it at the store, docs/design/numerics.md §3), ``c_matrix_nz`` (accepted, a layout
  flag),
  and batch dims that broadcast numpy-style.  The 2-D product rule is tile.matmul's,
  run on the operands' matrix shapes.
* ``tensor.full``: a whole tensor of one value.
* ``tensor.ci(start, shape, dtype=INT32, descending=False)`` (`pl.arange`,
  `pl.tensor.ci`, `pl.tensor.arange`): PyPTO lowers it to tile.ci, so it has that
  op's rules (a single row: leading dims 1; INT16/INT32 plus the unsigned forms the
  tile op admits).  Lowered into one tile.ci and a store.
* ``tensor.local`` and ``tensor.matrix_view``: compiler-internal (no spelling): the
  lowering's intermediate tensors and the 2-D (optionally transposed) view of one
  batch item of a matmul operand.

The numpy semantics here are whole-array: the lowering replaces ``tensor.matmul``,
``tensor.matmul_acc`` and ``tensor.full`` by tile ops before codegen, so they run
only when called directly (e.g. by a unit test of the rule).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import convert_array, dtype_of, scalar_to_dtype
from pytest_pypto.ir.dtypes import INT32
from pytest_pypto.ir.ops._rules import dims, lowered_by_compiler, np, static_shape, tensor
from pytest_pypto.ir.ops._whole_tensor import via_tile
from pytest_pypto.ir.registry import (
    REGISTRY,
    CallInfo,
    MemRule,
    OpRuleError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.tensor_forms import restore_dims, stand_in_dims, unstand
from pytest_pypto.ir.types import TensorType, TileType
from pytest_pypto.ir.values import new_buffer

# ------------------------------------------------------------------ shapes


def matrix_shape(shape: tuple[int, ...], trans: bool) -> tuple[int, int]:
    """The [rows, cols] an operand contributes, after its transpose flag."""
    rows, cols = shape[-2], shape[-1]
    return (cols, rows) if trans else (rows, cols)


def broadcast_batch(a: tuple[int, ...], b: tuple[int, ...], op: str) -> tuple[int, ...]:
    """numpy broadcasting of two batch shapes (right-aligned; 1 stretches)."""
    out = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            raise OpTypeError(
                f"The operator {op} requires batch dims that broadcast, but got "
                f"{dims(a)} and {dims(b)}",
                "make the batch dims equal, or 1 on the operand to broadcast",
            )
        out.append(max(x, y))
    return tuple(reversed(out))


def _product(info: CallInfo) -> tuple[tuple[int, ...], Any, Any]:
    """(result shape, accumulator dtype, operand dtype) of lhs @ rhs with the flags."""
    lhs, rhs = tensor(info, "lhs"), tensor(info, "rhs")
    for name, t in (("lhs", lhs), ("rhs", rhs)):
        if t.rank < 2:
            raise OpTypeError(
                f"The operator {info.op} requires '{name}' of rank >= 2, but got rank {t.rank}",
                "reshape the vector to [1, K] or [K, 1] first",
            )
    # pl.dynamic dims stand in as ints for the rules (the lowering loops over them).
    stand_ins: dict[Any, int] = {}
    ls = stand_in_dims(tuple(lhs.shape), stand_ins)
    rs = stand_in_dims(tuple(rhs.shape), stand_ins)
    m, k = matrix_shape(ls, bool(info.values.get("a_trans")))
    k2, n = matrix_shape(rs, bool(info.values.get("b_trans")))
    tile_info = CallInfo("tile.matmul", {"lhs": TileType((m, k), lhs.dtype),
                                         "rhs": TileType((k2, n), rhs.dtype)}, {})
    try:
        acc = REGISTRY["tile.matmul"].type_rule(tile_info)
        batch = broadcast_batch(ls[:-2], rs[:-2], info.op)
    except OpRuleError as exc:
        exc.message = unstand(exc.message.replace("tile.matmul", info.op), stand_ins)
        exc.args = (exc.message,)
        if "K" in exc.message and (info.values.get("a_trans") or info.values.get("b_trans")):
            exc.hint = "K is the contracted dim after a_trans/b_trans: lhs [M, K] (a_trans: " \
                       "[K, M]), rhs [K, N] (b_trans: [N, K])"
        raise
    shape = restore_dims(batch + (m, n), stand_ins)
    assert shape is not None  # every result dim is an operand dim
    return shape, acc.dtype, lhs.dtype


def _matmul_type(info: CallInfo) -> TensorType:
    shape, _, operand_dtype = _product(info)
    out = info.values.get("out_dtype")
    return TensorType(shape, out if out is not None else operand_dtype)


def _matmul_acc_type(info: CallInfo) -> TensorType:
    shape, acc_dtype, _ = _product(info)
    acc = tensor(info, "acc")
    if tuple(acc.shape) != shape:
        raise OpTypeError(
            f"The operator {info.op} requires acc of the product's shape {dims(shape)}, but "
            f"got {dims(acc.shape)}"
        )
    if acc.dtype.name != acc_dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires acc dtype {acc_dtype.name} (the accumulator of "
            f"{tensor(info, 'lhs').dtype.name} operands), but got {acc.dtype.name}",
            f"create it with pl.matmul(..., out_dtype=pl.{acc_dtype.name})",
        )
    cond = info.types.get("init_cond")
    if cond is not None and (not hasattr(cond, "dtype") or cond.dtype.is_float):
        raise OpTypeError(
            f"The operator {info.op} requires init_cond to be a BOOL or int scalar",
            "compare a loop variable, e.g. init_cond=(k == 0)",
        )
    return acc


# ----------------------------------------------------------------- numpy


def _operand(array: Any, trans: bool) -> Any:
    wide = array.astype(np.float32) if array.dtype.kind == "f" else array.astype(np.float64)
    return np.swapaxes(wide, -1, -2) if trans else wide


def _wide_product(lhs: Any, rhs: Any, a_trans: bool, b_trans: bool) -> Any:
    prod = np.matmul(_operand(lhs, a_trans), _operand(rhs, b_trans))
    return prod if lhs.dtype.kind == "f" else prod.astype(np.int64)


def _matmul_execute(lhs, rhs, *, out_dtype=None, a_trans=False, b_trans=False,
                    c_matrix_nz=False, out=None, **_):
    target = out_dtype if out_dtype is not None else dtype_of(lhs)
    with np.errstate(all="ignore"):
        return convert_array(_wide_product(lhs, rhs, a_trans, b_trans), target)


def _matmul_acc_execute(acc, lhs, rhs, init_cond=None, *, a_trans=False, b_trans=False,
                        out=None, **_):
    with np.errstate(all="ignore"):
        prod = _wide_product(lhs, rhs, a_trans, b_trans)
        if init_cond is None or not bool(init_cond):
            prod = prod + (acc.astype(np.float32) if acc.dtype.kind == "f" else acc)
        acc[...] = convert_array(prod, dtype_of(acc))
    return acc


LOCAL_OP = "tensor.local"  # the compiler makes kernel-local tensors of this op
_FLAGS = (
    ParamSpec("a_trans", "bool", default=False),
    ParamSpec("b_trans", "bool", default=False),
)

register(OpSpec(
    name="tensor.matmul",
    matmul_result=True,
    params=(
        ParamSpec("lhs", "tensor"),
        ParamSpec("rhs", "tensor"),
        ParamSpec("out_dtype", "dtype", default=None),
        *_FLAGS,
        ParamSpec("c_matrix_nz", "bool", default=False),
    ),
    type_rule=_matmul_type,
    mem=MemRule(),
    execute=_matmul_execute,
    spellings=("tensor.matmul",),
    doc="Tensor-level lhs @ rhs inside InCore code: a_trans/b_trans read an operand stored "
        "transposed, batch dims broadcast, the product accumulates in FP32 (INT32 for INT8) "
        "and is rounded once to out_dtype (default: the operands' dtype); c_matrix_nz is "
        "accepted. Lowered to Mat/Left/Right/Acc tiles that fit the arch.",
))

register(OpSpec(
    name="tensor.matmul_acc",
    matmul_result=True,
    params=(
        ParamSpec("acc", "tensor"),
        ParamSpec("lhs", "tensor"),
        ParamSpec("rhs", "tensor"),
        *_FLAGS,
        ParamSpec("init_cond", "scalar", default=None, optional=True),
    ),
    type_rule=_matmul_acc_type,
    mem=MemRule(),
    execute=_matmul_acc_execute,
    spellings=("tensor.matmul_acc",),
    doc="Tensor-level acc + lhs @ rhs: acc must hold the accumulator dtype (FP32, INT32 for "
        "INT8 operands) and the product's shape; init_cond true overwrites instead. "
        "a_trans/b_trans as for tensor.matmul.",
))


# ------------------------------------------------------------------- full


def _full_type(info: CallInfo) -> TensorType:
    tile_rule = REGISTRY["tile.full"].type_rule
    try:
        t = tile_rule(CallInfo("tile.full", {}, dict(info.values), warnings=info.warnings))
    except OpRuleError as exc:
        exc.message = exc.message.replace("tile.full", info.op)
        exc.args = (exc.message,)
        raise
    return TensorType(t.shape, t.dtype)


def _full_execute(*, shape, dtype, value, out=None, **_):
    return np.full(tuple(int(s) for s in shape), scalar_to_dtype(value, dtype), dtype=dtype.np)


register(OpSpec(
    name="tensor.full",
    lowering_hook=True,
    hook_tiles_dynamic=True,
    params=(
        ParamSpec("shape", "shape"),
        ParamSpec("dtype", "dtype"),
        ParamSpec("value", "literal"),
    ),
    type_rule=_full_type,
    mem=MemRule(),
    execute=_full_execute,
    spellings=("full",),
    doc="A tensor of shape filled with a literal value (converted to dtype once) inside "
        "InCore code; lowered to tile.full tiles stored into a local tensor.",
))


# ------------------------------------------------------- compiler-internal


def _local_type(info: CallInfo) -> TensorType:
    shape = info.values.get("shape")
    # A tensor op's result may keep its operands' pl.dynamic dims (sized at run time).
    stand_ins: dict[Any, int] = {}
    static_shape(info, "shape", stand_in_dims(tuple(shape or ()), stand_ins) or shape)
    return TensorType(tuple(shape), info.values["dtype"])


def _local_execute(*, shape, dtype, out=None, **_):
    return new_buffer(tuple(int(s) for s in shape), dtype)


register(OpSpec(
    name=LOCAL_OP,
    params=(ParamSpec("shape", "shape"), ParamSpec("dtype", "dtype")),
    type_rule=_local_type,
    mem=MemRule(),
    execute=_local_execute,
    doc="Compiler-internal: a kernel-local DDR tensor holding a tensor-level op's result "
        "(its elements start poisoned, docs/design/numerics.md §6).",
))


def _view_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tensor")
    index = info.values.get("index") or ()
    if src.rank - len(index) != 2:
        raise OpTypeError(
            f"The operator {info.op} requires indices for all but the last two dims of a "
            f"rank-{src.rank} tensor, but got {len(index)}"
        )
    rows, cols = matrix_shape(tuple(src.shape), bool(info.values.get("transpose")))
    return TensorType((rows, cols), src.dtype)


def _view_execute(src, *, index=(), transpose=False, out=None, **_):
    view = src[tuple(int(i) for i in index)]
    return np.swapaxes(view, -1, -2) if transpose else view


register(OpSpec(
    name="tensor.matrix_view",
    regroups=True,
    params=(
        ParamSpec("tensor", "tensor"),
        ParamSpec("index", "index_list"),
        ParamSpec("transpose", "bool", default=False),
    ),
    type_rule=_view_type,
    mem=MemRule(),
    execute=_view_execute,
    doc="Compiler-internal: the 2-D view (zero-copy; transposed when transpose=True) of one "
        "batch item of a tensor, how a tensor-level matmul reads a batched or transposed "
        "operand.",
))


# -------------------------------------------------------------------------- ci


def _ci_type(info: CallInfo) -> TensorType:
    t = via_tile("tile.ci", info, {"start": info.types.get("start")})
    return TensorType(tuple(t.shape), t.dtype)


register(OpSpec(
    name="tensor.ci",
    lowering_hook=True,
    params=(
        ParamSpec("start", "scalar"),
        ParamSpec("shape", "shape"),
        ParamSpec("dtype", "dtype", default=INT32),
        ParamSpec("descending", "bool", default=False),
    ),
    type_rule=_ci_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("arange", "tensor.ci", "tensor.arange"),
    tier=2,
    doc="A new [1, ..., N] integer tensor start + k (start - k when descending), INT32 by "
        "default (INT16/INT32, and UINT16/UINT32 as tile.ci); `pl.arange` in PyPTO. Lowered "
        "to tile.ci and a store.",
))
