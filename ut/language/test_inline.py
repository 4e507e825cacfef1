# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Inlining at parse time: `FunctionType.Inline`, `@pl.inline`, InCore -> InCore calls and
Opaque functions called from orchestration are spliced at the call site (docs/design/language.md
§6); diagnostics inside a spliced body point at the callee's lines."""

from __future__ import annotations

from collections.abc import Callable

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Assign, Call, FuncCall, Stmt


def calls(body: list[Stmt]) -> list[str]:
    """The op / function names called by the top-level statements of ``body``."""
    out = []
    for s in body:
        value = getattr(s, "value", None)
        if isinstance(value, Call):
            out.append(value.op)
        elif isinstance(value, FuncCall):
            out.append(f"self.{value.callee}")
    return out


@pl.inline
def double(x):
    """Module-level inline helper: spliced where a kernel calls it."""
    y = pl.add(x, x)
    return y


SCALE = 3.0  # resolved in the inline helper's own module namespace


@pl.inline
def scaled(t: pl.Tile[[16, 16], pl.FP32]):
    return pl.mul(t, SCALE)


@pl.function(type=pl.FunctionType.InCore)
def shared_exp(a: pl.Tensor[[16, 16], pl.FP32],
               out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
    """A module-level kernel programs call by name (PyPTO's standalone @pl.function)."""
    out = pl.store(pl.exp(pl.load(a, [0, 0], [16, 16])), [0, 0], out)
    return out


@pl.function(type=pl.FunctionType.AIC)
def cube_only(a: pl.Tensor[[16, 16], pl.FP32]):
    pass


def test_standalone_functions_join_the_calling_program():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            out = shared_exp(a, out)
            cube_only(a)  # tier3-call
            return out

    assert isinstance(shared_exp, pl.InlineFunction)  # not a plain function any more
    assert list(P.functions) == ["main", "shared_exp"]
    assert P.functions["shared_exp"].kind == "InCore"
    # a Tier 3 kind is recorded on the caller (compiling raises), as for class methods
    assert P.functions["main"].unsupported.construct == "pl.FunctionType.AIC"


def test_inline_function_of_the_class_is_spliced_at_each_call():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Inline)
        def square(self, t):
            y = pl.mul(t, t)
            return y

        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            t = pl.load(a, [0, 0], [16, 16])
            s1 = self.square(t)
            s2 = self.square(s1)
            out = pl.store(s2, [0, 0], out)
            return out

    assert list(P.functions) == ["k"]  # no function is left for the Inline one
    body = P.functions["k"].body
    assert calls(body)[:3] == ["tile.load", "tile.mul", "tile.mul"]
    muls = [s for s in body if isinstance(s, Assign) and isinstance(s.value, Call)
            and s.value.op == "tile.mul"]
    first, second = (m.targets[0] for m in muls)
    assert first.name != second.name  # each splice binds fresh names
    assert muls[1].value.args[0][1] is first  # the second call consumes the first's result
    store = next(s for s in body if isinstance(s, Assign) and isinstance(s.value, Call)
                 and s.value.op == "tile.store")
    assert store.value.args[0][1] is second


def test_module_level_inline_helpers_use_their_own_namespace():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            t = pl.load(a, [0, 0], [16, 16])
            out = pl.store(scaled(double(t)), [0, 0], out)
            return out

    body = P.functions["k"].body
    assert calls(body) == ["tile.load", "tile.add", "tile.muls", "tile.store"]
    mul = next(s.value for s in body
               if isinstance(getattr(s, "value", None), Call) and s.value.op == "tile.muls")
    assert [v for _, v in mul.args][1].value == SCALE  # the helper module's constant


def test_multiple_returns_bind_positionally():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Inline)
        def both(self, t: pl.Tile[[16, 16], pl.FP32]):
            return pl.add(t, 1.0), pl.sub(t, 1.0)

        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            t = pl.load(a, [0, 0], [16, 16])
            hi, lo = self.both(t)
            out = pl.store(pl.mul(hi, lo), [0, 0], out)
            return out

    body = P.functions["k"].body
    assert calls(body) == ["tile.load", "tile.adds", "tile.subs", "tile.mul", "tile.store"]
    add, sub, mul = (s for s in body if isinstance(getattr(s, "value", None), Call)
                     and s.value.op in ("tile.adds", "tile.subs", "tile.mul"))
    assert [v for _, v in mul.value.args] == [add.targets[0], sub.targets[0]]


def test_incore_calling_incore_splices_the_callee():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def inner(self, a: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            out = pl.store(pl.exp(pl.load(a, [0, 0], [16, 16])), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.InCore)
        def outer(self, a: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            out = self.inner(a, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            out = self.outer(a, out)
            return out

    assert calls(P.functions["outer"].body) == ["tile.load", "tile.exp", "tile.store"]
    assert calls(P.functions["main"].body) == ["self.outer"]  # orchestration -> InCore: a task


def test_opaque_called_from_orchestration_is_spliced():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[16, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            out = pl.store(pl.load(a, [0, 0], [16, 16]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Opaque)
        def twice(self, a: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            for i in pl.range(2):
                out = self.k(a, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
            out = self.twice(a, out)
            return out

    assert list(P.functions) == ["k", "main"]  # the spliced Opaque function is gone
    main = P.functions["main"]
    assert not any(isinstance(getattr(s, "value", None), FuncCall) for s in main.body)
    assert type(main.body[0]).__name__ == "For"  # the Opaque body's loop, in main


def test_error_in_a_spliced_body_points_at_the_callee(line_of: Callable[[str], int]):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Inline)
            def bad(self, t):
                return pl.add(t, pl.cast(t, pl.FP16))  # callee-line

            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                out = pl.store(self.bad(pl.load(a, [0, 0], [16, 16])), [0, 0], out)
                return out

    assert info.value.line == line_of("callee-line")
    assert info.value.file == __file__


def test_arity_and_argument_kind_errors_point_at_the_call(line_of: Callable[[str], int]):
    with pytest.raises(InvalidOperationError) as info:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
                t = double(pl.load(a, [0, 0], [16, 16]), 2)  # arity-line

    assert info.value.message == "double(...) takes 1 arguments, but 2 were given"
    assert info.value.line == line_of("arity-line")

    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Q:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
                t = scaled(a)  # kind-line

    assert info.value.message == (
        "argument 't' of scaled(...) (position 0) must be a Tile, but got Tensor[[16, 16], FP32]"
    )
    assert info.value.line == line_of("kind-line")


def test_recursive_inline_calls_are_rejected(line_of: Callable[[str], int]):
    with pytest.raises(ParserSyntaxError) as info:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Inline)
            def ping(self, t):
                return self.pong(t)

            @pl.function(type=pl.FunctionType.Inline)
            def pong(self, t):
                return self.ping(t)  # recursion-line

            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[16, 16], pl.FP32]):
                t = self.ping(pl.load(a, [0, 0], [16, 16]))

    assert info.value.message == (
        "self.ping(...) is recursive (ping -> pong -> ping); inlined calls cannot recurse"
    )
    assert info.value.line == line_of("recursion-line")


def test_inline_helpers_cannot_run_as_python():
    with pytest.raises(pl.NotRunnable, match="'double' is kernel code"):
        double(1)
