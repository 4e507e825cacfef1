"""The orchestration runtime object ``rt`` that generated orchestration code calls.

It implements the orchestration ABI of `pytest_pypto.ir.artifact`: tensor handles
(`create_tensor`, `slice`, `reshape`, `transpose`, `dim`), blocking scalar access
(`read`, `write`) and task submission (`submit`), recording each task into the
run's `TaskGraph` with per-argument directions from the manifest and byte ranges
from the handles.
"""

from __future__ import annotations

import sys
from typing import Any
from weakref import ref

import numpy as np

from pytest_pypto.ir.artifact import dim_label
from pytest_pypto.ir.dtypes import DataType, dtype_by_name
from pytest_pypto.ir.errors import MemoryLimitError, SimulationError
from pytest_pypto.ir.values import UNINITIALIZED, fill_value, new_buffer, size_text
from pytest_pypto.runtime.explicit import DUMMY_KERNEL, INVALID, Sched, task_ids
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.lanes import barrier_launch, group_kernel
from pytest_pypto.runtime.loader import Kernel
from pytest_pypto.runtime.tensors import (
    RootBuffer,
    TensorHandle,
    element_window,
    reshape_view,
    slice_view,
    transpose_view,
    whole_root,
)

_MEMORY_HINT = (
    "raise the limit (--pypto-max-memory, ini pypto_max_memory, env PYPTO_MAX_MEMORY; "
    "'off' removes it), run fewer xdist workers, or make the tensors smaller"
)


def _returned(args: Any, returns: Any) -> Any:
    """What a submit gives back: the argument at each position of ``returns`` (one alone)."""
    if len(returns) == 1:
        return args[returns[0]]
    return tuple([args[r] for r in returns])


# What `create_tensor` derives from its (shape, dtype) arguments under an uninitialized
# mode: (the dims as ints, the DataType, the bytes, the fill scalar of a buffer left
# undefined, and for a small buffer a read-only one so filled, which a copy makes at
# less cost than allocating and filling).  Keyed by the arguments as given (a shape
# tuple, a DataType or its name).
_Facts = tuple[tuple[int, ...], DataType, int, Any, Any]
_MADE: dict[tuple[Any, Any, str], _Facts] = {}
_MADE_MAX = 1024  # distinct keys kept (a run's orchestration makes a handful of shapes)
_TEMPLATE_BYTES = 16384  # the largest buffer kept as a template (at most 16 MiB in all)


def _made_facts(shape: Any, dtype: DataType | str) -> _Facts:
    """`_MADE`'s entry for ``shape`` and ``dtype`` (made and remembered when valid)."""
    key_shape = shape
    if isinstance(dtype, str):
        dtype_obj = dtype_by_name(dtype)
    else:
        dtype_obj = dtype
    dims = tuple(int(d) for d in shape)
    if any(d < 0 for d in dims):
        raise SimulationError(f"pl.create_tensor got a negative dimension in {list(dims)}")
    nbytes = dtype_obj.np.itemsize
    for d in dims:
        nbytes *= d
    mode = UNINITIALIZED.get()
    fill = fill_value(dtype_obj)
    template = None
    if key_shape.__class__ is tuple and len(_MADE) < _MADE_MAX:
        if nbytes <= _TEMPLATE_BYTES:
            template = new_buffer(dims, dtype_obj, fill=fill)
            template.flags.writeable = False
        _MADE[(key_shape, dtype, mode)] = (dims, dtype_obj, nbytes, fill, template)
    return dims, dtype_obj, nbytes, fill, template


class _Live:
    """The made buffers that may still be alive, each a weak reference and its bytes, and
    ``bound``: their bytes, an upper bound of what the live ones hold.  `alive` drops the
    freed ones and makes the bound exact; it runs when a check against the limit would
    fail on the bound, and after the list doubled (so it stays in proportion to the
    buffers alive).  (Weak references without callbacks: a callback per freed buffer cost
    more than the occasional sweep.)"""

    __slots__ = ("entries", "bound", "_sweep_at")

    SWEEP_MIN = 1024  # entries before the first sweep

    def __init__(self) -> None:
        self.entries: list[tuple[Any, int]] = []
        self.bound = 0
        self._sweep_at = self.SWEEP_MIN

    def add(self, data: Any, nbytes: int) -> None:
        entries = self.entries
        entries.append((ref(data), nbytes))
        self.bound += nbytes
        if len(entries) >= self._sweep_at:
            self.alive()

    def alive(self) -> int:
        """Bytes of the made buffers alive now (the bound made exact)."""
        kept = [e for e in self.entries if e[0]() is not None]
        self.entries = kept
        self.bound = sum(n for _, n in kept)
        self._sweep_at = max(self.SWEEP_MIN, 2 * len(kept))
        return self.bound


class Orchestrator:
    """``rt``: what an orchestration function sees of the simulated device."""

    def __init__(
        self, kernels: dict[str, Kernel], graph: TaskGraph, roots: list[RootBuffer],
        max_memory: int | None = None,
    ):
        self._kernels = kernels
        self._groups: dict[str, Kernel] = {}  # Group task kernels, built on first submit
        # (kernel name, func id) -> the tensor argument shapes of calls whose check passed:
        # a later call with the same shapes skips it (`_arguments`)
        self._accepted: dict[tuple[str, int], set[tuple]] = {}
        self._graph = graph
        self.roots = roots
        # Whether the orchestration did more than submit tasks (made a tensor, read or
        # wrote one, assembled): then its run is no fixed schedule (`runtime.express`).
        self.beyond_submits = False
        # The memory guard (RunConfig.max_memory, docs/design/runtime.md §4): bytes of the
        # entry tensors, and of the made tensors still alive (each made buffer lives as
        # long as a handle or a pending task holds it: `_live` finds which are).
        self.max_memory = max_memory
        self._entry_bytes = 0
        self._live = _Live()

    def admit_entry(self, span: Any = None) -> None:
        """Count the staged entry tensors against the memory guard (MemoryLimitError naming
        the largest, at the entry's ``span``, when they alone exceed it)."""
        self._entry_bytes = sum(r.nbytes for r in self.roots)
        limit = self.max_memory
        if limit is not None and self._entry_bytes > limit:
            big = max(self.roots, key=lambda r: r.nbytes)
            raise MemoryLimitError(
                f"the entry tensors of this run need {size_text(self._entry_bytes)}, over the "
                f"{size_text(limit)} memory limit (--pypto-max-memory); the largest is "
                f"'{big.name}' {list(big.shape)} {big.dtype.name} ({size_text(big.nbytes)})",
                span,
                hint=_MEMORY_HINT,
            )

    # -- tensors -----------------------------------------------------------------
    def add_root(self, data: np.ndarray, dtype: DataType, name: str, origin: str) -> TensorHandle:
        return whole_root(self.roots, data, dtype, name, origin)

    def create_tensor(
        self, shape: Any, dtype: DataType | str, init_value: Any = None, name: str | None = None,
        manual_dep: bool = False,
    ) -> TensorHandle:
        """`pl.create_tensor`: a fresh DDR buffer, poisoned unless ``init_value`` is given;
        with ``manual_dep`` no task's use of it is tracked (runtime/explicit.py)."""
        self.beyond_submits = True
        facts = _MADE.get((shape, dtype, UNINITIALIZED.get())) if shape.__class__ is tuple \
            else None
        if facts is None:
            facts = _made_facts(shape, dtype)
        shape, dtype, nbytes, fill, template = facts
        label = name or f"create_tensor#{len(self.roots)}"
        limit = self.max_memory
        if limit is not None:
            live = self._live
            made = live.bound
            if self._entry_bytes + made + nbytes > limit:  # (on the bound: then exactly)
                made = live.alive()
                if self._entry_bytes + made + nbytes > limit \
                        and self._graph.batches is not None and self._graph.batches.held:
                    self._graph.batches.flush()  # held tasks keep made tensors alive
                    made = live.alive()  # (task_batches)
            if self._entry_bytes + made + nbytes > limit:
                raise MemoryLimitError(
                    f"pl.create_tensor '{label}' {list(shape)} {dtype.name} needs "
                    f"{size_text(nbytes)}; with the {size_text(self._entry_bytes + made)} the "
                    f"run holds already (entry tensors {size_text(self._entry_bytes)}, made "
                    f"tensors still alive {size_text(made)}) its simulated tensors would "
                    f"exceed the {size_text(limit)} memory limit (--pypto-max-memory)",
                    hint=_MEMORY_HINT,
                )
        if init_value is None:
            data = template.copy() if template is not None else \
                new_buffer(shape, dtype, name=label, fill=fill)
        else:
            data = new_buffer(shape, dtype, name=label, value=init_value)
        # its handles hold the buffer: freed once the last one is gone
        handle = whole_root(self.roots, data, dtype, label, "create_tensor", keep=False)
        if limit is not None:  # count it while it lives
            self._live.add(data, nbytes)
        if manual_dep:
            self._graph.sched.add_manual_root(handle.root.id)
        return handle

    def slice(self, t: TensorHandle, shape: Any, offsets: Any, valid_shape: Any = None,
              clamp: bool = False) -> TensorHandle:
        if t.__class__ is not TensorHandle:
            self._handle(t, "slice")
        return slice_view(t, shape, offsets, valid_shape, bool(clamp))

    def reshape(self, t: TensorHandle, shape: Any) -> TensorHandle:
        return reshape_view(self._handle(t, "reshape"), shape)

    def transpose(self, t: TensorHandle, axis1: int, axis2: int) -> TensorHandle:
        return transpose_view(self._handle(t, "transpose"), axis1, axis2)

    def dim(self, t: TensorHandle, axis: int) -> int:
        return self._handle(t, "tensor.dim").shape[int(axis)]

    # -- blocking scalar access ----------------------------------------------------
    def read(self, t: TensorHandle, index: Any) -> Any:
        """`pl.tensor.read`: waits for the pending producers of the element it reads, then
        reads it."""
        self.beyond_submits = True
        if t.__class__ is not TensorHandle:
            self._handle(t, "tensor.read")
        idx = self._index(t, index, "tensor.read")
        if self._graph.pending:  # (an eager graph has none: no window to make)
            self._graph.finish_writers(element_window(t, idx))
        return t.array[idx].item()

    def write(self, t: TensorHandle, index: Any, value: Any) -> None:
        """`pl.tensor.write`: waits for every pending task touching ``t``, then writes."""
        self.beyond_submits = True
        t = self._handle(t, "tensor.write")
        if t.root.origin == "In":
            raise SimulationError(
                f"pl.tensor.write into entry parameter '{t.root.name}', which is declared In",
                hint="declare it pl.InOut[...] or write into a pl.create_tensor buffer",
            )
        idx = self._index(t, index, "tensor.write")
        if self._graph.pending:
            self._graph.finish_writers(element_window(t, idx), include_readers=True)
        t.array[idx] = value

    def assemble(self, target: TensorHandle, source: TensorHandle, offsets: Any) -> TensorHandle:
        """`pl.assemble` in orchestration: waits for the source's producers and for every
        pending task touching the target window, then copies the source into it (PyPTO
        has the producer write into the window in place; the values are the same)."""
        self.beyond_submits = True
        target = self._handle(target, "assemble")
        source = self._handle(source, "assemble")
        if target.root.origin == "In":
            raise SimulationError(
                f"pl.assemble into entry parameter '{target.root.name}', which is declared In",
                hint="declare it pl.Out[...] or pl.InOut[...], or assemble into a "
                "pl.create_tensor buffer",
            )
        lead = len(target.shape) - len(source.shape)
        extents = (1,) * lead + tuple(source.shape)
        offsets = tuple(int(o) for o in offsets)
        if lead < 0 or len(offsets) != len(target.shape) or any(
                o < 0 or o + e > n for o, e, n in zip(offsets, extents, target.shape)):
            raise SimulationError(
                f"pl.assemble of a {list(source.shape)} tensor at offset {list(offsets)} does "
                f"not fit the target '{target.root.name}' {list(target.shape)} (at run time)",
                hint="offset + source extent must stay inside the target in every dimension",
            )
        window = slice_view(target, extents, offsets)
        self._graph.finish_writers(source)
        self._graph.finish_writers(window, include_readers=True)
        window.array[...] = source.array.reshape(extents)
        return target

    # -- tasks -------------------------------------------------------------------
    def submit(
        self, kernel: str, args: Any, returns: Any = (), blocks: Any = None, launch: bool = False,
        deps: Any = (), task_id: bool = False, manual: bool = False, no_dep: Any = (),
        predicate: Any = None, barrier: bool = False, dumps: Any = (),
    ) -> Any:
        """Record one task of ``kernel``; returns the arguments at positions ``returns``.

        ``blocks=n`` (a `pl.spmd(n)` launch) records n tasks of one launch; with
        ``launch`` the kernel reads its block index, passed to block i as ``_launch=(i, n)``;
        with ``barrier`` (a kernel holding `pl.system.syncall`) the blocks run side by side
        as one task (`runtime.lanes`).  The rest is explicit scheduling
        (runtime/explicit.py): with ``task_id`` the task's TaskId follows the returned
        arguments; ``dumps``: the argument positions the dump copies (runtime/argdump.py)."""
        k = self._kernels.get(kernel)
        if k is None:
            k = self._kernel(kernel)  # (raises: no such kernel)
        if barrier and blocks is not None and int(blocks) > 1:
            k, blocks = barrier_launch(k, int(blocks), launch), None
        sched = None
        if deps or manual or no_dep or task_id or predicate is not None:
            self.beyond_submits = True  # no fixed schedule: predicates and races are per run
            ids = task_ids(deps, len(self._graph.tasks)) if deps else ()
            sched = Sched(ids, manual, tuple(no_dep), predicate,
                          1 if blocks is None else int(blocks))
        first = self._submit(k, args, blocks, launch, sched,
                             dumps if dumps.__class__ is tuple else tuple(dumps))
        if sched is not None:  # where it was submitted, for a RaceError (runtime/races.py)
            self._graph.sched.lines[first.id] = sys._getframe(1).f_lineno
        if task_id:
            values = (*(args[r] for r in returns), first.id)
            return values[0] if len(values) == 1 else values
        return _returned(args, returns)

    def submit_group(self, group: str, args: Any, members: Any, returns: Any = (),
                     slots: Any = (8, 4), blocks: Any = None, launch: Any = ()) -> Any:
        """Record one task of a Group: ``members`` are (kernel, the Group argument position
        of each of its parameters); its kernels run side by side (`runtime.lanes`).
        ``blocks=n`` launches the Group n times (one task per block); the members at
        positions ``launch`` read their block index."""
        k = self._groups.get(group)
        if k is None:
            func_id = max((x.func_id for x in self._kernels.values()), default=-1) + 1
            k = self._groups[group] = group_kernel(
                group, func_id, [(self._kernel(m), tuple(pos)) for m, pos in members],
                len(args), tuple(returns), tuple(slots), launch=tuple(launch))
        self._submit(k, args, blocks, blocks is not None, None)
        return _returned(args, returns)

    def _kernel(self, kernel: str) -> Kernel:
        k = self._kernels.get(kernel)
        if k is None:
            raise SimulationError(
                f"orchestration submits kernel '{kernel}', which the artifact does not have "
                f"(kernels: {', '.join(self._kernels) or 'none'})"
            )
        return k

    def _submit(self, k: Kernel, args: Any, blocks: Any, launch: bool, sched: Any,
                dumps: tuple[int, ...] = ()) -> Any:
        """Check and record the task(s) of one call; the (first) task."""
        fast = self._arguments(k, args)
        if fast is not None:
            call_args, handles, group = fast
        else:
            call_args, handles = self._checked_arguments(k, args)
            group = None
        if blocks is None:
            return self._graph.submit(k, call_args, handles, sched, dumps, group)
        n = int(blocks)
        if n < 1:
            raise SimulationError(
                f"pl.spmd launch of kernel '{k.name}' has {n} blocks; it needs at least one "
                "(the block count is computed at run time)"
            )
        return self._graph.launch(k, call_args, handles, n, launch, sched, dumps)[0]

    def _arguments(self, k: Kernel, args: Any) -> tuple[list, list, tuple[list, int]] | None:
        """(call_args, handles, group) of a call whose check passed before: every tensor of
        its parameter's dtype, and the same tensor shapes as an earlier call of ``k`` that
        `_checked_arguments` accepted (the outcome of its checks depends on nothing else).
        ``group``: what a task window keys the task's group by and the made bytes it
        holds (`task_batches.group_of`, found here in the same pass).  None: check the
        call in full."""
        kinds = k.kinds
        if len(args) != len(kinds):
            return None
        call_args: list[Any] = []
        handles: list[TensorHandle | None] = []
        met: list[Any] = []  # the tensor arguments' shapes, in order
        key: list[Any] = [k.fn]  # the kernel, each scalar (type, value) and window shape
        size = 0
        add_arg, add_handle, add_shape, add_key = \
            call_args.append, handles.append, met.append, key.append
        for a, kind, dtype in zip(args, kinds, k.dtypes):
            if a.__class__ is TensorHandle:
                root = a.root
                if kind != "tensor" or root.dtype.name != dtype or a.window is not None:
                    return None
                array = a.array
                add_shape(a.shape)
                add_arg(array)
                add_handle(a)
                add_key(array.shape)
                if root.origin == "create_tensor":  # (an entry tensor's window keeps no
                    size += array.nbytes  # memory alive: only made ones count)
            elif kind == "tensor" or isinstance(a, TensorHandle):
                return None
            else:
                add_arg(a)
                add_handle(None)
                add_key((a.__class__, a))
        shapes = tuple(met)
        accepted = self._accepted.get((k.name, k.func_id))
        if accepted is None or shapes not in accepted:
            self._checked_arguments(k, args)  # raises, or accepts these shapes
            self._accepted.setdefault((k.name, k.func_id), set()).add(shapes)
        return call_args, handles, (key, size)

    def _checked_arguments(self, k: Kernel, args: Any) -> tuple[list, list]:
        """(call_args, handles) of a call, every argument checked against ``k``'s
        parameters (kind, dtype, rank, static dims; dynamic dims bound consistently)."""
        kernel = k.name
        if len(args) != len(k.kinds):
            raise SimulationError(
                f"task of kernel '{kernel}' got {len(args)} arguments, but the kernel takes "
                f"{len(k.kinds)} ({', '.join(k.arg_names)})"
            )
        call_args: list[Any] = []
        handles: list[TensorHandle | None] = []
        dyn: dict[str, tuple[int, int, int]] | None = None
        kinds, shapes, dtypes = k.kinds, k.shapes, k.dtypes
        i = -1
        for a in args:
            i += 1
            if a.__class__ is TensorHandle and a.shape == shapes[i] \
                    and a.root.dtype.name == dtypes[i] and kinds[i] == "tensor":
                call_args.append(a.array)  # the common case: a tensor of the exact type
                handles.append(a)
                continue
            if kinds[i] == "tensor":
                if a.__class__ is not TensorHandle:
                    raise SimulationError(
                        f"argument '{k.arg_names[i]}' of kernel '{kernel}' must be a tensor, "
                        f"but the orchestration passed {type(a).__name__}"
                    )
                want_shape = shapes[i]
                # a window cut at its source's edge matches by its declared shape
                got_shape = a.shape if a.window is None else a.window
                if a.root.dtype.name != dtypes[i] or len(got_shape) != len(want_shape):
                    self._mismatch(k, i, a)
                if got_shape != want_shape:  # a static mismatch, or dynamic dims to bind
                    for axis, (want, got) in enumerate(zip(want_shape, got_shape)):
                        if want != got:
                            if want.__class__ is int:
                                self._mismatch(k, i, a)
                            dyn = self._unify(k, dyn, want, got, i, axis)
                call_args.append(a.array)
                handles.append(a)
            else:
                if isinstance(a, TensorHandle):
                    raise SimulationError(
                        f"argument '{k.arg_names[i]}' of kernel '{kernel}' is a scalar, "
                        f"but the orchestration passed a tensor"
                    )
                call_args.append(a)
                handles.append(None)
        return call_args, handles

    # -- explicit scheduling (runtime/explicit.py) ------------------------------------
    def task_dummy(self, deps: Any = ()) -> int:
        """`pl.system.task_dummy(deps=[...])`: a task with no kernel; its TaskId."""
        self.beyond_submits = True
        ids = task_ids(deps, len(self._graph.tasks))
        task = self._graph.submit(DUMMY_KERNEL, [], [], Sched(ids, True, (), None))
        self._graph.sched.lines[task.id] = sys._getframe(1).f_lineno
        return task.id

    @staticmethod
    def array_create(extent: int, dtype: str) -> Any:
        """`pl.array.create` in orchestration (TaskId arrays start all invalid)."""
        if dtype == "TASK_ID":
            return [INVALID] * int(extent)
        return [0] * int(extent)

    @staticmethod
    def array_get(array: Any, index: Any) -> Any:
        return array[_array_index(array, index)]

    @staticmethod
    def array_set(array: Any, index: Any, value: Any) -> Any:
        new = list(array)
        new[_array_index(array, index)] = int(value)
        return new

    # -- helpers -----------------------------------------------------------------
    @staticmethod
    def _mismatch(k: Kernel, i: int, a: TensorHandle) -> None:
        want = f"Tensor[{list(k.shapes[i])}, {k.dtypes[i]}]"
        got = f"Tensor[{list(a.shape)}, {a.root.dtype.name}]"
        raise SimulationError(
            f"argument '{k.arg_names[i]}' of kernel '{k.name}' expects {want}, "
            f"but the orchestration passed {got} (a window of '{a.root.name}')"
        )

    @staticmethod
    def _unify(k: Kernel, dyn: dict[str, tuple[int, int, int]] | None, dim: str, got: int,
               i: int, axis: int) -> dict[str, tuple[int, int, int]]:
        """Bind a kernel's dynamic dim (one pl.dynamic object = one manifest name) from
        argument ``i``; a second argument disagreeing with the first is an error."""
        if dyn is None:
            dyn = {}
        seen = dyn.setdefault(dim, (got, i, axis))
        if seen[0] != got:
            label = dim_label(dim, (d for shape in k.shapes for d in shape))
            raise SimulationError(
                f"task of kernel '{k.name}': dynamic dimension {label} binds to {seen[0]} from "
                f"argument '{k.arg_names[seen[1]]}' (axis {seen[2]}) but to {got} from argument "
                f"'{k.arg_names[i]}' (axis {axis})",
                hint=f"both parameters of '{k.name}' declare the same pl.dynamic dim {label}: "
                "pass windows that agree in it (or declare two pl.dynamic objects)",
            )
        return dyn

    @staticmethod
    def _handle(t: Any, what: str) -> TensorHandle:
        if t.__class__ is not TensorHandle:
            raise SimulationError(f"pl.{what} needs a tensor, got {type(t).__name__}")
        return t

    @staticmethod
    def _index(t: TensorHandle, index: Any, what: str) -> tuple[int, ...]:
        shape = t.shape
        if index.__class__ is tuple and len(index) == len(shape):
            # the common case: a tuple of in-range ints, one per dimension (as given)
            for i, n in zip(index, shape):
                if i.__class__ is not int or not 0 <= i < n:
                    break
            else:
                return index
        idx = tuple(int(i) for i in (index if isinstance(index, (tuple, list)) else (index,)))
        if len(idx) != len(t.shape):
            raise SimulationError(
                f"pl.{what} of tensor '{t.root.name}' (rank {len(t.shape)}) got index "
                f"{list(idx)}; it needs one index per dimension"
            )
        for axis, (i, n) in enumerate(zip(idx, t.shape)):
            if not 0 <= i < n:
                raise SimulationError(
                    f"pl.{what} index {i} is out of range for dimension {axis} of extent {n} "
                    f"(tensor '{t.root.name}', at run time)"
                )
        return idx


def _array_index(array: Any, index: Any) -> int:
    i = int(index)
    if not 0 <= i < len(array):
        raise SimulationError(
            f"array index {i} is outside the array of extent {len(array)} (at run time)",
            hint=f"indices run from 0 to {len(array) - 1}",
        )
    return i
