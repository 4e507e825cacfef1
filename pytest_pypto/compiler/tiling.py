# SPDX-License-Identifier: Apache-2.0
"""Tiling plans for tensor-level ops (docs/design/language.md §10): tile extents that fit the arch.

A tensor-level op is computed tile by tile; the plan says how big the tiles are.
Every tile the lowered loop body holds at once is charged with the capacity pass's
own byte rule (`capacity.tile_bytes`: Acc M-row alignment, space alignment), so a
plan that fits here fits there.  Capacities come from the arch table only.

Vector ops: the result is tiled greedily from the last dim: trailing dims whole as
long as the tiles fit, then one dim cut to the largest extent that fits (a divisor
of the dim when one is at least half of it, else a full-tile loop plus one tail
tile), leading dims one at a time.  Reductions keep their reduced axis whole in each
tile unless not even one row fits; then the axis is cut into chunks whose partial
results are combined.  Matmul: the output is cut over M and N until the
accumulator fits Acc, and K into chunks until the operand tiles fit Left/Right (and
Mat); the K chunks accumulate in Acc.

Dynamic dims (`pl.dynamic`): a plan is made as if the dim had the notional length
``DYNAMIC_LENGTH``, so its tile extent comes from the static dims and the arch
capacity alone; the lowering then loops ``for r in range(0, M, T)`` with a partial
last tile (valid extent ``min(T, M - r)``).  A dynamic dim cannot be a reduced
axis or matmul's K (`dynamic_dims` names them for the error).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_pypto.arch import ArchSpec
from pytest_pypto.compiler.capacity import shape_bytes
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.types import Dim

# The length a dynamic dim is planned with: a power of two, so its cut extents are too.
DYNAMIC_LENGTH = 1024


def is_dynamic(dim: object) -> bool:
    """Whether a tensor dim is known only at run time (a DynVar or DynExpr)."""
    return not isinstance(dim, int)


def notional(shape: Sequence[Dim]) -> tuple[int, ...]:
    """``shape`` with every dynamic dim replaced by ``DYNAMIC_LENGTH`` (what plans size)."""
    return tuple(DYNAMIC_LENGTH if is_dynamic(d) else int(d) for d in shape)


@dataclass(frozen=True)
class Segment:
    """Tiles of extent ``extent`` at ``start, start + extent, ... < stop`` along one dim;
    a dynamic ``stop`` (a run-time dim) has a partial last tile cut at it."""

    start: int
    stop: Dim
    extent: int

    @property
    def dynamic(self) -> bool:
        return is_dynamic(self.stop)

    @property
    def count(self) -> int | None:
        """The number of tiles (None when ``stop`` is known only at run time)."""
        if self.dynamic:
            return None
        return (int(self.stop) - self.start) // self.extent


def segments(length: Dim, extent: int) -> list[Segment]:
    """Full tiles of ``extent`` over ``[0, length)``, then a tail tile for the rest; one
    run-time loop over a dynamic ``length``."""
    if is_dynamic(length):
        return [Segment(0, length, extent)]
    full = length - length % extent
    out = [Segment(0, full, extent)] if full else []
    if full < length:
        out.append(Segment(full, length, length - full))
    return out


def nice_extent(length: int, fitting: int, align: int = 1) -> int:
    """The extent to use when at most ``fitting`` fits: ``length`` when it fits, else the
    largest divisor of ``length`` (a multiple of ``align``) of at least half of
    ``fitting``, else ``fitting`` rounded down to ``align``."""
    if fitting >= length:
        return length
    best = max(align, fitting // align * align) if fitting >= align else fitting
    for e in range(best, max(fitting // 2, 1) - 1, -1):
        if length % e == 0 and e % align == 0:
            return e
    return best


def largest_fitting(limit: int, fits: Callable[[int], bool]) -> int:
    """The largest e in [1, limit] with fits(e) (fits is monotone), 0 when none."""
    if not fits(1):
        return 0
    lo, hi = 1, limit
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if fits(mid):
            lo = mid
        else:
            hi = mid - 1
    return lo


# ----------------------------------------------------------------- vector ops


@dataclass(frozen=True)
class Operand:
    """A tensor operand of a vector op: its shape, dtype, and dims it broadcasts along."""

    shape: tuple[int, ...]
    dtype: DataType
    scratch: bool = False  # a scratch tile shaped like the lead operand's window

    def window(self, extents: Sequence[int], result: Sequence[int]) -> tuple[int, ...]:
        """The operand's tile extents for result tile ``extents``: 1 where it broadcasts."""
        return tuple(1 if s == 1 and r != 1 else e for s, e, r in zip(self.shape, extents, result))


@dataclass(frozen=True)
class VectorPlan:
    """Tiles of one vector op: ``extents`` per dim of the operand tiles (the reduced axis
    included); ``axis`` the reduced dim (None for maps); ``split`` when the reduced axis
    is cut into chunks whose partial results combine."""

    kind: str  # "map" (result shape = lead operand's), "reduce" or "whole"
    shape: tuple[Dim, ...]  # the lead operand's shape (the iteration space)
    extents: tuple[int, ...]
    axis: int | None
    nbytes: int  # live bytes of one tile step

    @property
    def split(self) -> bool:
        return self.axis is not None and self.extents[self.axis] < notional(self.shape)[self.axis]

    @property
    def dynamic(self) -> bool:
        return any(is_dynamic(d) for d in self.shape)

    def result_extents(self, extents: Sequence[int] | None = None) -> tuple[int, ...]:
        ext = list(self.extents if extents is None else extents)
        if self.axis is not None:
            ext[self.axis] = 1
        return tuple(ext)


def classify(result: Sequence[Dim], lead: Sequence[Dim]) -> tuple[str, int | None]:
    """'map' when the result has the lead operand's shape, 'reduce' (with the axis) when
    it differs in exactly one dim where the result is 1, else 'whole'."""
    if tuple(result) == tuple(lead):
        return "map", None
    if len(result) == len(lead):
        diff = [d for d, (r, x) in enumerate(zip(result, lead)) if r != x]
        if len(diff) == 1 and result[diff[0]] == 1:
            return "reduce", diff[0]
    return "whole", None


def dynamic_dims(plan: VectorPlan) -> list[int]:
    """The dims of a plan a run-time extent cannot take: every dynamic dim of a 'whole'
    plan, a dynamic reduced axis (the lowering reports them)."""
    if plan.kind == "whole":
        return [d for d, x in enumerate(plan.shape) if is_dynamic(x)]
    if plan.axis is not None and is_dynamic(plan.shape[plan.axis]):
        return [plan.axis]
    return []


# (which plan, its arguments, id(arch)) -> (arch, plan): a plan is a pure function of its
# arguments (shapes, dtypes, the frozen arch table, the budget), and compiling the same
# kernel for both platforms, or again in another test, asks the same questions; the arch
# is kept to check the id is still its.
_PLANS: dict[tuple[Any, ...], tuple[ArchSpec, Any]] = {}


def _planned(key: tuple[Any, ...], arch: ArchSpec, make: Callable[[], Any]) -> Any:
    got = _PLANS.get(key)
    if got is not None and got[0] is arch:
        return got[1]
    plan = make()
    if len(_PLANS) >= 4096:
        _PLANS.clear()  # bounded: a long session plans many distinct shapes
    _PLANS[key] = (arch, plan)
    return plan


def vector_plan(
    result: tuple[Dim, ...], result_dtype: DataType, operands: Sequence[Operand],
    arch: ArchSpec, budget: int, *, splittable: bool = True,
) -> VectorPlan:
    """The largest tiles of a vector op that fit ``budget`` bytes of Vec at once (see
    `_vector_plan`; the answer is remembered, `_planned`)."""
    ops = tuple(operands)
    key = ("vector", tuple(result), result_dtype, ops, id(arch), budget, splittable)
    return _planned(key, arch, lambda: _vector_plan(
        tuple(result), result_dtype, ops, arch, budget, splittable=splittable))


def _vector_plan(
    result: tuple[Dim, ...], result_dtype: DataType, operands: Sequence[Operand],
    arch: ArchSpec, budget: int, *, splittable: bool = True,
) -> VectorPlan:
    """The largest tiles of a vector op that fit ``budget`` bytes of Vec at once.

    ``operands[0]`` leads (the iteration space); an operand whose dim is 1 where the
    result's is not broadcasts along it.  ``splittable``: the reduction's partial
    results can be combined (else the reduced axis stays whole, and the capacity pass
    reports a row that does not fit).  Dynamic dims are sized as ``DYNAMIC_LENGTH``.
    """
    lead = operands[0]
    kind, axis = classify(result, lead.shape) if all(
        len(o.shape) == len(result) for o in operands) else ("whole", None)
    if kind == "map" and any(
            any(s not in (1, r) for s, r in zip(o.shape, result)) for o in operands):
        kind = "whole"
    if kind == "whole":
        total = sum(_bytes(notional(o.shape), o.dtype, arch) for o in operands)
        return VectorPlan("whole", tuple(lead.shape), notional(lead.shape), None,
                          total + _bytes(notional(result), result_dtype, arch))
    space = tuple(lead.shape)
    sized = notional(space)

    def cost(ext: Sequence[int]) -> int:
        total = 0
        for o in operands:
            total += _bytes(o.window(ext, space) if not o.scratch else ext, o.dtype, arch)
        res = list(ext)
        if axis is not None:
            res[axis] = 1
            if ext[axis] < sized[axis]:
                total += _bytes(res, result_dtype, arch)  # the running partial result
        return total + _bytes(res, result_dtype, arch)

    ext = [1] * len(space)
    if axis is not None:
        ext[axis] = sized[axis]
        if cost(ext) > budget and splittable:
            ext[axis] = _cut(ext, axis, sized, cost, budget)
            return VectorPlan(kind, space, tuple(ext), axis, cost(ext))
    for d in reversed(range(len(space))):
        if d == axis:
            continue
        ext[d] = sized[d]
        if cost(ext) <= budget:
            continue
        ext[d] = _cut(ext, d, sized, cost, budget)
        break
    return VectorPlan(kind, space, tuple(ext), axis, cost(ext))


def _cut(ext: list[int], d: int, space: Sequence[int], cost, budget: int) -> int:
    def fits(e: int) -> bool:
        trial = list(ext)
        trial[d] = e
        return cost(trial) <= budget

    fitting = largest_fitting(space[d], fits)
    return nice_extent(space[d], max(fitting, 1))


def _bytes(shape: Sequence[int], dtype: DataType, arch: ArchSpec, space: str = "Vec") -> int:
    return shape_bytes(shape, dtype, space, arch)


# -------------------------------------------------------------------- matmul


@dataclass(frozen=True)
class MatmulPlan:
    """Output tiles [tm, tn] and K chunks of tk of an [M, K] @ [K, N] product."""

    m: int
    n: int
    k: int
    tm: int
    tn: int
    tk: int

    @property
    def k_split(self) -> bool:
        return self.tk < self.k

    @property
    def mn_split(self) -> bool:
        return self.tm < self.m or self.tn < self.n


def _halvings(length: int, align: int) -> list[int]:
    """``length``, then extents halving down to ``align`` (each a multiple of it)."""
    out = [length]
    e = length
    while e > align:
        e = max(align, math.ceil(e / 2 / align) * align)
        if e < out[-1]:
            out.append(e)
    return out


def matmul_plan(
    m: int, n: int, k: int, operand: DataType, acc: DataType, arch: ArchSpec,
    *, vector_tiles: int = 0,
) -> MatmulPlan | None:
    """`_matmul_plan`, remembered (`_planned`)."""
    key = ("matmul", m, n, k, operand, acc, id(arch), vector_tiles)
    return _planned(key, arch, lambda: _matmul_plan(
        m, n, k, operand, acc, arch, vector_tiles=vector_tiles))


def _matmul_plan(
    m: int, n: int, k: int, operand: DataType, acc: DataType, arch: ArchSpec,
    *, vector_tiles: int = 0,
) -> MatmulPlan | None:
    """The tiling with the fewest output tiles, then the fewest K chunks, whose tiles fit
    Mat (both operands), Left, Right and Acc; ``vector_tiles`` accumulator-sized Vec tiles
    live beside it (matmul_acc adds the old accumulator on the vector side).  None when
    not even the smallest fractal-aligned tiles fit."""
    align = arch.cube_fractal
    cap = arch.capacity
    best: tuple[tuple[int, int, int], MatmulPlan] | None = None
    for tm in _halvings(m, align):
        for tn in _halvings(n, align):
            if shape_bytes((tm, tn), acc, "Acc", arch) > cap["Acc"]:
                continue
            if vector_tiles and vector_tiles * _bytes((tm, tn), acc, arch) > cap["Vec"]:
                continue
            for tk in _halvings(k, align):
                left = shape_bytes((tm, tk), operand, "Left", arch)
                right = shape_bytes((tk, tn), operand, "Right", arch)
                mat = (shape_bytes((tm, tk), operand, "Mat", arch)
                       + shape_bytes((tk, tn), operand, "Mat", arch))
                if left <= cap["Left"] and right <= cap["Right"] and mat <= cap["Mat"]:
                    key = (math.ceil(m / tm) * math.ceil(n / tn), math.ceil(k / tk), -tk)
                    if best is None or key < best[0]:
                        best = (key, MatmulPlan(m, n, k, tm, tn, tk))
                    break  # smaller tk only adds K chunks
    return best[1] if best else None
