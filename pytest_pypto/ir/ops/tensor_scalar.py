# SPDX-License-Identifier: Apache-2.0
"""Scalar access to DDR tensors: `pl.tensor.read`, `pl.tensor.write`, `pl.tensor.dim`.

In orchestration these are blocking: the generated code calls the runtime (`rt.read`
waits for every pending producer of the tensor, `rt.write` also for its readers,
docs/design/runtime.md
§7), so a value read from a tensor can drive `if`s, loop bounds and kernel Scalars.
Inside an InCore kernel they read and write the tensor argument directly.  Types follow
PyPTO: `read` gives a Scalar of the tensor's dtype, `dim` an INDEX Scalar (negative axes
count from the end), `write` hands back the tensor.  Index count must equal the rank;
constant indices into static dims are bounds-checked when the kernel is parsed.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import dtypes
from pytest_pypto.ir.ops._rules import OpBoundsError, dims
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TensorType, Type


def _tensor(info: CallInfo, name: str = "tensor") -> TensorType:
    t = info.types.get(name)
    if not isinstance(t, TensorType):
        got = "nothing" if t is None else f"a {t.kind}"
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a Tensor, but got {got}",
            "read tiles with pl.read / subscripts instead" if t is not None else None,
        )
    return t


def _check_indices(info: CallInfo, t: TensorType) -> None:
    indices = info.values.get("indices") or ()
    if len(indices) != t.rank:
        raise OpTypeError(
            f"The operator {info.op} takes one index per dimension: {len(indices)} indices "
            f"for a rank-{t.rank} tensor {dims(t.shape)}",
            f"write {info.op.replace('tensor.', 'pl.tensor.')}(t, [{', '.join(['i'] * t.rank)}]...)",
        )
    for axis, (i, d) in enumerate(zip(indices, t.shape)):
        if isinstance(i, int) and isinstance(d, int) and not 0 <= i < d:
            raise OpBoundsError(
                f"{info.op} index {i} on axis {axis} is out of bounds for tensor "
                f"{dims(t.shape)} (valid: 0..{d - 1})",
            )


def _read_type(info: CallInfo) -> Type:
    t = _tensor(info)
    _check_indices(info, t)
    return ScalarType(t.dtype)


def _write_type(info: CallInfo) -> Type:
    t = _tensor(info)
    _check_indices(info, t)
    value = info.types.get("value")
    if isinstance(value, ScalarType) and _category(value.dtype) != _category(t.dtype):
        raise OpTypeError(
            f"The operator tensor.write requires a value of the tensor's dtype category, but "
            f"got a {value.dtype.name} value for a {t.dtype.name} tensor",
            f"pl.cast the value to pl.{t.dtype.name}",
        )
    return t


def _category(dt: Any) -> str:
    return "bool" if dt.kind == "bool" else "float" if dt.is_float else "int"


def _dim_type(info: CallInfo) -> Type:
    t = _tensor(info)
    axis = info.values.get("axis")
    if not isinstance(axis, int) or not -t.rank <= axis < t.rank:
        raise OpTypeError(
            f"tensor.dim axis {axis} is out of range for a rank-{t.rank} tensor {dims(t.shape)}",
            f"use an axis in {-t.rank}..{t.rank - 1}",
        )
    return ScalarType(dtypes.INDEX)


def _index(tensor: Any, indices: Any) -> tuple[int, ...]:
    idx = tuple(int(i) for i in indices)
    for axis, (i, d) in enumerate(zip(idx, tensor.shape)):
        if not 0 <= i < d:
            raise OpBoundsError(
                f"tensor index {i} on axis {axis} is out of bounds for shape {list(tensor.shape)}",
                "keep the index inside the tensor (a window cut at its source's edge holds "
                "only its part inside the source)",
            )
    return idx


def _read(tensor: Any, indices: Any = (), out: Any = None) -> Any:
    if len(indices) == 1 and tensor.ndim == 1:  # the common form (a length, a table entry)
        i = int(indices[0])
        if 0 <= i < tensor.shape[0]:  # (else `_index` raises the bounds error)
            return tensor.item(i)
    return tensor.item(_index(tensor, indices))  # (`ndarray.item`: no numpy scalar between)


def _write(tensor: Any, value: Any = None, indices: Any = (), out: Any = None) -> Any:
    # value is a Scalar operand: kernels pass it positionally, static indices by keyword
    tensor[_index(tensor, indices)] = value
    return tensor


def _dim(tensor: Any, axis: int = 0, out: Any = None) -> int:
    return int(tensor.shape[axis])


register(OpSpec(
    name="tensor.read",
    in_orchestration=True,
    params=(ParamSpec("tensor", "tensor"), ParamSpec("indices", "index_list", bare_index=True)),
    type_rule=_read_type,
    mem=MemRule(),
    execute=_read,
    spellings=("tensor.read",),
    doc="Read one element of a DDR tensor as a Scalar of its dtype (one index per "
        "dimension; a single index for a 1-D tensor may be given bare: pl.read(t, i)).  In orchestration it blocks until every pending producer of the "
        "tensor has finished (a task-graph sync point).",
))

register(OpSpec(
    name="tensor.write",
    in_orchestration=True,
    params=(ParamSpec("tensor", "tensor"), ParamSpec("indices", "index_list", bare_index=True),
            ParamSpec("value", "scalar")),
    type_rule=_write_type,
    mem=MemRule(),
    execute=_write,
    writes="tensor",
    spellings=("tensor.write",),
    doc="Write one Scalar element into a DDR tensor (value dtype = tensor dtype).  In "
        "orchestration it waits for every pending task that reads or writes the tensor.",
))

register(OpSpec(
    name="tensor.dim",
    in_orchestration=True,
    params=(ParamSpec("tensor", "tensor"), ParamSpec("axis", "int")),
    type_rule=_dim_type,
    mem=MemRule(),
    execute=_dim,
    spellings=("tensor.dim",),
    doc="The extent of one tensor axis as an INDEX Scalar (negative axes count from the "
        "end); for a pl.dynamic dim it is the size bound at run time.",
))
