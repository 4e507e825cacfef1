# SPDX-License-Identifier: Apache-2.0
"""`with pl.cluster(name_hint=...):` co-scheduling on one physical cluster
(docs/design/language.md §14a).

The body is parsed in place, as an Orchestration (or Opaque) function's own
statements.  What the cluster changes:

* a body that calls one `pl.FunctionType.AIC` kernel and one `pl.FunctionType.AIV`
  kernel runs them as ONE task, side by side with their pipes between them: the two
  calls are folded into a synthesized `Group` function (named by `name_hint=`, else
  `<enclosing>_cluster_<k>`) that the orchestration calls once, as if the user had
  written that Group; a `pl.spmd(n)` around the calls launches that Group n times;
* any other body (a `pl.spmd` launch of an InCore kernel, a `pl.at` region, a
  Group call) runs exactly as it would without the cluster: co-scheduling on one
  cluster changes no value the simulator computes.

Parse-time rules, as PyPTO's parser has them: no positional arguments, the only
keyword is `name_hint=`, no `as` target; a cluster belongs to an Orchestration or
Opaque function and does not nest; a cluster body is dispatched as one Group task,
so per-task dispatch metadata inside it (`with pl.spmd(...) as tid`, `predicate=`,
`allow_early_resolve=True`, `pl.submit` / `pl.spmd_submit` with `deps=`, `core_num=`,
`sync_start=`, `predicate=` or `allow_early_resolve=`) is an error at that line.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, PlacementError
from pytest_pypto.ir.nodes import Assign, Expr, ExprStmt, FuncCall, Function, Param, Return, Var
from pytest_pypto.ir.types import Direction, ScalarType, TensorType, TupleType
from pytest_pypto.language import region_options, surface
from pytest_pypto.language.context import Header
from pytest_pypto.language.scheduling import func_calls

if TYPE_CHECKING:
    from pytest_pypto.language.statements import BodyParser

__all__ = ["is_cluster", "parse_cluster"]

_HINT = "with pl.cluster():"
_SUBMIT_METADATA = ("deps", "core_num", "sync_start", "allow_early_resolve", "predicate")


def is_cluster(bp: BodyParser, stmt: ast.With) -> bool:
    """True when one of the with statement's context managers is `pl.cluster`."""
    for item in stmt.items:
        expr = item.context_expr
        func = expr.func if isinstance(expr, ast.Call) else expr
        try:
            if bp.ep.eval(func) is surface.cluster:
                return True
        except Exception:  # noqa: BLE001 - not ours: the with statement's parser reports it
            continue
    return False


def parse_cluster(bp: BodyParser, stmt: ast.With) -> None:
    ctx = bp.ctx
    if len(stmt.items) != 1:
        raise ctx.error(ParserSyntaxError, "with pl.cluster() must be the only context manager "
                        "of its with statement", stmt, hint=_HINT)
    item = stmt.items[0]
    call = item.context_expr
    if not isinstance(call, ast.Call):
        raise ctx.error(ParserSyntaxError, "pl.cluster must be called: with pl.cluster():",
                        call, hint=_HINT)
    if item.optional_vars is not None:
        raise ctx.error(
            ParserSyntaxError,
            "`with pl.cluster(...) as ...:` is not supported: the `as` clause only applies to "
            "`with pl.at(...) as tid:` and `with pl.spmd(...) as tid:`",
            item.optional_vars, hint="drop the `as` target",
        )
    if call.args:
        raise ctx.error(ParserSyntaxError, "pl.cluster() does not accept positional arguments",
                        call.args[0], hint=_HINT)
    hint = ""
    for kw in call.keywords:
        if kw.arg != "name_hint":
            raise ctx.error(
                ParserSyntaxError, f"pl.cluster() got unexpected keyword argument '{kw.arg}'",
                kw.value if kw.arg else call,
                hint="the only keyword is name_hint=; for SPMD dispatch nest "
                "with pl.spmd(n): inside the cluster",
            )
        hint = region_options.name_hint(bp, kw.value, "pl.cluster()")
    kind = ctx.program.headers[ctx.function_name].kind
    if kind not in ("Orchestration", "Opaque"):
        raise ctx.error(
            InvalidOperationError,
            f"pl.cluster is not supported inside {kind} function '{ctx.function_name}': a "
            "cluster groups kernel dispatches of an Orchestration or Opaque function",
            stmt, hint="move the with pl.cluster(): block into the orchestration function",
        )
    if getattr(ctx, "in_cluster", False):
        raise ctx.error(ParserSyntaxError, "pl.cluster cannot nest inside another pl.cluster: "
                        "a cluster is one physical cluster", stmt,
                        hint="keep one with pl.cluster(): level")
    _reject_task_metadata(bp, stmt.body)
    start = len(bp.out)
    ctx.in_cluster = True
    try:
        bp.block(stmt.body)
    finally:
        ctx.in_cluster = False
    _fold_pair(bp, stmt, start, hint)


# ------------------------------------------------------------- dispatch metadata


def _callee(bp: BodyParser, node: ast.expr) -> Any:
    try:
        return bp.ep.eval(node)
    except Exception:  # noqa: BLE001 - an unknown name: the body's own parse reports it
        return None


def _reject_task_metadata(bp: BodyParser, body: list[ast.stmt]) -> None:
    """Per-task dispatch controls inside a cluster would be lost: the cluster is one task."""
    ctx = bp.ctx
    hint = ("move the dependency or launch control to the dispatch around the cluster, or "
            "use a standalone pl.spmd(...) / pl.submit(...) outside it")
    for node in (n for s in body for n in ast.walk(s)):
        if isinstance(node, ast.With):
            expr = node.items[0].context_expr
            if not isinstance(expr, ast.Call) or _callee(bp, expr.func) is not surface.spmd:
                continue
            if node.items[0].optional_vars is not None:
                raise ctx.error(
                    ParserSyntaxError,
                    "`with pl.spmd(...) as tid:` cannot capture a TaskId inside pl.cluster(): "
                    "the cluster is dispatched as one Group task", node, hint=hint,
                )
            for kw in expr.keywords:
                early = kw.arg == "allow_early_resolve" and not (
                    isinstance(kw.value, ast.Constant) and kw.value.value is False)
                if kw.arg == "predicate" or early:
                    written = "predicate=(...)" if kw.arg == "predicate" else \
                        "allow_early_resolve=True"
                    raise ctx.error(
                        ParserSyntaxError,
                        f"`pl.spmd(..., {written})` cannot be nested inside pl.cluster(): the "
                        "cluster is dispatched as one Group task, so it would be lost",
                        kw.value, hint=hint,
                    )
        elif isinstance(node, ast.Call):
            target = _callee(bp, node.func)
            if not any(target is f for f in surface.SUBMIT_FUNCTIONS):
                continue
            given = [kw.arg for kw in node.keywords if kw.arg in _SUBMIT_METADATA]
            if given:
                raise ctx.error(
                    ParserSyntaxError,
                    f"`pl.{target.name}(...)` inside pl.cluster() cannot carry per-task "
                    f"dispatch metadata ({', '.join(given)}): the cluster is dispatched as one "
                    "Group task", node, hint=hint,
                )


# ------------------------------------------------------------- the AIC + AIV pair


def _pinned(bp: BodyParser, call: FuncCall) -> str | None:
    header = bp.ctx.program.headers.get(call.callee)
    return header.attrs.get("core") if header is not None else None


def _fold_pair(bp: BodyParser, stmt: ast.With, start: int, hint: str) -> None:
    """An AIC and an AIV kernel called in the cluster become one Group task."""
    ctx = bp.ctx
    top: list[tuple[int, FuncCall]] = []
    for i in range(start, len(bp.out)):
        s = bp.out[i]
        value = s.value if isinstance(s, Assign) else s.expr if isinstance(s, ExprStmt) else None
        if isinstance(value, FuncCall) and _pinned(bp, value) is not None:
            top.append((i, value))
    nested = [c for c in func_calls(bp.out[start:]) if _pinned(bp, c) is not None
              and all(c is not t for _, t in top)]
    if nested:
        raise PlacementError(
            f"pl.FunctionType.{_pinned(bp, nested[0]).upper()} kernel '{nested[0].callee}' is "
            "called inside a loop or branch of the pl.cluster() body; the AIC and AIV kernels "
            "of a cluster are called once each, directly in its body",
            nested[0].span or ctx.span(stmt),
            hint="call the two kernels directly under with pl.cluster():",
        )
    if not top:
        return
    roles: dict[str, FuncCall] = {}
    for _, call in top:
        core = _pinned(bp, call)
        if core in roles:
            raise ctx.error(
                PlacementError,
                f"pl.cluster() body calls two {core.upper()} kernels ('{roles[core].callee}' "
                f"and '{call.callee}'); a cluster runs one AIC and one AIV kernel together",
                stmt, hint="one pl.cluster() per AIC/AIV pair",
            )
        roles[core] = call
    if len(roles) == 1:
        return  # a lone pinned kernel: its own task, as without the cluster
    blocks = [c.blocks for _, c in top if c.blocks is not None]
    if len(blocks) == 1 or (len(blocks) == 2 and repr(blocks[0]) != repr(blocks[1])):
        raise ctx.error(
            ParserSyntaxError,
            "the AIC and AIV kernels of a pl.cluster() are launched together: put one "
            "with pl.spmd(n): around the cluster's body, not around one of its kernels", stmt,
            hint="with pl.cluster():\n    with pl.spmd(n):\n        ...",
        )
    _emit_group(bp, stmt, top, blocks[0] if blocks else None, hint)


def _group_name(bp: BodyParser, hint: str) -> str:
    taken = set(bp.ctx.program.headers)
    if hint and hint not in taken:
        return hint
    base = hint or f"{bp.ctx.function_name}_cluster"
    k = 0
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"


def _emit_group(bp: BodyParser, stmt: ast.With, top: list[tuple[int, FuncCall]],
                blocks: Expr | None, hint: str) -> None:
    ctx = bp.ctx
    parser = ctx.program
    span = ctx.span(stmt)
    params: list[Param] = []
    args: list[Expr] = []
    by_value: dict[int, Var] = {}
    used: set[str] = set()
    body: list[Any] = []
    returned: list[Var] = []
    targets: list[Var] = []
    produced: dict[int, str] = {}
    for at, call in top:
        callee = parser.headers[call.callee]
        for arg in call.args:
            if id(arg) in produced:
                raise PlacementError(
                    f"'{arg.name}' is returned by '{produced[id(arg)]}' and passed to "
                    f"'{call.callee}' in one pl.cluster(): the two kernels run side by side, "
                    "so one cannot wait for the other's result",
                    call.span or span, hint="send the data through the kernels' pipes",
                )
        inner_args = []
        for i, arg in enumerate(call.args):
            known = by_value.get(id(arg))
            declared = callee.params[i].direction if i < len(callee.params) else Direction.IN
            if known is None:
                base = arg.name.split(".")[0] if isinstance(arg, Var) else f"arg{len(params)}"
                name, k = base, 0
                while name in used:
                    k += 1
                    name = f"{base}_{k}"
                used.add(name)
                direction = Direction.SCALAR if isinstance(arg.type, ScalarType) else declared
                params.append(Param(name, arg.type, direction, span=span))
                known = by_value[id(arg)] = Var(name, type=arg.type, span=span)
                args.append(arg)
            elif isinstance(arg.type, TensorType):
                _widen(params[[p.name for p in params].index(known.name)], declared)
            inner_args.append(known)
        inner = FuncCall(call.callee, tuple(inner_args), type=call.type, span=call.span)
        outer = bp.out[at]
        if isinstance(outer, Assign):
            produced.update((id(t), call.callee) for t in outer.targets)
            results = [Var(f"{call.callee}_r{j}", type=t.type, span=span)
                       for j, t in enumerate(outer.targets)]
            body.append(Assign(tuple(results), inner, span=call.span))
            returned.extend(results)
            targets.extend(outer.targets)
        else:
            body.append(ExprStmt(inner, span=call.span))
    body.append(Return(tuple(returned), span=span))
    name = _group_name(bp, hint)
    types = tuple(v.type for v in returned)
    parser.headers[name] = Header(stmt, kind="Group", params=params, returns=types,  # type: ignore[arg-type]
                                  decorated=True)
    parser.outlined[name] = ctx.function_name
    parser.functions[name] = Function(name, "Group", params, types, body, span=span,
                                      strict_ssa=ctx.strict_ssa)
    result = types[0] if len(types) == 1 else TupleType(types) if types else None
    group_call = FuncCall(name, tuple(args), type=result, span=span, blocks=blocks)
    last = top[-1][0]
    replacement = (Assign(tuple(targets), group_call, span=span) if targets
                   else ExprStmt(group_call, span=span))
    drop = {i for i, _ in top}
    bp.out[last] = replacement
    bp.out[:] = [s for i, s in enumerate(bp.out) if i not in drop or i == last]


def _widen(param: Param, declared: Direction) -> None:
    """One tensor passed to both kernels: the Group reads it if either reads, writes it if
    either writes."""
    reads = param.direction.reads or declared.reads
    writes = param.direction.writes or declared.writes
    param.direction = (Direction.INOUT if reads and writes else
                       Direction.OUT if writes else Direction.IN)
