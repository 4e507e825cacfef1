# SPDX-License-Identifier: Apache-2.0
"""Outlined regions: `with pl.at(level=pl.Level.CORE_GROUP, ...)` (docs/design/language.md §9).

The region's statements are parsed as the body of a new `InCore` function of the
program, as if the user had written it: every compile check (memory spaces,
capacity, bounds, arch gates, directions) runs on it and reports the user's lines
inside the region.  The region is replaced by one call of that function, i.e.
one task.  As PyPTO's OutlineIncoreScopes pass does:

* parameters are the region's live-in values (read before the region defines
  them), tensors and scalars, in order of first use; one outer value passed under
  two names is one parameter;
* a tensor parameter the region writes (a `writes` operand of an op: the target
  of `pl.store`, `pl.assemble`...) is `Out`, or `InOut` when the region also reads
  it in any other way; the rest are `In`;
* names the region rebinds to a tensor written through a parameter refer to the
  call's result afterwards; a tensor first defined in the region (static dims) and
  used after it stays visible, as PyPTO's scope rule says: it leaves through a new
  Out parameter whose buffer the orchestration creates before the call; a
  region-local tile or scalar is not visible after the region (using it says so);
* the function is named by `name_hint=` (a clash within one function adds `_0`,
  `_1`..., with another function's region prefixes that function's name), else
  `<enclosing>_incore_<n>`; an Opaque function that outlines becomes the
  Orchestration function.

`pl.spmd(n)` launches (language/launch.py) reuse `outline` with a block count.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.dtypes import INDEX
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import (
    Assign,
    Call,
    Expr,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    Param,
    Return,
    Stmt,
    Var,
    Yield,
)
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import Direction, ScalarType, TensorType, TupleType
from pytest_pypto.language import loops, scheduling
from pytest_pypto.language.calls import Arg, build_call
from pytest_pypto.language.context import FunctionContext, Header, Unavailable, assigned_names
from pytest_pypto.language.region_options import RegionOptions, at_options, region_kind

if TYPE_CHECKING:
    from pytest_pypto.language.statements import BodyParser

OUTLINING_KINDS = ("Orchestration", "Opaque")

__all__ = ["OUTLINING_KINDS", "outline", "outlined_name", "parse_at", "region_kind"]


def parse_at(bp: BodyParser, stmt: ast.With) -> None:
    """`with pl.at(...)`: outline the body into an InCore function, call it once."""
    call = stmt.items[0].context_expr
    assert isinstance(call, ast.Call)
    options = at_options(bp, call)
    outline(bp, stmt, stmt.body, options, tid_name=scheduling.region_task_id(bp, stmt))


# ------------------------------------------------------------- outlining


def outline(
    bp: BodyParser, stmt: ast.stmt, body: list[ast.stmt], options: RegionOptions, *,
    blocks: Expr | None = None, index_name: str | None = None, what: str = "pl.at",
    tid_name: str | None = None,
) -> None:
    """Parse ``body`` as a new InCore function and emit its call in ``bp``'s function.

    ``blocks`` makes the call a pl.spmd launch; ``index_name`` (the for-form's loop
    variable) is bound to the block index at the top of the outlined body."""
    ctx = bp.ctx
    parser = ctx.program
    enclosing = parser.headers[ctx.function_name]
    if enclosing.kind not in OUTLINING_KINDS:
        raise ctx.error(
            InvalidOperationError,
            f"{what} is not supported inside {enclosing.kind} function '{ctx.function_name}': "
            f"a {what} region is outlined from an Orchestration or Opaque function"
            + (" (regions do not nest)" if ctx.function_name in parser.outlined else ""),
            stmt,
            hint="write the statements directly in the InCore function, or move the region "
            "into the orchestration",
        )
    for node in body:
        for sub in ast.walk(node):
            if isinstance(sub, ast.Return):
                raise ctx.error(
                    ParserSyntaxError, f"return is not allowed inside a {what} region", sub,
                    hint="end the region, then return after it",
                )
    name = outlined_name(parser, ctx.function_name, options.name_hint)
    inner_ctx = FunctionContext(ctx.source, ctx.namespace, name, parser, ctx.strict_ssa,
                                ctx.local_names)
    inner_ctx.block_depth = ctx.block_depth
    inner_ctx.region_split = options.split  # a pl.split_aiv region refuses one (split_aiv.py)
    params, env, args = _parameters(bp, body, exclude={index_name} if index_name else set())
    inner_ctx.namer.taken.update(p.name for p in params)
    inner: list[Stmt] = []
    if index_name is not None:
        idx = Var(inner_ctx.namer.fresh(index_name), type=ScalarType(_index()), span=ctx.span(stmt))
        inner.append(Assign((idx,), Call("tile.get_block_idx", (), type=idx.type, span=idx.span),
                            span=idx.span))
        env[index_name] = idx
    initial = dict(env)
    parser.headers[name] = _header(parser, stmt, params)
    parser.outlined[name] = ctx.function_name
    parser.in_progress.add(name)
    try:
        child = type(bp)(inner_ctx, env, inner)
        child.block(body)
        for check in getattr(inner_ctx, "body_checks", ()):  # e.g. split_aiv.py's manual mode
            check(inner)
    except BaseException:
        del parser.headers[name]
        del parser.outlined[name]
        raise
    finally:
        parser.in_progress.discard(name)
    roots, reads, writes = accesses(inner, params)
    for p in params:
        if isinstance(p.type, TensorType) and p.name in writes:
            p.direction = Direction.INOUT if p.name in reads else Direction.OUT
    # a launch's blocks would race on one buffer: only a single-task region carries out
    carry = None if blocks is not None else (
        lambda nm, v: _carry_out(bp, inner_ctx, inner, params, args, nm, v, stmt))
    exports = _exports(bp, body, env, initial, roots, what, stmt, carry=carry)
    returned = tuple(v for _, v in exports)
    inner.append(Return(returned, span=ctx.span(stmt)))
    types = tuple(v.type for v in returned)
    fn = Function(name, "InCore", params, types, inner, span=ctx.span(stmt),
                  strict_ssa=ctx.strict_ssa)
    header = parser.headers[name]
    header.returns = types
    parser.functions[name] = fn
    if enclosing.kind == "Opaque":
        _promote_written_params(enclosing, params, args)
        enclosing.kind = "Orchestration"  # PyPTO promotes a parent that outlines
    result = types[0] if len(types) == 1 else TupleType(types) if types else None
    call = FuncCall(name, tuple(args), type=result, span=ctx.span(stmt), blocks=blocks)
    scheduling.attach(bp.ep, call, options.deps, options.predicate, f"{what}()")
    if options.no_dep_args:
        wanted = {id(bp.env.get(n)) for n in options.no_dep_args}
        call.no_dep = tuple(i for i, a in enumerate(args) if id(a) in wanted)
    if options.dumps is not None:
        call.dumps = scheduling.dump_positions(bp.ep, call, options.dumps, f"{what}()")
    tags = getattr(ctx, "dump_tags", ())
    if tags:  # pl.dump_tag'ed values this task is passed
        call.dumps = (*call.dumps, *(i for i, a in enumerate(args)
                                     if any(a is t for t in tags)
                                     and i not in call.dumps))
    if not exports:
        bp.out.append(ExprStmt(call, span=ctx.span(stmt)))
        if tid_name is not None:
            scheduling.bind_task_id(bp, call, tid_name, stmt)
        return
    targets = []
    for outer_name, value in exports:
        bp.check_rebind(outer_name, stmt)
        bp.last_bound[outer_name] = stmt
        target = Var(ctx.namer.fresh(outer_name), type=value.type, span=ctx.span(stmt))
        targets.append(target)
        bp.env[outer_name] = target
    bp.out.append(Assign(tuple(targets), call, span=ctx.span(stmt)))
    if tid_name is not None:
        scheduling.bind_task_id(bp, call, tid_name, stmt)


def _promote_written_params(enclosing: Header, params: list[Param], args: list[Expr]) -> None:
    """An Opaque function's parameter that a region writes becomes InOut (its signature only
    ever gains writers, as a wrapper's does in PyPTO; docs/design/language.md §9)."""
    own = {p.name: p for p in enclosing.params}
    for param, arg in zip(params, args):
        if not (isinstance(param.type, TensorType) and param.direction.writes):
            continue
        mine = own.get(arg.name) if isinstance(arg, Var) else None
        if mine is not None and mine.direction is Direction.IN:
            mine.direction = Direction.INOUT


def _index() -> Any:
    return INDEX


def _header(parser: Any, stmt: ast.stmt, params: list[Param]) -> Any:
    return Header(stmt, kind="InCore", params=params, returns=None, decorated=True)  # type: ignore[arg-type]


def outlined_name(parser: Any, enclosing: str, hint: str) -> str:
    """PyPTO's naming of outlined functions (see the module docstring)."""
    taken = set(parser.headers)
    if not hint:
        k = 0
        while f"{enclosing}_incore_{k}" in taken:
            k += 1
        return f"{enclosing}_incore_{k}"
    if hint not in taken:
        return hint
    base = hint
    if parser.outlined.get(hint, enclosing) != enclosing:
        base = f"{enclosing}_{hint}"
        if base not in taken:
            return base
    k = 0
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"


def _parameters(
    bp: BodyParser, body: list[ast.stmt], exclude: set[str]
) -> tuple[list[Param], dict[str, Any], list[Expr]]:
    """The region's parameters, its starting environment and the call's arguments."""
    ctx = bp.ctx
    # An enclosing loop's escaping name (its iteration variable lives in the enclosing
    # function) is, inside the region, a name without a value yet: the region binds it
    # itself, and it never reaches the region's code (which would then read a variable
    # of another function: `k0 = k0`).
    env: dict[str, Any] = {
        k: Unavailable(v.message, v.hint) if isinstance(v, loops.LoopEscape) else v
        for k, v in bp.env.items() if not isinstance(v, Expr)}
    params: list[Param] = []
    args: list[Expr] = []
    by_value: dict[int, Var] = {}
    for name, node in live_in(body):
        if name in exclude:
            continue
        value = bp.env.get(name)
        if not isinstance(value, Expr):
            continue
        known = by_value.get(id(value))
        if known is not None:
            env[name] = known
            continue
        t = value.type
        if isinstance(t, TensorType):
            direction = Direction.IN
        elif isinstance(t, ScalarType):
            direction = Direction.SCALAR
        else:
            raise ctx.error(
                ParserTypeError,
                f"'{name}' is a {getattr(t, 'kind', 'value')} and cannot be passed into a region; "
                "a region takes tensors and scalars",
                node,
            )
        span = ctx.span(node)
        params.append(Param(name, t, direction, span=span))
        var = Var(name, type=t, span=span)
        env[name] = by_value[id(value)] = var
        args.append(value)
    return params, env, args


def _exports(
    bp: BodyParser, body: list[ast.stmt], env: dict[str, Any], initial: dict[str, Any],
    roots: dict[str, str], what: str, stmt: ast.stmt, carry: Any = None,
) -> list[tuple[str, Var]]:
    """Names rebound in the region: tensors written through a parameter become the call's
    results; a tensor first defined in the region and used after it is carried out
    (`_carry_out`); parse-time constants carry over; everything else is marked
    unavailable."""
    exports: list[tuple[str, Var]] = []
    for name in assigned_names(body):
        value = env.get(name)
        if name in initial and value is initial[name]:
            continue
        if isinstance(value, Var) and isinstance(value.type, TensorType) and value.name in roots:
            exports.append((name, value))
        elif carry is not None and isinstance(value, Expr) and _carriable(value) \
                and loops.used_later(bp.ctx, name):
            exports.append((name, carry(name, value)))
        elif isinstance(value, Expr):
            kind = getattr(value.type, "kind", "value")
            local = "tensor created in the region" if kind == "Tensor" else kind
            bp.env[name] = Unavailable(
                f"'{name}' is a {local} defined inside the {what} region at line "
                f"{bp.ctx.source.line_of(stmt)}; only tensors written into a buffer passed "
                "into the region are visible after it",
                hint="pl.store / pl.assemble it into a tensor from outside the region and use "
                "that tensor",
            )
        elif isinstance(value, Unavailable) or value is None:
            bp.env[name] = value if value is not None else Unavailable(
                f"'{name}' is not visible after the {what} region")
        else:
            bp.env[name] = value  # a parse-time constant
    return exports


def _carriable(value: Expr) -> bool:
    """A region-local tensor the orchestration can hold a buffer for: static dims."""
    t = value.type
    return isinstance(t, TensorType) and t.is_static


def _carry_out(bp: BodyParser, inner_ctx: FunctionContext, inner: list[Stmt],
               params: list[Param], args: list[Expr], name: str, value: Expr,
               stmt: ast.stmt) -> Var:
    """A tensor first defined in the region and used after it (PyPTO's scope rule: it
    stays visible) leaves through a new Out parameter: the orchestration creates the
    buffer before the call, the region assembles the value into it."""
    t: TensorType = value.type  # type: ignore[assignment]
    span = bp.ctx.span(stmt)
    whole = TensorType(tuple(t.shape), t.dtype)
    pname = inner_ctx.namer.fresh(f"{name}_out")
    params.append(Param(pname, whole, Direction.OUT, span=span))
    buf = Var(bp.ctx.namer.fresh(f"{name}_buf"), type=whole, span=span)
    create = Call("tensor.create", (("shape", tuple(t.shape)), ("dtype", t.dtype),
                                    ("init_value", None)), type=whole, span=span)
    bp.out.append(Assign((buf,), create, span=span))
    args.append(buf)
    target = Var(pname, type=whole, span=span)
    spec = REGISTRY["tensor.assemble"]
    bound = {"target": Arg(target, stmt), "source": Arg(value, stmt),
             "offset": Arg(tuple(0 for _ in t.shape), stmt)}
    call = build_call(inner_ctx, spec, "pl.assemble", bound, stmt)
    result = Var(inner_ctx.namer.fresh(name), type=call.type, span=span)
    inner.append(Assign((result,), call, span=span))
    return result


# ------------------------------------------------------------- analyses


def live_in(body: list[ast.stmt]) -> list[tuple[str, ast.Name]]:
    """Names the region reads before it (definitely) binds them, in source order."""
    found: dict[str, ast.Name] = {}

    def loads(node: ast.AST | None, defined: set[str]) -> None:
        if node is None:
            return
        names = [n for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)]
        names.sort(key=lambda n: (n.lineno, n.col_offset))
        for n in names:
            if n.id not in defined and n.id not in found:
                found[n.id] = n

    def stores(target: ast.AST, defined: set[str]) -> None:
        for n in ast.walk(target):
            if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
                defined.add(n.id)

    def block(stmts: list[ast.stmt], defined: set[str]) -> set[str]:
        for s in stmts:
            if isinstance(s, ast.Assign):
                loads(s.value, defined)
                for t in s.targets:
                    loads(t, defined)  # a subscript write reads its base and indices
                    stores(t, defined)
            elif isinstance(s, ast.AnnAssign):
                loads(s.value, defined)
                stores(s.target, defined)
            elif isinstance(s, ast.AugAssign):
                loads(s.value, defined)
                if isinstance(s.target, ast.Name):
                    loads(ast.Name(s.target.id, ast.Load(), lineno=s.lineno,
                                   col_offset=s.col_offset), defined)
                stores(s.target, defined)
            elif isinstance(s, (ast.For, ast.AsyncFor)):
                loads(s.iter, defined)
                inner = set(defined)
                stores(s.target, inner)
                block(s.body, inner)
            elif isinstance(s, ast.While):
                loads(s.test, defined)
                block(s.body, set(defined))
            elif isinstance(s, ast.If):
                loads(s.test, defined)
                then = block(s.body, set(defined))
                other = block(s.orelse, set(defined))
                defined |= then & other
            elif isinstance(s, ast.With):
                for item in s.items:
                    loads(item.context_expr, defined)
                defined = block(s.body, defined)
            else:
                loads(s, defined)
        return defined

    block(body, set())
    return list(found.items())


def accesses(body: list[Stmt], params: list[Param]) -> tuple[dict[str, str], set[str], set[str]]:
    """(name -> tensor parameter it aliases, parameters read, parameters written).

    A tensor is written when it is an op's `writes` operand (a store target, an
    assemble destination); every other use is a read, except passing it on
    unchanged (renaming, loop carries, yields, the return).  A zero-copy view of a
    parameter (an op's `view_of` operand: slice, reshape...) is that parameter: a
    write through it writes the parameter, taking it reads nothing."""
    roots = {p.name: p.name for p in params if isinstance(p.type, TensorType)}
    views: dict[str, str] = {}  # view name -> parameter (not a result of the region)
    reads: set[str] = set()
    writes: set[str] = set()

    def root_of(name: str) -> str | None:
        return roots.get(name) or views.get(name)

    def read(expr: Any) -> None:
        for e in _exprs(expr):
            if isinstance(e, Var) and root_of(e.name) is not None:
                reads.add(root_of(e.name))  # type: ignore[arg-type]

    def view(target: Var, value: Any) -> bool:
        spec = REGISTRY.get(value.op) if isinstance(value, Call) and value.op in REGISTRY \
            else None
        viewed = value.arg(spec.view_of) if spec is not None and spec.view_of else None
        if not isinstance(viewed, Var) or root_of(viewed.name) is None:
            return False
        views[target.name] = root_of(viewed.name)  # type: ignore[assignment]
        for key, arg in value.args:
            if key != spec.view_of:  # type: ignore[union-attr]
                read(arg)
        return True

    def alias(target: Var, source: Any) -> None:
        if isinstance(source, Var) and source.name in roots:
            roots[target.name] = roots[source.name]

    def call(value: Expr) -> str | None:
        if not isinstance(value, Call):
            read(value)
            return None
        spec = REGISTRY.get(value.op) if value.op in REGISTRY else None
        dst_name = spec.writes if spec is not None else None
        dst = value.arg(dst_name) if dst_name else None
        root = root_of(dst.name) if isinstance(dst, Var) else None
        for key, arg in value.args:
            if key == dst_name and root is not None:
                writes.add(root)
            else:
                read(arg)
        return root

    def walk(stmts: list[Stmt]) -> None:
        for s in stmts:
            if isinstance(s, Assign):
                if isinstance(s.value, Var) and len(s.targets) == 1:
                    alias(s.targets[0], s.value)
                    continue
                if len(s.targets) == 1 and view(s.targets[0], s.value):
                    continue
                root = call(s.value)
                if root is not None and len(s.targets) == 1:
                    # A write through a view yields the view again, not a region result.
                    spec = REGISTRY[s.value.op]  # type: ignore[union-attr]
                    dst = s.value.arg(spec.writes)  # type: ignore[union-attr, arg-type]
                    through_view = isinstance(dst, Var) and dst.name in views
                    (views if through_view else roots)[s.targets[0].name] = root
            elif isinstance(s, ExprStmt):
                call(s.expr)
            elif isinstance(s, For):
                read((s.start, s.stop, s.step))
                for var, init in s.carried:
                    alias(var, init)
                walk(s.body)
                for res, (var, _) in zip(s.results, s.carried):
                    alias(res, var)
            elif isinstance(s, If):
                read(s.cond)
                walk(s.then_body)
                walk(s.else_body)
                last = s.then_body[-1] if s.then_body else None
                if isinstance(last, Yield):
                    for res, v in zip(s.results, last.values):
                        alias(res, v)

    walk(body)
    return roots, reads, writes


def _exprs(value: Any) -> Iterator[Any]:
    """Every expression inside an argument value (nested tuples, operator trees, calls)."""
    stack = [value]
    while stack:
        v = stack.pop()
        if isinstance(v, (tuple, list)):
            stack.extend(v)
        elif isinstance(v, Expr):
            yield v
            if isinstance(v, Call):
                stack.extend(a for _, a in v.args)
            elif isinstance(v, FuncCall):
                stack.extend(v.args)
            else:
                stack.extend(getattr(v, f, None) for f in ("lhs", "rhs", "operand"))
