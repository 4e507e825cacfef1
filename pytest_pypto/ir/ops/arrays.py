# SPDX-License-Identifier: Apache-2.0
"""On-core arrays (`pl.array.*`, PyPTO's ArrayType): small 1-D integer/BOOL arrays.

An array lives on the scalar register file of one kernel: it never crosses a
function boundary (the parser rejects Array parameters and returns, as PyPTO's
ArrayNotEscaped verifier does).  Writes are functional: ``arr[i] = v`` is
``arr = pl.array.update_element(arr, i, v)``, so an array written in a loop or an
if arm is a carried value like any other; the simulator copies on update.
`pl.array.create` leaves the device's C-stack storage uninitialised; the simulator
fills it with zeros (a read before a write is undefined on the device).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import OpBoundsError, np
from pytest_pypto.ir.ops.elements import check_written_value
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ArrayType, ScalarType

# PyPTO: "integer or BOOL", and TASK_ID (an orchestration array of TaskIds,
# docs/design/scheduling.md §2).
ARRAY_DTYPES = ("INT8", "INT16", "INT32", "INT64", "UINT8", "UINT16", "UINT32", "UINT64",
                "INDEX", "BOOL", "TASK_ID")


def _array(info: CallInfo, name: str = "array") -> ArrayType:
    t = info.types.get(name)
    if not isinstance(t, ArrayType):
        got = getattr(t, "kind", "?") if t is not None else "a non-array value"
        raise OpTypeError(f"The operator {info.op} requires an Array '{name}', but got {got}",
                          "create one with pl.array.create(extent, dtype)")
    return t


def _check_index(info: CallInfo, arr: ArrayType) -> None:
    t = info.types.get("index")
    if not isinstance(t, ScalarType) or not (t.dtype.is_int or t.dtype.name == "INDEX"):
        raise OpTypeError(f"The operator {info.op} requires an integer index, but got "
                          f"{getattr(getattr(t, 'dtype', None), 'name', t)}")
    i = info.values.get("index")
    if isinstance(i, int) and not 0 <= i < arr.extent:
        raise OpTypeError(f"The operator {info.op}: index {i} is outside the array of extent "
                          f"{arr.extent}", f"indices run from 0 to {arr.extent - 1}")


def _runtime_index(op: str, index: Any, extent: int) -> int:
    i = int(index)
    if not 0 <= i < extent:
        raise OpBoundsError(f"{op} index {i} is outside the array of extent {extent}",
                            f"indices run from 0 to {extent - 1}")
    return i


def _numpy_dtype(dtype: Any) -> Any:
    return np.bool_ if dtype.name == "BOOL" else np.dtype(dtype.np)


# ---------------------------------------------------------------------- create


def _create_type(info: CallInfo) -> ArrayType:
    extent, dtype = info.values.get("extent"), info.values.get("dtype")
    if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
        raise OpTypeError(f"The operator {info.op} requires a positive int extent known when "
                          f"the kernel is parsed, but got {extent!r}")
    if dtype is None or dtype.name not in ARRAY_DTYPES:
        raise OpTypeError(
            f"The operator {info.op} requires an integer or BOOL dtype, but got "
            f"{getattr(dtype, 'name', dtype)}",
            "arrays hold indices and flags: use pl.INT32, pl.INDEX or pl.BOOL",
        )
    return ArrayType(extent, dtype)


def _create_execute(*, extent: int, dtype: Any, out: Any = None, **_: Any) -> Any:
    if dtype.name == "TASK_ID":  # every slot starts as the invalid TaskId (no producer)
        return np.full(int(extent), -1, dtype=np.int64)
    return np.zeros(int(extent), dtype=_numpy_dtype(dtype))


register(OpSpec(
    name="array.create",
    params=(ParamSpec("extent", "int"), ParamSpec("dtype", "dtype")),
    type_rule=_create_type,
    mem=MemRule(),
    execute=_create_execute,
    spellings=("array.create",),
    tier=2,
    doc="A new on-core array of `extent` (a parse-time positive int) elements of an integer "
        "or BOOL dtype, local to the kernel. The device leaves it uninitialised; the "
        "simulator starts it at zero.",
))


# ----------------------------------------------------------------- get_element


def _get_type(info: CallInfo) -> ScalarType:
    arr = _array(info)
    _check_index(info, arr)
    return ScalarType(arr.dtype)


def _get_execute(array: Any, index: Any, *, out: Any = None, **_: Any) -> Any:
    i = _runtime_index("array.get_element", index, len(array))
    return bool(array[i]) if array.dtype == np.bool_ else int(array[i])


register(OpSpec(
    name="array.get_element",
    params=(ParamSpec("array", "array"), ParamSpec("index", "scalar")),
    type_rule=_get_type,
    mem=MemRule(),
    execute=_get_execute,
    spellings=("array.get_element",),
    tier=2,
    doc="Element `index` of an on-core array as a Scalar of its dtype (`arr[i]`). An index "
        "outside [0, extent) is a compile error when constant, else a SimulationError.",
))


# -------------------------------------------------------------- update_element


def _update_type(info: CallInfo) -> ArrayType:
    arr = _array(info)
    _check_index(info, arr)
    check_written_value(info, arr.dtype)
    return arr


def _update_execute(array: Any, index: Any, value: Any, *, out: Any = None, **_: Any) -> Any:
    i = _runtime_index("array.update_element", index, len(array))
    new = array.copy()
    if array.dtype == np.bool_:
        new[i] = bool(value)
    else:  # two's-complement wrap to the element width, as the device's store
        bits = array.dtype.itemsize * 8
        v = int(value) & ((1 << bits) - 1)
        new[i] = v - (1 << bits) if array.dtype.kind == "i" and v >> (bits - 1) else v
    return new


register(OpSpec(
    name="array.update_element",
    params=(ParamSpec("array", "array"), ParamSpec("index", "scalar"),
            ParamSpec("value", "scalar")),
    type_rule=_update_type,
    mem=MemRule(),
    execute=_update_execute,
    spellings=("array.update_element",),
    tier=2,
    doc="Functional update (`arr[i] = v`): a new array equal to `array` with element `index` "
        "replaced by `value` (the array's dtype; an int literal converts). Index rules as "
        "array.get_element.",
))
