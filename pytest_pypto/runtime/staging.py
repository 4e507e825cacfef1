"""Host staging at the entry boundary (DSL.md §1.5, §2.2).

Arrays bind to the entry's parameters in declaration order; each is checked for
kind, dtype, rank and static dims, and ``pl.dynamic`` dims bind from the actual
arrays.  In arrays are exposed read-only (the caller's arrays are never mutated;
the read-only flag turns a stray write into an error instead of a silent change);
InOut arrays are copied in; pure Out buffers are not copied in but start
poisoned (or zeroed, per the run's ``uninitialized`` choice); Out and InOut
buffers are copied back into the caller's arrays only when the run succeeds, so a
failed run (a staging error, a run-time error, any exception) leaves every caller
array exactly as it was.  A pure Out that the compiler proved fully written
(``ArgInfo.fully_written``) starts as an unfilled buffer: no task can observe it.

Caller data: ndarray subclasses (``numpy.matrix``, ``numpy.memmap``, ...) are taken
as plain ndarrays of the same memory (``numpy.asarray``); masked arrays are refused,
since the simulator would drop the mask.  Scalars are checked against their dtype:
float scalars take real numbers (not strings, not bools), integer scalars take
integers inside the dtype's range, BOOL scalars take booleans (or 0 / 1).
"""

from __future__ import annotations

import operator
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_pypto.ir.artifact import ArgInfo, Manifest
from pytest_pypto.ir.dtypes import DataType, dtype_by_name, round_float
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.values import UNINITIALIZED, fill_value
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
    manifest: Manifest, arrays: Sequence[Any], rt: Orchestrator, *, outputs_in: bool = False
) -> tuple[list[Any], list[tuple[np.ndarray, np.ndarray]], dict[str, int]]:
    """Bind and stage the caller's arrays (``outputs_in``: pure Out arrays copied in too).

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
    for param, (dtype, static), value in zip(params, _plan(manifest), arrays):
        if param.kind == "scalar":
            entry_args.append(_scalar(manifest, param, dtype, value))
            continue
        if value.__class__ is not np.ndarray and isinstance(value, np.ndarray):
            value = _plain(manifest, param, value)
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
        elif param.direction == "Out" and not outputs_in:
            # Never the caller's array itself: a failed run must leave it untouched.
            if param.fully_written:  # no task can observe the initial contents
                data = np.empty(value.shape, dtype.np)
            else:
                data = np.full(value.shape, _fill(dtype), dtype.np)
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


def _plain(manifest: Manifest, param: ArgInfo, value: np.ndarray) -> np.ndarray:
    """An ndarray subclass as a plain ndarray of the same memory; masked arrays refused."""
    if isinstance(value, np.ma.MaskedArray):
        raise SimulationError(
            f"parameter '{param.name}' of '{manifest.program}' is a masked array "
            f"(numpy.ma.MaskedArray); the simulator has no masks and would silently ignore it",
            entry_span(manifest),
            hint=f"pass {param.name}.filled(value) to give the masked elements a value, or "
            f"{param.name}.data for the underlying array",
        )
    return np.asarray(value)


def int_range(dtype: DataType) -> tuple[int, int]:
    """The values an integer dtype holds (INDEX is 64-bit signed)."""
    if dtype.kind == "uint":
        return 0, (1 << dtype.bits) - 1
    return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1


def _scalar(manifest: Manifest, param: ArgInfo, dtype: DataType, value: Any) -> Any:
    where = f"parameter '{param.name}' of '{manifest.program}' is a Scalar[{param.dtype}]"
    span = entry_span(manifest)
    if isinstance(value, np.ndarray):
        if value.ndim > 0:
            raise SimulationError(
                f"{where}, but an array of shape {list(value.shape)} was given",
                span,
                hint=f"pass a Python number; the entry is {_signature(manifest)}",
            )
        value = value[()]  # a 0-d array: its element
    given = f"{value!r} ({type(value).__name__})"
    is_bool = isinstance(value, (bool, np.bool_))
    if dtype.kind == "bool":
        if is_bool:
            return bool(value)
        if isinstance(value, (int, np.integer)) and value in (0, 1):
            return bool(value)
        raise SimulationError(f"{where}, but {given} was given", span,
                              hint="pass True or False")
    if is_bool:
        flag = bool(value)
        raise SimulationError(
            f"{where}, but the bool {flag!r} was given", span,
            hint=f"pass a number: True and False are only for Scalar[BOOL] (int({flag!r}) "
            "if 0 or 1 is meant)",
        )
    if isinstance(value, (str, bytes, bytearray)):
        raise SimulationError(
            f"{where}, but the string {value!r} was given", span,
            hint="pass a number; convert text first, e.g. float(text) or int(text)",
        )
    if dtype.is_float:
        try:
            return round_float(float(value), dtype.name)  # what a Scalar[dtype] holds
        except (TypeError, ValueError, OverflowError):
            raise SimulationError(
                f"{where}, but {given} was given", span,
                hint="pass a real number (int or float)",
            ) from None
    lo, hi = int_range(dtype)
    holds = f"{dtype.name} holds integers in [{lo}, {hi}]"
    try:
        number = operator.index(value)
    except TypeError:
        raise SimulationError(
            f"{where}, but {given} was given; {holds}",
            span,
            hint="pass an int (int(x) truncates a float; NaN and inf have no integer value)",
        ) from None
    if not lo <= number <= hi:
        raise SimulationError(
            f"{where}, but {number} was given, outside its range: {holds}",
            span,
            hint=f"pass a value in [{lo}, {hi}], or declare the parameter with a wider dtype",
        )
    return number


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
            # The first parameter carrying a dim binds it (the value its Scalar uses
            # read); later parameters keep their own sizes, as PyPTO does not check
            # them against each other (its tests reuse one name for a flat [M] and a
            # 2-D [M, N] tensor).
            dyn.setdefault(dim, (actual, param.name, axis))
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
