"""Arch-aware op checks: type rules with the arch, arch gates, static bounds, cast chains.

The parser already ran every op's type rule without an arch.  Once memory spaces
are fixed, the compiler re-runs it with `CallInfo.arch` set, plus the op's
`arch_rule`, and turns the rule's exceptions into the compile error classes of
docs/design/checks.md with the user's span.  Offsets built from loop variables get interval
bounds, so a load that runs off the tensor on the last iteration fails here,
not at run time (docs/design/checks.md §6).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.compiler.optable import param_table
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.structure import kernels
from pytest_pypto.compiler.walk import Scope, stmt_line
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.casts import cast_chain
from pytest_pypto.ir.dtypes import BOOL, FP32, INDEX
from pytest_pypto.ir.errors import (
    ArchSupportError,
    BoundsError,
    CompileError,
    MemorySpaceError,
    ShapeError,
)
from pytest_pypto.ir.ops.cast import CAST_OP
from pytest_pypto.ir.registry import (
    VALUE_KINDS,
    CallInfo,
    OpArchError,
    OpRuleError,
    OpSpaceError,
    OpSpec,
    OpTypeError,
)
from pytest_pypto.ir.types import ScalarType, Type

Interval = tuple[int, int]


# ------------------------------------------------------------ interval arithmetic


def const_int(expr: Any) -> int | None:
    t = type(expr)  # the common cases first, by exact type (a bool is not an int here)
    if t is int:
        return expr
    if t is n.Const and type(expr.value) is int:
        return expr.value
    if t is n.Var:
        return None
    if isinstance(expr, bool):
        return None
    if isinstance(expr, int):
        return expr
    if isinstance(expr, n.Const) and isinstance(expr.value, int) and not isinstance(expr.value, bool):
        return expr.value
    return None


def interval(expr: Any, env: dict[str, Interval | None]) -> Interval | None:
    """Bounds of an integer scalar expression, or None when unknown (dynamic)."""
    c = const_int(expr)
    if c is not None:
        return (c, c)
    if isinstance(expr, n.Var):
        return env.get(expr.name)
    if isinstance(expr, n.UnaryOp) and expr.op in ("-", "neg", "USub"):
        inner = interval(expr.operand, env)
        return (-inner[1], -inner[0]) if inner else None
    if not isinstance(expr, n.BinOp):
        return None
    a, b = interval(expr.lhs, env), interval(expr.rhs, env)
    if a is None or b is None:
        return None
    op = expr.op
    if op in ("+", "add", "Add"):
        return (a[0] + b[0], a[1] + b[1])
    if op in ("-", "sub", "Sub"):
        return (a[0] - b[1], a[1] - b[0])
    if op in ("*", "mul", "Mult", "max", "min"):
        if op == "max":
            return (max(a[0], b[0]), max(a[1], b[1]))
        if op == "min":
            return (min(a[0], b[0]), min(a[1], b[1]))
        prods = [x * y for x in a for y in b]
        return (min(prods), max(prods))
    if op in ("//", "FloorDiv") and b[0] == b[1] and b[0] > 0:
        return (a[0] // b[0], a[1] // b[0])
    if op in ("%", "Mod") and b[0] == b[1] and b[0] > 0:
        return (0, b[0] - 1) if a[0] < 0 or a[1] >= b[0] else a
    return None


def loop_interval(loop: n.For, env: dict[str, Interval | None]) -> Interval | None:
    """Values the loop variable takes, when start/stop/step are known."""
    start, stop, step = (interval(e, env) for e in (loop.start, loop.stop, loop.step))
    if start is None or stop is None or step is None or step[0] != step[1] or step[0] == 0:
        return None
    s = step[0]
    if start[0] != start[1] or stop[0] != stop[1]:
        # bounds vary: a conservative hull for positive steps
        return (start[0], stop[1] - 1) if s > 0 and stop[1] > start[0] else None
    lo, hi = start[0], stop[0]
    if s > 0:
        if hi <= lo:
            return None
        return (lo, lo + ((hi - lo - 1) // s) * s)
    if lo <= hi:
        return None
    return (lo + ((lo - hi - 1) // -s) * s, lo)


# ------------------------------------------------------------------ CallInfo


def _scalar_type_of(expr: n.Expr) -> Type | None:
    if expr.type is not None:
        return expr.type
    if isinstance(expr, n.Const):
        v = expr.value
        return ScalarType(BOOL if isinstance(v, bool) else INDEX if isinstance(v, int) else FP32)
    return None


_STATIC = frozenset({int, float, bool, str, type(None)})  # static arguments holding no Expr


def call_info(
    call: n.Call, spec: OpSpec, ctx: PassContext | None, env: dict[str, Interval | None]
) -> CallInfo:
    """What the op's rules see of a call, with the arch and interval bounds filled in."""
    types: dict[str, Type | None] = {}
    values: dict[str, Any] = {}
    bounds: dict[str, tuple[Interval | None, ...]] = {}
    given = dict(call.args)
    for p in param_table(spec).rows:
        name = p.name
        value = given.get(name, None if p.required else p.default)
        t = type(value)
        if p.is_value:
            if t is n.Var:  # (by exact type first: the common operands)
                types[name] = value.type
            elif t is n.Const:
                types[name] = _scalar_type_of(value)
                values[name] = value.value
            else:
                types[name] = _scalar_type_of(value) if isinstance(value, n.Expr) else None
        elif t in _STATIC:
            values[name] = value
        elif isinstance(value, (tuple, list)):
            if all(type(v) is int for v in value):  # static offsets and extents (most)
                values[name] = tuple(value)
                bounds[name] = tuple([(v, v) for v in value])
            else:
                values[name] = tuple([const_int(v) if isinstance(v, n.Expr) else v
                                      for v in value])
                bounds[name] = tuple([interval(v, env) for v in value])
        elif isinstance(value, n.Expr):
            values[name] = const_int(value)
        else:
            values[name] = value
    return CallInfo(call.op, types, values, arch=ctx.arch if ctx else None, bounds=bounds)


_ERROR_CLASSES: list[tuple[type[OpRuleError], type[CompileError]]] = [
    (OpArchError, ArchSupportError),
    (OpSpaceError, MemorySpaceError),
    (OpTypeError, ShapeError),
]


def convert_rule_error(exc: OpRuleError, call: n.Call, ctx: PassContext) -> CompileError:
    cls: type[CompileError] = BoundsError if type(exc).__name__ == "OpBoundsError" else ShapeError
    for rule_cls, error_cls in _ERROR_CLASSES:
        if isinstance(exc, rule_cls):
            cls = error_cls
            break
    return cls(exc.message, call.span, hint=exc.hint, arch=ctx.arch.name)


def run_rules(call: n.Call, ctx: PassContext, env: dict[str, Interval | None], *, arch_rule: bool,
              spec: OpSpec | None = None) -> CallInfo:
    if spec is None:
        spec = ctx.op(call)
    info = call_info(call, spec, ctx, env)
    try:
        spec.type_rule(info)
        if arch_rule and spec.arch_rule is not None:
            spec.arch_rule(ctx.arch, info)
    except OpRuleError as exc:
        raise convert_rule_error(exc, call, ctx) from None
    for message in info.warnings:
        ctx.warn(message, call.span)
    return info


# ------------------------------------------------------------------ passes


def _walk_calls(body: list[n.Stmt], env: dict[str, Interval | None], visit) -> None:
    for stmt in body:
        t = type(stmt)  # the common statements first, by exact type (no subclasses)
        if t is n.Assign:
            value = stmt.value
            if type(value) is n.Call:
                visit(stmt, value, env)
                if len(stmt.targets) == 1:
                    env[stmt.targets[0].name] = None
            elif len(stmt.targets) == 1:
                env[stmt.targets[0].name] = interval(value, env)
            continue
        if t is n.ExprStmt:
            if type(stmt.expr) is n.Call:
                visit(stmt, stmt.expr, env)
            continue
        if isinstance(stmt, n.For):
            inner = Scope(env)
            inner[stmt.var.name] = loop_interval(stmt, env)
            _walk_calls(stmt.body, inner, visit)
            continue
        if isinstance(stmt, n.If):
            _walk_calls(stmt.then_body, env, visit)
            _walk_calls(stmt.else_body, env, visit)


def check_types_for_arch(program: n.Program, ctx: PassContext) -> n.Program:
    """Re-run type rules with the arch, the arch gates, and record cast chains."""
    ctx.unbounded_windows = 0
    for fn in kernels(program):
        facts = ctx.facts(fn.name)

        def visit(stmt: n.Stmt, call: n.Call, env: dict, facts=facts) -> None:
            if call.op in ctx.arch.unavailable_ops:
                raise ArchSupportError(
                    f"The operator {call.op} is not available on the '{ctx.arch.name}' backend",
                    call.span,
                    hint="target a5, or express it with ops both archs have",
                    arch=ctx.arch.name,
                )
            warned = len(ctx.warnings)
            spec = ctx.op(call)
            run_rules(call, ctx, env, arch_rule=True, spec=spec)
            if _takes_window(spec):
                if len(ctx.warnings) == warned:
                    ctx.bounds_checked.add(id(call))
                else:
                    ctx.unbounded_windows += 1  # type: ignore[operator]
            if call.op == CAST_OP:
                _fill_cast_chain(stmt, call, ctx, facts)

        _walk_calls(fn.body, {}, visit)
    return program


def _takes_window(spec: OpSpec) -> bool:
    """Ops addressing a tensor window by `offsets` (load, store...): their type rules
    check the window against the tensor, so they re-run with loop-variable bounds."""
    return "offsets" in param_table(spec).names


def check_bounds(program: n.Program, ctx: PassContext) -> n.Program:
    """Static window bounds of the ops taking `offsets` over whole loop ranges
    (docs/design/checks.md §6)."""
    if ctx.unbounded_windows == 0:
        return program  # check_types_for_arch ran every window's rules with the bounds
    for fn in kernels(program):

        def visit(stmt: n.Stmt, call: n.Call, env: dict) -> None:
            if id(call) not in ctx.bounds_checked and _takes_window(ctx.op(call)):
                run_rules(call, ctx, env, arch_rule=False)

        _walk_calls(fn.body, {}, visit)
    return program


def _fill_cast_chain(stmt: n.Stmt, call: n.Call, ctx: PassContext, facts) -> None:
    spec = ctx.op(call)
    src = next((v.type for k, v in call.args if isinstance(v, n.Expr) and spec.param(k).kind in VALUE_KINDS), None)
    dst = call.type.dtype if call.type is not None else None
    if src is None or dst is None:
        return
    chain = cast_chain(ctx.arch, src.dtype.name, dst.name)
    if chain is None:
        return  # the cast's arch rule has already reported the missing chain
    names = tuple(getattr(d, "name", d) for d in chain)
    if any(p.name == "chain" for p in spec.params):
        call.set_arg("chain", names)
    var = stmt.targets[0].name if isinstance(stmt, n.Assign) and stmt.targets else "_"
    facts.casts.append((stmt_line(call), var, names))
