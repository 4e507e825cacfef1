# SPDX-License-Identifier: Apache-2.0
"""Per-op lowerings (`lowering_hooks.HOOKS`) of the explicit tensor entries in
`ir/ops/tensor_index.py` (gather's compare form is in `whole_tensor_hooks`).

Tiling keeps each op's meaning: gather/scatter index spaces run along one axis, so
tiles are cut along another axis only and keep the indexed axis whole (the flat
indices tile.gather/tile.scatter read are computed per tile by tile.flat_index over
the tile's own buffer); mask forms and cmp cut rows; tensor.random depends on each
element's position in the whole tensor and is never cut.  When not even the
smallest such tile fits Vec the op is a `CapacityError` naming the op and its line.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from pytest_pypto.compiler import tiling
from pytest_pypto.compiler.lowering_hooks import hook, nbytes, too_big, vec_tile
from pytest_pypto.compiler.whole_tensor_hooks import lower_gather_compare
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import UINT8
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.registry import OpSpec
from pytest_pypto.ir.types import TensorType

if TYPE_CHECKING:
    from pytest_pypto.compiler.tensor_lowering import _Lowering


# ------------------------------------------------------------------- helpers


def cut(lw: _Lowering, op: str, shape: Sequence[int], axis: int | None,
        cost: Callable[[list[int]], int], what: str, cap: int | None = None) -> list[int]:
    """Tile extents of ``shape``: whole when it fits, else ``axis`` cut to the largest
    extent (at most ``cap``) whose tiles fit; a CapacityError when none does."""
    ext = list(shape)
    limit = shape[axis] if axis is not None else 0
    if cap is not None and axis is not None:
        limit = min(limit, cap)
    if axis is not None and (cost(ext) > lw.vec_budget or limit < shape[axis]):
        def fits(e: int) -> bool:
            trial = list(ext)
            trial[axis] = e
            return cost(trial) <= lw.vec_budget

        best = tiling.largest_fitting(max(limit, 1), fits)
        if best:
            ext[axis] = tiling.nice_extent(shape[axis], best)
            return ext
        ext[axis] = 1
    if cost(ext) > lw.vec_budget:
        raise too_big(lw, op, what, cost(ext),
                      "slice the tensor and call the op per window" if axis is not None
                      else "use a smaller tensor")
    return ext


def over(lw: _Lowering, out: list[n.Stmt], shape: Sequence[int], ext: Sequence[int],
         axis: int | None, carried: list[n.Var],
         body: Callable[[list[n.Stmt], list[Any], list[int], list[n.Var]], list[n.Var]]
         ) -> list[n.Var]:
    """Run ``body(stmts, offsets, extents, carried)`` once per tile (cut along ``axis``)."""
    if axis is None or ext[axis] == shape[axis]:
        return body(out, [0] * len(shape), list(shape), carried)
    return lw.tiles(out, shape, ext, carried, body, dims=[axis])


def at(offsets: Sequence[Any], axis: int | None, rank: int) -> list[Any]:
    """Offsets with only ``axis`` kept (the others start at 0)."""
    return [offsets[d] if d == axis else 0 for d in range(rank)]


# -------------------------------------------------------------------- gather


@hook("tensor.gather")
def lower_gather(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> Any:
    if call.arg("kvalue") is not None:  # the compare form returns a pair
        return lower_gather_compare(lw, out, call, spec)
    if call.arg("mask_pattern") is not None:
        return _gather_mask(lw, out, call)
    inp, index = call.arg("input"), call.arg("index")
    result_t: TensorType = call.type  # type: ignore[assignment]
    shape = tuple(index.type.shape)
    rank = len(shape)
    dim = call.arg("dim") % rank
    axis = 0 if dim != 0 else 1
    idt, dt = index.type.dtype, inp.type.dtype

    def window(ext: Sequence[int]) -> list[int]:
        w = list(ext)
        w[dim] = inp.type.shape[dim]
        return w

    def cost(ext: list[int]) -> int:  # src window, index, flat index, tmp, result
        return (nbytes(window(ext), dt, lw) + 3 * nbytes(ext, idt, lw) + nbytes(ext, dt, lw))

    # Flat indices address one tile's source window: keep them within the index dtype.
    unit = list(shape)
    unit[axis] = 1
    per_slice = math.prod(window(unit))
    if per_slice > 1 << (idt.bits - 1):
        raise CapacityError(
            f"tensor-level gather: one slice of the source window holds {per_slice} elements, "
            f"beyond what {idt.name} flat indices address", lw.span, arch=lw.ctx.arch.name,
            hint="use INT32 indices",
        )
    ext = cut(lw, "gather", shape, axis, cost, f"one slice of {rank}-D index {list(shape)} with "
              f"the whole gathered axis {dim}", cap=(1 << (idt.bits - 1)) // per_slice)
    result = lw.local(out, result_t)

    def body(stmts, offsets, e, carried):
        offs = at(offsets, axis, rank)
        src = lw.load(stmts, inp, offs, window(e), "Vec", "g_src")
        idx = lw.load(stmts, index, offs, e, "Vec", "g_idx")
        flat = lw.emit(stmts, "g_flat", "tile.flat_index", index=idx, shape=tuple(window(e)),
                       dim=dim, caller="tensor.gather")
        tmp = vec_tile(lw, stmts, e, idt, "g_tmp")
        got = lw.emit(stmts, "g_out", "tile.gather", src=src, indices=flat, tmp=tmp)
        return [lw.store(stmts, got, offs, carried[0])]

    return over(lw, out, shape, ext, axis, [result], body)[0]


def _gather_mask(lw: _Lowering, out: list[n.Stmt], call: n.Call) -> n.Var:
    inp = call.arg("input")
    result_t: TensorType = call.type  # type: ignore[assignment]
    rows, cols = inp.type.shape
    out_cols = result_t.shape[1]

    def cost(ext: list[int]) -> int:
        return nbytes(ext, inp.type.dtype, lw) + nbytes((ext[0], out_cols), result_t.dtype, lw)

    ext = cut(lw, "gather", (rows, cols), 0, cost, f"one row of {cols} columns")
    result = lw.local(out, result_t)

    def body(stmts, offsets, e, carried):
        src = lw.load(stmts, inp, [offsets[0], 0], e, "Vec", "gm_src")
        got = lw.emit(stmts, "gm_out", "tile.gather_mask", src=src,
                      mask_pattern=call.arg("mask_pattern"), output_dtype=call.arg("output_dtype"))
        return [lw.store(stmts, got, [offsets[0], 0], carried[0])]

    return over(lw, out, (rows, cols), ext, 0, [result], body)[0]


# ------------------------------------------------------------------- scatter


@hook("tensor.scatter")
def lower_scatter(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    if call.arg("mask_pattern") is not None:
        return _scatter_mask(lw, out, call)
    inp, index, src = call.arg("input"), call.arg("index"), call.arg("src")
    result_t: TensorType = call.type  # type: ignore[assignment]
    rows, cols = inp.type.shape
    src_rows, k = src.type.shape
    dt, idt = inp.type.dtype, index.type.dtype

    def cost(ext: list[int]) -> int:  # dst, src, index, flat index
        return nbytes(ext, dt, lw) + nbytes((ext[0], k), dt, lw) + 2 * nbytes((ext[0], k), idt, lw)

    # Flat indices address one tile's rows: keep them within the index dtype.
    cap = max(1, (1 << (idt.bits - 1)) // cols)
    ext = cut(lw, "scatter", (src_rows, cols), 0, cost, f"one row of {cols} columns", cap=cap)
    if ext[0] * cols > 1 << (idt.bits - 1):
        raise CapacityError(
            f"tensor-level scatter: a row of {cols} columns has flat indices beyond "
            f"{idt.name}'s range", lw.span, arch=lw.ctx.arch.name,
            hint="scatter a narrower column window",
        )
    result = lw.local(out, result_t)

    def body(stmts, offsets, e, carried):
        r = offsets[0]
        dst = lw.load(stmts, inp, [r, 0], e, "Vec", "s_dst")
        val = lw.load(stmts, src, [r, 0], (e[0], k), "Vec", "s_src")
        idx = lw.load(stmts, index, [r, 0], (e[0], k), "Vec", "s_idx")
        flat = lw.emit(stmts, "s_flat", "tile.flat_index", index=idx, shape=tuple(e), dim=1,
                       caller="tensor.scatter")
        done = lw.emit(stmts, "s_out", "tile.scatter", dst=dst, src=val, indexes=flat)
        return [lw.store(stmts, done, [r, 0], carried[0])]

    result = over(lw, out, (src_rows, cols), ext, 0, [result], body)[0]
    if src_rows < rows:  # rows no index addresses: input copied
        result = _copy_rows(lw, out, inp, src_rows, rows, cols, result)
    return result


def _copy_rows(lw: _Lowering, out: list[n.Stmt], src: n.Var, start: int, stop: int, cols: int,
               dst: n.Var) -> n.Var:
    dt = src.type.dtype
    ext = cut(lw, "scatter", (stop - start, cols), 0, lambda e: nbytes(e, dt, lw),
              f"one row of {cols} columns")
    for seg in tiling.segments(stop - start, ext[0]):
        shifted = tiling.Segment(seg.start + start, seg.stop + start, seg.extent)

        def step(stmts, r, carried, e=seg.extent):
            t = lw.load(stmts, src, [r, 0], (e, cols), "Vec", "s_keep")
            return [lw.store(stmts, t, [r, 0], carried[0])]

        dst = lw.loop(out, shifted, [dst], step)[0]
    return dst


def _scatter_mask(lw: _Lowering, out: list[n.Stmt], call: n.Call) -> n.Var:
    inp, dst = call.arg("input"), call.arg("dst")
    result_t: TensorType = call.type  # type: ignore[assignment]
    rows, cols = dst.type.shape
    in_cols = inp.type.shape[1]

    def cost(ext: list[int]) -> int:
        return nbytes(ext, dst.type.dtype, lw) + nbytes((ext[0], in_cols), inp.type.dtype, lw)

    ext = cut(lw, "scatter", (rows, cols), 0, cost, f"one row of {cols} columns")
    result = lw.local(out, result_t)

    def body(stmts, offsets, e, carried):
        r = offsets[0]
        base = lw.load(stmts, dst, [r, 0], e, "Vec", "sm_dst")
        val = lw.load(stmts, inp, [r, 0], (e[0], in_cols), "Vec", "sm_src")
        done = lw.emit(stmts, "sm_out", "tile.scatter_mask", dst=base, src=val,
                       mask_pattern=call.arg("mask_pattern"))
        return [lw.store(stmts, done, [r, 0], carried[0])]

    return over(lw, out, (rows, cols), ext, 0, [result], body)[0]


# ----------------------------------------------------------------------- cmp


@hook("tensor.cmp", "tensor.cmps")
def _cmp(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    lhs, rhs = call.arg("lhs"), call.arg("rhs")
    result_t: TensorType = call.type  # type: ignore[assignment]
    dt = lhs.type.dtype
    tensors = [lhs] + ([rhs] if isinstance(getattr(rhs, "type", None), TensorType) else [])
    operands = [tiling.Operand(tuple(t.type.shape), t.type.dtype) for t in tensors]
    scratch = [tiling.Operand(operands[0].shape, dt, scratch=True) for _ in range(3)]
    plan = tiling.vector_plan(tuple(result_t.shape), dt, operands + scratch, lw.ctx.arch,
                              lw.vec_budget)
    result = lw.local(out, result_t)
    one, zero = (1.0, 0.0) if dt.is_float else (1, 0)

    def body(stmts, offsets, ext, carried):
        tiles = []
        for t, o in zip(tensors, operands):
            win = o.window(ext, plan.shape) if plan.kind != "whole" else o.shape
            offs = [off if w == e else 0 for off, w, e in zip(offsets, win, ext)]
            tiles.append(lw.load(stmts, t, offs, win, "Vec", "c_in"))
        if len(tiles) == 2:
            mask = lw.emit(stmts, "c_mask", "tile.cmp", lhs=tiles[0], rhs=tiles[1],
                           cmp_type=call.arg("cmp_type"))
        else:
            mask = lw.emit(stmts, "c_mask", "tile.cmps", lhs=tiles[0], rhs=rhs,
                           cmp_type=call.arg("cmp_type"))
        shape = tuple(ext) if plan.kind != "whole" else tuple(result_t.shape)
        ones = lw.emit(stmts, "c_one", "tile.full", shape=shape, dtype=dt, value=one)
        zeros = lw.emit(stmts, "c_zero", "tile.full", shape=shape, dtype=dt, value=zero)
        tmp = vec_tile(lw, stmts, (1, 32), UINT8, "c_tmp")
        picked = lw.emit(stmts, "c_out", "tile.sel", mask=mask, lhs=ones, rhs=zeros, tmp=tmp)
        return [lw.store(stmts, picked, offsets if plan.kind != "whole" else
                         [0] * result_t.rank, carried[0])]

    if plan.kind == "whole":
        return body(out, [0] * result_t.rank, list(result_t.shape), [result])[0]
    return lw.tiles(out, plan.shape, plan.extents, [result], body)[0]


# --------------------------------------------------------------- rsqrt, sort


@hook("tensor.rsqrt")
def lower_rsqrt(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    tile_spec = lw.ctx.registry["tile.rsqrt"]
    scratch = (tile_spec.param("tmp"),) if call.arg("high_precision") else ()
    return lw.lower_vector(out, call, spec, tile_spec=tile_spec, scratch=scratch)


@hook("tensor.mrgsort")
def lower_mrgsort(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    result_t: TensorType = call.type  # type: ignore[assignment]
    srcs = {name: call.arg(name) for name in ("src0", "src1", "src2", "src3")
            if call.arg(name) is not None}
    need = sum(nbytes(t.type.shape, t.type.dtype, lw) for t in srcs.values())
    need += nbytes(result_t.shape, result_t.dtype, lw) * (2 if len(srcs) > 1 else 1)
    if need > lw.vec_budget:
        raise too_big(lw, "mrgsort", "merging the whole lists", need,
                      "merge runs that fit Vec, e.g. pl.tensor.slice the rows first")
    result = lw.local(out, result_t)
    zeros = [0] * result_t.rank
    args: dict[str, Any] = {name: lw.load(out, t, zeros, t.type.shape, "Vec", "ms_src")
                            for name, t in srcs.items()}
    if len(srcs) > 1:
        args["tmp"] = vec_tile(lw, out, result_t.shape, result_t.dtype, "ms_tmp")
    else:
        args["block_len"] = call.arg("block_len")
    merged = lw.emit(out, "ms_out", "tile.mrgsort", exhausted=call.arg("exhausted"), **args)
    return lw.store(out, merged, zeros, result)


# -------------------------------------------------------------------- random


@hook("tensor.random")
def lower_random(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    result_t: TensorType = call.type  # type: ignore[assignment]
    need = nbytes(result_t.shape, result_t.dtype, lw)
    if need > lw.vec_budget:
        raise too_big(lw, "random", f"the whole {list(result_t.shape)} tensor", need,
                      "each word depends on its position in the whole tensor: call "
                      "pl.random per window with its own counter")
    seeds = {p.name: call.arg(p.name) for p in spec.params if p.kind == "scalar"}
    words = lw.emit(out, "rnd", "tile.random", shape=tuple(result_t.shape),
                    dtype=result_t.dtype, rounds=call.arg("rounds"), **seeds)
    return lw.store(out, words, [0] * result_t.rank, lw.local(out, result_t))


# -------------------------------------------------------------- expand_clone


@hook("tensor.expand_clone")
def lower_expand_clone(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    src, target = call.arg("input"), call.arg("target")
    shape, full = tuple(src.type.shape), tuple(target.type.shape)
    stretch = next((d for d, (s, t) in enumerate(zip(shape, full)) if s != t), None)
    axis = next((d for d in range(len(shape)) if d != stretch and shape[d] > 1), None)
    ext = cut(lw, "expand_clone", shape, axis, lambda e: nbytes(e, src.type.dtype, lw),
              f"one slice of input {list(shape)}")

    def body(stmts, offsets, e, carried):
        offs = at(offsets, axis, len(shape))
        t = lw.load(stmts, src, offs, e, "Vec", "ec_src")
        if stretch is None:
            return [lw.store(stmts, t, offs, carried[0])]

        def put(inner, k, dst):
            place = list(offs)
            place[stretch] = k
            return [lw.store(inner, t, place, dst[0])]

        return lw.loop(stmts, tiling.Segment(0, full[stretch], 1), carried, put)

    return over(lw, out, shape, ext, axis, [target], body)[0]


# ------------------------------------------------------------------ create_l1


@hook("tensor.create_l1")
def lower_create_l1(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    result_t: TensorType = call.type  # type: ignore[assignment]
    arch = lw.ctx.arch
    need = nbytes(result_t.shape, result_t.dtype, lw, "Mat")
    if need > arch.capacity["Mat"]:
        raise CapacityError(
            f"pl.create_l1 of {list(result_t.shape)} {result_t.dtype.name} needs {need} bytes of "
            f"Mat, but the '{arch.name}' Mat holds {arch.capacity['Mat']}",
            lw.span, arch=arch.name, hint="gather fewer rows per accumulator",
        )
    return lw.local(out, result_t)
