# SPDX-License-Identifier: Apache-2.0
"""Loops and conditionals (docs/design/language.md §17), with carried values made explicit.

A name rebound inside a loop and defined before it is carried: the IR `For` gets
an iteration variable initialised from the outer value, the body ends with a
`Yield` of the next value, and the name refers to the loop's result afterwards.
Explicit `init_values=` / `pl.yield_` carry the same way.  An `if` merges the names
its arms rebind into `If.results`.  Names first bound inside a body are not visible
after it; using one says so.
"""

from __future__ import annotations

import ast
import builtins
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Expr, For, If, Stmt, Var, Yield
from pytest_pypto.ir.types import DynVar, ScalarType, TileType, Type
from pytest_pypto.language import loops, scalars
from pytest_pypto.language.annots import type_difference
from pytest_pypto.language.context import Unavailable, assigned_names
from pytest_pypto.language.surface import ITERATORS, DslFunction

if TYPE_CHECKING:
    from pytest_pypto.language.statements import BodyParser, YieldInfo


def _iterator(bp: BodyParser, node: ast.For) -> tuple[str, list[Any], dict[str, Any]]:
    ctx = bp.ctx
    it = node.iter
    ask = "for loops iterate over pl.range / pl.parallel / pl.unroll / pl.pipeline"
    if not isinstance(it, ast.Call):
        raise ctx.error(ParserSyntaxError, ask, it, hint="for i in pl.range(n): ...")
    if isinstance(it.func, ast.Name) and it.func.id not in bp.env:
        captured = ctx.namespace.get(it.func.id, getattr(builtins, it.func.id, None))
        if not isinstance(captured, DslFunction):
            raise ctx.error(
                ParserSyntaxError,
                f"{ask}, not {it.func.id}(...)",
                it,
                hint=f"for ... in pl.range({', '.join(ctx.text(a) for a in it.args)}):",
            )
    func = bp.ep.eval(it.func)
    if not (isinstance(func, DslFunction) and func.name in ITERATORS):
        raise ctx.error(ParserSyntaxError, ask, it, hint="for i in pl.range(n): ...")
    pos, kw = bp.ep.args_of(it)
    allowed = {"init_values"} | ({"stage"} if func.name == "pipeline" else set())
    for key, arg in kw.items():
        if key not in allowed:
            raise ctx.error(
                InvalidOperationError, f"pl.{func.name} got an unexpected keyword '{key}'", arg.node
            )
    if func.name == "unroll" and "init_values" in kw:
        raise ctx.error(
            InvalidOperationError,
            "pl.unroll does not take init_values (an unrolled loop carries nothing explicitly)",
            kw["init_values"].node,
            hint="use pl.range(..., init_values=...) instead",
        )
    if not 1 <= len(pos) <= 3:
        raise ctx.error(
            InvalidOperationError, f"pl.{func.name} takes (stop), (start, stop) or (start, stop, step)",
            it,
        )
    return func.name, [a for a in pos], {k: a for k, a in kw.items()}


def _bound(bp: BodyParser, kind: str, arg: Any) -> Expr:
    value, node = arg.value, arg.node
    if kind == "unroll" and not (isinstance(value, int) and not isinstance(value, bool)):
        raise bp.ctx.error(
            ParserTypeError, "pl.unroll bounds must be int constants", node,
            hint="use pl.range for run-time bounds",
        )
    expr = scalars.as_scalar_expr(value, bp.ctx.span(node))
    if expr is None or isinstance(value, bool) or not expr.type.dtype.is_int:  # type: ignore[union-attr]
        raise bp.ctx.error(
            ParserTypeError, f"loop bounds must be ints or integer Scalars, but got {value!r}", node
        )
    if isinstance(value, DynVar) or not scalars.is_number(value):
        return expr
    return scalars.make_const(value, span=bp.ctx.span(node))


def stmt_For(bp: BodyParser, node: ast.For) -> None:
    ctx = bp.ctx
    if node.orelse:
        raise ctx.error(ParserSyntaxError, "for ... else is not supported", node)
    it = node.iter
    if isinstance(it, ast.Call) and isinstance(it.func, ast.Attribute) and it.func.attr == "while_":
        target = bp.ep.eval(it.func)
        if isinstance(target, DslFunction) and target.name == "while_":
            loops.while_for(bp, node, it)
            return
    kind, pos, kw = _iterator(bp, node)
    bounds = [_bound(bp, kind, a) for a in pos]
    start, stop, step = (
        (scalars.make_const(0), bounds[0], scalars.make_const(1)) if len(bounds) == 1
        else (bounds[0], bounds[1], scalars.make_const(1)) if len(bounds) == 2
        else tuple(bounds)
    )
    if len(pos) == 3 and pos[2].value == 0:
        raise ctx.error(ParserTypeError, "loop step must not be 0", pos[2].node)
    attrs: dict[str, Any] = {}
    if kind == "pipeline":
        stage = kw.get("stage")
        if stage is None or not isinstance(stage.value, int) or isinstance(stage.value, bool) \
                or stage.value < 1:
            raise ctx.error(
                InvalidOperationError, "pl.pipeline needs stage=F with F a positive int literal",
                stage.node if stage else node.iter,
            )
        attrs["stage"] = stage.value

    # targets: `i` or `i, (a, b)` with init_values
    explicit_names: list[str] = []
    inits: list[Any] = []
    if "init_values" in kw:
        init_arg = kw["init_values"]
        inits = list(init_arg.value) if isinstance(init_arg.value, (tuple, list)) else [init_arg.value]
        if not (isinstance(node.target, ast.Tuple) and len(node.target.elts) == 2):
            raise ctx.error(
                ParserSyntaxError, "a loop with init_values is written for i, (a, b) in ...",
                node.target,
            )
        loop_target, carried_target = node.target.elts
        explicit_names = bp.target_names(carried_target)
        if len(explicit_names) != len(inits):
            raise ctx.error(
                ParserTypeError,
                f"init_values has {len(inits)} values but the loop names {len(explicit_names)}",
                node.target,
            )
        init_nodes = [init_arg.node] * len(inits)
    else:
        loop_target = node.target
        init_nodes = []
    if not isinstance(loop_target, ast.Name):
        raise ctx.error(ParserSyntaxError, "the loop variable must be a name", loop_target)

    body_names = assigned_names(node.body)
    implicit = [
        n for n in body_names
        if n in bp.env and not isinstance(bp.env[n], Unavailable)
        and n not in explicit_names and n != loop_target.id
    ]
    if ctx.strict_ssa and implicit:
        raise ctx.error(
            ParserSyntaxError,
            f"'{implicit[0]}' is rebound inside the loop; strict_ssa=True rejects rebinding",
            node,
            hint="carry it explicitly: for i, (x,) in pl.range(..., init_values=(x0,)) with "
            "x_next = pl.yield_(...)",
        )
    # PyPTO: a plain loop's body names leak; the ones read later are carried out.
    escapes = [] if "init_values" in kw else loops.escaping(
        bp, node.body, {loop_target.id, *implicit})

    loop_var = Var(ctx.namer.fresh(loop_target.id), type=ScalarType(scalars.dtypes.INDEX),
                   span=ctx.span(loop_target))
    names = explicit_names + implicit
    init_exprs = [bp.materialize(v, n) for v, n in zip(inits, init_nodes)]
    init_exprs += [bp.materialize(bp.env[n], node) for n in implicit]
    iter_vars = [
        Var(ctx.namer.fresh(n), type=e.type, span=ctx.span(node)) for n, e in zip(names, init_exprs)
    ]
    placeholders = loops.escape_vars(bp, escapes, node)
    inherited = [bp.env.get(n) for n in escapes]
    before = dict(bp.env)
    body_env = dict(bp.env)
    body_env[loop_target.id] = loop_var
    body_env.update(zip(names, iter_vars))
    body_env.update(zip(escapes, placeholders))
    body: list[Stmt] = []
    child = bp.child(body_env, body)
    frame = loops.LoopFrame(kind, names + escapes, iter_vars + [p.var for p in placeholders])
    ctx.loops.append(frame)
    try:
        yinfo = child.block(node.body, allow_yield=True)
    finally:
        ctx.loops.pop()
    if yinfo is not None and not explicit_names:
        raise ctx.error(
            ParserSyntaxError, "pl.yield_ in a loop without init_values", yinfo.node,
            hint="add init_values=(...) to the loop",
        )
    if yinfo is not None and yinfo.targets is None:
        raise ctx.error(
            ParserSyntaxError,
            "Loop with init_values requires an assignment-form pl.yield_(...) - the LHS "
            "supplies the post-loop binding name",
            yinfo.node,
            hint="write x_next = pl.yield_(updated) and refer to x_next after the loop",
        )
    if yinfo is not None and len(yinfo.values) != len(explicit_names):
        raise ctx.error(
            ParserTypeError,
            f"pl.yield_ yields {len(yinfo.values)} values, but the loop carries "
            f"{len(explicit_names)}",
            yinfo.node,
        )
    names, iter_vars, init_exprs, yields = loops.finish_carried(
        bp, child, node, names, iter_vars, init_exprs, yinfo, escapes, placeholders,
        inherited, before, frame)
    body.append(Yield(tuple(yields), span=ctx.span(yinfo.node if yinfo else node)))
    loops.fill_jumps(ctx, frame, names, iter_vars)

    out_names = list(yinfo.targets) if (yinfo and yinfo.targets) else [f"{n}_out" for n in explicit_names]
    out_names += names[len(explicit_names):]
    results = tuple(
        Var(ctx.namer.fresh(n), type=v.type, span=ctx.span(node)) for n, v in zip(out_names, iter_vars)
    )
    if loop_target.id not in bp.env:
        bp.env[loop_target.id] = Unavailable(
            f"loop variable '{loop_target.id}' is visible only inside its loop "
            f"(line {ctx.source.line_of(node)})",
            hint="carry the value you need out of the loop in a variable defined before it",
        )
    bp.out.append(
        For(loop_var, start, stop, step, body, carried=tuple(zip(iter_vars, init_exprs)),
            results=results, kind=kind, attrs=attrs, span=ctx.span(node))
    )
    loops.bind_results(bp, node, body_names, names, out_names, results, explicit_names, yinfo)


def _merge_type(a: Type | None, b: Type | None) -> Type | None:
    if isinstance(a, TileType) and isinstance(b, TileType) and a != b:
        valid = tuple(x if x == y else None for x, y in zip(a.valid or (), b.valid or ()))
        return a.with_(valid=valid, space=a.space if a.space == b.space else None)
    return a


def stmt_If(bp: BodyParser, node: ast.If) -> None:
    ctx = bp.ctx
    cond = bp.ep.eval(node.test)
    if not isinstance(cond, Expr):
        _constant_if(bp, node, bool(cond))
        return
    if not (isinstance(cond.type, ScalarType) and cond.type.dtype.kind == "bool"):
        raise ctx.error(
            ParserTypeError,
            "an if condition must be a Scalar[BOOL] (a comparison) or a constant",
            node.test,
            hint=f"compare it, e.g. if {ctx.text(node.test)} != 0:",
        )
    arms: list[tuple[dict[str, Any], list[Stmt], YieldInfo | None, BodyParser]] = []
    for stmts in (node.body, node.orelse):
        env = dict(bp.env)
        out: list[Stmt] = []
        child = bp.child(env, out)
        yinfo = child.block(stmts, allow_yield=True) if stmts else None
        arms.append((env, out, yinfo, child))
    (then_env, then_out, then_y, then_bp), (else_env, else_out, else_y, else_bp) = arms
    if then_bp.terminated and else_bp.terminated:  # both arms break / continue
        bp.out.append(If(cond, then_out, else_out, span=ctx.span(node)))
        bp.terminated = True
        return
    # An arm ending in break/continue never reaches the merge: it contributes the
    # values from before the if (its Yield, after the jump, never runs).
    if then_bp.terminated:
        then_env = dict(bp.env)
    if else_bp.terminated:
        else_env = dict(bp.env)
    if (then_y is None) != (else_y is None):
        bad = then_y or else_y
        raise ctx.error(
            ParserSyntaxError,
            "pl.yield_ must appear in both arms of the if, with the same targets",
            bad.node if bad else node,
        )
    explicit: list[str] = []
    then_vals: list[Expr] = []
    else_vals: list[Expr] = []
    if then_y and else_y:
        if then_y.targets is None or then_y.targets != else_y.targets:
            raise ctx.error(
                ParserTypeError,
                "both arms must yield into the same names (r = pl.yield_(v))",
                else_y.node,
            )
        explicit = list(then_y.targets)
        then_vals, else_vals = list(then_y.values), list(else_y.values)
    candidates = [
        n for n in assigned_names(node.body + node.orelse)
        if n not in explicit
    ]
    merged: list[str] = []
    for n in candidates:
        t, e = loops.value_of(then_env.get(n)), loops.value_of(else_env.get(n))
        in_both = n in then_env and n in else_env and not isinstance(t, Unavailable) \
            and not isinstance(e, Unavailable)
        if in_both:
            loops.settle_types(t, e)
        if not in_both:
            bp.env[n] = Unavailable(
                f"'{n}' is defined in only one arm of the if at line {ctx.source.line_of(node)}",
                hint="assign it before the if, or in both arms",
            )
            continue
        if t is e:
            continue
        then_vals.append(then_bp.materialize(t, then_bp.last_bound.get(n, node)))
        else_vals.append(else_bp.materialize(e, else_bp.last_bound.get(n, node)))
        merged.append(n)
    names = explicit + merged
    results = []
    for i, n in enumerate(names):
        diff = type_difference(then_vals[i].type, else_vals[i].type)
        if diff:
            message = f"'{n}' has different types in the two arms of the if ({diff})"
            if n in explicit:
                raise ctx.error(ParserTypeError, message, else_y.node if else_y else node)
            bp.env[n] = Unavailable(message, hint="give both arms the same type, or use "
                                    "different names")
            continue
        results.append((n, i, _merge_type(then_vals[i].type, else_vals[i].type)))
    keep = [i for _, i, _ in results]
    result_vars = []
    for n, _, t in results:
        if n not in explicit:
            bp.check_rebind(n, node)
        var = Var(ctx.namer.fresh(n), type=t, span=ctx.span(node))
        bp.env[n] = var
        bp.last_bound[n] = node
        result_vars.append(var)
    if result_vars:
        then_out.append(Yield(tuple(then_vals[i] for i in keep), span=ctx.span(node)))
        else_out.append(Yield(tuple(else_vals[i] for i in keep), span=ctx.span(node)))
    bp.out.append(If(cond, then_out, else_out, results=tuple(result_vars), span=ctx.span(node)))


def _constant_if(bp: BodyParser, node: ast.If, taken: bool) -> None:
    """A parse-time condition: both arms are checked, only the taken one is emitted."""
    skipped = node.orelse if taken else node.body
    chosen = node.body if taken else node.orelse
    scratch = bp.child(dict(bp.env), [])
    scratch.block(skipped, allow_yield=True)
    yinfo = bp.block(chosen, allow_yield=True)
    if yinfo is not None and yinfo.targets:
        for name, value in zip(yinfo.targets, yinfo.values):
            bp.bind(name, value, yinfo.node)
