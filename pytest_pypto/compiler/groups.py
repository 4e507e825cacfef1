# SPDX-License-Identifier: Apache-2.0
"""Group functions: one AIC and one AIV kernel run as one task (docs/design/language.md §14).

A ``pl.FunctionType.Group`` body calls its two kernels, each once, with the Group's
own parameters as arguments, and returns what they return.  An orchestration call
of the Group is one task; the runtime runs the two kernels side by side, their
pipes between them (runtime/lanes.py).  `members` gives codegen each kernel with the
Group parameter each of its arguments is.
"""

from __future__ import annotations

from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.walk import iter_calls
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import MemorySpaceError, PlacementError
from pytest_pypto.ir.ops.cross_core import SYNCALL_OP
from pytest_pypto.ir.types import TileType

__all__ = ["check_group", "check_hard_syncall", "check_pinned_core", "members"]


def _value(stmt: n.Stmt) -> n.Expr | None:
    if isinstance(stmt, n.Assign):
        return stmt.value
    return stmt.expr if isinstance(stmt, n.ExprStmt) else None


def _calls(fn: n.Function) -> list[n.FuncCall]:
    calls = []
    for stmt in fn.body:
        value = _value(stmt)
        if isinstance(value, n.FuncCall):
            calls.append(value)
    return calls


def check_group(program: n.Program, fn: n.Function, ctx: PassContext) -> None:
    """The Group's body is calls of one AIC and one AIV kernel on its parameters."""
    params = {p.name for p in fn.params}
    roles: dict[str, n.FuncCall] = {}
    for stmt in fn.body:
        if isinstance(stmt, n.Return):
            continue
        value = _value(stmt)
        callee = program.functions.get(value.callee) if isinstance(value, n.FuncCall) else None
        core = callee.attrs.get("core") if callee is not None else None
        if core is None:
            raise PlacementError(
                f"Group function '{fn.name}' may only call its pl.FunctionType.AIC and "
                f"pl.FunctionType.AIV kernels",
                stmt.span or fn.span,
                hint="compute in the AIC / AIV kernels; the Group only runs them together",
                arch=ctx.arch.name,
            )
        if core in roles:
            raise PlacementError(
                f"Group function '{fn.name}' calls two {core.upper()} kernels "
                f"('{roles[core].callee}' and '{value.callee}')",
                stmt.span or fn.span,
                hint="a Group runs one AIC and one AIV kernel",
                arch=ctx.arch.name,
            )
        for arg in value.args:
            if not (isinstance(arg, n.Var) and arg.name in params):
                raise PlacementError(
                    f"Group function '{fn.name}' passes '{value.callee}' a value that is not "
                    f"one of its parameters",
                    stmt.span or fn.span,
                    hint="pass the Group's parameters straight to its kernels",
                    arch=ctx.arch.name,
                )
        roles[core] = value
    if set(roles) != {"aic", "aiv"}:
        missing = ("AIC" if "aic" not in roles else "AIV")
        raise PlacementError(
            f"Group function '{fn.name}' calls no pl.FunctionType.{missing} kernel",
            fn.span,
            hint="a Group runs one AIC and one AIV kernel that talk through pipes",
            arch=ctx.arch.name,
        )


def check_pinned_core(fn: n.Function, touched: str, ctx: PassContext) -> None:
    """A pl.FunctionType.AIC kernel holds cube tiles only, an AIV kernel vector tiles only
    (``touched``: the class its tiles give it, compiler/cores.py)."""
    pinned = fn.attrs.get("core")
    if pinned is None or touched == pinned:
        return
    if touched == "aiv" and not any(isinstance(e, n.Call) and isinstance(e.type, TileType)
                                    for _, e in iter_calls(fn.body)):
        return  # no tile at all (a kernel of scalars): nothing runs on the wrong core
    side = {"aic": "cube (Mat, Left, Right, Acc, Bias)", "aiv": "vector (Vec)"}
    raise MemorySpaceError(
        f"pl.FunctionType.{pinned.upper()} kernel '{fn.name}' uses "
        f"{'both cube and vector' if touched == 'mix' else side[touched]} memory, but runs on "
        f"the {pinned.upper()} core, which has only {side[pinned]} memory",
        fn.span,
        hint="send tiles to the other core with pl.tpush_to_aiv / pl.tpush_to_aic",
        arch=ctx.arch.name,
    )


def _hard_syncall(fn: n.Function) -> n.Call | None:
    for _, e in iter_calls(fn.body):
        if isinstance(e, n.Call) and e.op == SYNCALL_OP \
                and dict(e.args).get("mode", "hard") in (None, "hard"):
            return e
    return None


def check_hard_syncall(program: n.Program, ctx: PassContext) -> None:
    """A hard `pl.system.syncall` waits for every physical core of its kind, so a
    `pl.spmd(n)` launch of its kernel with a literal n must fill them exactly: n = the AIV
    cores for an AIV kernel and core_type "aiv_only", the AIC cores for an AIC kernel and
    "aic_only", the clusters (one AIC each) for a mixed kernel.  An AIV or AIC kernel with
    another core_type can never complete the barrier."""
    for fn in program.functions.values():
        for _, call in iter_calls(fn.body):
            if not isinstance(call, n.FuncCall) or not isinstance(call.blocks, n.Const):
                continue
            callee = program.functions.get(call.callee)
            barrier = _hard_syncall(callee) if callee is not None else None
            if barrier is None:
                continue
            kind = ctx.facts(callee.name).core_type
            core = dict(barrier.args).get("core_type") or "mix"
            want = {"aiv": "aiv_only", "aic": "aic_only"}.get(kind)
            if want is not None and core != want:
                raise PlacementError(
                    f"hard pl.system.syncall(core_type={core!r}) in {kind.upper()} kernel "
                    f"'{callee.name}' can never complete: no core of the other kind takes part",
                    barrier.span or call.span,
                    hint=f"use core_type={want!r}, or mode='soft'",
                    arch=ctx.arch.name,
                )
            required = {"aiv": ctx.arch.aiv_cores, "aic": ctx.arch.aic_cores}.get(
                kind, ctx.arch.aic_cores)
            what = {"aiv": "AIV cores", "aic": "AIC cores"}.get(kind, "clusters")
            blocks = call.blocks.value
            if blocks != required:
                raise PlacementError(
                    f"hard pl.system.syncall in '{callee.name}' waits for all {required} {what} "
                    f"of {ctx.arch.name}, but this pl.spmd launches {blocks} blocks",
                    call.span,
                    hint=f"launch pl.spmd({required}, sync_start=True), or use "
                    "pl.system.syncall(mode='soft', ...) for a partial launch",
                    arch=ctx.arch.name,
                )


def members(program: n.Program, fn: n.Function) -> list[tuple[str, tuple[int, ...]]]:
    """(kernel, Group parameter position of each of its arguments), AIC first."""
    index = {p.name: i for i, p in enumerate(fn.params)}
    found = [
        (program.functions[c.callee].attrs.get("core", ""), c.callee,
         tuple(index[a.name] for a in c.args if isinstance(a, n.Var)))
        for c in _calls(fn)
    ]
    return [(name, positions) for _, name, positions in sorted(found)]
