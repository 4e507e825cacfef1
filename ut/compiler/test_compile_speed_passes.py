# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Session-6 compile-speed helpers: passes that report their rewrites keep the
expression memo when they rewrote nothing, check_bounds is skipped when the arch
type check already bounded every window, the capacity peak over events only, the
name memo of codegen, and the fast paths of `const_int` / `call_info`.

Each must give what the plain computation gives; the references are written here.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.compiler import typecheck, walk
from pytest_pypto.compiler.api import PASSES, compile, lower
from pytest_pypto.compiler.capacity import Buffer, _peak
from pytest_pypto.compiler.codegen_stmts import Names, _identifier
from pytest_pypto.compiler.passes import Pass, PassContext, PassManager
from pytest_pypto.compiler.typecheck import call_info, const_int
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import FP32, INDEX
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import ScalarType, TileType
from ut.helpers import line_of


@pl.program
class Nested:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 32], pl.FP32],
          out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        for i in pl.range(2):
            t = pl.load(x, [i * 16, 0], [16, 32])
            out = pl.store(pl.exp(pl.add(t, t)), [i * 16, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        out = self.k(x, out)
        return out


def _program() -> n.Program:
    work, _ = lower(Nested, RunConfig(platform="a5sim"))
    return work


def _first_assign(program: n.Program) -> n.Assign:
    return next(s for s in walk.iter_stmts(program.functions["k"].body)
                if isinstance(s, n.Assign))


# ------------------------------------------------------------------ reports_rewrites


def _run(rewrites: bool) -> tuple[list[list[n.Expr]], n.Var]:
    """look, a reporting pass (rewriting ``stmt`` or not), look again."""
    program = _program()
    stmt = _first_assign(program)
    seen: list[list[n.Expr]] = []
    replacement = n.Var("fresh_name", type=stmt.value.type)

    def look(p: n.Program, ctx: PassContext) -> n.Program:
        seen.append(walk.stmt_expr_list(stmt))
        return p

    def sometimes(p: n.Program, ctx: PassContext) -> n.Program:
        seen.append(walk.stmt_expr_list(stmt))  # read before rewriting, as the flag asks
        if rewrites:
            stmt.value = replacement
            ctx.exprs_rewritten = True
        return p

    ctx = PassContext(arch=spec("a5"), registry=REGISTRY.as_dict())
    PassManager([Pass("look", look, keeps_exprs=True),
                 Pass("sometimes", sometimes, reports_rewrites=True),
                 Pass("look_again", look, keeps_exprs=True)]).run(program, ctx)
    return seen, replacement


def test_a_reporting_pass_that_rewrote_nothing_keeps_the_memo():
    seen, _ = _run(rewrites=False)
    assert seen[0] is seen[1] is seen[2]  # one walk, shared by all three passes


def test_a_reporting_pass_that_rewrote_empties_the_memo():
    seen, replacement = _run(rewrites=True)
    assert seen[1] is seen[0]  # it ran with the memo
    assert [id(e) for e in seen[2]] == [id(replacement)]  # walked afresh after it


def test_the_passes_that_report_rewrites_are_the_occasional_rewriters():
    assert {p.name for p in PASSES if p.reports_rewrites} == {
        "check_placement", "flatten_calls", "lower_tensor_ops", "auto_tile_l0"}
    assert not any(p.reports_rewrites and p.keeps_exprs for p in PASSES)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_hoisting_flatten_still_gives_fresh_expressions_downstream(platform):
    """Nested calls are hoisted (flatten reports it): every op call is then a statement's
    whole value, in the compiled kernel too."""
    work, _ = lower(Nested, RunConfig(platform=platform))
    for s in walk.iter_stmts(work.functions["k"].body):
        calls = [e for e in walk.stmt_expr_list(s) if isinstance(e, n.Call)]
        assert len(calls) <= 1
        if calls:
            assert calls[0] is (s.value if isinstance(s, n.Assign) else s.expr)
    source = compile(Nested, RunConfig(platform=platform)).memory.text("kernels/k.py")
    assert "_op_tile_exp(" in source and "_op_tile_add(" in source


# ------------------------------------------------------------------ check_bounds skip


def test_check_bounds_is_skipped_only_when_every_window_was_bounded(monkeypatch):
    work, ctx = lower(Nested, RunConfig(platform="a5sim"))
    assert ctx.unbounded_windows == 0
    assert len(ctx.bounds_checked) == 2  # the load and the store of the loop body
    ran: list[str] = []
    real = typecheck.run_rules
    monkeypatch.setattr(typecheck, "run_rules",
                        lambda call, *a, **k: (ran.append(call.op), real(call, *a, **k))[1])
    typecheck.check_bounds(work, ctx)
    assert ran == []
    fresh = PassContext(arch=spec("a5"), registry=REGISTRY.as_dict())
    assert fresh.unbounded_windows is None  # check_bounds alone walks every kernel
    typecheck.check_bounds(work, fresh)
    assert ran == ["tile.load", "tile.store"]


def test_a_window_past_the_tensor_on_the_last_iteration_still_fails_at_compile():
    @pl.program
    class Over:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 32], pl.FP32],
              out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            for i in pl.range(3):
                t = pl.load(x, [i * 16, 0], [16, 32])  # over-the-edge
                out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            out = self.k(x, out)
            return out

    from pytest_pypto.ir.errors import CompileError

    with pytest.raises(CompileError) as info:
        compile(Over, RunConfig(platform="a5sim"))
    assert f":{line_of(Path(__file__), 'over-the-edge')}:" in str(info.value)


# ------------------------------------------------------------------ _peak


def _peak_by_hand(spans: list[tuple[int, int, int]], points: int) -> tuple[int, int]:
    best_point, best = 0, 0
    for p in range(points):
        live = sum(b for s, e, b in spans if max(s, 0) <= p <= min(e, points - 1))
        if live > best:
            best_point, best = p, live
    return best_point, best


@settings(max_examples=150, deadline=None)
@given(st.integers(1, 40).flatmap(lambda points: st.tuples(
    st.just(points),
    st.lists(st.tuples(st.integers(-2, points + 2), st.integers(-2, points + 2),
                       st.integers(0, 4096)), max_size=12))))
def test_peak_over_events_is_the_peak_over_every_point(case):
    points, spans = case
    tile = TileType((1, 1), FP32, "Vec")
    buffers = [Buffer(f"b{i}", tile, nbytes, start, end, None)
               for i, (start, end, nbytes) in enumerate(spans)]
    assert _peak(buffers, points) == _peak_by_hand(spans, points)


# ------------------------------------------------------------------ names, const_int, call_info


@pytest.mark.parametrize("name, expected", [
    ("x", "x"), ("range", "v_range"), ("_t", "v_t"), ("3d", "v_3d"), ("lambda", "v_lambda"),
    ("a-b", "a_b"), ("a.b", "a_b"),
])
def test_identifier_of_a_user_name(name, expected):
    assert _identifier(name) == expected
    names = Names()
    assert names(name) == expected and names(name) == expected  # memo'd: same answer
    assert names.fresh("other key", name) == f"{expected}_2"  # a second key: a new local


@pytest.mark.parametrize("value, expected", [
    (3, 3), (True, None), (n.Const(4), 4), (n.Const(False), None), (n.Const(2.0), None),
    (n.Var("i"), None), ("s", None), (None, None),
])
def test_const_int(value, expected):
    got = const_int(value)
    assert got == expected and type(got) is type(expected)


def test_call_info_of_static_and_dynamic_windows():
    x = n.Var("x", type=pl.Tensor[[32, 32], pl.FP32])
    i = n.Var("i", type=ScalarType(INDEX))
    static = n.Call("tile.load", (("tensor", x), ("offsets", (16, 0)), ("shapes", (16, 32))))
    info = call_info(static, REGISTRY["tile.load"], None, {})
    assert info.values["offsets"] == (16, 0) and info.bounds["offsets"] == ((16, 16), (0, 0))
    assert info.types["tensor"] is x.type
    moving = n.Call("tile.load", (("tensor", x), ("offsets", (i, n.Const(0))),
                                  ("shapes", (16, 32))))
    info = call_info(moving, REGISTRY["tile.load"], None, {"i": (0, 16)})
    assert info.values["offsets"] == (None, 0)
    assert info.bounds["offsets"] == ((0, 16), (0, 0))
    assert info.values["shapes"] == (16, 32) and info.bounds["shapes"] == ((16, 16), (32, 32))
