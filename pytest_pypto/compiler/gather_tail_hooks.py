# SPDX-License-Identifier: Apache-2.0
"""Lowerings of the last gather/scatter forms (`ir/ops/gather_tail.py`), in `tensor_hooks.HOOKS`.

* ``tensor.gather`` compare form: src loaded whole into Vec with a UINT8 workspace,
  one tile.gather_compare, both results stored into kernel-local tensors; the hook
  returns the pair (`tensor_lowering` binds both names).  The index and mask forms go
  on to `tensor_hooks.lower_gather`.
* ``tensor.scatter_update``: input, index and src loaded whole, one
  tile.scatter_update, stored into the result.  PyPTO's lowering addresses the rows by
  flat indices, so a 2-byte input of more than 32767 elements is rejected as PyPTO
  does (its i16 flat-index limit).
* ``tensor.paged_gather``: the simulator runs the op itself on the DDR buffers (PyPTO's
  per-row scalar DMA loop); the lowering only checks that the result fits the on-chip
  space it names, as `tensor.create_l1` does.

Each raises a `CapacityError` naming the op and the user's line when its tiles do not fit.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from pytest_pypto.compiler.tensor_hooks import HOOKS, hook, nbytes, too_big, vec_tile
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import UINT8
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.ops._rules import space_name
from pytest_pypto.ir.registry import OpSpec
from pytest_pypto.ir.types import TensorType, TupleType

if TYPE_CHECKING:
    from pytest_pypto.compiler.tensor_lowering import _Lowering

_index_and_mask_gather = HOOKS["tensor.gather"]
I16_FLAT_LIMIT = 32767


@hook("tensor.gather")
def lower_gather_forms(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec):
    if call.arg("kvalue") is None:
        return _index_and_mask_gather(lw, out, call, spec)
    src = call.arg("input")
    result_t: TupleType = call.type  # type: ignore[assignment]
    dst_t, cnt_t = result_t.items
    shape = tuple(src.type.shape)
    need = (nbytes(shape, src.type.dtype, lw) + nbytes(shape, UINT8, lw)
            + nbytes(dst_t.shape, dst_t.dtype, lw) + nbytes(cnt_t.shape, cnt_t.dtype, lw))
    if need > lw.vec_budget:
        raise too_big(lw, "gather (compare form)", f"the whole {list(shape)} input", need,
                      "each row's match count spans the whole row: pl.slice fewer rows per "
                      "call")
    zeros = [0, 0]
    tile = lw.load(out, src, zeros, shape, "Vec", "gc_src")
    tmp = vec_tile(lw, out, shape, UINT8, "gc_tmp")
    spec_t = lw.ctx.registry["tile.gather_compare"]
    args = {"src": tile, "kvalue": call.arg("kvalue"), "tmp": tmp,
            "cmp_mode": call.arg("cmp_mode"), "offset": call.arg("offset"),
            "out_cols": call.arg("out_cols"), "count_dtype": call.arg("count_dtype")}
    given = {k: lw.ref(v) if isinstance(v, n.Var) else v for k, v in args.items()}
    tcall = n.Call(spec_t.name, tuple((p.name, given.get(p.name, p.default))
                                      for p in spec_t.params), span=lw.span)
    tcall.type = lw.type_of(spec_t, tcall)
    d_t, c_t = tcall.type.items
    d = n.Var(lw.names.fresh("gc_dst"), type=d_t, span=lw.span)
    c = n.Var(lw.names.fresh("gc_cnt"), type=c_t, span=lw.span)
    out.append(n.Assign((d, c), tcall, span=lw.span))
    dst = lw.store(out, d, zeros, lw.local(out, dst_t))
    cnt = lw.store(out, c, zeros, lw.local(out, cnt_t))
    return dst, cnt


@hook("tensor.scatter_update")
def lower_scatter_update(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    inp, index, src = call.arg("input"), call.arg("index"), call.arg("src")
    result_t: TensorType = call.type  # type: ignore[assignment]
    dt = inp.type.dtype
    elements = math.prod(inp.type.shape)
    if dt.itemsize == 2 and elements > I16_FLAT_LIMIT:
        raise CapacityError(
            f"tensor-level scatter_update: a 2-byte input of {elements} elements "
            f"{list(inp.type.shape)} exceeds the i16 flat-index limit ({I16_FLAT_LIMIT})",
            lw.span, arch=lw.ctx.arch.name,
            hint="update a smaller window of rows (pl.slice the input), or use a 4-byte dtype",
        )
    operands = (inp, index, src)
    need = sum(nbytes(t.type.shape, t.type.dtype, lw) for t in operands)
    if need > lw.vec_budget:
        raise too_big(lw, "scatter_update", "the whole input, index and src", need,
                      "update a smaller window of rows (pl.slice the input)")
    tiles = {name: lw.load(out, t, [0] * t.type.rank, t.type.shape, "Vec", f"su_{name}")
             for name, t in zip(("input", "index", "src"), operands)}
    done = lw.emit(out, "su_out", "tile.scatter_update", dim=call.arg("dim"), **tiles)
    return lw.store(out, done, [0] * result_t.rank, lw.local(out, result_t))


@hook("tensor.paged_gather")
def lower_paged_gather(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    result_t: TensorType = call.type  # type: ignore[assignment]
    arch = lw.ctx.arch
    space = space_name(call.arg("space")) or "Mat"
    need = nbytes(result_t.shape, result_t.dtype, lw, space)
    if need > arch.capacity[space]:
        raise CapacityError(
            f"pl.paged_gather of {list(result_t.shape)} {result_t.dtype.name} needs {need} "
            f"bytes of {space}, but the '{arch.name}' {space} holds {arch.capacity[space]}",
            lw.span, arch=arch.name, hint="gather fewer rows (max_indices) or fewer columns "
            "(size) per call",
        )
    var = n.Var(lw.names.fresh("paged"), type=result_t, span=lw.span)
    out.append(n.Assign((var,), call, span=lw.span))
    return var
