"""Run-time helpers of batched loop execution (the compiler's `compiler/batching.py`).

A batched loop runs all its iterations at once: each tile that changes from one
iteration to the next carries one extra leading axis of length ``n`` (the trip
count).  Its tensor windows are views of the tensor reshaped to ``(n, *tile.shape)``:
iteration ``i`` reads or writes the window at ``offsets`` moved by ``i * shape[axis]``
along ``axis``, which is exactly the window the per-iteration code would touch.

Generated kernels import these (the kernel ABI allows `pytest_pypto.ir` imports).
Loads are views (the compiler proves the loop never writes the tensor nor mutates the
tile), or copies for a tensor the loop writes through the very windows it reads; stores copy into the destination, rounding as `tile.store` does.
"""

from __future__ import annotations

import functools
from typing import Any

import numpy as np

from pytest_pypto.ir.apply import apply, convert_array, dtype_of
from pytest_pypto.ir.ops._rules import OpBoundsError
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue

# A batched loop holds every iteration's tiles at once; past this many bytes of them
# (the compiler's estimate, compiler.batching.trip_bytes) the loop runs iteration by iteration,
# so memory stays in proportion to the kernel's tiles (docs/design/runtime.md §4).
MAX_LOOP_BYTES = 64 << 20
# A task-batched call (runtime.task_batches) holds at most this many bytes of its variant's
# tiles; a larger group is called in parts.  Cache-sized: the stacks, their float32
# widenings and the products of one call then stay in the core's cache (on the
# paged-attention bench, 64 MiB calls spent twice the kernel time of 4 MiB ones).
MAX_BATCH_BYTES = 4 << 20


@functools.lru_cache(maxsize=1024)
def batched_type(t: TileType, n: int) -> TileType:
    """``t`` with a leading batch axis of length ``n`` (fully valid along it)."""
    return TileType((n, *t.shape), t.dtype, t.space, (n, *t.valid), t.pad)


def fits(tensor: Any, offsets: tuple[int, ...], shape: tuple[int, ...], axis: int, n: int,
         stride: int | None = None) -> bool:
    """Whether all ``n`` windows lie inside ``tensor`` (else the loop runs per iteration,
    where the failing iteration raises the usual bounds error); consecutive windows start
    ``stride`` apart along ``axis`` (default: the window's extent, edge to edge)."""
    size = tensor.shape
    if len(size) != len(shape):
        return False
    for d, (o, e, s) in enumerate(zip(offsets, shape, size)):
        end = o + (((n - 1) * (e if stride is None else stride) + e) if d == axis else e)
        if o < 0 or end > s:
            return False
    return True


def windows(tensor: Any, offsets: tuple[int, ...], shape: tuple[int, ...], axis: int,
            n: int, stride: int | None = None) -> np.ndarray:
    """A view of the ``n`` windows along ``axis`` as ``(n, *shape)``: consecutive, or
    ``stride`` apart (at least the window's extent: disjoint, so a store may write them)."""
    if stride is not None and stride != shape[axis]:
        return _strided_windows(tensor, offsets, shape, axis, n, stride)
    size = tensor.shape
    if axis == 0 and len(size) == 2 and len(shape) == 2:  # the common case, without a loop
        o0, o1 = offsets
        e0, e1 = shape
        end = o0 + n * e0
        if 0 <= o0 and end <= size[0] and 0 <= o1 and o1 + e1 <= size[1]:
            return tensor[o0:end, o1:o1 + e1].reshape(n, e0, e1)
    sl = []
    for d, (o, e, s) in enumerate(zip(offsets, shape, size)):
        end = o + (n * e if d == axis else e)
        if o < 0 or end > s:
            break
        sl.append(slice(o, end))
    if len(sl) != len(size) or len(size) != len(shape):
        raise _outside(tensor, offsets, shape, axis, n)
    view = tensor[tuple(sl)]
    split = view.reshape(view.shape[:axis] + (n, shape[axis]) + view.shape[axis + 1:])
    if axis == 0:
        return split
    return split.transpose((axis, *range(axis), *range(axis + 1, split.ndim)))


def _strided_windows(tensor: Any, offsets: tuple[int, ...], shape: tuple[int, ...], axis: int,
                     n: int, stride: int) -> np.ndarray:
    if stride < shape[axis] or not fits(tensor, offsets, shape, axis, n, stride):
        raise _outside(tensor, offsets, shape, axis, n)
    first = tensor[tuple(slice(o, o + e) for o, e in zip(offsets, shape))]
    step = tensor.strides[axis] * stride
    return np.lib.stride_tricks.as_strided(first, (n, *first.shape), (step, *first.strides))


def _outside(tensor: Any, offsets: tuple[int, ...], shape: tuple[int, ...], axis: int,
             n: int) -> OpBoundsError:
    return OpBoundsError(
        f"batched loop window {list(shape)} x {n} at {list(offsets)} (axis {axis}) lies "
        f"outside the tensor of shape {list(tensor.shape)}"
    )


def load(tensor: Any, offsets: tuple[int, ...], shape: tuple[int, ...], axis: int, n: int,
         out: TileType, copy: bool = False, stride: int | None = None) -> TileValue:
    """All ``n`` loads of the loop as one tile value: a view of the tensor, or with
    ``copy`` (a tensor the loop also writes, through these same windows) a copy."""
    data = windows(tensor, offsets, shape, axis, n, stride)
    if data.dtype != out.dtype.np:
        data = data.astype(out.dtype.np)
    elif copy:
        data = data.copy()
    return TileValue(data, data.shape, out.dtype, out.space or "Vec", out.pad)


def store(tile: TileValue, tensor: Any, offsets: tuple[int, ...], axis: int, n: int,
          stride: int | None = None) -> Any:
    """All ``n`` stores of the loop: copy (rounding once, as tile.store) into the windows.

    ``tile`` is batched (leading axis ``n``) or loop-invariant (stored into every window).
    """

    shape = tile.data.shape[1:] if tile.data.ndim == tensor.ndim + 1 else tile.data.shape
    view = windows(tensor, offsets, tuple(shape), axis, n, stride)
    region = tile.data
    view[...] = region if region.dtype == tensor.dtype else convert_array(region,
                                                                          dtype_of(tensor))
    return tensor


_F32 = np.dtype(np.float32)  # numpy's builtin dtypes are singletons: compared by identity
_UFUNCS: dict[int, tuple[Any, Any]] = {}  # id(bound op) -> (op, its float32 ufunc or None)


def float32_ufunc(op: Any) -> Any:
    """The float32 ufunc behind a bound op, if it is the registry's plain `apply` binding
    (a custom binder -- counting, fault injection, precise mode -- is always called as is).
    Generated kernels ask once, when made, for the stores they compute directly."""
    hit = _UFUNCS.get(id(op))
    if hit is not None and hit[0] is op:
        return hit[1]

    ufunc = None
    if isinstance(op, functools.partial) and op.func is apply and not op.keywords \
            and len(op.args) == 1:
        name = getattr(op.args[0].compute, "float32_ufunc", None)
        ufunc = getattr(np, name) if name else None
    if len(_UFUNCS) > 1024:
        _UFUNCS.clear()
    _UFUNCS[id(op)] = (op, ufunc)
    return ufunc


def store_into(op: Any, operands: tuple[Any, ...], attrs: dict[str, Any], tensor: Any,
               offsets: tuple[int, ...], axis: int, n: int, out: TileType,
               stride: int | None = None) -> Any:
    """``store(op(*operands), ...)`` computing straight into the destination windows.

    Taken only where it is bit-identical: a float32 ufunc op on fully valid FP32 tiles,
    an FP32 result and a float32 tensor whose windows have exactly the result's shape
    (float32 math rounded into a float32 buffer is what compute-then-narrow-then-copy
    gives).  Anything else runs the op and the store as usual.
    """
    ufunc = float32_ufunc(op)
    if ufunc is not None and not attrs and len(operands) == ufunc.nin and out.dtype.name == "FP32" \
            and getattr(tensor, "dtype", None) is _F32:
        arrays = []
        for t in operands:
            if t.__class__ is not TileValue or t.dtype.name != "FP32" \
                    or t.data.dtype is not _F32 or t.valid != t.data.shape:
                break
            arrays.append(t.data)
        else:
            view = windows(tensor, offsets, out.shape[1:], axis, n, stride)
            # (a ufunc reading memory it writes behaves as if its inputs were copied first,
            # so no aliasing check is needed)
            if view.shape == out.shape and _broadcasts_to(arrays, view.shape):
                ufunc(*arrays, out=view)  # IEEE specials: Worker.run holds one errstate
                return tensor
    return store(op(*operands, out=out, **attrs), tensor, offsets, axis, n, stride)


def _broadcasts_to(arrays: list[Any], shape: tuple[int, ...]) -> bool:
    """Whether the arrays broadcast together to exactly ``shape`` (a packed vector whose
    lanes the op repeats does not: the op runs as usual)."""
    for a in arrays:
        if a.shape != shape:
            break
    else:
        return True
    try:
        return np.broadcast_shapes(*(a.shape for a in arrays)) == shape
    except ValueError:
        return False


def _may_share_memory() -> Any:
    """`numpy.may_share_memory` without its Python-level dispatch wrapper (its C function,
    where this numpy has it where numpy 2 keeps it)."""
    try:
        from numpy._core import _multiarray_umath  # lazy: private, may be absent

        fn = _multiarray_umath.may_share_memory
        a = np.zeros(4)
        if fn(a, a[1:]) and not fn(a, np.zeros(4)):
            return fn
    except (ImportError, AttributeError, TypeError):
        pass
    return np.may_share_memory


may_share_memory = _may_share_memory()


def may_alias(*pairs: tuple[Any, Any]) -> bool:
    """Whether any written tensor may share memory with another tensor of the loop."""
    shares = may_share_memory
    for a, b in pairs:
        if shares(a, b):
            return True
    return False
