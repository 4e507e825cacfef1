# SPDX-License-Identifier: Apache-2.0
"""Loop exits as PyPTO accepts them: escaping values, break/continue, while loops.

* **Escaping values** (PyPTO's ConvertToSSA "escaping variable promotion"): a name first
  bound inside a plain `for` (no `init_values`) or a Python `while`, and read after the
  loop, is carried out of it.  Its initial value (what a zero-trip loop leaves) is, for
  a tensor, an `Out`/`InOut` parameter of the same type, else the earliest tensor of
  that type bound before the loop; a Scalar starts at 0 and a tile as a fresh poisoned
  tile (PyPTO leaves them undefined).  Loops with `init_values` and `pl.while_` leak nothing: only their
  `pl.yield_` targets are visible after them.
* **break / continue** (sequential loops only: not `pl.parallel` / `pl.unroll`): a
  `LoopJump` carrying the current values of the loop's carried names.  A block ends at
  one; an `if` arm that ends in one contributes nothing to the merge after the `if`.
* **while**: `while cond:` and `for (x,) in pl.while_(init_values=(...)):` whose first
  statement is `pl.cond(cond)`.  The condition is a carried BOOL (IR `While`), computed
  before the loop and again before each next iteration (end of body, `continue`).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import Direction, MemorySpace, ScalarType, TensorType, TileType, Type
from pytest_pypto.language import scalars
from pytest_pypto.language.annots import type_difference
from pytest_pypto.language.calls import Arg, build_call
from pytest_pypto.language.context import FunctionContext, Unavailable, assigned_names
from pytest_pypto.language.surface import DslFunction

if TYPE_CHECKING:
    from pytest_pypto.language.statements import BodyParser, YieldInfo


@dataclass
class LoopEscape(Unavailable):
    """A name a loop carries out although it is bound only inside: reading it before
    this iteration binds it is an error; merges and exits see its iteration variable."""

    var: n.Var | None = None


@dataclass
class LoopFrame:
    """One loop being parsed: what `break` / `continue` must carry."""

    kind: str  # "range", "parallel", "unroll", "pipeline", "while"
    names: list[str]
    iter_vars: list[n.Var]
    cond: Any = None  # while: (condition AST, names bound to the yield values) evaluator
    jumps: list[tuple[n.LoopJump, dict[str, n.Expr | None], ast.AST]] = field(
        default_factory=list)


def value_of(value: Any) -> Any:
    """An env value as merges and exits see it (an escaping name: its iteration var)."""
    return value.var if isinstance(value, LoopEscape) else value


def settle_types(a: Any, b: Any) -> None:
    """An escaping name's iteration variable takes the type the loop first gives it."""
    for x, y in ((a, b), (b, a)):
        if isinstance(x, n.Var) and x.type is None and isinstance(y, n.Expr) and y.type:
            x.type = y.type


# ------------------------------------------------------------ escaping values


def used_later(ctx: FunctionContext, name: str) -> bool:
    """Whether a statement after the one being parsed reads ``name`` before assigning it
    (PyPTO's order-aware forward use: a name only re-assigned after the loop is no read).

    The levels are scanned from the innermost block outwards; an assignment anywhere in
    a later statement (also inside its branches) ends the search, as ConvertToSSA's
    live-in analysis does."""
    for block, index in reversed(ctx.continuations):
        reads, kills = _block_uses(ctx, block)
        for i in range(index + 1, len(block)):
            if name in reads[i]:
                return True
            if name in kills[i]:
                return False
    return False


def _block_uses(ctx: FunctionContext, block: list[ast.stmt]
                ) -> tuple[list[set[str]], list[set[str]]]:
    """Per statement of ``block``: the names it reads before assigning them, and the
    names it assigns anywhere (cached per block)."""
    cached = ctx.last_loads.get(id(block))
    if cached is None or cached[0] is not block:
        table = ([_live_in(s) for s in block], [_kills(s) for s in block])
        cached = ctx.last_loads[id(block)] = (block, table)
    return cached[1]


def _loads(*nodes: ast.AST | None) -> set[str]:
    found: set[str] = set()
    for top in nodes:
        if top is None:
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
                found.add(node.id)
    return found


def _kills(stmt: ast.stmt) -> set[str]:
    names = set(assigned_names([stmt]))
    if isinstance(stmt, ast.For):
        names |= {t.id for t in ast.walk(stmt.target) if isinstance(t, ast.Name)}
    return names


def _seq_live_in(stmts: list[ast.stmt]) -> set[str]:
    live: set[str] = set()
    defined: set[str] = set()
    for stmt in stmts:
        live |= _live_in(stmt) - defined
        defined |= _kills(stmt)
    return live


def _live_in(stmt: ast.stmt) -> set[str]:
    """The names ``stmt`` reads before it assigns them."""
    if isinstance(stmt, ast.For):
        bound = {t.id for t in ast.walk(stmt.target) if isinstance(t, ast.Name)}
        return _loads(stmt.iter) | ((_seq_live_in(stmt.body) | _seq_live_in(stmt.orelse))
                                    - bound)
    if isinstance(stmt, ast.While):
        return _loads(stmt.test) | _seq_live_in(stmt.body) | _seq_live_in(stmt.orelse)
    if isinstance(stmt, ast.If):
        return _loads(stmt.test) | _seq_live_in(stmt.body) | _seq_live_in(stmt.orelse)
    if isinstance(stmt, ast.With):
        return _loads(*stmt.items) | _seq_live_in(stmt.body)
    found = _loads(stmt)
    if isinstance(stmt, ast.AugAssign) and isinstance(stmt.target, ast.Name):
        found.add(stmt.target.id)  # `x += 1` reads x too
    return found


def escaping(bp: BodyParser, body: list[ast.stmt], exclude: set[str]) -> list[str]:
    """Names ``body`` binds that exist only inside it and are needed after it."""
    found = []
    for name in assigned_names(body):
        if name in exclude:
            continue
        current = bp.env.get(name)
        if name in bp.env and not isinstance(current, Unavailable):
            continue  # defined before the loop: an ordinary carried value
        if isinstance(current, LoopEscape) or used_later(bp.ctx, name):
            found.append(name)
    return found


def escape_vars(bp: BodyParser, names: list[str], node: ast.AST) -> list[LoopEscape]:
    """The body-env placeholders of escaping names (iteration variables typed later)."""
    line = bp.ctx.source.line_of(node)
    return [
        LoopEscape(
            f"'{name}' is read in the loop at line {line} before this iteration assigns it",
            hint=f"assign '{name}' before the loop so that the loop carries it",
            var=n.Var(bp.ctx.namer.fresh(name), type=None, span=bp.ctx.span(node)),
        )
        for name in names
    ]


def escape_init(bp: BodyParser, before: dict[str, Any], name: str, t: Type,
                inherited: Any, node: ast.AST) -> n.Expr:
    """The value an escaping name has when the loop does not assign it (PyPTO's rule)."""
    if isinstance(inherited, LoopEscape):  # an outer loop carries it too
        settle_types(inherited.var, n.Var("", type=t))
        return inherited.var  # type: ignore[return-value]
    header = getattr(bp.ctx.program, "headers", {}).get(bp.ctx.function_name)
    outs = [p.name for p in getattr(header, "params", ()) if p.direction
            in (Direction.OUT, Direction.INOUT)]
    # PyPTO matches by type identity, which in practice a stored tensor shares with the
    # tensor it was stored into (else it uses an undefined placeholder).
    candidates = [before.get(p) for p in outs] + list(before.values())
    for value in candidates:
        if isinstance(t, TensorType) and isinstance(value, n.Var) and value.type == t:
            return value
    # The placeholder, made concrete: a zero Scalar or a fresh (poisoned) tile.
    if isinstance(t, ScalarType):
        return scalars.make_const(False if t.dtype.kind == "bool" else
                                  0.0 if t.dtype.is_float else 0, t.dtype, bp.ctx.span(node))
    if isinstance(t, TileType):
        bound = {"shape": Arg(t.shape, node), "dtype": Arg(t.dtype, node)}
        if t.space:
            bound["target_memory"] = Arg(MemorySpace(t.space), node)
        call = build_call(bp.ctx, REGISTRY["tile.create"], "pl.create_tile", bound, node)
        return bp.materialize(call, node)
    raise bp.ctx.error(
        ParserTypeError,
        f"'{name}' is assigned inside the loop at line {bp.ctx.source.line_of(node)} and "
        f"read after it, but no value of its type exists before the loop to stand for it "
        "when the loop does not run",
        node,
        hint=f"define '{name}' before the loop so that the loop carries it",
    )


# ------------------------------------------------------------ break / continue


def jump(bp: BodyParser, stmt: ast.stmt) -> None:
    """`break` / `continue` in the innermost loop."""
    ctx = bp.ctx
    word = "break" if isinstance(stmt, ast.Break) else "continue"
    if not ctx.loops:
        raise ctx.error(InvalidOperationError, f"'{word}' outside loop", stmt,
                        hint=f"'{word}' can only be used inside a for or while loop")
    frame: LoopFrame = ctx.loops[-1]
    if frame.kind in ("parallel", "unroll"):
        what = "parallel" if frame.kind == "parallel" else "unrolled"
        raise ctx.error(
            InvalidOperationError, f"'{word}' not supported in {what} loops", stmt,
            hint=f"'{word}' can only be used in sequential (pl.range) or while loops",
        )
    values: dict[str, n.Expr | None] = {}
    for name in frame.names:
        current = value_of(bp.env.get(name))
        values[name] = None if current is None or isinstance(current, Unavailable) \
            else bp.materialize(current, stmt)
    if frame.cond is not None:
        values["\0cond"] = (scalars.make_const(False, span=ctx.span(stmt)) if word == "break"
                            else frame.cond(bp, {}, stmt))
    node = (n.Break if word == "break" else n.Continue)(span=ctx.span(stmt))
    frame.jumps.append((node, values, stmt))
    bp.out.append(node)
    bp.terminated = True


def fill_jumps(ctx: FunctionContext, frame: LoopFrame, names: list[str],
               iter_vars: list[n.Var]) -> None:
    """Give each break/continue its values, in the loop's final carried order."""
    for node, values, stmt in frame.jumps:
        out = []
        for name, var in zip(names, iter_vars):
            value = values.get(name)
            if value is None:
                raise ctx.error(
                    ParserTypeError,
                    f"'{name}' has no value at this {type(node).__name__.lower()}, but the "
                    "loop carries it",
                    stmt,
                    hint=f"assign '{name}' before the loop",
                )
            settle_types(var, value)
            diff = type_difference(var.type, value.type)
            if diff:
                raise ctx.error(
                    ParserTypeError,
                    f"loop-carried value '{name}' changes type across iterations ({diff})",
                    stmt,
                    hint="a carried value keeps one kind, dtype, shape and memory space",
                )
            out.append(value)
        if "\0cond" in values:
            out.append(values["\0cond"])  # type: ignore[arg-type]
        node.values = tuple(out)


# ------------------------------------------------------------------ while


def _bool_cond(bp: BodyParser, value: Any, node: ast.AST) -> n.Expr:
    if scalars.is_number(value):
        return scalars.make_const(bool(value), span=bp.ctx.span(node))
    if not (isinstance(value, n.Expr) and isinstance(value.type, ScalarType)
            and value.type.dtype.kind == "bool"):
        raise bp.ctx.error(
            ParserTypeError,
            "a while condition must be a Scalar[BOOL] (a comparison) or a constant",
            node,
            hint=f"compare it, e.g. {bp.ctx.text(node)} != 0",
        )
    return bp.materialize(value, node)


def _evaluator(test: ast.expr) -> Any:
    """A function computing the condition in a body parser's current env (plus overrides)."""
    def evaluate(bp: BodyParser, overrides: dict[str, Any], node: ast.AST) -> n.Expr:
        saved = {k: bp.env.get(k) for k in overrides}
        had = {k for k in overrides if k in bp.env}
        bp.env.update(overrides)
        try:
            return _bool_cond(bp, bp.ep.eval(test), test)
        finally:
            for k, v in saved.items():
                if k in had:
                    bp.env[k] = v
                else:
                    bp.env.pop(k, None)
    return evaluate


def stmt_While(bp: BodyParser, node: ast.While) -> None:
    """A Python `while cond:` loop (PyPTO's natural while: its body's names leak)."""
    ctx = bp.ctx
    if node.orelse:
        raise ctx.error(ParserSyntaxError, "while ... else is not supported", node)
    evaluate = _evaluator(node.test)
    first = evaluate(bp, {}, node.test)
    names = assigned_names(node.body)
    carried = [m for m in names if m in bp.env and not isinstance(bp.env[m], Unavailable)]
    if ctx.strict_ssa and carried:
        raise ctx.error(
            ParserSyntaxError,
            f"'{carried[0]}' is rebound inside the loop; strict_ssa=True rejects rebinding",
            node,
            hint="use for (x,) in pl.while_(init_values=(x0,)) with x_next = pl.yield_(...)",
        )
    escapes = escaping(bp, node.body, set(carried))
    build_loop(bp, node, node.body, "while", carried, [], escapes, cond=(evaluate, first))


def while_for(bp: BodyParser, node: ast.For, call: ast.Call) -> None:
    """`for (x, y) in pl.while_(init_values=(x0, y0)):` with `pl.cond(...)` first."""
    ctx = bp.ctx
    if node.orelse:
        raise ctx.error(ParserSyntaxError, "for ... else is not supported", node)
    if call.args:
        raise ctx.error(
            ParserSyntaxError, "pl.while_() takes no positional arguments", call,
            hint="Use: pl.while_(init_values=(...,)) with pl.cond(condition) as first "
            "statement in body",
        )
    pos, kw = bp.ep.args_of(call)
    for key, arg in kw.items():
        if key != "init_values":
            raise ctx.error(InvalidOperationError,
                            f"pl.while_ got an unexpected keyword '{key}'", arg.node)
    init_arg = kw.get("init_values")
    inits = [] if init_arg is None else (
        list(init_arg.value) if isinstance(init_arg.value, (tuple, list)) else None)
    if inits is None:
        raise ctx.error(ParserSyntaxError, "init_values must be a tuple or list",
                        init_arg.node if init_arg else call)
    if not inits:
        raise ctx.error(ParserSyntaxError, "pl.while_() requires init_values", call,
                        hint="Provide init_values: pl.while_(init_values=(val1, val2))")
    if not isinstance(node.target, ast.Tuple):
        raise ctx.error(ParserSyntaxError, "While loop target must be a tuple for pl.while_()",
                        node.target, hint="Use: for (var1, var2) in pl.while_(init_values=(...,))")
    targets = bp.target_names(node.target)
    if len(targets) != len(inits):
        raise ctx.error(
            ParserSyntaxError,
            f"Mismatch: {len(targets)} iter_args but {len(inits)} init_values", node.target,
            hint=f"Provide exactly {len(inits)} iteration variable(s) to match init_values",
        )
    if not node.body or not is_cond(bp, node.body[0]):
        raise ctx.error(
            ParserSyntaxError, "First statement in pl.while_() body must be pl.cond(condition)",
            node.body[0] if node.body else node, hint="Add pl.cond(condition) as first statement",
        )
    for later in node.body[1:]:
        if is_cond(bp, later):
            raise ctx.error(
                ParserSyntaxError,
                "pl.cond() can only be the first statement in a pl.while_() loop body", later,
                hint="Remove this pl.cond() - condition is already specified at the start",
            )
    cond_call = node.body[0].value  # type: ignore[attr-defined]
    if len(cond_call.args) != 1 or cond_call.keywords:
        raise ctx.error(InvalidOperationError, "pl.cond takes one condition", cond_call)
    init_exprs = [bp.materialize(v, init_arg.node) for v in inits]  # type: ignore[union-attr]
    evaluate = _evaluator(cond_call.args[0])
    first = evaluate(bp, dict(zip(targets, init_exprs)), cond_call)
    body = node.body[1:]
    carried = [m for m in assigned_names(body)
               if m in bp.env and not isinstance(bp.env[m], Unavailable) and m not in targets]
    build_loop(bp, node, body, "while", carried, list(zip(targets, init_exprs)), [],
               cond=(evaluate, first))


def is_cond(bp: BodyParser, stmt: ast.stmt) -> bool:
    call = stmt.value if isinstance(stmt, ast.Expr) else None
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
    if name != "cond":
        return False
    target = bp.ep.eval(func)
    return isinstance(target, DslFunction) and target.name == "cond"


# ------------------------------------------------------------- loop assembly


def finish_carried(
    bp: BodyParser, child: BodyParser, node: ast.stmt, names: list[str], iter_vars: list[n.Var],
    inits: list[n.Expr], yinfo: YieldInfo | None, escapes: list[str],
    placeholders: list[Any], inherited: list[Any], before: dict[str, Any], frame: Any,
) -> tuple[list[str], list[n.Var], list[n.Expr], list[n.Expr]]:
    """The next values of a loop's carried names (explicit, implicit, then escaping ones
    that got a value), type-checked; returns the final (names, iter vars, inits, yields)."""
    ctx = bp.ctx
    n_explicit = len(yinfo.values) if yinfo else 0
    explicit = names[:n_explicit] if yinfo else []
    yields: list[n.Expr] = list(yinfo.values) if yinfo else []
    for name in names[len(yields):]:
        value = value_of(child.env.get(name))
        if isinstance(value, Unavailable) or value is None:
            raise ctx.error(
                ParserTypeError,
                f"loop-carried value '{name}' has no value at the end of the loop body",
                node, hint=f"assign '{name}' on every path through the loop",
            )
        yields.append(child.materialize(value, child.last_bound.get(name, node)))
    for name, holder, outer in zip(escapes, placeholders, inherited):
        value = value_of(child.env.get(name))
        typed = value.type if isinstance(value, n.Expr) else jump_type(frame, name)
        if isinstance(value, Unavailable) or value is None or typed is None:
            continue  # never given a value on the way out: stays invisible after the loop
        settle_types(holder.var, value if isinstance(value, n.Expr) else None)
        holder.var.type = holder.var.type or typed
        names = names + [name]
        iter_vars = iter_vars + [holder.var]
        inits = inits + [escape_init(bp, before, name, holder.var.type, outer, node)]
        yields.append(child.materialize(value, child.last_bound.get(name, node)))
    for name, var, value in zip(names, iter_vars, yields):
        settle_types(var, value)
        diff = type_difference(var.type, value.type)
        if diff:
            where = yinfo.node if name in explicit and yinfo else child.last_bound.get(name, node)
            raise ctx.error(
                ParserTypeError,
                f"loop-carried value '{name}' changes type across iterations ({diff})",
                where,
                hint="a carried value keeps one kind, dtype, shape and memory space",
            )
    return names, iter_vars, inits, yields


def build_loop(bp: BodyParser, node: ast.stmt, body_stmts: list[ast.stmt], kind: str,
               implicit: list[str], explicit: list[tuple[str, n.Expr]], escapes: list[str],
               cond: tuple[Any, n.Expr]) -> None:
    """Parse a while body and append the `While` (carried: explicit, implicit, escaping,
    then the condition flag)."""
    ctx = bp.ctx
    evaluate, first = cond
    explicit_names = [m for m, _ in explicit]
    names = explicit_names + implicit
    inits: list[n.Expr] = [e for _, e in explicit]
    inits += [bp.materialize(bp.env[m], node) for m in implicit]
    iter_vars = [n.Var(ctx.namer.fresh(m), type=e.type, span=ctx.span(node))
                 for m, e in zip(names, inits)]
    placeholders = escape_vars(bp, escapes, node)
    inherited = [bp.env.get(m) for m in escapes]
    before = dict(bp.env)
    body_env = dict(bp.env)
    body_env.update(zip(names, iter_vars))
    body_env.update(zip(escapes, placeholders))
    flag = n.Var(ctx.namer.fresh("cond"), type=ScalarType(scalars.dtypes.BOOL),
                 span=ctx.span(node))
    frame = LoopFrame(kind, names + escapes, iter_vars + [p.var for p in placeholders],
                      cond=lambda child, over, where: evaluate(child, over, where))
    body: list[n.Stmt] = []
    child = bp.child(body_env, body)
    ctx.loops.append(frame)
    try:
        yinfo = child.block(body_stmts, allow_yield=True)
    finally:
        ctx.loops.pop()
    if yinfo is not None and not explicit_names:
        raise ctx.error(ParserSyntaxError, "pl.yield_ in a while loop without init_values",
                        yinfo.node, hint="use for (x,) in pl.while_(init_values=(x0,))")
    if yinfo is not None and len(yinfo.values) != len(explicit_names):
        raise ctx.error(
            ParserTypeError,
            f"pl.yield_ yields {len(yinfo.values)} values, but the loop carries "
            f"{len(explicit_names)}", yinfo.node,
        )
    next_values = dict(zip(explicit_names, yinfo.values)) if yinfo else {}
    done = finish_carried(bp, child, node, names, iter_vars, inits, yinfo, escapes,
                          placeholders, inherited, before, frame)
    names, iter_vars, inits, yields = done
    if not child.terminated:
        yields.append(evaluate(child, next_values, node))
    else:
        yields.append(scalars.make_const(False, span=ctx.span(node)))
    body.append(n.Yield(tuple(yields), span=ctx.span(yinfo.node if yinfo else node)))
    fill_jumps(ctx, frame, names, iter_vars)
    carried = tuple(zip(iter_vars + [flag], inits + [first]))
    out_names = (list(yinfo.targets) if (yinfo and yinfo.targets)
                 else [f"{m}_out" for m in explicit_names]) + names[len(explicit_names):]
    results = tuple(n.Var(ctx.namer.fresh(m), type=v.type, span=ctx.span(node))
                    for m, v in zip(out_names + ["cond_out"], iter_vars + [flag]))
    zero = scalars.make_const(0)
    bp.out.append(n.While(n.Var(ctx.namer.fresh("_while"), type=ScalarType(scalars.dtypes.INDEX)),
                          zero, zero, scalars.make_const(1), body, carried=carried,
                          results=results, kind="while", cond=flag, span=ctx.span(node)))
    bind_results(bp, node, assigned_names(body_stmts), names, out_names, results,
                 explicit_names, yinfo)


def bind_results(bp: BodyParser, node: ast.stmt, body_names: list[str], names: list[str],
                 out_names: list[str], results: tuple[n.Var, ...], explicit: list[str],
                 yinfo: Any) -> None:
    """After the loop: carried names and yield targets see the results; other names bound
    only inside are not visible."""
    ctx = bp.ctx
    for m in body_names:
        if m not in bp.env or isinstance(bp.env[m], Unavailable):
            bp.env[m] = Unavailable(
                f"'{m}' is defined inside the loop at line {ctx.source.line_of(node)} and is "
                "not visible after it",
                hint="define it before the loop so that the loop carries it",
            )
    carried = set(names[len(explicit):])
    for m, r in zip(out_names, results):
        if m in carried or (yinfo is not None and yinfo.targets is not None):
            if m not in carried:
                bp.check_rebind(m, node)
            bp.env[m] = r
            bp.last_bound[m] = node


def jump_type(frame: LoopFrame, name: str) -> Type | None:
    """The type a break/continue gives ``name`` (for a value only a jump carries out)."""
    for _, values, _ in frame.jumps:
        value = values.get(name)
        if value is not None and value.type is not None:
            return value.type
    return None
