# SPDX-License-Identifier: Apache-2.0
"""Explicit tensor-level entries of the index, sort, random and compare families.

Their tensor forms cannot be derived from the tile entries (`ir.tensor_forms`):
PyPTO gives them other keywords, other result types or index spaces over the whole
tensor.  Each is lowered by `compiler/tensor_hooks.py` into loads, tile ops and
stores (or, for ``tensor.gather_row``, run directly on the DDR buffers):

* ``tensor.gather``: PyPTO's unified gather.  Index form ``gather(input, dim, index)``
  is torch.gather on any rank >= 2 (``out[.., k, ..] = input[.., index[.., k, ..], ..]``
  along ``dim``; ``index`` no larger than ``input`` on the other axes); mask form
  ``gather(input, mask_pattern=, output_dtype=)`` is tile.gather_mask per row; the
  compare form ``gather(input, kvalue=, cmp_mode=, out_cols=)`` is tile.gather_compare
  and returns ``(dst, cdst)`` (``gather_compare_paged.py``).
* ``tensor.scatter``: index form ``scatter(input, dim=-1, index, src)`` (rank 2:
  ``out = input; out[b, index[b, k]] = src[b, k]``, k ascending, so the last write
  wins); mask form ``scatter(input, mask_pattern=, dst=)`` writes each input row into
  the mask-marked columns of a copy of dst.
* ``tensor.cmp``: 1/0 in lhs's dtype (PyPTO lowers it to tile.cmp + tile.full +
  tile.sel), not the packed mask tile.cmp makes; ``tensor.cmps`` is its scalar form.
* ``tensor.rsqrt(input, high_precision=)``: the compiler supplies tile.rsqrt's scratch.
* ``tensor.mrgsort``: the format-2 merge gets its tmp from the compiler.
* ``tensor.random``: Philox words into a tensor (tile.random on the whole tensor).
* ``tensor.expand_clone(input, target)``: input (rank 3, at most one dim of 1 to
  stretch) copied into every position of target, which it returns (rebind it).
* ``tensor.create_l1`` / ``tensor.gather_row``: PyPTO's kernel-driven paged gather
  into an on-chip accumulator.  The simulator keeps the accumulator as a kernel-local
  tensor (the lowering checks that it fits Mat); gather_row copies a DDR window
  into it in place.
* ``tile.flat_index`` (compiler-internal): the flat buffer index of each element an
  index tile addresses along one axis, the form tile.gather/tile.scatter read; an
  index outside that axis is a `SimulationError` naming it (the lowering's user line).
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.apply import dtype_of
from pytest_pypto.ir.dtypes import UINT32
from pytest_pypto.ir.ops._indexing import (
    GATHER_DTYPES,
    SCATTER_DTYPES,
    check_indices,
    require_gather_index,
    require_scatter_index,
)
from pytest_pypto.ir.ops._rules import (
    dims,
    lowered_by_compiler,
    np,
    require_dtype,
    scalar,
    static_shape,
    tensor,
    tile,
)
from pytest_pypto.ir.ops._whole_tensor import via_tile, whole
from pytest_pypto.ir.ops.gather_compare_paged import compare_tensor_type
from pytest_pypto.ir.registry import (
    REGISTRY,
    CallInfo,
    MemRule,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.tensor_forms import stand_in_dims
from pytest_pypto.ir.types import TensorType, TileType, Type
from pytest_pypto.ir.values import TileValue


def norm_axis(info: CallInfo, dim: Any, rank: int) -> int:
    if not isinstance(dim, int) or isinstance(dim, bool) or not -rank <= dim < rank:
        raise OpTypeError(
            f"The operator {info.op} requires dim in [{-rank}, {rank - 1}], but got dim={dim!r}"
        )
    return dim % rank


def _given(info: CallInfo, *names: str) -> list[str]:
    return [n for n in names if info.types.get(n) is not None or info.values.get(n) is not None]


def _one_form(info: CallInfo, forms: dict[str, list[str]], hint: str) -> str:
    """The one calling form whose keywords were passed (PyPTO: the forms are exclusive)."""
    used = {form: names for form, names in forms.items() if names}
    if len(used) > 1:
        listed = " and ".join(f"{form} form ({', '.join(names)})" for form, names in used.items())
        raise OpTypeError(
            f"The operator {info.op}: the {listed} are mutually exclusive; do not mix keywords "
            "of different forms", hint,
        )
    if not used:
        raise OpTypeError(f"The operator {info.op} requires the arguments of one form", hint)
    return next(iter(used))


# ------------------------------------------------------------------ flat_index


def _flat_index_type(info: CallInfo) -> TileType:
    idx = tile(info, "index")
    if not idx.dtype.is_int:
        raise OpTypeError(f"The operator {info.op} requires an integer index tile, but got "
                          f"{idx.dtype.name}")
    shape = static_shape(info, "shape", info.values.get("shape"))
    if len(shape) != idx.rank:
        raise OpTypeError(f"The operator {info.op} requires shape of the index's rank "
                          f"{idx.rank}, but got {dims(shape)}")
    dim = norm_axis(info, info.values.get("dim"), idx.rank)
    for d, (i, s) in enumerate(zip(idx.shape, shape)):
        if d != dim and i > s:
            raise OpTypeError(f"The operator {info.op} requires index.shape[{d}] ({i}) <= "
                              f"shape[{d}] ({s})")
    top = math.prod(shape) - 1
    if top > (1 << (idx.dtype.bits - (0 if idx.dtype.kind == "uint" else 1))) - 1:
        raise OpTypeError(
            f"The operator {info.op}: flat indices up to {top} do not fit {idx.dtype.name}",
            "use INT32 indices, or a smaller window",
        )
    return TileType(idx.shape, idx.dtype, valid=idx.valid)


def _flat_index_compute(index: Any, *, shape: Any, dim: int,
                        caller: str = "tensor.gather", **_: Any) -> Any:
    shape = tuple(int(s) for s in shape)
    dim = dim % len(shape)
    idx = check_indices(caller, index, shape[dim], f"dim {dim} of size {shape[dim]}")
    pos = list(np.indices(idx.shape, dtype=np.int64))
    pos[dim] = idx
    return np.ravel_multi_index(tuple(pos), shape).astype(np.int64)


register(OpSpec(
    name="tile.flat_index",
    params=(ParamSpec("index", "tile"), ParamSpec("shape", "shape"), ParamSpec("dim", "int"),
            ParamSpec("caller", "str", default="tensor.gather")),
    type_rule=_flat_index_type,
    mem=MemRule(operands={"index": ("Vec",)}, result="Vec"),
    compute=_flat_index_compute,
    tier=2,
    doc="Compiler-internal (tensor gather/scatter lowering): element p of the index tile "
        "becomes the row-major flat offset, in a buffer of `shape`, of p with its `dim` "
        "coordinate replaced by index[p]. An index outside [0, shape[dim]) is a "
        "SimulationError naming `caller`.",
))


# ---------------------------------------------------------------------- gather


def gather_form(info: CallInfo) -> str:
    return _one_form(info, {
        "index": _given(info, "dim", "index"),
        "mask": _given(info, "mask_pattern"),
        "compare": _given(info, "kvalue", "cmp_mode", "out_cols"),
    }, "gather(input, dim, index), gather(input, mask_pattern=...), or "
       "gather(input, kvalue=..., cmp_mode=..., out_cols=...)")


def _gather_type(info: CallInfo) -> TensorType:
    form = gather_form(info)
    if info.values.get("output_dtype") is not None and form != "mask":
        raise OpTypeError(f"The operator {info.op}: output_dtype is only valid for the mask "
                          "form (mask_pattern=...)")
    if form == "compare":  # tile.gather_compare per row (ir/ops/gather_compare_paged.py)
        return compare_tensor_type(info, whole(info, "input"))
    if form == "mask":
        src = whole(info, "input")
        if src.rank != 2:
            raise OpTypeError(f"The operator {info.op} requires 2D input, but got rank {src.rank}")
        t = via_tile("tile.gather_mask", info, {"src": src})
        return TensorType(tuple(t.shape), t.dtype)
    if info.types.get("index") is None or info.values.get("dim") is None:
        raise OpTypeError(f"The operator {info.op} index form requires both dim and index")
    inp, idx = whole(info, "input"), whole(info, "index")
    require_dtype(info, inp.dtype, GATHER_DTYPES, "input dtype")
    require_gather_index(info, inp.dtype, idx.dtype, "input", "index")
    if inp.rank < 2:
        raise OpTypeError(f"The operator {info.op} requires rank >= 2, but got rank {inp.rank}")
    if idx.rank != inp.rank:
        raise OpTypeError(f"The operator {info.op} requires index rank ({idx.rank}) to match "
                          f"input rank ({inp.rank})")
    dim = norm_axis(info, info.values["dim"], inp.rank)
    for d, (i, s) in enumerate(zip(idx.shape, inp.shape)):
        if d != dim and i > s:
            raise OpTypeError(
                f"The operator {info.op} requires index.shape[{d}] ({i}) <= input.shape[{d}] "
                f"({s}) on non-gather axes"
            )
    return TensorType(tuple(idx.shape), inp.dtype)


register(OpSpec(
    name="tensor.gather",
    lowering_hook=True,
    params=(
        ParamSpec("input", "tensor"),
        ParamSpec("dim", "int", default=None),
        ParamSpec("index", "tensor", default=None, optional=True),
        ParamSpec("mask_pattern", "literal", default=None, keyword_only=True),
        ParamSpec("output_dtype", "dtype", default=None, keyword_only=True),
        ParamSpec("kvalue", "scalar", default=None, optional=True, keyword_only=True),
        ParamSpec("cmp_mode", "literal", default=None, keyword_only=True),
        ParamSpec("out_cols", "int", default=None, keyword_only=True),
        ParamSpec("offset", "int", default=0, keyword_only=True),
        ParamSpec("count_dtype", "dtype", default=None, keyword_only=True),
    ),
    type_rule=_gather_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("gather", "tensor.gather"),
    tier=2,
    doc="Tensor gather (PyPTO's unified form). Index form gather(input, dim, index): "
        "torch.gather along dim on rank >= 2 (INT32 index, or INT16 with a 16-bit input; "
        "index no larger than input off dim; result of index's shape); an index outside "
        "input's dim is a SimulationError. Mask form gather(input, mask_pattern=, "
        "output_dtype=): tile.gather_mask per row. Compare form gather(input, kvalue=, "
        "cmp_mode=, out_cols=, offset=, count_dtype=): tile.gather_compare, returning (dst "
        "[rows, out_cols] INT32, cdst [1, rows]).",
))


# --------------------------------------------------------------------- scatter


def scatter_form(info: CallInfo) -> str:
    return _one_form(info, {
        "index": _given(info, "dim", "index", "src"),
        "mask": _given(info, "mask_pattern", "dst"),
    }, "scatter(input, dim=-1, index=..., src=...) or scatter(input, mask_pattern=..., dst=...)")


def _scatter_type(info: CallInfo) -> TensorType:
    if scatter_form(info) == "mask":
        if info.values.get("mask_pattern") is None or info.types.get("dst") is None:
            raise OpTypeError(f"The operator {info.op} mask form requires both mask_pattern "
                              "and dst")
        inp, dst = whole(info, "input"), whole(info, "dst")
        for name, t in (("input", inp), ("dst", dst)):
            require_dtype(info, t.dtype, SCATTER_DTYPES, f"{name} dtype")
        t = via_tile("tile.scatter_mask", info, {"dst": dst, "src": inp})
        return TensorType(tuple(t.shape), t.dtype)
    missing = [n for n in ("dim", "index", "src") if n not in _given(info, "dim", "index", "src")]
    if missing:
        raise OpTypeError(f"The operator {info.op} index form requires dim, index and src "
                          f"(missing {', '.join(missing)})")
    inp, idx, src = whole(info, "input"), whole(info, "index"), whole(info, "src")
    require_dtype(info, inp.dtype, SCATTER_DTYPES, "input dtype")
    require_dtype(info, idx.dtype, ("INT16", "INT32"), "index dtype")
    if src.dtype.name != inp.dtype.name:
        raise OpTypeError(f"The operator {info.op} requires src dtype ({src.dtype.name}) to "
                          f"match input dtype ({inp.dtype.name})")
    require_scatter_index(info, inp.dtype, idx.dtype, "input", "index")
    for name, t in (("input", inp), ("src", src), ("index", idx)):
        if t.rank != 2:
            raise OpTypeError(f"The operator {info.op} supports rank-2 {name} only, but got "
                              f"rank {t.rank}")
    if norm_axis(info, info.values["dim"], 2) != 1:
        raise OpTypeError(f"The operator {info.op} supports dim=-1 (last axis) only, but got "
                          f"dim={info.values['dim']}")
    if tuple(idx.shape) != tuple(src.shape):
        raise OpTypeError(f"The operator {info.op} requires index of src's shape "
                          f"{dims(src.shape)}, but got {dims(idx.shape)}")
    for d, what in ((0, "rows"), (1, "cols")):
        if src.shape[d] > inp.shape[d]:
            raise OpTypeError(
                f"The operator {info.op} requires src.shape[{d}] <= input.shape[{d}], got src "
                f"{what} {src.shape[d]} vs input {what} {inp.shape[d]}"
            )
    return TensorType(tuple(inp.shape), inp.dtype)


register(OpSpec(
    name="tensor.scatter",
    lowering_hook=True,
    params=(
        ParamSpec("input", "tensor"),
        ParamSpec("dim", "int", default=None),
        ParamSpec("index", "tensor", default=None, optional=True),
        ParamSpec("src", "tensor", default=None, optional=True),
        ParamSpec("mask_pattern", "literal", default=None, keyword_only=True),
        ParamSpec("dst", "tensor", default=None, optional=True, keyword_only=True),
    ),
    type_rule=_scatter_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("scatter", "tensor.scatter"),
    tier=2,
    doc="Tensor scatter (PyPTO's unified form), returning a new tensor. Index form "
        "scatter(input, dim=-1, index, src) on rank 2: a copy of input with out[b, index[b, "
        "k]] = src[b, k] (k ascending: the last write wins); index has src's shape, 4 bytes "
        "for a 4-byte input and 2 otherwise; an index outside input's columns is a "
        "SimulationError. Mask form scatter(input, mask_pattern=, dst=): a copy of dst with "
        "each input row in its mask-marked columns.",
))


# ------------------------------------------------------------------------- cmp


def _cmp_type(info: CallInfo) -> TensorType:
    lhs = whole(info, "lhs")
    if info.op == "tensor.cmp":
        rhs = whole(info, "rhs")
        via_tile("tile.cmp", info, {"lhs": lhs, "rhs": rhs})
        shape = tuple(max(a, b) for a, b in zip(lhs.shape, rhs.shape))
    else:
        scalar(info, "rhs")
        via_tile("tile.cmps", info, {"lhs": lhs, "rhs": info.types["rhs"]})
        shape = tuple(lhs.shape)
    return TensorType(shape, lhs.dtype)


_CMP_DOC = (
    "Tensor compare {what} (cmp_type 0..5 = EQ, NE, LT, LE, GT, GE): a tensor of lhs's "
    "dtype holding 1 where the comparison holds and 0 elsewhere (PyPTO's tensor cmp; "
    "lowered to tile.cmp, tile.full and tile.sel, so lhs takes sel's 2- or 4-byte dtypes)."
)

register(OpSpec(
    name="tensor.cmp",
    lowering_hook=True,
    params=(ParamSpec("lhs", "tensor"), ParamSpec("rhs", "tensor"),
            ParamSpec("cmp_type", "literal", default=0)),
    type_rule=_cmp_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("tensor.cmp",),
    scalar_form="tensor.cmps",
    doc=_CMP_DOC.format(what="of two tensors (rhs may broadcast where a dim is 1)"),
))

register(OpSpec(
    name="tensor.cmps",
    lowering_hook=True,
    params=(ParamSpec("lhs", "tensor"), ParamSpec("rhs", "scalar"),
            ParamSpec("cmp_type", "literal", default=0)),
    type_rule=_cmp_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    doc=_CMP_DOC.format(what="of a tensor with a scalar (pl.cmp(t, 0.0))"),
))


# ----------------------------------------------------------------------- rsqrt


def _rsqrt_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tile")
    # pl.dynamic dims stand in as ints for the tile rule (the lowering loops over them).
    x = whole(info, "tile") if src.is_static else TileType(stand_in_dims(src.shape, {}), src.dtype)
    tmp = x if info.values.get("high_precision") else None
    t = via_tile("tile.rsqrt", info, {"tile": x, "tmp": tmp})
    return TensorType(tuple(t.shape) if src.is_static else tuple(src.shape), t.dtype)


register(OpSpec(
    name="tensor.rsqrt",
    lowering_hook=True,
    hook_tiles_dynamic=True,
    params=(ParamSpec("tile", "tensor", aliases=("input",)),
            ParamSpec("high_precision", "bool", default=False)),
    type_rule=_rsqrt_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("tensor.rsqrt",),
    doc="Tensor 1/sqrt(x) inside InCore code; high_precision=True selects tile.rsqrt's "
        "two-operand form, with the scratch tile allocated by the lowering.",
))


# --------------------------------------------------------------------- mrgsort


def merged_cols(info: CallInfo) -> int:
    return sum(tensor(info, n).shape[-1] for n in ("src0", "src1", "src2", "src3")
               if info.types.get(n) is not None)


def _mrgsort_type(info: CallInfo) -> TensorType:
    types: dict[str, Type | None] = {n: (whole(info, n) if info.types.get(n) is not None else None)
                                     for n in ("src0", "src1", "src2", "src3")}
    types["block_len"] = info.types.get("block_len")
    if types["block_len"] is None and types["src1"] is not None:
        src0 = types["src0"]
        types["tmp"] = TileType(tuple(src0.shape[:-1]) + (merged_cols(info),), src0.dtype)
    t = via_tile("tile.mrgsort", info, types)
    return TensorType(tuple(t.shape), t.dtype)


register(OpSpec(
    name="tensor.mrgsort",
    lowering_hook=True,
    params=(
        ParamSpec("src0", "tensor"),
        ParamSpec("src1", "tensor", default=None, optional=True),
        ParamSpec("src2", "tensor", default=None, optional=True),
        ParamSpec("src3", "tensor", default=None, optional=True),
        ParamSpec("exhausted", "bool", default=False, keyword_only=True),
        ParamSpec("block_len", "scalar", default=None, optional=True, keyword_only=True),
    ),
    type_rule=_mrgsort_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("tensor.mrgsort",),
    tier=2,
    doc="Tensor merge sort of (value, index) pairs: format 1 mrgsort(src, block_len=L) or "
        "format 2 mrgsort(src0, src1[, src2[, src3]]) whose result holds all the lists "
        "(the compiler allocates tile.mrgsort's tmp).",
))


# ---------------------------------------------------------------------- random

_SEEDS = ("key0", "key1", "counter0", "counter1", "counter2", "counter3")


def _random_type(info: CallInfo) -> TensorType:
    t = via_tile("tile.random", info, {n: info.types.get(n) for n in _SEEDS})
    return TensorType(tuple(t.shape), t.dtype)


register(OpSpec(
    name="tensor.random",
    lowering_hook=True,
    params=(
        *(ParamSpec(name, "scalar") for name in _SEEDS),
        ParamSpec("shape", "shape"),
        ParamSpec("dtype", "dtype", default=UINT32),
        ParamSpec("rounds", "int", default=10),
    ),
    type_rule=_random_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("random", "tensor.random"),
    tier=2,
    doc="A tensor of Philox4x32 counter-based random 32-bit words (tile.random's numbers over "
        "the whole tensor, which must fit one Vec tile: the words depend on the element "
        "position). a5 only.",
))


# ---------------------------------------------------------------- expand_clone


def expand_dim(info: CallInfo) -> int | None:
    """The one axis input stretches along (None: same shape); the type errors of PyPTO."""
    src, dst = whole(info, "input"), whole(info, "target")
    if src.rank != 3 or dst.rank != 3:
        raise OpTypeError(f"The operator {info.op} requires rank-3 input and target, but got "
                          f"{dims(src.shape)} and {dims(dst.shape)}")
    if src.dtype.name != dst.dtype.name:
        raise OpTypeError(f"The operator {info.op} requires input and target in one dtype, but "
                          f"got {src.dtype.name} and {dst.dtype.name}")
    stretched = []
    for d, (s, t) in enumerate(zip(src.shape, dst.shape)):
        if s != t:
            if s != 1:
                raise OpTypeError(
                    f"The operator {info.op} requires input dim {d} to be 1 or the target's "
                    f"{t}, but got {s}"
                )
            stretched.append(d)
    if len(stretched) > 1:
        raise OpTypeError(f"The operator {info.op} stretches at most one dimension, but input "
                          f"{dims(src.shape)} differs from target {dims(dst.shape)} in "
                          f"{len(stretched)}")
    return stretched[0] if stretched else None


def _expand_clone_type(info: CallInfo) -> TensorType:
    expand_dim(info)
    return tensor(info, "target")


register(OpSpec(
    name="tensor.expand_clone",
    lowering_hook=True,
    params=(ParamSpec("input", "tensor"), ParamSpec("target", "tensor")),
    type_rule=_expand_clone_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("expand_clone", "tensor.expand_clone"),
    writes="target",
    tier=2,
    doc="Copy input into target, repeated along the one axis where input is 1 (rank 3, at "
        "most one such axis); returns target (rebind it).",
))


# ----------------------------------------------------------- create_l1, gather_row


def _create_l1_type(info: CallInfo) -> TensorType:
    shape = static_shape(info, "shape", info.values.get("shape"))
    if len(shape) != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2D shape, but got {dims(shape)}")
    return TensorType(shape, info.values["dtype"])


register(OpSpec(
    name="tensor.create_l1",
    lowering_hook=True,
    params=(ParamSpec("shape", "shape"), ParamSpec("dtype", "dtype"),
            ParamSpec("transpose", "bool", default=False)),
    type_rule=_create_l1_type,
    mem=MemRule(),
    execute=lowered_by_compiler,
    spellings=("create_l1", "tensor.create_l1"),
    tier=2,
    doc="An on-chip (Mat) accumulator of static 2D shape that pl.gather_row fills and "
        "pl.matmul reads; the compiler checks it fits Mat, the simulator holds it as a "
        "kernel-local tensor whose elements start undefined (transpose= is a layout flag).",
))


def _gather_row_type(info: CallInfo) -> TensorType:
    acc = whole(info, "acc")
    types = {"dst": acc.with_(space="Mat"), "src": info.types.get("src")}
    via_tile("tile.gather_row", info, types)
    return tensor(info, "acc")


def _gather_row_execute(acc, src, *, dst_offset, src_offset, shapes, transpose=False,
                        valid_shape=None, out=None, **_):
    spec = REGISTRY["tile.gather_row"]
    view = TileValue(acc, tuple(acc.shape), dtype_of(acc), "Mat")
    spec.execute(view, src, dst_offset=dst_offset, src_offset=src_offset, shapes=shapes,
                 transpose=transpose, valid_shape=valid_shape)
    return acc


register(OpSpec(
    name="tensor.gather_row",
    params=(
        ParamSpec("acc", "tensor"),
        ParamSpec("src", "tensor"),
        ParamSpec("dst_offset", "index_list"),
        ParamSpec("src_offset", "index_list"),
        ParamSpec("shapes", "shape"),
        ParamSpec("transpose", "bool", default=False),
        ParamSpec("valid_shape", "index_list", default=None, keyword_only=True),
    ),
    type_rule=_gather_row_type,
    mem=MemRule(),
    execute=_gather_row_execute,
    spellings=("tensor.gather_row",),
    writes="acc",
    tier=2,
    doc="tile.gather_row on a pl.create_l1 accumulator: the DDR window src[src_offset : "
        "+shapes] (only valid_shape of it, which may be dynamic) copied into acc at "
        "dst_offset, in place; returns acc (rebind it). A window outside src or acc is a "
        "SimulationError.",
))

