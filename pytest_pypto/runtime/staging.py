"""Host staging at the entry boundary (docs/design/runtime.md §4, docs/design/language.md §12).

Arrays bind to the entry's parameters in declaration order; each is checked for
kind, dtype, rank and static dims, and ``pl.dynamic`` dims bind from the actual
arrays.  In arrays are exposed read-only (the caller's arrays are never mutated;
the read-only flag turns a stray write into an error instead of a silent change);
InOut arrays are copied in; pure Out buffers are not copied in but start
poisoned (or zeroed, per the run's ``uninitialized`` choice); Out and InOut
buffers are copied back into the caller's arrays only when the run succeeds, so a
failed run (a staging error, a run-time error, any exception) leaves the caller's
InOut arrays, and every Out not written in place, exactly as they were.  A rank's
window slice (docs/design/distributed.md §3) is bound as it is, whatever its direction:
window memory is shared between ranks, so its writes land at once.  A pure Out
that the compiler proved fully written
(``ArgInfo.fully_written``) needs no initial contents (no task can observe them):
when the caller's array is a plain C-contiguous writable array sharing memory with no
other argument, the run writes its results straight into it (no staging buffer, no
copy back: what makes a large elementwise kernel cost about what numpy does); a run
that fails after staging refills such an array with the undefined-memory value
(poison, or zeros), so a partial result is never mistaken for a result.  Any other
pure Out starts as an unfilled staged buffer.

Caller data: ndarray subclasses (``numpy.matrix``, ``numpy.memmap``, ...) are taken
as plain ndarrays of the same memory (``numpy.asarray``); masked arrays are refused,
since the simulator would drop the mask.  Scalars are checked against their dtype:
float scalars take real numbers (not strings, not bools), integer scalars take
integers inside the dtype's range, BOOL scalars take booleans (or 0 / 1).

Cost: what does not depend on the arguments (each parameter's dtype, static shape,
direction) is an `EntryPlan`, built once per loaded artifact.  Large staged buffers
(Out / InOut, from 128 KiB) come from `POOL`, which keeps the buffers of runs that
succeeded for the next run of the same shape: no fresh mapping to page-fault in and
unmap per dispatch.  A reused buffer is refilled exactly as a fresh one would be
(poison, zeros or the caller's data), or left unfilled where no task can observe it.
"""

from __future__ import annotations

import operator
import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from typing import Any

import numpy as np

from pytest_pypto.ir.artifact import ArgInfo, Manifest
from pytest_pypto.ir.batch import may_share_memory
from pytest_pypto.ir.dtypes import DataType, dtype_by_name, round_float
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.ranks import is_window
from pytest_pypto.ir.ranks import live as window_live
from pytest_pypto.ir.values import UNINITIALIZED, fill_value
from pytest_pypto.runtime.orchestrator import Orchestrator
from pytest_pypto.runtime.tensors import whole_root


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


class ParamPlan:
    """What staging checks of one entry parameter, resolved once per manifest."""

    __slots__ = ("info", "name", "scalar", "direction", "is_in", "dtype", "np_dtype", "static",
                 "fully_written", "in_place")

    def __init__(self, info: ArgInfo) -> None:
        self.info = info
        self.name = info.name
        self.scalar = info.kind == "scalar"
        self.direction = info.direction
        self.is_in = info.direction == "In"
        self.dtype = dtype_by_name(info.dtype)
        self.np_dtype = None if self.scalar else self.dtype.np
        # None when a dim is dynamic: such a parameter is checked (and binds) per call
        self.static = tuple(info.shape) if all(isinstance(d, int) for d in info.shape) else None
        self.fully_written = bool(info.fully_written)
        # a pure Out nobody can observe before it is written: may be the caller's array
        self.in_place = self.fully_written and info.direction == "Out"


class EntryPlan:
    """The argument-independent part of staging an entry, built once per loaded artifact:
    each parameter's dtype and static shape, and which arguments are results."""

    __slots__ = ("manifest", "params", "outputs", "returns")

    def __init__(self, manifest: Manifest) -> None:
        self.manifest = manifest
        self.params = tuple(ParamPlan(a) for a in manifest.entry_args)
        # (position, name) of every Out/InOut tensor parameter: the run's outputs
        self.outputs = tuple(
            (i, p.info.name) for i, p in enumerate(self.params) if not p.scalar and not p.is_in
        )
        self.returns = tuple(manifest.entry_returns)


def stage(
    manifest: Manifest, arrays: Sequence[Any], rt: Orchestrator, *, outputs_in: bool = False,
    plan: EntryPlan | None = None,
) -> tuple[list[Any], list[tuple[np.ndarray, np.ndarray]], dict[str, int], list[tuple]]:
    """Bind and stage the caller's arrays (``outputs_in``: pure Out arrays copied in too).

    ``plan`` is the manifest's `EntryPlan` (built here when not given).  Returns the
    orchestration entry's arguments (tensor handles and scalars), the (caller array,
    staged buffer) pairs to copy back, the dynamic dims bound, and the (caller array,
    dtype) pairs written in place (`refill` them when the run fails).
    """
    if plan is None:
        plan = EntryPlan(manifest)
    values, copy_back, dyn, in_place = stage_values(manifest, arrays, outputs_in=outputs_in,
                                                    plan=plan)
    return entry_handles(plan, values, rt.roots), copy_back, dyn, in_place


def entry_handles(plan: EntryPlan, values: Sequence[Any], roots: list) -> list[Any]:
    """The entry's arguments for staged ``values``: each array a new root of ``roots``
    (ids in parameter order) behind its whole handle; scalars as they are."""
    return [v if p.scalar else whole_root(roots, v, p.dtype, p.name, p.direction)
            for p, v in zip(plan.params, values)]


def stage_values(
    manifest: Manifest, arrays: Sequence[Any], *, outputs_in: bool, plan: EntryPlan,
) -> tuple[list[Any], list[tuple[np.ndarray, np.ndarray]], dict[str, int], list[tuple]]:
    """`stage` without the roots: the staged array (or checked scalar) per parameter."""
    params = plan.params
    if len(arrays) != len(params):
        raise SimulationError(
            f"'{manifest.program}' takes {len(params)} arguments, but {len(arrays)} were given",
            entry_span(manifest),
            hint=f"pass one array or scalar per parameter, in order: {_signature(manifest)}",
        )
    dyn: dict[str, tuple[int, str, int]] = {}
    entry_args: list[Any] = []
    copy_back: list[tuple[np.ndarray, np.ndarray]] = []
    in_place: list[tuple[np.ndarray, Any]] = []
    ndarray = np.ndarray
    take, pooled = POOL.take, POOL.min_bytes
    window_memory = window_live()
    position = -1
    for p, value in zip(params, arrays):
        position += 1
        if p.scalar:
            entry_args.append(_scalar(manifest, p.info, p.dtype, value))
            continue
        dtype = p.dtype
        if value.__class__ is not ndarray:
            if isinstance(value, ndarray):
                value = _plain(manifest, p.info, value)
            else:
                _check_tensor(manifest, p.info, dtype, value, dyn)  # raises: not an array
        if window_memory and p.static is not None and value.shape != p.static \
                and is_window(value):
            value = _window_as(value, p.static)
        flags = value.flags
        # fast path: an ndarray of the right dtype and static shape; else full checks
        if not (
            value.shape == p.static
            and value.dtype == p.np_dtype
            and (p.is_in or flags.writeable)
        ):
            _check_tensor(manifest, p.info, dtype, value, dyn)
        if window_memory and is_window(value):
            data = value  # a rank's window slice: shared memory, bound as is (distributed.md §3)
        elif p.is_in:
            data = value.view() if flags.c_contiguous else np.ascontiguousarray(value)
            data.setflags(write=False)
        elif p.in_place and not outputs_in and flags.c_contiguous and flags.aligned \
                and not _shares_memory(value, position, arrays):
            data = value  # results go straight into the caller's array (module docstring)
            in_place.append((value, dtype))
        else:
            # Not the caller's array itself: a failed run must leave it untouched.
            data = take(value.shape, p.np_dtype) if value.nbytes >= pooled else None
            if p.direction == "Out" and not outputs_in:
                if p.fully_written:  # no task can observe the initial contents
                    if data is None:
                        data = np.empty(value.shape, p.np_dtype)
                elif data is None:
                    data = np.full(value.shape, _fill(dtype), p.np_dtype)
                else:
                    np.copyto(data, _fill(dtype), casting="unsafe")  # what np.full does
            elif data is None:
                data = np.array(value, dtype=p.np_dtype, order="C", copy=True)
            else:
                np.copyto(data, value)
            copy_back.append((value, data))
        entry_args.append(data)
    return entry_args, copy_back, {k: v[0] for k, v in dyn.items()} if dyn else {}, in_place


def _shares_memory(value: np.ndarray, position: int, arrays: Sequence[Any]) -> bool:
    """Whether ``value`` (the argument at ``position``) may share memory with another
    argument: then writing it in place could change what a task reads."""
    for i, other in enumerate(arrays):
        if i != position and isinstance(other, np.ndarray) and may_share_memory(value, other):
            return True
    return False


def refill(in_place: Iterable[tuple[np.ndarray, DataType]]) -> None:
    """After a failed run (inside it: the run's ``uninitialized`` choice holds): give each
    array written in place the undefined-memory value again."""
    for array, dtype in in_place:
        np.copyto(array, _fill(dtype), casting="unsafe")


class BufferPool:
    """Staging buffers kept between runs, by (shape, dtype), at most ``limit_bytes`` in all
    (least recently returned dropped first); buffers under ``min_bytes`` are not kept
    (the allocator serves those without mapping memory).  Thread-safe: a buffer is held
    by one run at a time, from `take` until the run gives it back."""

    def __init__(self, limit_bytes: int = 1 << 27, min_bytes: int = 1 << 17) -> None:
        self.limit_bytes = limit_bytes
        self.min_bytes = min_bytes
        self._free: OrderedDict[tuple, list[np.ndarray]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def take(self, shape: tuple[int, ...], dtype: Any) -> np.ndarray | None:
        """A kept buffer of ``shape`` and ``dtype`` (contents: a previous run's), or None."""
        key = (shape, dtype)
        with self._lock:
            free = self._free.get(key)
            if not free:
                return None
            buf = free.pop()
            if not free:
                del self._free[key]
            self._bytes -= buf.nbytes
            return buf

    def give(self, buffers: Iterable[np.ndarray]) -> None:
        """Keep ``buffers`` (staged by a run that no longer uses them) for later runs."""
        with self._lock:
            for buf in buffers:
                if buf.nbytes < self.min_bytes or buf.nbytes > self.limit_bytes:
                    continue
                key = (buf.shape, buf.dtype)
                self._free.setdefault(key, []).append(buf)
                self._free.move_to_end(key)
                self._bytes += buf.nbytes
                while self._bytes > self.limit_bytes:
                    _, old = next(iter(self._free.items()))
                    self._bytes -= old.pop(0).nbytes
                    if not old:
                        self._free.popitem(last=False)

    def clear(self) -> None:
        """Drop every kept buffer."""
        with self._lock:
            self._free.clear()
            self._bytes = 0

    @property
    def kept_bytes(self) -> int:
        return self._bytes


POOL = BufferPool()


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


def _window_as(value: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    """A window slice seen with the parameter's shape (docs/design/distributed.md §3).

    A window is flat device memory: the kernel's declared shape is what counts, so a
    contiguous slice of as many elements is reshaped (a view: its writes still land
    in the window).  Anything else is left for the usual shape check to refuse.
    """
    if value.flags.c_contiguous and value.size == int(np.prod(shape, dtype=np.int64)):
        return value.reshape(shape)
    return value


def _np_name(dtype: DataType) -> str:
    storage = dtype.storage or dtype.name
    module = "ml_dtypes" if dtype.storage in _ML_STORAGE else "numpy"
    return f"{module}.{storage}"


_ML_STORAGE = {"bfloat16", "float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "float4_e2m1fn"}
