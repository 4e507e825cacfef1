# SPDX-License-Identifier: Apache-2.0
"""Tensor-level ``pl.matmul`` / ``pl.matmul_acc`` in InCore code become tiles
(docs/design/language.md §10, docs/design/checks.md §7a).

A static 2-D matmul of fully valid operands whose whole operands fit Mat, and which the
AutoL0 pass (compiler/auto_tile_l0.py) compiles, is lowered as PyPTO lowers it: both
operands loaded whole into Mat and one ``tile.matmul`` of them, its accumulator stored
once into the result tensor (``matmul_acc``: added to the old accumulator on the vector
side).  AutoL0 then cuts it into L0 tiles with PyPTO's chooser, so the K loops and
output grids a program gets are the ones PyPTO's pass pipeline gives it.

Such a matmul whose one use is ``pl.cast(c, BF16 or FP16, mode="rint")`` right after it,
the cast used only as (untransposed) operands of such matmuls of the same body, keeps its
accumulator on chip: the cast becomes a ``tile.cast`` of the accumulator that the
consuming matmuls read directly, which AutoL0 turns into its rounded Mat scratch, as
PyPTO's tensor-to-tile conversion keeps a value a tile between tensor ops.

Every other matmul (batched, dynamic, partly valid, too large for Mat, or one AutoL0
would leave too large for L0) is cut here: output tiles and K chunks that fit Mat, Left,
Right and Acc (`tiling.matmul_plan`), each chunk moved to Left/Right whole.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from pytest_pypto.compiler import auto_tile_l0, tiling
from pytest_pypto.compiler.capacity import shape_bytes
from pytest_pypto.compiler.walk import child_bodies, iter_stmts, stmt_uses
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.casts import mode_name
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.registry import OpSpec
from pytest_pypto.ir.types import TensorType, TileType

if TYPE_CHECKING:  # the lowering driver imports this module
    from pytest_pypto.compiler.tensor_lowering import _Lowering

Index = Any  # an int or an INDEX-typed Expr
MATMUL_OPS = ("tensor.matmul", "tensor.matmul_acc")
CAST_OP = "tensor.cast"


def lower_matmul(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var | None:
    """The statements of one tensor matmul (module docstring); None when its result stays
    an on-chip accumulator read by the cast that follows it."""
    lhs, rhs = call.arg("lhs"), call.arg("rhs")
    a_trans, b_trans = bool(call.arg("a_trans")), bool(call.arg("b_trans"))
    acc_in = call.arg("acc") if any(p.name == "acc" for p in spec.params) else None
    result_t: TensorType = call.type  # type: ignore[assignment]
    shape = tuple(result_t.shape)
    batch, (m, n_) = shape[:-2], shape[-2:]
    k = lhs.type.shape[-1] if not a_trans else lhs.type.shape[-2]
    sized_m, sized_n, sized_k = tiling.notional((m, n_, k))  # dynamic dims: run-time loops
    acc_dtype = _acc_dtype(lw, lhs, rhs, (sized_m, sized_n, sized_k))
    if whole_matmul(lw, call):
        return lower_whole(lw, out, call, (m, n_, k), acc_in)
    plan = tiling.matmul_plan(sized_m, sized_n, sized_k, lhs.type.dtype, acc_dtype,
                              lw.ctx.arch, vector_tiles=3 if acc_in is not None else 0)
    if plan is None:
        raise CapacityError(
            f"tensor-level matmul of [{m}, {k}] @ [{k}, {n_}] {lhs.type.dtype.name}: not even "
            f"the smallest {lw.ctx.arch.cube_fractal}-aligned tiles fit the "
            f"'{lw.ctx.arch.name}' cube buffers",
            lw.span, arch=lw.ctx.arch.name,
        )
    result = lw.local(out, result_t)
    ranks = (len(batch), lhs.type.rank - 2, rhs.type.rank - 2)

    def per_batch(stmts, offsets, _ext, carried):
        idx = offsets[:len(batch)]
        a = matrix(lw, stmts, lhs, idx, ranks[1], a_trans, len(batch))
        b = matrix(lw, stmts, rhs, idx, ranks[2], b_trans, len(batch))
        y = carried[0] if not batch else matrix(lw, stmts, carried[0], idx, len(batch),
                                                False, len(batch))
        old = None
        if acc_in is not None:
            old = acc_in if not batch else matrix(lw, stmts, acc_in, idx, len(batch),
                                                  False, len(batch))
        done = output_tiles(lw, stmts, plan, a, b, y, old, call.arg("init_cond"))
        return [done if not batch else carried[0]]

    if not batch:
        return per_batch(out, [], [], [result])[0]
    return lw.tiles(out, batch, (1,) * len(batch), [result], per_batch)[0]


def _acc_dtype(lw: _Lowering, lhs: n.Var, rhs: n.Var, mnk: tuple[int, int, int]) -> Any:
    m, n_, k = mnk
    probe = n.Call("tile.matmul", (("lhs", _probe(lhs, (m, k))), ("rhs", _probe(rhs, (k, n_)))),
                   span=lw.span)
    return lw.type_of(lw.ctx.registry["tile.matmul"], probe).dtype


def _probe(t: n.Var, shape: tuple[int, int]) -> n.Var:
    return n.Var(t.name, type=TileType(shape, t.type.dtype))


# ------------------------------------------------------------------ whole matmuls
def whole_matmul(lw: _Lowering, call: n.Call) -> bool:
    """A static 2-D matmul of fully valid operands (or a kept cast) whose whole operands
    fit Mat and that AutoL0 compiles as one Mat-operand ``tile.matmul``."""
    lhs, rhs = call.arg("lhs"), call.arg("rhs")
    acc_in = call.arg("acc") if call.op == "tensor.matmul_acc" else None
    shape = tuple(call.type.shape)
    if len(shape) != 2 or lhs.type.rank != 2 or rhs.type.rank != 2:
        return False
    m, n_ = shape
    k = lhs.type.shape[-2] if call.arg("a_trans") else lhs.type.shape[-1]
    if not all(isinstance(d, int) for d in (m, n_, k)) or _narrowed(lhs) or _narrowed(rhs) \
            or lhs.type.dtype.name != rhs.type.dtype.name:
        return False
    arch = lw.ctx.arch
    dt = lhs.type.dtype
    if shape_bytes((m, k), dt, "Mat", arch) + shape_bytes((k, n_), dt, "Mat", arch) > \
            arch.capacity["Mat"]:
        return False
    if acc_in is not None:
        acc_dtype = _acc_dtype(lw, lhs, rhs, (m, n_, k))
        if 3 * shape_bytes((m, n_), acc_dtype, "Vec", arch) > lw.vec_budget:
            return False  # the old accumulator is added on the vector side
    return auto_tile_l0.places_whole(lw.ctx, m, n_, k, dt.name, stored=acc_in is None)


def _narrowed(value: Any) -> bool:
    return isinstance(value.type, TensorType) and value.type.narrowed


def lower_whole(lw: _Lowering, out: list[n.Stmt], call: n.Call, mnk: tuple[int, int, int],
                acc_in: n.Var | None) -> n.Var | None:
    """Both operands whole in Mat, one ``tile.matmul``, its accumulator stored (or added
    to the old one) once, or kept for the cast that follows it."""
    m, n_, k = mnk
    operands = []
    for key, trans, win in (("lhs", "a_trans", (m, k)), ("rhs", "b_trans", (k, n_))):
        value = call.arg(key)
        kept = lw.kept_tiles.get(value.name)
        if kept is not None:
            operands.append(kept)
            continue
        view = matrix(lw, out, value, [], 0, bool(call.arg(trans)), 0)
        operands.append(lw.load(out, view, [0, 0], list(win), "Mat",
                                "a_mat" if key == "lhs" else "b_mat"))
    acc = lw.emit(out, "acc", "tile.matmul", lhs=operands[0], rhs=operands[1])
    cast = lw.kept_casts.get(id(call))
    if cast is not None:
        kept = lw.emit(out, cast.targets[0].name, "tile.cast", tile=acc,
                       target_type=cast.value.arg("target_type"), mode=cast.value.arg("mode"))
        lw.kept_tiles[cast.targets[0].name] = kept
        return None
    result = lw.local(out, call.type)
    if acc_in is None:
        return lw.store(out, acc, [0, 0], result)
    return add_old(lw, out, acc, acc_in, 0, 0, m, n_, result, call.arg("init_cond"))


def kept_casts(lw: _Lowering, fn: n.Function) -> dict[int, n.Assign]:
    """The chains whose accumulator stays on chip (module docstring): the producing
    matmul's call id -> the cast statement that follows it."""
    uses: Counter[str] = Counter(name for s in iter_stmts(fn.body) for name in stmt_uses(s))
    found: dict[int, n.Assign] = {}
    for body in _bodies(fn.body):
        readers: dict[str, list[n.Call]] = {}  # a name -> the matmuls of this body reading it
        for stmt in body:
            call = stmt.value if isinstance(stmt, n.Assign) else None
            if isinstance(call, n.Call) and call.op in MATMUL_OPS:
                for key, trans in (("lhs", "a_trans"), ("rhs", "b_trans")):
                    v = call.arg(key)
                    if isinstance(v, n.Var) and not call.arg(trans):
                        readers.setdefault(v.name, []).append(call)
        for first, second in zip(body, body[1:]):
            chain = _chain(lw, first, second, uses, readers)
            if chain is not None:
                found[id(first.value)] = chain  # type: ignore[union-attr]
    return found


def _chain(lw: _Lowering, first: n.Stmt, second: n.Stmt, uses: Counter[str],
           readers: dict[str, list[n.Call]]) -> n.Assign | None:
    if not (isinstance(first, n.Assign) and isinstance(second, n.Assign)
            and len(first.targets) == 1 and len(second.targets) == 1):
        return None
    mm, cast = first.value, second.value
    if not (isinstance(mm, n.Call) and mm.op == "tensor.matmul"
            and isinstance(cast, n.Call) and cast.op == CAST_OP):
        return None
    produced, kept = first.targets[0].name, second.targets[0].name
    src = cast.arg("tile")
    if not (isinstance(src, n.Var) and src.name == produced and uses[produced] == 1):
        return None
    if getattr(cast.arg("target_type"), "name", None) not in ("BF16", "FP16") or \
            mode_name(cast.arg("mode") or "round") != "rint" or mm.type.dtype.name != "FP32":
        return None
    consumers = readers.get(kept, [])
    if not consumers or len(consumers) != uses[kept] or \
            not all(whole_matmul(lw, c) for c in (mm, *consumers)):
        return None
    m, n_ = mm.type.shape
    lhs = mm.arg("lhs")
    k = lhs.type.shape[-2] if mm.arg("a_trans") else lhs.type.shape[-1]
    return second if auto_tile_l0.cuts(lw.ctx, m, n_, k, lhs.type.dtype.name) else None


def _bodies(body: list[n.Stmt]):
    yield body
    for stmt in body:
        for child in child_bodies(stmt):
            yield from _bodies(child)


# ------------------------------------------------------------------ cut matmuls
def matrix(lw: _Lowering, out, t: n.Var, idx: list[Index], rank: int, trans: bool,
           batch_rank: int) -> n.Var:
    """The [rows, cols] operand of one batch item (right-aligned batch broadcast)."""
    if rank == 0 and not trans:
        return t
    dims = t.type.shape[:rank]
    mine = idx[batch_rank - rank:] if rank else []
    index = tuple(0 if d == 1 else i for d, i in zip(dims, mine))
    return lw.emit(out, f"{t.name}_m", "tensor.matrix_view", tensor=t, index=index,
                   transpose=trans)


def output_tiles(lw: _Lowering, out, plan: tiling.MatmulPlan, a: n.Var, b: n.Var, y: n.Var,
                 old: n.Var | None, init_cond: Any) -> n.Var:
    def body(stmts, offsets, ext, carried):
        (i, j), (tm, tn) = offsets, ext
        acc = k_chunks(lw, stmts, plan, a, b, i, j, tm, tn)
        if old is None:
            return [lw.store(stmts, acc, [i, j], carried[0])]
        return [add_old(lw, stmts, acc, old, i, j, tm, tn, carried[0], init_cond)]

    m, n_ = y.type.shape[-2:]
    return lw.tiles(out, (m, n_), (plan.tm, plan.tn), [y], body)[0]


def k_chunks(lw: _Lowering, out, plan, a, b, i, j, tm, tn) -> n.Var:
    acc: n.Var | None = None
    k = a.type.shape[-1]  # the contracted dim (a run-time loop when dynamic)
    for seg in tiling.segments(k, plan.tk):
        def step(stmts, k0, carried, seg=seg):
            am = lw.load(stmts, a, [i, k0], [tm, seg.extent], "Mat", "a_mat")
            al = lw.emit(stmts, "a_left", "tile.move", tile=am, target_memory="Left")
            bm = lw.load(stmts, b, [k0, j], [seg.extent, tn], "Mat", "b_mat")
            br = lw.emit(stmts, "b_right", "tile.move", tile=bm, target_memory="Right")
            if not carried:
                return [lw.emit(stmts, "acc", "tile.matmul", lhs=al, rhs=br)]
            return [lw.emit(stmts, "acc", "tile.matmul_acc", acc=carried[0], lhs=al, rhs=br)]

        if acc is None:
            acc = step(out, seg.start, [])[0]
            if seg.count == 1:
                continue
            seg = tiling.Segment(seg.start + seg.extent, seg.stop, seg.extent)
        acc = lw.loop(out, seg, [acc], step)[0]
    assert acc is not None
    return acc


def add_old(lw: _Lowering, out, acc, old, i, j, tm, tn, y, init_cond) -> n.Var:
    """matmul_acc's ``old + product`` on the vector side (``product`` alone where
    ``init_cond`` holds), stored into ``y``."""
    prod = lw.emit(out, "prod", "tile.move", tile=acc, target_memory="Vec")

    def added(stmts):
        prev = lw.load(stmts, old, [i, j], [tm, tn], "Vec", "old")
        total = lw.emit(stmts, "sum", "tile.add", lhs=prev, rhs=prod)
        return lw.store(stmts, total, [i, j], y)

    if init_cond is None:
        return added(out)
    then_body: list[n.Stmt] = []
    first = lw.store(then_body, prod, [i, j], y)
    then_body.append(n.Yield((lw.ref(first),), span=lw.span))
    else_body: list[n.Stmt] = []
    rest = added(else_body)
    else_body.append(n.Yield((lw.ref(rest),), span=lw.span))
    merged = n.Var(lw.names.fresh(y.name), type=y.type, span=lw.span)
    out.append(n.If(init_cond, then_body, else_body, results=(merged,), span=lw.span))
    return merged
