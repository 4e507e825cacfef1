# SPDX-License-Identifier: Apache-2.0
"""Tensor-level ops in InCore code become loads, tile ops and stores (docs/design/language.md §10).

`y = pl.add(x, z)` on Tensors inside a kernel (or an outlined `pl.at` block) is
lowered here, before every check that looks at tiles, into

    y_1 = tensor.local([R, C], dt)                      # the op's result tensor
    for i in range(0, R, TR):                            # tiles sized by compiler/tiling
        a = tile.load(x, [i, 0], [TR, C], target_memory=Vec)
        b = tile.load(z, [i, 0], [TR, C], target_memory=Vec)
        c = tile.add(a, b)
        y_2 = tile.store(c, [i, 0], y_1)
    y = y_3

so memory-space, capacity and bounds checks see exactly the tiles the program
allocates, and a 512x512 FP32 add fits a2a3's Vec.  Results are tile results,
rounded to the tile (= tensor) dtype by the tile op as usual.  A tensor matmul
(compiler/matmul_lowering.py) loads its operands into Mat, accumulates its K chunks in
Acc and stores the accumulator once into the result tensor of ``out_dtype`` (so the FP32
sum is rounded once, docs/design/numerics.md §3).  Every generated node carries the span of the
user's call, so errors point at the user's line.

Ops whose tensor form has a lowering of its own (gather, scatter, cmp, random, full...;
their registry entries set ``lowering_hook``) are lowered by their entry in
``lowering_hooks.HOOKS``.  Tensor ops with other meanings (views, element access,
assemble) are not touched, except where a tensor has a valid
region (`compiler/tensor_valid.py`): every load of it (the lowering's own and the
user's `pl.load`) reads only its valid region, and an assemble of it becomes loads
and stores of that region, so PyPTO's "only the valid region is transferred" holds.
An assemble converting dtypes is legal only for a matmul result (PyPTO stores the
accumulator straight into the target).

A `pl.dynamic` dim of a tiled axis becomes a run-time loop ``for r in range(0, M,
T)`` (T from `tiling`'s plan); every load reads ``min(T, M - r)`` of it (its valid
extent), so the tile ops and stores of the partial last tile touch only it, and the
op's local result tensor keeps the dynamic dim.  One artifact serves every M.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from typing import Any

from pytest_pypto.compiler import matmul_lowering, tensor_hooks, tiling, whole_tensor_hooks
from pytest_pypto.compiler.lowering_hooks import HOOKS, hook
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.structure import kernels
from pytest_pypto.compiler.tensor_valid import ValidRegions, combine
from pytest_pypto.compiler.typecheck import call_info, convert_rule_error
from pytest_pypto.compiler.walk import NameGen, all_names, is_tile, iter_stmts, rewrite_bodies
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir import tensor_forms
from pytest_pypto.ir.dtypes import INDEX
from pytest_pypto.ir.errors import ShapeError
from pytest_pypto.ir.ops._rules import enum_name
from pytest_pypto.ir.ops.memory import LOAD_OP
from pytest_pypto.ir.ops.tensor_level import LOCAL_OP
from pytest_pypto.ir.ops.views_tensor import ASSEMBLE_OP
from pytest_pypto.ir.registry import OpRuleError, OpSpec
from pytest_pypto.ir.types import DynVar, ScalarType, TensorType, TileType

Index = Any  # an int or an INDEX-typed Expr
HOOK_MODULES = (tensor_hooks, whole_tensor_hooks)  # importing them fills HOOKS


def lower_tensor_ops(program: n.Program, ctx: PassContext) -> n.Program:
    """Lower every tensor-level compute op of every InCore function (module docstring)."""
    incore = kernels(program)
    for fn in program.functions.values():
        if fn not in incore:
            _check_entry_assembles(fn, ctx)
    for fn in incore:
        calls = [s.value for s in iter_stmts(fn.body)
                 if isinstance(s, n.Assign) and isinstance(s.value, n.Call)]
        if not any(_lowered_spec(ctx, c) or _valid_rewrite(c) for c in calls):
            continue
        lowering = _Lowering(fn, ctx)  # reads the names of ``fn`` before rewriting it
        ctx.exprs_rewritten = True
        rewrite_bodies(fn, lowering.visit)
    return program


def _narrowed(value: Any) -> bool:
    return isinstance(value, n.Var) and isinstance(value.type, TensorType) and value.type.narrowed


def _converts(call: n.Call) -> bool:
    src, dst = call.arg("source"), call.arg("target")
    return (isinstance(getattr(src, "type", None), TensorType)
            and isinstance(getattr(dst, "type", None), TensorType)
            and src.type.dtype.name != dst.type.dtype.name)


def _valid_rewrite(call: n.Call) -> bool:
    """A call this pass rewrites for valid regions or checks for a dtype conversion."""
    if call.op == LOAD_OP:
        return _narrowed(call.arg("tensor"))
    if call.op == ASSEMBLE_OP:
        return _narrowed(call.arg("source")) or _converts(call)
    return False


def _conversion_error(call: n.Call, ctx: PassContext, where: str) -> ShapeError:
    src, dst = call.arg("source").type, call.arg("target").type
    return ShapeError(
        f"tensor.assemble converts {src.dtype.name} into a {dst.dtype.name} target, but {where}",
        call.span,
        hint=f"pl.cast the source to pl.{dst.dtype.name} first (only a matmul result converts "
        "on its way into the target, as an accumulator store)",
        arch=ctx.arch.name,
    )


def _check_entry_assembles(fn: n.Function, ctx: PassContext) -> None:
    """Orchestration assembles copy tensors: no accumulator store to convert dtypes, no
    atomic combine (PyPTO rejects both outside InCore code)."""
    for stmt in iter_stmts(fn.body):
        value = stmt.value if isinstance(stmt, n.Assign) else None
        if not (isinstance(value, n.Call) and value.op == ASSEMBLE_OP):
            continue
        if _converts(value):
            raise _conversion_error(value, ctx, f"{fn.kind} code copies tensors as they are")
        if enum_name(value.arg("atomic")) in ("Add", 1):
            raise ShapeError(
                f"pl.assemble(..., atomic=pl.AtomicType.Add) in {fn.kind} function "
                f"'{fn.name}': orchestration has no atomic-combine instruction",
                value.span,
                hint="move the assemble inside the pl.at(level=pl.Level.CORE_GROUP) scope that "
                "produces the partial result",
                arch=ctx.arch.name,
            )


def _lowered_spec(ctx: PassContext, call: Any) -> OpSpec | None:
    """The tensor-level spec of a call this pass lowers (None for every other call)."""
    if not isinstance(call, n.Call) or not call.op.startswith("tensor."):
        return None
    spec = ctx.registry.get(call.op)
    if spec is not None:  # an explicit tensor op: lowered by kind, else kept (slice, assemble...)
        return spec if spec.matmul_result or spec.lowering_hook else None
    spec = tensor_forms.resolve(ctx.registry, call.op.split(".", 1)[1])
    return spec if spec is not None and tensor_forms.tile_entry(spec) is not None else None


class _Lowering:
    def __init__(self, fn: n.Function, ctx: PassContext) -> None:
        self.fn = fn
        self.ctx = ctx
        self.names = NameGen(all_names(fn))
        self.regions = ValidRegions(fn, ctx.registry)
        vec = ctx.arch.capacity["Vec"]
        # The user's own tiles may be live across a tensor op: leave them half of Vec.
        self.vec_budget = vec // 2 if _has_user_tiles(fn) else vec
        self.span: n.Span | None = None
        # matmul results kept on chip for the cast after them (compiler/matmul_lowering.py)
        self.kept_casts = matmul_lowering.kept_casts(self, fn)
        self.skipped = {id(s) for s in self.kept_casts.values()}
        self.kept_tiles: dict[str, n.Var] = {}

    # ---------------------------------------------------------------- driver
    def visit(self, body: list[n.Stmt]) -> list[n.Stmt]:
        out: list[n.Stmt] = []
        for stmt in body:
            if id(stmt) in self.skipped:  # lowered with the matmul before it
                continue
            value = stmt.value if isinstance(stmt, n.Assign) else (
                stmt.expr if isinstance(stmt, n.ExprStmt) else None)
            spec = _lowered_spec(self.ctx, value)
            if spec is None and not (isinstance(value, n.Call) and _valid_rewrite(value)):
                out.append(stmt)
                continue
            assert isinstance(value, n.Call)
            self.span = value.span or stmt.span
            target = stmt.targets[0] if isinstance(stmt, n.Assign) else None
            if spec is None:
                if value.op == LOAD_OP:
                    self.narrow_load(value)
                    out.append(stmt)
                    continue
                if _converts(value) and value.arg("source").name not in \
                        self.regions.matmul_results:
                    raise _conversion_error(value, self.ctx, "the source is not a matmul "
                                            "result (a vector tile stores only its own dtype)")
                if not _narrowed(value.arg("source")):
                    out.append(stmt)
                    continue
                result = self.lower_assemble(out, value)
            elif self.dynamic_rejected(value, spec):
                raise self.dynamic_error(value, self.dynamic_dim(value))
            elif spec.matmul_result:
                result = matmul_lowering.lower_matmul(self, out, value, spec)
            elif spec.lowering_hook:  # per-op lowerings (compiler/lowering_hooks.py)
                result = HOOKS[value.op](self, out, value, spec)
            else:
                result = self.lower_vector(out, value, spec)
            if target is not None and result is not None:  # a pair: gather's compare form
                results = result if isinstance(result, tuple) else (result,)
                for t, r in zip(stmt.targets, results):
                    out.append(n.Assign((t,), self.ref(r), span=stmt.span))
        return out

    # ------------------------------------------------------------- building
    def ref(self, var: n.Var) -> n.Var:
        return n.Var(var.name, type=var.type, span=var.span)

    def const(self, value: int) -> n.Const:
        return n.Const(value, type=ScalarType(INDEX), span=self.span)

    def index(self, value: Any) -> n.Expr:
        """An INDEX expression for an int, an Expr, or a dynamic dim (its run-time size)."""
        if isinstance(value, DynVar):
            return n.DynDim(value, type=ScalarType(INDEX), span=self.span)
        return self.const(value) if isinstance(value, int) else value

    # ------------------------------------------------------- dynamic dims
    def dynamic_dim(self, call: n.Call) -> DynVar | None:
        """The first pl.dynamic dim of a tensor operand or the result of ``call``."""
        for t in [getattr(v, "type", None) for _, v in call.args] + [call.type]:
            if isinstance(t, TensorType):
                for d in t.shape:
                    if isinstance(d, DynVar):
                        return d
        return None

    def dynamic_rejected(self, call: n.Call, spec: OpSpec) -> bool:
        """A hooked op with a dynamic dim whose lowering needs static shapes."""
        return (spec.lowering_hook and not spec.hook_tiles_dynamic
                and self.dynamic_dim(call) is not None)

    def dynamic_error(self, call: n.Call, dim: Any, why: str = "") -> ShapeError:
        return ShapeError(
            f"{call.op} cannot be tiled over the dynamic dimension {dim!r}"
            + (f": {why}" if why else " (its lowering needs static shapes)"),
            self.span,
            hint=f"loop over {dim!r} yourself: pl.slice a static window of T at offset r "
            f"with valid_shape=[pl.min(T, {dim!r} - r), ...], or use the tile ops with "
            "valid_shapes",
            arch=self.ctx.arch.name,
        )

    def check_plan(self, call: n.Call, plan: tiling.VectorPlan) -> None:
        """A vector plan's dynamic dims must be tiled axes (not reduced, not whole)."""
        bad = tiling.dynamic_dims(plan)
        if bad:
            why = ("it is the reduced axis (a reduction needs its whole axis static)"
                   if plan.kind == "reduce" else
                   "the operands' shapes differ beyond broadcasting, so the op runs on whole "
                   "tensors")
            raise self.dynamic_error(call, plan.shape[bad[0]], why)

    def emit(self, out: list[n.Stmt], base: str, op: str, **args: Any) -> n.Var:
        """``base_k = op(**args)``, typed by the op's rule (errors at the user's line)."""
        spec = self.ctx.registry[op]
        given = {k: self.ref(v) if isinstance(v, n.Var) else v for k, v in args.items()}
        call = n.Call(op, tuple((p.name, given.get(p.name, None if p.required else p.default))
                                for p in spec.params), span=self.span)
        call.type = self.type_of(spec, call)
        var = n.Var(self.names.fresh(base), type=call.type, span=self.span)
        out.append(n.Assign((var,), call, span=self.span))
        return var

    def type_of(self, spec: OpSpec, call: n.Call) -> Any:
        try:
            result = spec.type_rule(call_info(call, spec, None, {}))
        except OpRuleError as exc:
            raise convert_rule_error(exc, call, self.ctx) from None
        if isinstance(result, TileType) and result.space is None:
            rule = spec.mem.result or ""
            if rule.startswith("same:"):
                operand = call.arg(rule[len("same:"):])
                result = result.with_(space=getattr(operand.type, "space", None))
            elif rule and not rule.startswith("attr:"):
                result = result.with_(space=rule)
        return result

    def loop(
        self, out: list[n.Stmt], seg: tiling.Segment, carried: list[n.Var],
        body: Callable[[list[n.Stmt], Index, list[n.Var]], list[n.Var]],
    ) -> list[n.Var]:
        """The tiles of one segment: a loop carrying ``carried`` (inline when it has one
        tile); ``body(stmts, offset, carried_in)`` returns the next carried values."""
        if seg.count == 1:
            return body(out, seg.start, carried)
        var = n.Var(self.names.fresh("t"), type=ScalarType(INDEX), span=self.span)
        inner = [n.Var(self.names.fresh(c.name), type=c.type, span=self.span) for c in carried]
        stmts: list[n.Stmt] = []
        nxt = body(stmts, var, inner)
        stmts.append(n.Yield(tuple(self.ref(v) for v in nxt), span=self.span))
        results = [n.Var(self.names.fresh(c.name), type=c.type, span=self.span) for c in carried]
        out.append(n.For(
            var, self.const(seg.start), self.index(seg.stop), self.const(seg.extent), stmts,
            carried=tuple(zip(inner, (self.ref(c) for c in carried))), results=tuple(results),
            span=self.span,
        ))
        return results

    def tiles(
        self, out: list[n.Stmt], shape: Sequence[int], extents: Sequence[int],
        carried: list[n.Var], body: Callable[[list[n.Stmt], list[Index], list[int], list[n.Var]],
                                             list[n.Var]],
        dims: Sequence[int] | None = None,
    ) -> list[n.Var]:
        """Every tile of ``shape`` cut by ``extents`` (over ``dims``, default all): nested
        segment loops; ``body(stmts, offsets, tile_extents, carried)``."""
        dims = list(range(len(shape))) if dims is None else list(dims)
        per_dim = [tiling.segments(shape[d], extents[d]) for d in dims]
        for combo in itertools.product(*per_dim):
            carried = self._nest(out, list(zip(dims, combo)), [0] * len(shape),
                                 list(extents), carried, body)
        return carried

    def _nest(self, out, rest, offsets, extents, carried, body):
        if not rest:
            return body(out, list(offsets), list(extents), carried)
        (d, seg), tail = rest[0], rest[1:]

        def step(stmts, offset, inner):
            offs = list(offsets)
            offs[d] = offset
            ext = list(extents)
            ext[d] = seg.extent
            return self._nest(stmts, tail, offs, ext, inner, body)

        return self.loop(out, seg, carried, step)

    def local(self, out: list[n.Stmt], t: TensorType) -> n.Var:
        return self.emit(out, "local", LOCAL_OP, shape=tuple(t.shape), dtype=t.dtype)

    def load(self, out, tensor: n.Var, offsets, extents, space: str, base="tl", cast=None):
        """A window of ``tensor`` cast to ``cast``: its valid part, up to ``min(T, M - r)``."""
        valid = self.regions.window(tensor, offsets, extents, self.span)
        shape = tensor.type.shape
        if any(isinstance(d, DynVar) for d in shape):
            valid = tuple(
                combine("min", e if valid is None else valid[i],
                        combine("-", self.index(dim), offsets[i], self.span), self.span)
                if isinstance(dim, DynVar) else (e if valid is None else valid[i])
                for i, (dim, e) in enumerate(zip(shape, extents)))
        tile = self.emit(out, base, "tile.load", tensor=tensor, offsets=tuple(offsets),
                         shapes=tuple(extents), target_memory=space,
                         valid_shapes=None if valid is None else tuple(valid))
        return self.emit(out, "promoted", "tile.cast", tile=tile, target_type=cast) if cast else tile

    def store(self, out, tile: n.Var, offsets, dst: n.Var, atomic: Any = None) -> n.Var:
        return self.emit(out, dst.name, "tile.store", tile=tile, offsets=tuple(offsets),
                         output_tensor=dst, atomic=atomic)

    # ------------------------------------------------------- valid regions
    def narrow_load(self, call: n.Call) -> None:
        """The user's `pl.load` of a narrowed tensor reads only its valid region."""
        requested = call.arg("valid_shapes") or call.arg("shapes")
        valid = self.regions.window(call.arg("tensor"), call.arg("offsets"), requested,
                                    self.span)
        call.set_arg("valid_shapes", tuple(valid))  # type: ignore[arg-type]

    def lower_assemble(self, out: list[n.Stmt], call: n.Call) -> n.Var:
        """An assemble of a narrowed source: its valid region loaded and stored tile by tile
        (PyPTO's tile.store of the source tile); atomic=Add is carried by the stores."""
        target, source, offset = call.arg("target"), call.arg("source"), call.arg("offset")
        src_t: TensorType = source.type
        if not src_t.is_static:
            raise ShapeError(
                f"tensor.assemble of '{source.name}' with a valid region needs a static "
                f"source shape, but it is {list(src_t.shape)}",
                self.span, hint="slice a static window first", arch=self.ctx.arch.name,
            )
        shape = tuple(int(d) for d in src_t.shape)  # type: ignore[arg-type]
        plan = tiling.vector_plan(shape, src_t.dtype, [tiling.Operand(shape, src_t.dtype)],
                                  self.ctx.arch, self.vec_budget)
        lead = len(offset) - len(shape)

        def body(stmts, offsets, ext, carried):
            tile = self.load(stmts, source, offsets, ext, "Vec")
            at = list(offset[:lead]) + [combine("+", offset[lead + d], o, self.span)
                                        for d, o in enumerate(offsets)]
            return [self.store(stmts, tile, at, carried[0], call.arg("atomic"))]

        return self.tiles(out, shape, plan.extents, [target], body)[0]

    # ----------------------------------------------------------- vector ops
    def lower_vector(self, out: list[n.Stmt], call: n.Call, spec: OpSpec, *,
                     tile_spec: OpSpec | None = None, scratch: Sequence[Any] | None = None
                     ) -> n.Var:
        """One tile op per tile; ``tile_spec``/``scratch`` (the scratch ParamSpecs to
        allocate) for explicit tensor entries lowered to a tile op (default: the derived
        form's tile entry and its required scratch)."""
        tile_spec = tile_spec or tensor_forms.tile_entry(spec)
        assert tile_spec is not None
        result_t: TensorType = call.type  # type: ignore[assignment]
        tensors = [(p.name, call.arg(p.name)) for p in spec.params
                   if p.kind == "tensor" and isinstance(call.arg(p.name), n.Expr)]
        operands = [tiling.Operand(tuple(v.type.shape), v.type.dtype) for _, v in tensors]
        if scratch is None:
            scratch = [p for p in tensor_forms.scratch_params(tile_spec) if p.required]
        operands += [tiling.Operand(operands[0].shape, operands[0].dtype, scratch=True)
                     for _ in scratch]
        casts = tensor_forms.promotion_casts(tile_spec, dict(tensors))  # name -> dtype
        operands += [tiling.Operand(v.type.shape, casts[k], True) for k, v in tensors if k in casts]
        combine = tile_spec.partial_combine
        plan = tiling.vector_plan(tuple(result_t.shape), result_t.dtype, operands,
                                  self.ctx.arch, self.vec_budget,
                                  splittable=combine is not None)
        self.check_plan(call, plan)
        result = self.local(out, result_t)
        static = {p.name: call.arg(p.name) for p in spec.params if p.kind != "tensor"}

        def compute(stmts: list[n.Stmt], offsets: list[Index], ext: list[int]) -> n.Var:
            args: dict[str, Any] = dict(static)
            lead = None
            for (name, value), o in zip(tensors, operands):
                win = o.window(ext, plan.shape) if plan.kind != "whole" else o.shape
                offs = [off if w == e else 0 for off, w, e in zip(offsets, win, ext)] \
                    if plan.kind != "whole" else [0] * len(o.shape)
                args[name] = self.load(stmts, value, offs, win, "Vec", cast=casts.get(name))
                lead = lead or args[name]
            for p in scratch:
                args[p.name] = self.emit(stmts, "scratch", "tile.create",
                                         shape=tuple(lead.type.shape), dtype=lead.type.dtype,
                                         target_memory="Vec")
            return self.emit(stmts, "tv", tile_spec.name, **args)

        if plan.kind == "whole":
            tile = compute(out, [0] * len(plan.shape), list(plan.shape))
            return self.store(out, tile, [0] * result_t.rank, result)

        axis = plan.axis
        outer = [d for d in range(len(plan.shape)) if d != axis]

        def body(stmts, offsets, ext, carried):
            if axis is None or not plan.split:
                tile = compute(stmts, offsets, ext)
            else:
                tile = self._chunked(stmts, plan, offsets, ext, compute, combine)
            res_offsets = list(offsets)
            if axis is not None:
                res_offsets[axis] = 0
            return [self.store(stmts, tile, res_offsets, carried[0])]

        return self.tiles(out, plan.shape, plan.extents, [result], body, outer)[0]

    def _chunked(self, out, plan, offsets, ext, compute, combine: str) -> n.Var:
        """A reduction over its whole axis in chunks: the first chunk's result, then each
        further chunk's combined into it (loop-carried)."""
        axis = plan.axis
        acc: n.Var | None = None
        for seg in tiling.segments(plan.shape[axis], plan.extents[axis]):
            def step(stmts, offset, carried, seg=seg):
                offs = list(offsets)
                offs[axis] = offset
                chunk = list(ext)
                chunk[axis] = seg.extent
                part = compute(stmts, offs, chunk)
                if not carried:
                    return [part]
                return [self.emit(stmts, "acc", combine, lhs=carried[0], rhs=part)]

            if acc is None:
                first = tiling.Segment(seg.start, seg.start + seg.extent, seg.extent)
                acc = step(out, seg.start, [], first)[0]
                if seg.count == 1:
                    continue
                seg = tiling.Segment(seg.start + seg.extent, seg.stop, seg.extent)
            acc = self.loop(out, seg, [acc], step)[0]
        assert acc is not None
        return acc

    # ------------------------------------------------------------------ full
    def lower_full(self, out: list[n.Stmt], call: n.Call) -> n.Var:
        result_t: TensorType = call.type  # type: ignore[assignment]
        shape = tuple(result_t.shape)
        plan = tiling.vector_plan(shape, result_t.dtype, [tiling.Operand(shape, result_t.dtype)],
                                  self.ctx.arch, self.vec_budget)
        result = self.local(out, result_t)

        def body(stmts, offsets, ext, carried):
            tile = self.emit(stmts, "tf", "tile.full", shape=tuple(ext), dtype=result_t.dtype,
                             value=call.arg("value"))
            return [self.store(stmts, tile, offsets, carried[0])]

        return self.tiles(out, shape, plan.extents, [result], body)[0]

@hook("tensor.full")
def _lower_full(lw: _Lowering, out: list[n.Stmt], call: n.Call, spec: OpSpec) -> n.Var:
    return lw.lower_full(out, call)


def _has_user_tiles(fn: n.Function) -> bool:
    return any(isinstance(s, n.Assign) and any(is_tile(t.type) for t in s.targets)
               for s in iter_stmts(fn.body))
