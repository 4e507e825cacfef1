"""The orchestration runtime object ``rt`` that generated orchestration code calls.

It implements the orchestration ABI of `pytest_pypto.ir.artifact`: tensor handles
(`create_tensor`, `slice`, `reshape`, `transpose`, `dim`), blocking scalar access
(`read`, `write`) and task submission (`submit`), recording each task into the
run's `TaskGraph` with per-argument directions from the manifest and byte ranges
from the handles.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_pypto.ir.artifact import dim_label
from pytest_pypto.ir.dtypes import DataType, dtype_by_name
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.values import new_buffer
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.loader import Kernel
from pytest_pypto.runtime.tensors import (
    RootBuffer,
    TensorHandle,
    reshape_view,
    slice_view,
    transpose_view,
    whole_root,
)


class Orchestrator:
    """``rt``: what an orchestration function sees of the simulated device."""

    def __init__(self, kernels: dict[str, Kernel], graph: TaskGraph, roots: list[RootBuffer]):
        self._kernels = kernels
        self._graph = graph
        self.roots = roots
        # Whether the orchestration did more than submit tasks (made a tensor, read or
        # wrote one, assembled): then its run is no fixed schedule (`runtime.express`).
        self.beyond_submits = False

    # -- tensors -----------------------------------------------------------------
    def add_root(self, data: np.ndarray, dtype: DataType, name: str, origin: str) -> TensorHandle:
        return whole_root(self.roots, data, dtype, name, origin)

    def create_tensor(
        self, shape: Any, dtype: DataType | str, init_value: Any = None, name: str | None = None
    ) -> TensorHandle:
        """`pl.create_tensor`: a fresh DDR buffer, poisoned unless ``init_value`` is given."""
        self.beyond_submits = True
        if isinstance(dtype, str):
            dtype = dtype_by_name(dtype)
        shape = tuple(int(d) for d in shape)
        if any(d < 0 for d in shape):
            raise SimulationError(f"pl.create_tensor got a negative dimension in {list(shape)}")
        label = name or f"create_tensor#{len(self.roots)}"
        data = new_buffer(shape, dtype, name=label, value=init_value)
        return self.add_root(data, dtype, label, "create_tensor")

    def slice(self, t: TensorHandle, shape: Any, offsets: Any, valid_shape: Any = None,
              clamp: bool = False) -> TensorHandle:
        return slice_view(self._handle(t, "slice"), shape, offsets, valid_shape, bool(clamp))

    def reshape(self, t: TensorHandle, shape: Any) -> TensorHandle:
        return reshape_view(self._handle(t, "reshape"), shape)

    def transpose(self, t: TensorHandle, axis1: int, axis2: int) -> TensorHandle:
        return transpose_view(self._handle(t, "transpose"), axis1, axis2)

    def dim(self, t: TensorHandle, axis: int) -> int:
        return self._handle(t, "tensor.dim").shape[int(axis)]

    # -- blocking scalar access ----------------------------------------------------
    def read(self, t: TensorHandle, index: Any) -> Any:
        """`pl.tensor.read`: waits for every pending producer of ``t``, then reads."""
        self.beyond_submits = True
        t = self._handle(t, "tensor.read")
        idx = self._index(t, index, "tensor.read")
        self._graph.finish_writers(t)
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
        self._graph.finish_writers(t, include_readers=True)
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
        self, kernel: str, args: Any, returns: Any = (), blocks: Any = None, launch: bool = False
    ) -> Any:
        """Record one task of ``kernel``; returns the arguments at positions ``returns``.

        ``blocks=n`` (a `pl.spmd(n)` launch) records n tasks of one launch; with
        ``launch`` the kernel reads its block index, passed to block i as ``_launch=(i, n)``."""
        k = self._kernels.get(kernel)
        if k is None:
            raise SimulationError(
                f"orchestration submits kernel '{kernel}', which the artifact does not have "
                f"(kernels: {', '.join(self._kernels) or 'none'})"
            )
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
        if blocks is None:
            self._graph.submit(k, call_args, handles)
        else:
            n = int(blocks)
            if n < 1:
                raise SimulationError(
                    f"pl.spmd launch of kernel '{kernel}' has {n} blocks; it needs at least one "
                    "(the block count is computed at run time)"
                )
            self._graph.launch(k, call_args, handles, n, launch)
        if len(returns) == 1:
            return args[returns[0]]
        return tuple(args[r] for r in returns)

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
