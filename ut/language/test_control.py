# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Loops and conditionals: explicit and implicit carried values, merges, iterator kinds."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Assign, BinOp, Compare, Const, For, If, Return, Var, Yield
from pytest_pypto.ir.types import ScalarType


def test_explicit_init_values_and_yield_targets():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
            for i, (a, b) in pl.range(n, init_values=(0, 1)):
                a2 = a + i
                b2 = b * 2
                a_out, b_out = pl.yield_(a2, b2)
            return a_out + b_out

    loop, ret = P.functions["k"].body
    assert isinstance(loop, For)
    assert [init.value for _, init in loop.carried] == [0, 1]
    assert [v.name for v, _ in loop.carried] == ["a", "b"]
    assert [r.name for r in loop.results] == ["a_out", "b_out"]
    assert isinstance(loop.body[-1], Yield) and len(loop.body[-1].values) == 2
    assert isinstance(ret, Return)
    (total,) = ret.values
    assert total.lhs is loop.results[0] and total.rhs is loop.results[1]
    assert P.functions["k"].returns == (ScalarType(dtypes.INDEX),)


def test_yield_arity_must_match_init_values():
    with pytest.raises(ParserTypeError, match="yields 1 values"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                for i, (a, b) in pl.range(n, init_values=(0, 1)):
                    a2 = pl.yield_(a)


def test_implicit_scalar_carry_and_zero_literal_init():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INT32]):
            acc = n
            for i in pl.parallel(0, 8, 2):
                acc = acc + 1

    (loop,) = P.functions["k"].body  # acc = n binds the parameter itself
    assert loop.kind == "parallel"
    (var, init), = loop.carried
    assert init.name == "n" and var.type == ScalarType(dtypes.INT32)
    (add,) = [s for s in loop.body if isinstance(s, Assign)]
    assert add.value.rhs.type == ScalarType(dtypes.INT32)  # the literal adopted INT32
    assert loop.body[-1].values == add.targets


def test_if_merges_rebound_names():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
            r = n
            if n > 4:
                r = n * 2
            elif n > 2:
                r = n + 1
            return r

    branch, ret = P.functions["k"].body
    assert isinstance(branch, If) and isinstance(branch.cond, Compare)
    (merged,) = branch.results
    assert ret.values == (merged,)
    assert isinstance(branch.then_body[-1], Yield)
    inner = branch.else_body[0]
    assert isinstance(inner, If) and len(inner.results) == 1
    assert branch.else_body[-1].values == inner.results


def test_explicit_if_yield_needs_both_arms():
    with pytest.raises(ParserSyntaxError, match="both arms"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                if n > 4:
                    r = pl.yield_(n)
                else:
                    pass


def test_constant_condition_emits_one_arm():
    FLAG = False

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]) -> pl.Scalar[pl.INDEX]:
            if FLAG:
                r = n * 3
            else:
                r = n + 3
            return r

    assign, ret = P.functions["k"].body
    assert isinstance(assign, Assign) and assign.value.op == "+"
    assert ret.values == assign.targets


def test_if_condition_must_be_bool():
    with pytest.raises(ParserTypeError, match="Scalar\\[BOOL\\]"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                if n:
                    pass


def test_pipeline_stage_and_unroll_rules():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]):
            for i in pl.pipeline(n, stage=2):
                pass
            for j in pl.unroll(4):
                pass

    first, second = P.functions["k"].body
    assert (first.kind, first.attrs) == ("pipeline", {"stage": 2})
    assert second.kind == "unroll" and isinstance(second.stop, Const) and second.stop.value == 4

    with pytest.raises(InvalidOperationError, match="init_values"):
        @pl.program
        class Q:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                for i, (a,) in pl.unroll(4, init_values=(0,)):
                    b = pl.yield_(a)

    with pytest.raises(ParserTypeError, match="unroll bounds"):
        @pl.program
        class R:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                for i in pl.unroll(n):
                    pass

    with pytest.raises(InvalidOperationError, match="stage"):
        @pl.program
        class S:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                for i in pl.pipeline(n, stage=0):
                    pass


def test_scalar_typing_rules():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, a: pl.Scalar[pl.INT32], b: pl.Scalar[pl.INT64], f: pl.Scalar[pl.FP16]):
            w = a + b
            g = f * 2.0
            m = pl.max(a, 3)
            c = pl.cast(f, pl.INT32)
            k = pl.const(5, pl.INT16)
            z = k + a

    body = P.functions["k"].body
    types = [s.targets[0].type.dtype.name for s in body if isinstance(s, Assign)]
    # wider width wins; literals adopt the Scalar's dtype; cast converts; const is typed
    assert types == ["INT64", "FP16", "INT32", "INT32", "INT16", "INT32"]
    assert isinstance(body[2].value, BinOp) and body[2].value.op == "max"


def test_scalar_cast_rejects_modes():
    with pytest.raises(InvalidOperationError, match="default mode"):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, f: pl.Scalar[pl.FP32]):
                c = pl.cast(f, pl.INT32, mode="floor")


def test_loop_var_is_index_and_rebinding_outside_is_ssa():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def k(self, n: pl.Scalar[pl.INDEX]):
            x = n + 1
            x = x + 1

    a, b = P.functions["k"].body
    assert a.targets[0].name != b.targets[0].name
    assert b.value.lhs is a.targets[0]
    assert isinstance(a.targets[0], Var)
