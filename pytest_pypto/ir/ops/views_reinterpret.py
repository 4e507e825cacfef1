# SPDX-License-Identifier: Apache-2.0
"""Tensor views that reinterpret a buffer: reinterpret_view (another dtype) and view
(another shape over the same memory).

* ``tensor.reinterpret_view(data, dtype, *, shape=None)``: the tensor's bytes read
  as another dtype, zero-copy (a write through it reaches the buffer).
* ``tensor.view(tensor, shape=None, valid_shape=None, *, layout=None)``: PyPTO's
  zero-copy reinterpretation of a tensor over the same memory in a new
  (product-preserving) shape, with an explicit valid region for the collapsed
  view.  Only the row-major ND layout is built: ``layout=pl.DN`` names what is
  missing.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.ops._rules import OpBoundsError, dims, dtype_list, tensor
from pytest_pypto.ir.ops.combine import REINTERPRET_DTYPES
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpRuleError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TensorType

# ------------------------------------------------------------ reinterpret_view


def _reinterpret_type(info: CallInfo) -> TensorType:
    src = tensor(info, "data")
    dt = info.values.get("dtype")
    for name, d in (("source", src.dtype), ("target", dt)):
        if d is None or d.name not in REINTERPRET_DTYPES:
            raise OpTypeError(
                f"The operator {info.op} requires a {name} dtype of "
                f"{dtype_list(REINTERPRET_DTYPES)}, but got {getattr(d, 'name', d)}"
            )
    if dt.name == src.dtype.name:
        raise OpTypeError(f"The operator {info.op} requires a dtype other than the source's "
                          f"{dt.name}", "drop the reinterpret_view: the tensor already has it")
    if src.narrowed:
        raise OpTypeError(f"The operator {info.op} cannot reinterpret a tensor with a valid "
                          f"region {dims(src.valid_shape)}", "pl.fillpad the tensor first")
    if not src.is_static:
        raise OpTypeError(f"The operator {info.op} requires a static source shape, but got "
                          f"{dims(src.shape)}")
    num, den = src.dtype.itemsize, dt.itemsize
    requested = info.values.get("shape")
    if requested is None:
        last = src.shape[-1] * num
        if last % den:
            raise OpTypeError(
                f"The operator {info.op} cannot split the last dim {src.shape[-1]} of "
                f"{src.dtype.name} into whole {dt.name} elements")
        return TensorType(tuple(src.shape[:-1]) + (last // den,), dt)
    shape = tuple(requested)
    if not all(isinstance(d, int) and d > 0 for d in shape):
        raise OpTypeError(f"The operator {info.op} requires a static positive shape, but got "
                          f"{dims(shape)}")
    if math.prod(shape) * den != math.prod(src.shape) * num:  # type: ignore[arg-type]
        raise OpTypeError(
            f"The operator {info.op} requires shape of the source's byte size "
            f"{math.prod(src.shape) * num}, but got {dims(shape)} of {dt.name} "  # type: ignore[arg-type]
            f"({math.prod(shape) * den} bytes)")
    return TensorType(shape, dt)


def _reinterpret_execute(data: Any, *, dtype: Any, shape: Any = None, out: Any = None,
                         **_: Any) -> Any:
    if not data.flags.c_contiguous:
        raise OpBoundsError("tensor.reinterpret_view of a strided window: its bytes are not "
                            "contiguous", "reinterpret the whole tensor, then slice")
    viewed = data.view(dtype.np)
    if shape is None:
        shape = data.shape[:-1] + (data.shape[-1] * data.dtype.itemsize // dtype.itemsize,)
    viewed.shape = tuple(int(s) for s in shape)
    return viewed


register(OpSpec(
    name="tensor.reinterpret_view",
    params=(
        ParamSpec("data", "tensor", aliases=("tensor", "input")),
        ParamSpec("dtype", "dtype"),
        ParamSpec("shape", "index_list", default=None, keyword_only=True),
    ),
    type_rule=_reinterpret_type,
    mem=MemRule(),
    execute=_reinterpret_execute,
    spellings=("tensor.reinterpret_view",),
    view_of="data",
    tier=2,
    doc="The tensor's bytes read as another dtype, zero-copy (writes reach the buffer): "
        "without shape the last dim scales by the byte ratio, with shape the byte count "
        "must match. A tensor with a valid region must be fillpadded first.",
))


# ------------------------------------------------------------------------ view


def _view_type(info: CallInfo) -> TensorType:
    src = tensor(info, "tensor")
    layout = info.values.get("layout")
    name = getattr(layout, "name", layout)
    if name not in (None, "ND"):
        raise OpRuleError(
            f"The operator {info.op} with layout={name} is not supported by the bundled "
            "toolchain yet (only the row-major ND view)",
            "use pl.transpose for a column-major view",
        )
    shape = info.values.get("shape")
    if shape is None:
        if name is None:
            raise OpTypeError(f"The operator {info.op} requires shape or layout")
        shape = tuple(src.shape)
    if not shape or any(d is None for d in shape):
        raise OpTypeError(f"The operator {info.op} requires a static shape of rank >= 1, but "
                          f"got {dims(shape or ())}")
    shape = tuple(shape)
    if src.is_static and math.prod(shape) != math.prod(src.shape):  # type: ignore[arg-type]
        raise OpTypeError(
            f"The operator {info.op} requires the same element count, but {dims(src.shape)} "
            f"has {math.prod(src.shape)} and {dims(shape)} has {math.prod(shape)}"  # type: ignore[arg-type]
        )
    valid = info.values.get("valid_shape")
    if valid is not None:
        if len(valid) != len(shape):
            raise OpTypeError(f"The operator {info.op} requires valid_shape of rank "
                              f"{len(shape)}, but got {dims(valid)}")
        for d, (v, s) in enumerate(zip(valid, shape)):
            if isinstance(v, int) and not 0 <= v <= s:
                raise OpTypeError(f"The operator {info.op} requires 0 <= valid_shape[{d}] <= "
                                  f"{s}, but got {v}")
        return TensorType(shape, src.dtype, tuple(valid), src.pad)
    if src.narrowed:
        raise OpTypeError(
            f"The operator {info.op} of a tensor with a valid region {dims(src.valid_shape)} "
            "needs valid_shape=", "give the view's valid_shape explicitly")
    return TensorType(shape, src.dtype, pad=src.pad)


def _view_execute(t: Any, *, shape: Any = None, valid_shape: Any = None, layout: Any = None,
                  out: Any = None, **_: Any) -> Any:
    shape = tuple(int(s) for s in (shape if shape is not None else t.shape))
    if math.prod(shape) != t.size:
        raise OpBoundsError(f"tensor.view of {list(t.shape)} as {list(shape)}: element counts "
                            f"differ ({t.size} vs {math.prod(shape)})")
    view = t.view()
    try:
        view.shape = shape  # zero-copy: writes through the view reach the buffer
    except AttributeError:
        raise OpBoundsError(f"tensor.view of a strided {list(t.shape)} window as "
                            f"{list(shape)}: the memory is not contiguous",
                            "view the whole tensor, then slice") from None
    return view


register(OpSpec(
    name="tensor.view",
    params=(
        ParamSpec("tensor", "tensor", aliases=("input",)),
        ParamSpec("shape", "index_list", default=None),
        ParamSpec("valid_shape", "index_list", default=None),
        ParamSpec("layout", "literal", default=None, keyword_only=True),
    ),
    type_rule=_view_type,
    mem=MemRule(),
    execute=_view_execute,
    spellings=("tensor.view",),
    view_of="tensor",
    tier=2,
    doc="The tensor over the same memory in a new shape (same element count), zero-copy, "
        "with an optional explicit valid_shape (required when the source has a valid "
        "region). Only the ND layout is built.",
))
