"""Core classification (docs/design/language.md §14): which side of a cluster a kernel runs on.

Mat/Left/Right/Acc/Bias (and the scale spaces) are cube (AIC) memory, Vec is
vector (AIV) memory.  A kernel touching one side is `aic` or `aiv`; both is
`mix`, and its Acc->Vec / Vec->Mat moves are cross-core transfers, routed as the
arch table says ("via GM" on a2a3, "direct" on a5).
"""

from __future__ import annotations

from pytest_pypto.compiler.groups import check_hard_syncall, check_pinned_core
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.structure import kernels
from pytest_pypto.compiler.walk import iter_calls
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.types import CUBE_SPACES, VECTOR_SPACES, TileType


def spaces_touched(fn: n.Function) -> set[str]:
    spaces: set[str] = set()
    for _, call in iter_calls(fn.body):
        if isinstance(call, n.Call):
            for _, value in call.args:
                if isinstance(value, n.Expr):
                    t = value.type
                    if isinstance(t, TileType) and t.space:
                        spaces.add(t.space)
            t = call.type
            if isinstance(t, TileType) and t.space:
                spaces.add(t.space)
    return spaces


def core_type(spaces: set[str]) -> str:
    cube = bool(spaces & CUBE_SPACES)
    vector = bool(spaces & VECTOR_SPACES)
    if cube and vector:
        return "mix"
    return "aic" if cube else "aiv"


def classify_cores(program: n.Program, ctx: PassContext) -> n.Program:
    for fn in kernels(program):
        facts = ctx.facts(fn.name)
        facts.core_type = core_type(spaces_touched(fn))
        check_pinned_core(fn, facts.core_type, ctx)
        if facts.core_type == "mix":
            for move in facts.moves:
                if (move.src, move.dst) in ctx.arch.cross_core_moves:
                    move.route = ctx.arch.cross_core_route
    check_hard_syncall(program, ctx)
    return program
