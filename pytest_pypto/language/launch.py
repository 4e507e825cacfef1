# SPDX-License-Identifier: Apache-2.0
"""`pl.spmd(n)`: one launch of n blocks of a kernel (PyPTO's SPMD dispatch).

The launch is a kernel call whose `FuncCall.blocks` is n: the runtime submits n
tasks of one launch, block i reading i from `pl.get_block_idx()` and n from
`pl.get_block_num()`.  The forms PyPTO accepts:

* `with pl.spmd(n): out = self.kernel(...)`: a dispatch body, exactly one kernel call;
* `with pl.spmd(n):` whose body reads `get_block_idx()` (or that carries
  `optimizations=`): the body is outlined as by `pl.at` (language/outline.py);
* `with pl.spmd(n):` around a lone `with pl.at(level=pl.Level.CORE_GROUP, ...)`:
  that region is the kernel;
* `for i in pl.spmd(n):`: the body is outlined, `i` bound to the block index.

`name_hint="q"` names the outlined kernel `q` (PyPTO's `q_spmd` names the launch
wrapper, which has no function of its own here).  `deps=`, `predicate=` and
`with ... as tid` are Tier 3 (explicit task dependencies).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING

from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Expr
from pytest_pypto.ir.types import ScalarType
from pytest_pypto.language import outline, region_options, scalars, scheduling, surface

if TYPE_CHECKING:
    from pytest_pypto.language.statements import BodyParser

_KEYWORDS = ("core_num", "sync_start", "name_hint", "optimizations", "deps",
             "allow_early_resolve", "predicate")
_LOOP_ONLY = ("init_values", "chunk", "chunk_policy", "attrs", "step", "stage")
_SUFFIX = "_spmd"


def is_spmd_loop(bp: BodyParser, stmt: ast.For) -> bool:
    """True for `for i in pl.spmd(...)` (the iterator's callee evaluates to pl.spmd)."""
    it = stmt.iter
    if not isinstance(it, ast.Call):
        return False
    func = it.func
    if isinstance(func, ast.Attribute) and func.attr == "spmd":
        return bp.ep.eval(func) is surface.spmd
    if isinstance(func, ast.Name) and func.id not in bp.env:
        return bp.ctx.namespace.get(func.id) is surface.spmd
    return False


def parse_spmd_loop(bp: BodyParser, stmt: ast.For) -> None:
    ctx = bp.ctx
    hint = "for i in pl.spmd(4): ... (i is the block index)"
    if not isinstance(stmt.target, ast.Name):
        raise ctx.error(
            ParserSyntaxError, "for ... in pl.spmd(...) must use a single loop variable",
            stmt.target, hint=hint,
        )
    if stmt.orelse:
        raise ctx.error(ParserSyntaxError, "a pl.spmd loop cannot have an else clause", stmt)
    call = stmt.iter
    assert isinstance(call, ast.Call)
    for kw in call.keywords:
        if kw.arg in _LOOP_ONLY:
            raise ctx.error(
                ParserSyntaxError, f"pl.spmd() loop form does not accept '{kw.arg}='", kw.value,
                hint=hint,
            )
    options, blocks = spmd_options(bp, call)
    _deps_need_tid(bp, options, None)
    outline.outline(bp, stmt, stmt.body, options, blocks=blocks, index_name=stmt.target.id,
                    what="pl.spmd")


def _deps_need_tid(bp: BodyParser, options: region_options.RegionOptions,
                   tid: str | None) -> None:
    """PyPTO takes deps= on a pl.spmd scope only in the `with ... as tid` form."""
    if options.deps is not None and tid is None:
        raise bp.ctx.error(
            ParserSyntaxError, "pl.spmd() deps= needs the `with pl.spmd(...) as tid:` form",
            options.deps, hint="with pl.spmd(n, deps=[tid_a]) as tid_b:",
        )


def parse_spmd_with(bp: BodyParser, stmt: ast.With) -> None:
    ctx = bp.ctx
    call = stmt.items[0].context_expr
    assert isinstance(call, ast.Call)
    options, blocks = spmd_options(bp, call)
    tid = scheduling.region_task_id(bp, stmt)
    _deps_need_tid(bp, options, tid)
    has_optimizations = options.split is not None or options.slot_num is not None
    carrier = _lone_at(bp, stmt.body)
    if carrier is not None:
        if has_optimizations:
            raise ctx.error(
                ParserSyntaxError,
                "`optimizations=` belongs on the inner `pl.at(level=pl.Level.CORE_GROUP, ...)`, "
                "not on `pl.spmd(...)`", stmt,
                hint="keep optimizations=[...] on the inner pl.at(...) only",
            )
        inner = carrier.items[0].context_expr
        assert isinstance(inner, ast.Call)
        at = region_options.at_options(bp, inner)
        at.deps = at.deps if options.deps is None else options.deps
        at.predicate = options.predicate
        outline.outline(bp, carrier, carrier.body, at, blocks=blocks,
                        tid_name=tid or scheduling.region_task_id(bp, carrier))
        return
    if reads_block_idx(stmt.body) or has_optimizations:
        outline.outline(bp, stmt, stmt.body, options, blocks=blocks, what="pl.spmd",
                        tid_name=tid)
        return
    dispatches = _dispatches(stmt.body)
    if not dispatches:
        raise ctx.error(
            ParserSyntaxError,
            "`with pl.spmd(...)` body neither reads the block index via pl.get_block_idx() "
            "nor dispatches a self.<kernel>(...) call, so every block would run identical work",
            stmt,
            hint="dispatch a kernel that reads pl.get_block_idx(), or write "
            "for i in pl.spmd(n): to bind the block index",
        )
    if len(dispatches) > 1 and not getattr(ctx, "in_cluster", False):  # a cluster's AIC + AIV
        raise ctx.error(
            ParserSyntaxError,
            f"`with pl.spmd(...)` dispatch body launches {len(dispatches)} kernels; only one "
            "kernel dispatch per pl.spmd scope is supported",
            dispatches[1],
            hint="use one pl.spmd(...) scope per kernel",
        )
    kind = ctx.program.headers[ctx.function_name].kind
    if kind not in outline.OUTLINING_KINDS:
        raise ctx.error(
            InvalidOperationError,
            f"pl.spmd is not supported inside {kind} function '{ctx.function_name}': a launch "
            "is submitted from an Orchestration or Opaque function",
            stmt,
        )
    start = len(bp.out)
    bp.block(stmt.body)
    for call_expr in scheduling.func_calls(bp.out[start:]):
        call_expr.blocks = blocks
        scheduling.attach(bp.ep, call_expr, options.deps, options.predicate, "pl.spmd()")
        if tid is not None:
            scheduling.bind_task_id(bp, call_expr, tid, stmt)


def spmd_options(bp: BodyParser, call: ast.Call) -> tuple[region_options.RegionOptions, Expr]:
    """The launch's block count (an INDEX-typed expression) and its region options."""
    ctx = bp.ctx
    if len(call.args) > 1:
        raise ctx.error(
            ParserSyntaxError, "pl.spmd() accepts at most one positional argument (core_num)",
            call.args[1], hint="pl.spmd(4, name_hint=\"k\")",
        )
    given: dict[str, ast.expr] = {}
    if call.args:
        given["core_num"] = call.args[0]
    for kw in call.keywords:
        if kw.arg is None or (kw.arg not in _KEYWORDS and kw.arg not in _LOOP_ONLY):
            raise ctx.error(
                ParserSyntaxError, f"Unknown keyword argument '{kw.arg}' in pl.spmd()",
                kw.value if kw.arg else call, hint=f"pl.spmd() takes: {', '.join(_KEYWORDS)}",
            )
        if kw.arg in given:
            raise ctx.error(
                ParserSyntaxError, f"pl.spmd() got multiple values for argument '{kw.arg}'",
                kw.value,
            )
        given[kw.arg] = kw.value
    if "core_num" not in given:
        raise ctx.error(
            ParserSyntaxError, "pl.spmd() requires core_num (first positional argument)", call,
            hint="pl.spmd(4)",
        )
    blocks = _core_num(bp, given["core_num"])
    for name in ("sync_start", "allow_early_resolve"):
        if name in given:
            region_options.bool_literal(bp, given[name], f"pl.spmd() {name}")
    options = region_options.RegionOptions(deps=given.get("deps"),
                                           predicate=given.get("predicate"))
    if "name_hint" in given:
        hint = region_options.name_hint(bp, given["name_hint"], "pl.spmd()")
        options.name_hint = hint[: -len(_SUFFIX)] if hint.endswith(_SUFFIX) else hint
    if "optimizations" in given:
        region_options.optimizations(bp, given["optimizations"], "pl.spmd", options)
    return options, blocks


def _core_num(bp: BodyParser, node: ast.expr) -> Expr:
    ctx = bp.ctx
    value = bp.ep.eval(node)
    if isinstance(value, bool) or (scalars.is_number(value) and not isinstance(value, int)):
        raise ctx.error(
            ParserSyntaxError, f"core_num must be an integer expression, got {value!r}", node,
        )
    if isinstance(value, int) and value <= 0:
        raise ctx.error(
            ParserSyntaxError, f"core_num must be a positive integer, got {value}", node,
        )
    expr = scalars.as_scalar_expr(value, ctx.span(node))
    if expr is None or not isinstance(expr.type, ScalarType) or not expr.type.dtype.is_int:
        got = getattr(getattr(value, "type", None), "kind", None) or type(value).__name__
        raise ctx.error(
            ParserTypeError, f"core_num must be an integer expression, got {got}", node,
            hint="pl.spmd(n) with an int or an integer Scalar",
        )
    return bp.materialize(expr, node)


def reads_block_idx(body: list[ast.stmt]) -> bool:
    """A body calling get_block_idx() in any spelling does per-block work itself."""
    for stmt in body:
        for node in ast.walk(stmt):
            if isinstance(node, ast.Call):
                f = node.func
                name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
                if name == "get_block_idx":
                    return True
    return False


def _lone_at(bp: BodyParser, body: list[ast.stmt]) -> ast.With | None:
    if len(body) != 1 or not isinstance(body[0], ast.With):
        return None
    with_stmt = body[0]
    return with_stmt if region_options.region_kind(bp, with_stmt) is surface.at else None


def _dispatches(body: list[ast.stmt]) -> list[ast.Call]:
    found = []
    for stmt in body:
        for node in ast.walk(stmt):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "self"):
                found.append(node)
    found.sort(key=lambda n: (n.lineno, n.col_offset))
    return found
