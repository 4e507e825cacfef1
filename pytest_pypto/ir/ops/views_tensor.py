# SPDX-License-Identifier: Apache-2.0
"""Tensor views and writes: tensor.slice, tensor.reshape, tensor.transpose,
tensor.assemble (element access is `tensor_scalar`'s tensor.read / tensor.write).

In a kernel a tensor is a numpy view of its DDR buffer, so slice, reshape and
transpose are views of it (writes through them reach the buffer) and assemble
writes a tensor's data into a window of another (a store).  In orchestration the
same entries are reached through the `rt` runtime object (compiler.codegen).
Tensors carry no valid region in this toolchain: a `valid_shape` narrower than
the window, or a `clamp=True` window that overhangs, is rejected rather than
simulated wrongly.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.ops._rules import OpBoundsError, dims, enum_name, np, tensor
from pytest_pypto.ir.ops.views import (
    check_inside,
    drop_axes,
    index_items,
    normalize_axis,
    pad_name,
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

_NO_VALID = "tensors carry no valid region in the bundled toolchain yet"


def _dims_of(items: tuple[Any, ...], label: str) -> tuple[Any, ...]:
    """Tensor dims: static ints, else a fresh dynamic dim named after the window."""
    return tuple(d if isinstance(d, int) else DynVar(f"{label}{i}") for i, d in enumerate(items))


# ------------------------------------------------------------------------- slice


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
    requested = info.values.get("valid_shape")
    if requested is not None:
        valid = index_items(info, "valid_shape", src.rank, "valid extent")
        if any(v is None or s is None or v != s for v, s in zip(valid, shape)):
            raise OpTypeError(
                f"The operator {info.op} got valid_shape {dims(valid)} for shape {dims(shape)}, "
                f"but {_NO_VALID}",
                "slice the valid extent itself, or load the window with pl.load(..., "
                "valid_shapes=...)",
            )
    pad_name(info, info.values.get("pad_value"))
    if info.values.get("clamp"):
        for d, (o, s, n) in enumerate(zip(offsets, shape, src.shape)):
            if o is not None and s is not None and isinstance(n, int) and o + s > n:
                raise OpTypeError(
                    f"The operator {info.op} with clamp=True overhangs dimension {d} "
                    f"({o} + {s} > {n}), but {_NO_VALID}",
                    "clamp at the load instead: pl.load(t, offsets, shapes, clamp=True)",
                )
    else:
        check_inside(info, "offset", shape, src.shape, "source")
    drop = info.values.get("drop_dims")
    full = tuple(-1 if d is None else d for d in shape)
    drop_axes(info, full, full, drop, floor=1)  # validates the dropped axes
    axes = {int(a) % src.rank for a in drop or ()}
    kept = tuple(s for d, s in enumerate(shape) if d not in axes) or (1,)
    return TensorType(_dims_of(kept, "slice"), src.dtype)


def slice_array(t: Any, shape: Any, offset: Any, drop_dims: Any = None, clamp: bool = False):
    """The numpy view of a tensor window (bounds checked at run time)."""
    shape = tuple(int(s) for s in shape)
    offset = tuple(int(o) for o in offset)
    if clamp and any(o + s > n for o, s, n in zip(offset, shape, t.shape)):
        raise OpBoundsError(
            f"tensor.slice with clamp=True overhangs the source {list(t.shape)} at offset "
            f"{list(offset)}, but {_NO_VALID}",
            "clamp at the load instead: pl.load(t, offsets, shapes, clamp=True)",
        )
    runtime_inside("tensor.slice", offset, shape, t.shape, "source")
    view = t[tuple(slice(o, o + s) for o, s in zip(offset, shape))]
    if drop_dims:
        axes = tuple(int(a) % len(shape) for a in drop_dims)
        view = view.squeeze(axis=axes) if len(axes) < view.ndim else view.reshape((1,))
    return view


def _slice_execute(t, *, shape, offset, valid_shape=None, drop_dims=None, pad_value=None,
                   clamp=False, out=None, **_):
    return slice_array(t, shape, offset, drop_dims, bool(clamp))


register(OpSpec(
    name="tensor.slice",
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
    doc="A zero-copy window [offset, offset + shape) of a tensor (dims may be dynamic); "
        "drop_dims erases unit axes. The window must lie inside the source.",
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
    return TensorType(_dims_of(tuple(shape), "reshape"), src.dtype)


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
    params=(ParamSpec("tensor", "tensor", aliases=("input",)), ParamSpec("shape", "index_list")),
    type_rule=_reshape_type,
    mem=MemRule(),
    execute=_reshape_execute,
    spellings=("reshape",),
    doc="The same tensor elements in a new shape (same element count), zero-copy.",
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
    return TensorType(swap(src.shape, a, b), src.dtype)


def _transpose_execute(t, *, axis1, axis2, out=None, **_):
    return np.swapaxes(t, int(axis1), int(axis2))


register(OpSpec(
    name="tensor.transpose",
    params=(
        ParamSpec("tensor", "tensor", aliases=("input",)),
        ParamSpec("axis1", "int"),
        ParamSpec("axis2", "int"),
    ),
    type_rule=_transpose_type,
    mem=MemRule(),
    execute=_transpose_execute,
    spellings=("transpose",),
    doc="A zero-copy strided view of a tensor with axis1 and axis2 exchanged.",
))


# ---------------------------------------------------------------------- assemble


def _assemble_type(info: CallInfo) -> TensorType:
    dst, src = tensor(info, "target"), tensor(info, "source")
    if src.dtype.name != dst.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires source and target in one dtype, but got "
            f"{src.dtype.name} and {dst.dtype.name}",
            f"pl.cast the source to pl.{dst.dtype.name} first",
        )
    if src.rank > dst.rank:
        raise OpTypeError(
            f"The operator {info.op} requires a source of rank <= the target's, but got "
            f"{dims(src.shape)} into {dims(dst.shape)}"
        )
    index_items(info, "offset", dst.rank, "offset")
    atomic = enum_name(info.values.get("atomic"))
    if atomic not in (None, "None_", "None", 0, "Add", 1):
        raise OpTypeError(f"The operator {info.op} requires atomic None_ or Add, but got {atomic}")
    window = (1,) * (dst.rank - src.rank) + tuple(
        d if isinstance(d, int) else None for d in src.shape
    )
    check_inside(info, "offset", window, dst.shape, "target")
    return dst


def _assemble_arch(arch: Any, info: CallInfo) -> None:
    if enum_name(info.values.get("atomic")) in ("Add", 1):
        name = tensor(info, "target").dtype.name
        if name not in arch.atomic_add_dtypes:
            raise OpArchError(
                f"The operator {info.op} atomically adds into a {name} tensor, which the "
                f"'{arch.name}' backend cannot do",
                "accumulate in fp32, cast after" if name == "BF16"
                else f"atomic add supports {', '.join(arch.atomic_add_dtypes)}",
            )


def _assemble_execute(dst, src, *, offset, atomic=None, out=None, **_):
    from pytest_pypto.ir.apply import convert_array, dtype_of
    from pytest_pypto.ir.values import widen

    lead = dst.ndim - src.ndim
    extents = (1,) * lead + tuple(src.shape)
    offset = tuple(int(o) for o in offset)
    runtime_inside("tensor.assemble", offset, extents, dst.shape, "target")
    window = tuple(slice(o, o + e) for o, e in zip(offset, extents))
    region = src.reshape(extents)
    if enum_name(atomic) in ("Add", 1):
        dt = dtype_of(dst)
        dst[window] = convert_array(widen(dst[window], dt) + widen(region, dtype_of(src)), dt)
    else:
        dst[window] = region
    return dst


register(OpSpec(
    name="tensor.assemble",
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
    doc="Write the source tensor into the target at offset (a lower-rank source fills the "
        "trailing axes) and return the target (rebind it); atomic=Add adds instead (dtypes "
        "per arch, as a store).",
))
