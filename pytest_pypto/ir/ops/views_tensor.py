# SPDX-License-Identifier: Apache-2.0
"""Tensor views and writes: tensor.slice, tensor.reshape, tensor.transpose,
tensor.assemble (element access is `tensor_scalar`'s tensor.read / tensor.write).

In a kernel a tensor is a numpy view of its DDR buffer, so slice, reshape,
transpose and set_validshape are views of it (writes through them reach the
buffer) and assemble writes a tensor's data into a window of another (a store).
In orchestration the same entries are reached through the `rt` runtime object
(compiler.codegen).

Valid regions (PyPTO's tensor valid_shape) live in the types only: a slice's
valid is the requested one cut by the source's valid region under the window
(``clamp=True`` cuts an overhanging window at the source edge), set_validshape
sets it.  The tensor-level lowering (compiler/tensor_lowering.py) turns them into
the valid_shapes of the loads it emits, so a narrowed tensor is read, computed on
and assembled only inside its valid region, as PyPTO's tile conversion does.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.apply import convert_array, dtype_of
from pytest_pypto.ir.ops._rules import (
    OpBoundsError,
    check_valid_extents,
    dims,
    enum_name,
    np,
    require_atomic_mode,
    require_int_scalar,
    tensor,
)
from pytest_pypto.ir.ops.views import (
    check_inside,
    drop_axes,
    index_items,
    normalize_axis,
    pad_name,
    reshape_valid,
    runtime_inside,
    swap,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import DynVar, TensorType
from pytest_pypto.ir.values import widen

# Source dtypes an assemble may convert from: a matmul accumulator, whose store into
# the target converts once (RNE), as PyPTO's fix-pipe Acc -> GM store does.
ASSEMBLE_OP = "tensor.assemble"  # the compiler's valid-region lowering dispatches on it
ACC_CONVERT_TARGETS = {"FP32": ("FP16", "BF16"), "INT32": ()}


def _dims_of(items: tuple[Any, ...], label: str) -> tuple[Any, ...]:
    """Tensor dims: static ints, else a fresh dynamic dim named after the window."""
    return tuple(d if isinstance(d, int) else DynVar(f"{label}{i}") for i, d in enumerate(items))


# ------------------------------------------------------------------------- slice


def _static(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def window_valid(src: TensorType, shape: Any, offsets: Any, requested: Any, clamp: bool
                 ) -> tuple[int | None, ...]:
    """The valid region of a window of ``src`` (PyPTO's window-read rule), per dim:
    min(requested, source valid - offset clamped to [0, window]); None where dynamic."""
    out: list[int | None] = []
    valid = src.valid_shape
    for d, (w, o, n) in enumerate(zip(shape, offsets, src.shape)):
        want = w if requested is None else requested[d]
        full = src.valid is None or valid[d] == n
        if full and not clamp:
            out.append(_static(want))
            continue
        v, o = _static(valid[d]), _static(o)
        if v is None or o is None or _static(w) is None:
            out.append(None)
            continue
        available = max(0, min(v - o, w))
        out.append(None if _static(want) is None else min(want, available))
    return tuple(out)


def _slice_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tensor")
    shape = index_items(info, "shape", src.rank, "extent")
    offsets = index_items(info, "offset", src.rank, "offset")
    for d, s in enumerate(shape):
        if s is not None and s <= 0:
            raise OpTypeError(
                f"The operator {info.op} requires positive extents, but got {dims(shape)} "
                f"(dimension {d})"
            )
    requested = None
    if info.values.get("valid_shape") is not None:
        requested = index_items(info, "valid_shape", src.rank, "valid extent")
        for d, (v, s) in enumerate(zip(requested, shape)):
            if v is not None and (v < 0 or (s is not None and v > s)):
                raise OpTypeError(
                    f"The operator {info.op} requires 0 <= valid_shape <= shape, but got "
                    f"valid_shape {dims(requested)} for shape {dims(shape)} (dimension {d})",
                    "a valid region cannot be larger than the window that holds it",
                )
    pad = pad_name(info, info.values.get("pad_value"))
    clamp = bool(info.values.get("clamp"))
    for d, o in enumerate(offsets):
        if o is not None and o < 0:
            raise OpTypeError(
                f"The operator {info.op} starts before dimension {d}: offset {o} < 0",
                "a window must start inside its source",
            )
    if not clamp:
        # PyPTO's window-read rule: a slice is trimmed to its source, so what has to fit
        # is the extent actually read, valid_shape when given (a padded window may
        # overhang), else the whole window (docs/design/checks.md §6).
        reach = shape if requested is None else requested
        what = "extent" if requested is None else "valid extent"
        for d, (o, s, n) in enumerate(zip(offsets, reach, src.shape)):
            if o is not None and s is not None and isinstance(n, int) and o + s > n:
                raise OpTypeError(
                    f"The operator {info.op} reads past the end of dimension {d}: offset {o} + "
                    f"{what} {s} > source extent {n}",
                    "pass clamp=True to narrow the valid region to the source edge instead",
                )
        check_inside(info, "offset", reach, src.shape, "source")
    valid = window_valid(src, shape, offsets, requested, clamp)
    drop = info.values.get("drop_dims")
    full = tuple(-1 if d is None else d for d in shape)
    drop_axes(info, full, tuple(-1 if v is None else v for v in valid), drop, floor=1)
    axes = {int(a) % src.rank for a in drop or ()}
    for a in sorted(axes):
        if valid[a] != 1:
            raise OpTypeError(
                f"The operator {info.op} cannot drop dimension {a}: its valid extent is "
                f"{'dynamic' if valid[a] is None else valid[a]}, not 1",
                "keep the dimension instead of dropping it",
            )
    kept = tuple(s for d, s in enumerate(shape) if d not in axes) or (1,)
    kept_valid = tuple(v for d, v in enumerate(valid) if d not in axes) or (1,)
    dims_ = _dims_of(kept, "slice")
    return TensorType(dims_, src.dtype, kept_valid, pad if pad is not None else src.pad)


def slice_array(t: Any, shape: Any, offset: Any, drop_dims: Any = None, clamp: bool = False,
                valid: Any = None):
    """The numpy view of a tensor window (bounds checked at run time: offset + ``valid``
    when given, else offset + shape, must fit unless ``clamp``)."""
    shape = tuple(int(s) for s in shape)
    offset = tuple(int(o) for o in offset)
    # A clamped or padded window keeps only its part inside the source (numpy cuts the
    # view at the edge); its type's valid region says so, and consumers read only that.
    if clamp:
        reach = tuple(min(s, max(0, n - o)) for o, s, n in zip(offset, shape, t.shape))
    elif valid is not None:
        reach = tuple(int(v) for v in valid)
        check_valid_extents("tensor.slice", reach, shape, "window")
    else:
        reach = shape
    runtime_inside("tensor.slice", offset, reach, t.shape, "source")
    view = t[tuple(slice(o, o + s) for o, s in zip(offset, shape))]
    if drop_dims:
        axes = tuple(int(a) % len(shape) for a in drop_dims)
        view = view.squeeze(axis=axes) if len(axes) < view.ndim else view.reshape((1,))
    return view


def _slice_execute(t, *, shape, offset, valid_shape=None, drop_dims=None, pad_value=None,
                   clamp=False, out=None, **_):
    return slice_array(t, shape, offset, drop_dims, bool(clamp), valid_shape)


register(OpSpec(
    name="tensor.slice",
    in_orchestration=True,
    params=(
        ParamSpec("tensor", "tensor", aliases=("input",)),
        ParamSpec("shape", "index_list"),
        ParamSpec("offset", "index_list", aliases=("offsets",)),
        ParamSpec("valid_shape", "index_list", default=None, aliases=("valid_shapes",)),
        ParamSpec("drop_dims", "shape", default=None),
        ParamSpec("pad_value", "literal", default=None),
        ParamSpec("clamp", "bool", default=False),
    ),
    type_rule=_slice_type,
    mem=MemRule(),
    execute=_slice_execute,
    spellings=("slice",),
    view_of="tensor",
    doc="A zero-copy window [offset, offset + shape) of a tensor (dims may be dynamic); "
        "drop_dims erases fully valid unit axes. Its valid region is valid_shape (default "
        "the window) cut by the source's valid region under the window; the window must lie "
        "inside the source unless clamp=True, which cuts the valid region at the source "
        "edge. pad_value sets the pad mode of the cells outside the valid region.",
))


# ----------------------------------------------------------------- set_validshape


def _validshape_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tensor")
    if src.rank != 2:
        raise OpTypeError(
            f"The operator {info.op} requires a 2-D tensor, but got rank {src.rank}",
            "pl.reshape the tensor to 2-D first",
        )
    valid = (info.values.get("valid_rows"), info.values.get("valid_cols"))
    for d, (v, name) in enumerate(zip(valid, ("valid_rows", "valid_cols"))):
        require_int_scalar(info, name)
        n = src.shape[d]
        if v is not None and (v < 0 or (isinstance(n, int) and v > n)):
            raise OpTypeError(
                f"The operator {info.op} requires 0 <= {name} <= {n}, but got {v}",
                "keep the valid region inside the tensor's shape",
            )
    return TensorType(src.shape, src.dtype, valid, src.pad)


def _validshape_execute(t, valid_rows, valid_cols, *, out=None, **_):
    check_valid_extents("tensor.set_validshape", (int(valid_rows), int(valid_cols)), t.shape,
                        "tensor")
    return t


register(OpSpec(
    name="tensor.set_validshape",
    params=(
        ParamSpec("tensor", "tensor", aliases=("input",)),
        ParamSpec("valid_rows", "scalar"),
        ParamSpec("valid_cols", "scalar"),
    ),
    type_rule=_validshape_type,
    mem=MemRule(),
    execute=_validshape_execute,
    spellings=("set_validshape",),
    view_of="tensor",
    doc="Metadata only: the same 2-D tensor with valid region [valid_rows, valid_cols] "
        "(ints or INDEX Scalars, 0 <= valid <= shape); tensor ops, loads and assembles of "
        "it then touch only that region.",
))


# --------------------------------------------------------------- reshape / transpose


def _reshape_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tensor")
    shape = info.values.get("shape")
    if not isinstance(shape, (tuple, list)) or not shape:
        raise OpTypeError(f"The operator {info.op} requires a non-empty shape list")
    if all(isinstance(d, int) for d in shape) and src.is_static:
        if math.prod(shape) != math.prod(src.shape):  # type: ignore[arg-type]
            raise OpTypeError(
                f"The operator {info.op} requires the same element count, but {dims(src.shape)} "
                f"has {math.prod(src.shape)} and {dims(shape)} has {math.prod(shape)}"  # type: ignore[arg-type]
            )
    new_dims = _dims_of(tuple(shape), "reshape")
    if not src.narrowed:
        return TensorType(new_dims, src.dtype, pad=src.pad)
    if not (src.is_static and all(isinstance(d, int) for d in shape)):
        raise OpTypeError(
            f"The operator {info.op} cannot reshape a tensor with a valid region "
            f"{dims(src.valid_shape)} to a dynamic shape",
            "pl.fillpad the tensor first (its result is fully valid), then reshape",
        )
    valid = reshape_valid(info.op, src.shape, src.valid_shape, shape)  # type: ignore[arg-type]
    return TensorType(new_dims, src.dtype, valid, src.pad)


def _reshape_execute(t, *, shape, out=None, **_):
    shape = tuple(int(s) for s in shape)
    if math.prod(shape) != t.size:
        raise OpBoundsError(
            f"tensor.reshape of {list(t.shape)} to {list(shape)}: element counts differ "
            f"({t.size} vs {math.prod(shape)})"
        )
    view = t.view()
    try:
        view.shape = shape  # a view, so writes reach the buffer
    except AttributeError:
        view = t.reshape(shape)  # a strided window: a read-only copy
        view.flags.writeable = False
    return view


register(OpSpec(
    name="tensor.reshape",
    regroups=True,
    in_orchestration=True,
    params=(ParamSpec("tensor", "tensor", aliases=("input",)), ParamSpec("shape", "index_list")),
    type_rule=_reshape_type,
    mem=MemRule(),
    execute=_reshape_execute,
    spellings=("reshape",),
    view_of="tensor",
    doc="The same tensor elements in a new shape (same element count), zero-copy; a valid "
        "region maps without widening or the call is an error asking for pl.fillpad first.",
))


def _transpose_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tensor")
    if src.rank < 2:
        raise OpTypeError(f"The operator {info.op} requires a tensor of rank >= 2")
    a = normalize_axis(info, info.values.get("axis1"), src.rank, "axis1")
    b = normalize_axis(info, info.values.get("axis2"), src.rank, "axis2")
    if a == b:
        raise OpTypeError(
            f"The operator {info.op} requires two different axes, but both name axis {a}"
        )
    valid = swap(src.valid, a, b) if src.valid is not None else None
    return TensorType(swap(src.shape, a, b), src.dtype, valid, src.pad)


def _transpose_execute(t, *, axis1, axis2, out=None, **_):
    return np.swapaxes(t, int(axis1), int(axis2))


register(OpSpec(
    name="tensor.transpose",
    in_orchestration=True,
    params=(
        ParamSpec("tensor", "tensor", aliases=("input",)),
        ParamSpec("axis1", "int"),
        ParamSpec("axis2", "int"),
    ),
    type_rule=_transpose_type,
    mem=MemRule(),
    execute=_transpose_execute,
    spellings=("transpose",),
    view_of="tensor",
    doc="A zero-copy strided view of a tensor with axis1 and axis2 exchanged (its valid "
        "region too).",
))


# ---------------------------------------------------------------------- assemble


def _assemble_type(info: CallInfo) -> TensorType:
    dst, src = tensor(info, "target"), tensor(info, "source")
    if src.dtype.name != dst.dtype.name and \
            dst.dtype.name not in ACC_CONVERT_TARGETS.get(src.dtype.name, ()):
        raise OpTypeError(
            f"The operator {info.op} requires source and target in one dtype, but got "
            f"{src.dtype.name} and {dst.dtype.name}",
            f"pl.cast the source to pl.{dst.dtype.name} first (only an FP32 matmul result "
            "converts on its way into an FP16/BF16 target)",
        )
    if src.rank > dst.rank:
        raise OpTypeError(
            f"The operator {info.op} requires a source of rank <= the target's, but got "
            f"{dims(src.shape)} into {dims(dst.shape)}"
        )
    offsets = index_items(info, "offset", dst.rank, "offset")
    require_atomic_mode(info)
    # Only the source's valid region is transferred, so that is what must fit.
    written = (1,) * (dst.rank - src.rank) + tuple(
        d if isinstance(d, int) else None for d in src.valid_shape
    )
    for d, (o, w, n) in enumerate(zip(offsets, written, dst.shape)):
        if o is not None and w is not None and isinstance(n, int) and (o < 0 or o + w > n):
            raise OpTypeError(
                f"The operator {info.op} writes past dimension {d} of the target: offset {o} + "
                f"source valid extent {w} > target extent {n}",
                "only the source's valid region is written; it has to fit at this offset",
            )
    check_inside(info, "offset", written, dst.shape, "target")
    if dst.valid is None:
        return dst
    # A narrowed target grows by the written region where both are static rectangles.
    grown = tuple(
        max(v, o + w) if all(isinstance(x, int) for x in (v, o, w)) else None
        for v, o, w in zip(dst.valid, offsets, written)
    )
    return TensorType(dst.shape, dst.dtype, grown, dst.pad)


def _assemble_arch(arch: Any, info: CallInfo) -> None:
    dst, src = tensor(info, "target"), tensor(info, "source")
    if src.dtype.name != dst.dtype.name and dst.dtype.name not in arch.acc_store_dtypes:
        raise OpArchError(
            f"The operator {info.op} converts {src.dtype.name} into a {dst.dtype.name} target, "
            f"which the '{arch.name}' backend's accumulator store cannot do",
            f"an accumulator stores only into {', '.join(arch.acc_store_dtypes)}",
        )
    if enum_name(info.values.get("atomic")) in ("Add", 1):
        name = dst.dtype.name
        if name not in arch.atomic_add_dtypes:
            raise OpArchError(
                f"The operator {info.op} atomically adds into a {name} tensor, which the "
                f"'{arch.name}' backend cannot do",
                "accumulate in fp32, cast after" if name == "BF16"
                else f"atomic add supports {', '.join(arch.atomic_add_dtypes)}",
            )


def _assemble_execute(dst, src, *, offset, atomic=None, out=None, **_):
    lead = dst.ndim - src.ndim
    extents = (1,) * lead + tuple(src.shape)
    offset = tuple(int(o) for o in offset)
    runtime_inside("tensor.assemble", offset, extents, dst.shape, "target")
    window = tuple(slice(o, o + e) for o, e in zip(offset, extents))
    region = src.reshape(extents)
    dt = dtype_of(dst)
    if enum_name(atomic) in ("Add", 1):
        dst[window] = convert_array(widen(dst[window], dt) + widen(region, dtype_of(src)), dt)
    elif region.dtype == dst.dtype:
        dst[window] = region
    else:  # an accumulator converting into its target: one RNE rounding
        dst[window] = convert_array(widen(region, dtype_of(src)), dt)
    return dst


register(OpSpec(
    name=ASSEMBLE_OP,
    in_orchestration=True,
    params=(
        ParamSpec("target", "tensor"),
        ParamSpec("source", "tensor"),
        ParamSpec("offset", "index_list", aliases=("offsets",)),
        ParamSpec("atomic", "enum", default=None, keyword_only=True),
    ),
    type_rule=_assemble_type,
    mem=MemRule(),
    arch_rule=_assemble_arch,
    execute=_assemble_execute,
    spellings=("assemble",),
    writes="target",
    doc="Write the source tensor's valid region into the target at offset (a lower-rank "
        "source fills the trailing axes) and return the target (rebind it); atomic=Add adds "
        "instead (dtypes per arch, as a store). An FP32 matmul result converts (RNE) into an "
        "FP16/BF16 target, as PyPTO's accumulator store does; other pairs need pl.cast. In "
        "orchestration it waits for the source's producer tasks, then copies.",
))
