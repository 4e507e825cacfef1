"""Host staging at the entry boundary (DSL.md §1.5, §2.2).

Arrays bind to the entry's parameters in declaration order; each is checked for
kind, dtype, rank and static dims, and ``pl.dynamic`` dims bind from the actual
arrays.  In arrays are exposed read-only (the caller's arrays are never mutated;
the read-only flag turns a stray write into an error instead of a silent change);
InOut arrays are copied in; pure Out buffers are not copied in but start
poisoned (or zeroed, per the run's ``uninitialized`` choice); Out and InOut
buffers are copied back into the caller's arrays when the run succeeds.

Fast path: a pure Out array that is C-contiguous, writable and shares no memory
with any other argument is used as the staging buffer itself (poisoned in place).
Its contents on entry are undefined by contract, so on success the result is
identical to allocate-then-copy-back, minus an allocation and a copy.
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_pypto.ir.artifact import ArgInfo, Manifest, dim_label
from pytest_pypto.ir.dtypes import DataType, dtype_by_name
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.values import UNINITIALIZED, fill_value, new_buffer
from pytest_pypto.runtime.orchestrator import Orchestrator


def entry_span(manifest: Manifest) -> Span | None:
    """The entry's ``def`` line, when the compiler recorded it (``extra["entry_span"]``)."""
    raw = manifest.extra.get("entry_span")
    if isinstance(raw, (list, tuple)) and len(raw) >= 2:
        return Span(str(raw[0]), int(raw[1]), int(raw[2]) if len(raw) > 2 else 1)
    return None


def _signature(manifest: Manifest) -> str:
    parts = []
    for a in manifest.entry_args:
        if a.kind == "scalar":
            parts.append(f"{a.name}: Scalar[{a.dtype}]")
        else:
            t = f"Tensor[{list(a.shape)}, {a.dtype}]"
            parts.append(f"{a.name}: {t if a.direction == 'In' else f'{a.direction}[{t}]'}")
    return f"{manifest.entry}({', '.join(parts)})"


def stage(
    manifest: Manifest, arrays: Sequence[Any], rt: Orchestrator
) -> tuple[list[Any], list[tuple[np.ndarray, np.ndarray]], dict[str, int]]:
    """Bind and stage the caller's arrays.

    Returns the orchestration entry's arguments (tensor handles and scalars), the
    (caller array, staged buffer) pairs to copy back, and the dynamic dims bound.
    """
    params = manifest.entry_args
    if len(arrays) != len(params):
        raise SimulationError(
            f"'{manifest.program}' takes {len(params)} arguments, but {len(arrays)} were given",
            entry_span(manifest),
            hint=f"pass one array or scalar per parameter, in order: {_signature(manifest)}",
        )
    dyn: dict[str, tuple[int, str, int]] = {}
    entry_args: list[Any] = []
    copy_back: list[tuple[np.ndarray, np.ndarray]] = []
    for position, (param, (dtype, static), value) in enumerate(
        zip(params, _plan(manifest), arrays)
    ):
        if param.kind == "scalar":
            entry_args.append(_scalar(manifest, param, dtype, value))
            continue
        # fast path: an ndarray of the right dtype and static shape; else full checks
        if not (
            static is not None
            and value.__class__ is np.ndarray
            and value.dtype == dtype.np
            and value.shape == static
            and (param.direction == "In" or value.flags.writeable)
        ):
            _check_tensor(manifest, param, dtype, value, dyn)
        if param.direction == "In":
            data = value.view() if value.flags.c_contiguous else np.ascontiguousarray(value)
            data.flags.writeable = False
        elif param.direction == "Out":
            if value.flags.c_contiguous and value.flags.aligned and not _aliases(position, arrays):
                data = value
                if not param.fully_written:  # else no task can observe the poison
                    data.fill(_fill(dtype))
            else:
                data = new_buffer(value.shape, dtype)
                copy_back.append((value, data))
        else:
            data = np.array(value, dtype=dtype.np, order="C", copy=True)
            copy_back.append((value, data))
        entry_args.append(rt.add_root(data, dtype, param.name, param.direction))
    return entry_args, copy_back, {k: v[0] for k, v in dyn.items()}


_PLANS: dict[int, tuple[Manifest, list[tuple[DataType, tuple[int, ...] | None]]]] = {}


def _plan(manifest: Manifest) -> list[tuple[DataType, tuple[int, ...] | None]]:
    """Per entry param: its DataType and static shape (None when a dim is dynamic)."""
    cached = _PLANS.get(id(manifest))
    if cached is not None and cached[0] is manifest:
        return cached[1]
    plan = []
    for a in manifest.entry_args:
        static = tuple(a.shape) if all(isinstance(d, int) for d in a.shape) else None
        plan.append((dtype_by_name(a.dtype), static))
    _PLANS[id(manifest)] = (manifest, plan)
    return plan


_FILLS: dict[tuple[str, str], Any] = {}


def _fill(dtype: DataType) -> Any:
    """`ir.values.fill_value` for this run's ``uninitialized`` choice (cached per dtype)."""
    key = (dtype.name, UNINITIALIZED.get())
    value = _FILLS.get(key)
    if value is None:
        value = _FILLS[key] = fill_value(dtype)
    return value


def _aliases(position: int, arrays: Sequence[Any]) -> bool:
    """Whether the array at ``position`` shares memory with any other argument."""
    value = arrays[position]
    return any(
        i != position and isinstance(a, np.ndarray) and np.may_share_memory(a, value)
        for i, a in enumerate(arrays)
    )


def _scalar(manifest: Manifest, param: ArgInfo, dtype: DataType, value: Any) -> Any:
    if isinstance(value, np.ndarray) and value.ndim > 0:
        raise SimulationError(
            f"parameter '{param.name}' of '{manifest.program}' is a Scalar[{param.dtype}], "
            f"but an array of shape {list(value.shape)} was given",
            entry_span(manifest),
            hint=f"pass a Python number; the entry is {_signature(manifest)}",
        )
    try:
        if dtype.is_float:
            return float(value)
        if dtype.is_int:
            return operator.index(value)
        return bool(value)
    except (TypeError, ValueError):
        raise SimulationError(
            f"parameter '{param.name}' of '{manifest.program}' is a Scalar[{param.dtype}], "
            f"but {value!r} ({type(value).__name__}) was given",
            entry_span(manifest),
            hint="pass an int for integer scalars and a float for float scalars",
        ) from None


def _check_tensor(
    manifest: Manifest,
    param: ArgInfo,
    dtype: DataType,
    value: Any,
    dyn: dict[str, tuple[int, str, int]],
) -> None:
    where = f"parameter '{param.name}' of '{manifest.program}'"
    want = f"Tensor[{list(param.shape)}, {param.dtype}]"
    if not isinstance(value, np.ndarray):
        raise SimulationError(
            f"{where} is a {want}, but {type(value).__name__} was given",
            entry_span(manifest),
            hint="pass a numpy array (numpy.asarray(...) converts lists)",
        )
    if value.dtype != dtype.np:
        raise SimulationError(
            f"{where} has dtype {param.dtype} ({dtype.np}), but the array has dtype {value.dtype}",
            entry_span(manifest),
            hint=f"convert it with .astype({_np_name(dtype)})",
        )
    if value.ndim != len(param.shape):
        raise SimulationError(
            f"{where} is rank {len(param.shape)} ({want}), but the array is rank {value.ndim} "
            f"(shape {list(value.shape)})",
            entry_span(manifest),
        )
    for axis, (dim, actual) in enumerate(zip(param.shape, value.shape)):
        if isinstance(dim, str):
            seen = dyn.get(dim)
            if seen is None:
                dyn[dim] = (actual, param.name, axis)
            elif seen[0] != actual:
                label = dim_label(dim, (d for a in manifest.entry_args for d in a.shape))
                raise SimulationError(
                    f"dynamic dimension {label} binds to {seen[0]} from parameter '{seen[1]}' "
                    f"(axis {seen[2]}) but to {actual} from parameter '{param.name}' (axis {axis})",
                    entry_span(manifest),
                    hint=f"both parameters declare the same pl.dynamic dim {label}: pass arrays "
                    "that agree in it (or declare two pl.dynamic objects)",
                )
        elif dim != actual:
            raise SimulationError(
                f"{where} is {want}, but the array has shape {list(value.shape)} "
                f"(dimension {axis}: expected {dim}, got {actual})",
                entry_span(manifest),
            )
    if param.direction != "In" and not value.flags.writeable:
        raise SimulationError(
            f"{where} is {param.direction}, but the array given is read-only",
            entry_span(manifest),
            hint="pass a writable array; the results are copied back into it",
        )


def _np_name(dtype: DataType) -> str:
    storage = dtype.storage or dtype.name
    module = "ml_dtypes" if dtype.storage in _ML_STORAGE else "numpy"
    return f"{module}.{storage}"


_ML_STORAGE = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn"}
