# SPDX-License-Identifier: Apache-2.0
"""Explicit scheduling in orchestration code (docs/design/scheduling.md).

* `with pl.manual_scope():` parses its body in place; every task submitted inside is
  marked manual (the runtime derives no dependencies for it, §1);
* `out, tid = pl.submit(self.kernel, *args, deps=[...], predicate=...)` and
  `pl.spmd_submit(..., core_num=n)`: a kernel call that also yields its TaskId (§2);
* `deps=[...]` entries are TaskIds (a Scalar[pl.TASK_ID], an Array of them, or the
  literal None, which adds nothing); a tensor there is an error at its line (§2);
* `with pl.at(..., deps=[...]) as tid` / `with pl.spmd(n, deps=..., predicate=...) as tid`
  attach the same to the region's task (language/outline.py, launch.py);
* `pl.system.task_dummy(deps=[...])`: a dependency-only task and its TaskId (§3);
* `predicate=(t[i, j] OP k)`: one comparison of one tensor element with an int
  literal, evaluated when the task is dispatched; false skips the kernel (§4).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.dtypes import TASK_ID
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Assign, Call, Const, Expr, ExprStmt, FuncCall, Stmt, Var
from pytest_pypto.ir.types import ArrayType, ScalarType, TensorType, TupleType
from pytest_pypto.language import scalars, surface
from pytest_pypto.language.calls import Arg

if TYPE_CHECKING:
    from pytest_pypto.language.expressions import ExprParser
    from pytest_pypto.language.statements import BodyParser

TASK_TYPE = ScalarType(TASK_ID)
_SUBMIT_KEYWORDS = ("deps", "predicate", "allow_early_resolve", "core_num", "sync_start",
                    "dumps")
_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Gt: ">", ast.Lt: "<", ast.GtE: ">=", ast.LtE: "<="}
_MIRROR = {"==": "==", "!=": "!=", ">": "<", "<": ">", ">=": "<=", "<=": ">="}


def invalid_task_id(span: Any) -> Const:
    """The literal None where a TaskId is expected: no producer (adds no dependency)."""
    return Const(-1, type=TASK_TYPE, span=span)


def in_orchestration(ctx: Any) -> bool:
    """Whether ``ctx``'s function submits tasks (where a TaskId, and None as one, exist)."""
    return ctx.program.headers[ctx.function_name].kind in ("Orchestration", "Opaque")


def is_task_id(value: Any) -> bool:
    t = getattr(value, "type", None)
    return isinstance(t, (ScalarType, ArrayType)) and t.dtype is TASK_ID


# ----------------------------------------------------------------- manual scope


def is_manual_scope(bp: BodyParser, stmt: ast.With) -> bool:
    """Whether ``stmt`` is a runtime scope: `pl.manual_scope()` or `pl.scope(...)`."""
    expr = stmt.items[0].context_expr
    func = expr.func if isinstance(expr, ast.Call) else expr
    try:
        target = bp.ep.eval(func)
    except Exception:  # noqa: BLE001 - not ours: region_kind reports it as before
        return False
    return target is surface.manual_scope or target is surface.scope


def _scope_mode(bp: BodyParser, call: ast.Call) -> surface.ScopeMode:
    """The mode of `pl.scope()` / `pl.scope(mode)` / `pl.scope(mode=...)`."""
    ctx = bp.ctx
    given = list(call.args) + [k.value for k in call.keywords if k.arg == "mode"]
    if len(given) > 1 or any(k.arg != "mode" for k in call.keywords):
        raise ctx.error(ParserSyntaxError, "pl.scope takes one argument, mode=",
                        call, hint="with pl.scope(mode=pl.ScopeMode.MANUAL):")
    if not given:
        return surface.ScopeMode.AUTO
    mode = bp.ep.eval(given[0])
    if not isinstance(mode, surface.ScopeMode):
        raise ctx.error(ParserTypeError, f"pl.scope mode= must be a pl.ScopeMode member, got "
                        f"'{ctx.text(given[0])}'", given[0],
                        hint="pl.ScopeMode.AUTO or pl.ScopeMode.MANUAL")
    return mode


def parse_manual_scope(bp: BodyParser, stmt: ast.With) -> None:
    """`with pl.manual_scope():` / `pl.scope(mode=MANUAL)`: the body in place, its tasks
    marked manual; `pl.scope()` (AUTO): the body in place, tracked as always (§1)."""
    ctx = bp.ctx
    item = stmt.items[0]
    call = item.context_expr
    func = call.func if isinstance(call, ast.Call) else call
    is_scope = bp.ep.eval(func) is surface.scope
    what = "pl.scope" if is_scope else "pl.manual_scope"
    if len(stmt.items) != 1:
        raise ctx.error(ParserSyntaxError, f"with {what}() must be the only context "
                        "manager of its with statement", stmt)
    if not isinstance(call, ast.Call) or (not is_scope and (call.args or call.keywords)):
        raise ctx.error(ParserSyntaxError, f"{what} takes no arguments: "
                        f"with {what}():", call, hint=f"with {what}():")
    if item.optional_vars is not None:
        raise ctx.error(ParserSyntaxError, f"with {what}() binds no name (drop 'as ...')",
                        item.optional_vars, hint=f"with {what}():")
    kind = ctx.program.headers[ctx.function_name].kind
    if kind not in ("Orchestration", "Opaque"):
        raise ctx.error(
            InvalidOperationError,
            f"{what} is not supported inside {kind} function '{ctx.function_name}': "
            "a scope belongs to the orchestration function that submits the tasks",
            stmt, hint=f"move the with {what}(): block into the orchestration function",
        )
    mode = _scope_mode(bp, call) if is_scope else surface.ScopeMode.MANUAL
    if mode is surface.ScopeMode.AUTO:
        _auto_scope(bp, stmt)
        return
    if getattr(ctx, "manual_scope", False):
        raise ctx.error(ParserSyntaxError, "pl.manual_scope cannot nest inside another "
                        "pl.manual_scope", stmt, hint="flatten the two scopes into one")
    start = len(bp.out)
    ctx.manual_scope = True
    try:
        bp.block(stmt.body)
    finally:
        ctx.manual_scope = False
    for found in func_calls(bp.out[start:]):
        found.manual = True


def _auto_scope(bp: BodyParser, stmt: ast.With) -> None:
    """`with pl.scope():` (AUTO): allowed where the function places its scopes itself
    (``auto_scope=False``), never inside a manual scope; dependencies are inferred as
    anywhere (a scope bounds the device's memory reuse, not what the simulator orders)."""
    ctx = bp.ctx
    if getattr(ctx.program.headers[ctx.function_name], "auto_scope", True):
        raise ctx.error(
            ParserSyntaxError, "pl.scope() with mode=AUTO needs @pl.function(auto_scope=False): "
            f"function '{ctx.function_name}' has its AUTO scopes placed by the compiler", stmt,
            hint="add auto_scope=False to the decorator, or use "
            "pl.scope(mode=pl.ScopeMode.MANUAL)")
    if getattr(ctx, "manual_scope", False):
        raise ctx.error(ParserSyntaxError, "an AUTO pl.scope cannot nest inside a manual scope",
                        stmt, hint="close the manual scope first, or drop the inner scope")
    bp.block(stmt.body)


def func_calls(stmts: list[Stmt]) -> list[FuncCall]:
    """Every kernel call of ``stmts``, nested bodies included."""
    calls: list[FuncCall] = []
    stack: list[Any] = list(stmts)
    while stack:
        s = stack.pop()
        for name in ("value", "expr"):
            e = getattr(s, name, None)
            if isinstance(e, FuncCall):
                calls.append(e)
        for name in ("body", "then_body", "else_body"):
            stack.extend(getattr(s, name, None) or ())
    return calls


# ---------------------------------------------------------------------- submit


def parse_submit(ep: ExprParser, target: Any, node: ast.Call) -> FuncCall:
    """`pl.submit(self.k, *args, deps=..., predicate=...)` / `pl.spmd_submit(..., core_num=n)`."""
    ctx = ep.ctx
    name = "pl.submit" if target is surface.submit else "pl.spmd_submit"
    if not node.args or not (
        isinstance(node.args[0], ast.Attribute) and isinstance(node.args[0].value, ast.Name)
        and node.args[0].value.id == "self"
    ):
        raise ctx.error(
            ParserSyntaxError, f"{name} takes the kernel first, as self.<kernel>",
            node.args[0] if node.args else node, hint=f"out, tid = {name}(self.kernel, x, out)",
        )
    kernel = node.args[0].attr
    node, marked = peel_no_dep(ep, node, first=1)
    for a in node.args[1:]:
        if isinstance(a, ast.Starred):
            raise ctx.error(ParserSyntaxError, "*args is not supported", a)
    pos = [Arg(ep.hoist(ep.eval(a), a), a) for a in node.args[1:]]
    kw: dict[str, Arg] = {}
    special: dict[str, ast.expr] = {}
    for k in node.keywords:
        if k.arg is None:
            raise ctx.error(ParserSyntaxError, "**kwargs is not supported", k.value)
        if k.arg in _SUBMIT_KEYWORDS:
            special[k.arg] = k.value
        else:
            kw[k.arg] = Arg(ep.hoist(ep.eval(k.value), k.value), k.value)
    spmd = target is surface.spmd_submit
    if spmd and "core_num" not in special:
        raise ctx.error(ParserSyntaxError, "pl.spmd_submit requires core_num=", node,
                        hint="pl.spmd_submit(self.kernel, x, core_num=4)")
    if not spmd and ("core_num" in special or "sync_start" in special):
        bad = "core_num" if "core_num" in special else "sync_start"
        raise ctx.error(ParserSyntaxError, f"pl.submit does not take {bad}= (a single task)",
                        special[bad], hint="use pl.spmd_submit(..., core_num=n) for a launch")
    call = ctx.program.call(ctx, kernel, pos, kw, node, ep.sink)
    if not isinstance(call, FuncCall):
        raise ctx.error(
            InvalidOperationError,
            f"{name}(self.{kernel}, ...) needs an InCore kernel (a task of its own), but "
            f"'{kernel}' is spliced into the caller", node,
        )
    if spmd:
        call.blocks = _core_num(ep, special["core_num"])
    attach(ep, call, special.get("deps"), special.get("predicate"), name)
    if marked:
        mark_no_dep(ep, call, pos, [i - 1 for i in marked])
    if "dumps" in special:
        given = dump_positions(ep, call, special["dumps"], name)
        call.dumps = tuple(dict.fromkeys((*call.dumps, *given)))
    return with_task_id(call)


def dump_positions(ep: ExprParser, call: FuncCall, node: ast.expr, owner: str) -> tuple[int, ...]:
    """`dumps=[t, ...]`: the argument positions of the named tensors (docs/design/scheduling.md
    §6); each entry must be a tensor the task is passed."""
    ctx = ep.ctx
    hint = "dumps=[x, scratch] (tensors passed to this task)"
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise ctx.error(ParserSyntaxError, f"{owner} dumps= takes a list of tensors", node,
                        hint=hint)
    positions: list[int] = []
    for elt in node.elts:
        value = ep.eval(elt)
        if not isinstance(getattr(value, "type", None), TensorType):
            raise ctx.error(ParserTypeError, f"{owner} dumps= entries must be tensors, but "
                            f"'{ctx.text(elt)}' is not", elt, hint=hint)
        found = [i for i, a in enumerate(call.args) if a is value
                 or (isinstance(a, Var) and isinstance(value, Var) and a.name == value.name)]
        if not found:
            raise ctx.error(ParserTypeError, f"{owner} dumps= entry '{ctx.text(elt)}' is not an "
                            "argument of this task", elt, hint=hint)
        positions.extend(found)
    return tuple(dict.fromkeys(positions))


def dump_tag(ep: ExprParser, pos: list[Arg], kw: dict[str, Arg], node: ast.Call) -> None:
    """`pl.dump_tag(t)`: tag a tensor for the selective dump (docs/design/scheduling.md §6);
    the tasks later passed this value dump it.  Parses to nothing else."""
    ctx = ep.ctx
    if len(pos) != 1 or kw or not isinstance(getattr(pos[0].value, "type", None), TensorType):
        raise ctx.error(ParserTypeError, "pl.dump_tag takes one tensor: pl.dump_tag(t)", node,
                        hint="pl.dump_tag(x) before the calls that use x")
    kind = ctx.program.headers[ctx.function_name].kind
    if kind in ("InCore", "Group"):
        raise ctx.error(
            ParserSyntaxError, f"pl.dump_tag is not supported inside {kind} function "
            f"'{ctx.function_name}': the dump is chosen where a kernel is called", node,
            hint="put pl.dump_tag(t) in the orchestration (or inline) function that calls it")
    value = pos[0].value
    if isinstance(value, Var):
        # by identity: a value bound to the same name later is another value, untagged
        ctx.dump_tags = (*getattr(ctx, "dump_tags", ()), value)
    return None


def peel_no_dep(ep: ExprParser, node: ast.Call, first: int = 0) -> tuple[ast.Call, list[int]]:
    """``node`` with its `pl.no_dep(t)` positional arguments (from ``first`` on) replaced
    by ``t``, and their positions."""
    marked: list[int] = []
    args = list(node.args)
    for i in range(first, len(args)):
        a = args[i]
        while (isinstance(a, ast.Call) and len(a.args) == 1 and not a.keywords
               and _evaluates_to(ep, a.func, surface.no_dep)):
            a = a.args[0]
        if a is not args[i]:
            args[i] = a
            marked.append(i)
    if not marked:
        return node, marked
    return ast.copy_location(ast.Call(node.func, args, node.keywords), node), marked


def _evaluates_to(ep: ExprParser, node: ast.expr, target: Any) -> bool:
    try:
        return ep.eval(node) is target
    except Exception:  # noqa: BLE001 - not ours: the argument's own evaluation reports it
        return False


def mark_no_dep(ep: ExprParser, call: Any, pos: list[Arg], marked: list[int]) -> None:
    """`pl.no_dep(t)` at the arguments ``marked`` of a kernel call: that task's use of t is
    not tracked (§1, as `no_dep_args=`).  A spliced callee has no task: nothing to mark."""
    for i in marked:
        value = pos[i].value
        if not isinstance(getattr(value, "type", None), TensorType):
            raise ep.ctx.error(
                ParserTypeError, f"pl.no_dep marks a tensor argument, but "
                f"'{ep.ctx.text(pos[i].node)}' is not a tensor", pos[i].node,
                hint="only tensors can be left out of dependency tracking")
    if isinstance(call, FuncCall):
        call.no_dep = tuple(sorted({*call.no_dep, *marked}))


def no_dep_value(ep: ExprParser, pos: list[Arg], kw: dict[str, Arg], node: ast.Call) -> Any:
    """`pl.no_dep(t)` anywhere but a kernel call's argument: ``t`` unchanged."""
    if len(pos) != 1 or kw or not isinstance(getattr(pos[0].value, "type", None), TensorType):
        raise ep.ctx.error(ParserTypeError, "pl.no_dep takes one tensor: pl.no_dep(t)", node,
                           hint="self.kernel(x, pl.no_dep(t))")
    return pos[0].value


def untag(ctx: Any, value: Var) -> None:
    """``x = f(..., x)`` hands back the value it was passed: the name now holds the call's
    result, a new value, which a `pl.dump_tag` of the old one does not cover (§6)."""
    tags = getattr(ctx, "dump_tags", ())
    if tags:
        ctx.dump_tags = tuple(t for t in tags if t is not value)


def _core_num(ep: ExprParser, node: ast.expr) -> Expr:
    ctx = ep.ctx
    value = ep.eval(node)
    if isinstance(value, int) and not isinstance(value, bool) and value <= 0:
        raise ctx.error(ParserSyntaxError, f"core_num must be a positive integer, got {value}",
                        node)
    expr = scalars.as_scalar_expr(value, ctx.span(node))
    if isinstance(value, bool) or expr is None or not isinstance(expr.type, ScalarType) \
            or not expr.type.dtype.is_int:
        raise ctx.error(ParserTypeError, f"core_num must be an integer expression, got "
                        f"'{ctx.text(node)}'", node, hint="core_num=4")
    return ep.hoist(expr, node)


def with_task_id(call: FuncCall) -> FuncCall:
    """The call now yields its TaskId after its results."""
    call.task_id = True
    t = call.type
    items = t.items if isinstance(t, TupleType) else (t,) if t is not None else ()
    call.type = TupleType((*items, TASK_TYPE)) if items else TASK_TYPE
    return call


def attach(ep: ExprParser, call: FuncCall, deps: ast.expr | None, predicate: ast.expr | None,
           owner: str) -> None:
    if deps is not None:
        call.deps = deps_list(ep, deps, owner)
    if predicate is not None:
        call.predicate = parse_predicate(ep, predicate, owner)
        _check_predicate_producer(ep, call, predicate, owner, deps is not None)


def note_submit(ctx: Any, call: Any, targets: list[Var]) -> None:
    """``a, b, tid = pl.submit(...)``: remember ``tid`` as the producer of ``a`` and ``b``,
    for `_check_predicate_producer`."""
    if isinstance(call, FuncCall) and call.task_id and len(targets) > 1:
        producers = getattr(ctx, "submit_producers", None)
        if producers is None:
            producers = ctx.submit_producers = {}
        for out in targets[:-1]:
            producers[id(out)] = (out, targets[-1])


def _user_name(name: str) -> str:
    """The source name of an SSA name (``t_2`` -> ``t``: the namer's suffix dropped)."""
    base, _, tail = name.rpartition("_")
    return base if base and tail.isdigit() else name


def _check_predicate_producer(ep: ExprParser, call: FuncCall, node: ast.expr, owner: str,
                              deps_given: bool) -> None:
    """A predicate's tensor made by an earlier `pl.submit` needs that submit's TaskId in
    deps=, or the dispatch-time read may see the value before the producer wrote it (§4).
    Only what the parser can prove: a tensor from elsewhere, or an Array in deps=, passes."""
    operand = call.predicate[0] if call.predicate else None
    found = getattr(ep.ctx, "submit_producers", {}).get(id(operand))
    if found is None or found[0] is not operand:
        return
    tid = found[1]
    if any(d is tid for d in call.deps) or any(isinstance(getattr(d, "type", None), ArrayType)
                                               for d in call.deps):
        return
    user, name = _user_name(tid.name), _user_name(operand.name)
    why = "without it the task may be dispatched on the value before that task wrote it"
    hint = (f"add the producer to the dependency list: deps=[{user}]; {why}" if deps_given
            else f"name the producer: deps=[{user}] (a region takes it in the `as tid` form: "
            f"with pl.spmd(n, deps=[{user}], predicate=...) as tid:); {why}")
    raise ep.ctx.error(
        ParserSyntaxError, f"{owner} predicate reads '{name}', which is produced by the task "
        f"bound to '{user}', but '{user}' is not in deps=", node, hint=hint)


def deps_list(ep: ExprParser, node: ast.expr, owner: str) -> tuple[Expr, ...]:
    """A `deps=[...]` list: TaskId Scalars and Arrays; None entries add nothing."""
    ctx = ep.ctx
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise ctx.error(ParserSyntaxError, f"{owner} deps= takes a list of TaskIds: deps=[tid]",
                        node, hint="deps=[tid] (a list, even for one TaskId)")
    out: list[Expr] = []
    for elt in node.elts:
        if isinstance(elt, ast.Constant) and elt.value is None:
            continue
        value = ep.eval(elt)
        if isinstance(value, Const) and value.type == TASK_TYPE and value.value == -1:
            continue
        if not is_task_id(value):
            t = getattr(value, "type", None)
            what = "a tensor" if isinstance(t, TensorType) else (
                getattr(t, "kind", None) or type(value).__name__)
            raise ctx.error(
                ParserTypeError,
                f"{owner} deps= entries must be TaskIds, but '{ctx.text(elt)}' is {what}",
                elt,
                hint="name the task: out, tid = pl.submit(self.k, ...) then deps=[tid] "
                "(deps= takes TaskIds, no_dep_args= takes tensors)",
            )
        out.append(ep.hoist(value, elt))
    return tuple(out)


def parse_predicate(ep: ExprParser, node: ast.expr, owner: str) -> tuple[Any, ...]:
    """`t[i, j] OP k` (or `k OP t[i, j]`) as (tensor, indices, op, k), tensor first."""
    ctx = ep.ctx
    shape = "predicate=(t[i, j] > 0): one tensor element compared with an int literal"
    if not isinstance(node, ast.Compare) or len(node.ops) != 1:
        raise ctx.error(ParserSyntaxError, f"{owner} predicate= must be one comparison", node,
                        hint=shape)
    op = _COMPARE.get(type(node.ops[0]))
    left, right = node.left, node.comparators[0]
    if isinstance(right, ast.Subscript) and not isinstance(left, ast.Subscript):
        left, right = right, left
        op = _MIRROR.get(op or "", op)
    literal = _int_literal(right)
    if op is None or not isinstance(left, ast.Subscript) or literal is None:
        raise ctx.error(ParserSyntaxError,
                        f"{owner} predicate= must compare a tensor element with an int literal",
                        node, hint=shape)
    tensor = ep.eval(left.value)
    if not isinstance(getattr(tensor, "type", None), TensorType):
        raise ctx.error(ParserTypeError, f"{owner} predicate= operand "
                        f"'{ctx.text(left.value)}' must be a tensor", left.value, hint=shape)
    items = left.slice.elts if isinstance(left.slice, ast.Tuple) else [left.slice]
    if len(items) != tensor.type.rank:
        raise ctx.error(ParserTypeError, f"{owner} predicate= needs one index per dimension of "
                        f"'{ctx.text(left.value)}' ({tensor.type.rank}), got {len(items)}", left)
    indices = []
    for item in items:
        v = ep.eval(item)
        ok = isinstance(v, int) and not isinstance(v, bool)
        ok = ok or (isinstance(getattr(v, "type", None), ScalarType) and v.type.dtype.is_int)
        if not ok:
            raise ctx.error(ParserTypeError, f"{owner} predicate= index '{ctx.text(item)}' must "
                            "be an integer", item, hint=shape)
        indices.append(v if isinstance(v, int) else ep.hoist(v, item))
    return (ep.hoist(tensor, left.value), tuple(indices), op, literal)


def _int_literal(node: ast.expr) -> int | None:
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = _int_literal(node.operand)
        return None if v is None else -v
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    return None


# ------------------------------------------------------------------ task_dummy


def parse_task_dummy(ep: ExprParser, node: ast.Call) -> Call:
    """`pl.system.task_dummy(deps=[...])`: a Call yielding the barrier's TaskId."""
    ctx = ep.ctx
    kind = ctx.program.headers[ctx.function_name].kind
    if kind not in ("Orchestration", "Opaque"):
        raise ctx.error(InvalidOperationError, "pl.system.task_dummy submits a task: it belongs "
                        f"in the orchestration function, not {kind} '{ctx.function_name}'", node)
    deps_node = None
    for k in node.keywords:
        if k.arg != "deps":
            raise ctx.error(ParserSyntaxError, f"Unknown keyword argument '{k.arg}' in "
                            "pl.system.task_dummy()", k.value, hint="task_dummy(deps=[...])")
        deps_node = k.value
    if node.args:
        deps_node = node.args[0] if deps_node is None and len(node.args) == 1 else None
        if deps_node is None:
            raise ctx.error(ParserSyntaxError, "pl.system.task_dummy takes only deps=[...]",
                            node, hint="task_dummy(deps=[...])")
    deps = deps_list(ep, deps_node, "pl.system.task_dummy") if deps_node is not None else ()
    return Call("system.task_dummy", (("deps", deps),), type=TASK_TYPE, span=ctx.span(node))


# --------------------------------------------------------- `as tid` on a region


def region_task_id(bp: BodyParser, stmt: ast.With) -> str | None:
    """The name of `with ... as tid` (a plain name), or None."""
    target = stmt.items[0].optional_vars
    if target is None:
        return None
    if not isinstance(target, ast.Name):
        raise bp.ctx.error(ParserSyntaxError, "with ... as <name>: the TaskId binds one plain "
                           "name", target, hint="with pl.at(...) as tid:")
    return target.id


def bind_task_id(bp: BodyParser, call: FuncCall, name: str, stmt: ast.stmt) -> None:
    """After a region's call was emitted: add its TaskId to the statement that holds it and
    bind ``name`` to it."""
    ctx = bp.ctx
    with_task_id(call)
    tid = Var(ctx.namer.fresh(name), type=TASK_TYPE, span=ctx.span(stmt))
    for i in range(len(bp.out) - 1, -1, -1):
        s = bp.out[i]
        if isinstance(s, Assign) and s.value is call:
            s.targets = (*s.targets, tid)
            break
        if isinstance(s, ExprStmt) and s.expr is call:
            bp.out[i] = Assign((tid,), call, span=s.span)
            break
    else:  # pragma: no cover - the region's call is always among the emitted statements
        raise AssertionError("region call not emitted")
    bp.check_rebind(name, stmt)
    bp.last_bound[name] = stmt
    bp.env[name] = tid
