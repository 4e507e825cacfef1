# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`return` inside an `if` arm, and `return` of a call that gives several values
(docs/design/language.md §17)."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import ParserSyntaxError


def _early_return_program():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], flag: pl.Scalar[pl.INT32],
              o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            if flag == 1:
                d = pl.add(t, t)
                return pl.store(d, [0, 0], o)
            n = pl.sub(t, t)
            n = pl.sub(n, t)
            return pl.store(n, [0, 0], o)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], flag: pl.Scalar[pl.INT32],
                 o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            o = self.k(x, flag, o)
            return o

    return P


@pytest.mark.parametrize("flag", [1, 0])
def test_return_inside_if_takes_the_arm_it_is_in(pypto_runner, flag):
    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 7
    o = np.full((16, 16), 99.0, np.float32)
    pypto_runner.run(_early_return_program(), x, flag, o)
    np.testing.assert_allclose(o, 2 * x if flag == 1 else -x, rtol=1e-6)


def test_elif_chain_of_returns_and_a_void_early_return(pypto_runner):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], mode: pl.Scalar[pl.INT32],
              o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            if mode == 0:
                return pl.store(t, [0, 0], o)
            elif mode == 1:
                u = pl.add(t, t)
                return pl.store(u, [0, 0], o)
            else:
                if mode == 2:
                    v = pl.mul(t, t)
                    return pl.store(v, [0, 0], o)
            w = pl.sub(t, t)
            return pl.store(w, [0, 0], o)

        @pl.function(type=pl.FunctionType.InCore)
        def maybe(self, x: pl.Tensor[[16, 16], pl.FP32], mode: pl.Scalar[pl.INT32],
                  o: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]):
            if mode != 3:
                return
            t = pl.load(x, [0, 0], [16, 16])
            o = pl.store(pl.add(t, t), [0, 0], o)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], mode: pl.Scalar[pl.INT32],
                 o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            o = self.k(x, mode, o)
            self.maybe(x, mode, o)
            return o

    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 9
    want = {0: x, 1: 2 * x, 2: x * x, 3: 2 * x, 4: np.zeros_like(x)}
    for mode, expected in want.items():
        o = np.full((16, 16), 5.0, np.float32)
        pypto_runner.run(P, x, mode, o)
        np.testing.assert_allclose(o, expected, rtol=1e-6, err_msg=f"mode {mode}")


def test_return_inside_a_loop_is_refused_at_its_line(line_of):
    with pytest.raises(ParserSyntaxError) as err:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32],
                  o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                for i in pl.range(2):
                    t = pl.load(x, [0, 0], [16, 16])
                    return pl.store(t, [0, 0], o)  # loop-return
                return o
    assert err.value.span.line == line_of("loop-return")
    assert "loop" in str(err.value)


def test_statements_after_return_in_an_arm_are_refused(line_of):
    with pytest.raises(ParserSyntaxError) as err:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32], flag: pl.Scalar[pl.INT32],
                  o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                t = pl.load(x, [0, 0], [16, 16])
                if flag == 1:
                    return pl.store(t, [0, 0], o)
                    t = pl.add(t, t)  # dead-code
                return o
    assert err.value.span.line == line_of("dead-code")


def test_returning_a_call_that_gives_two_values(pypto_runner):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32], a: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
              b: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> tuple[pl.Tensor[[16, 16], pl.FP32],
                                                               pl.Tensor[[16, 16], pl.FP32]]:
            t = pl.load(x, [0, 0], [16, 16])
            a = pl.store(pl.add(t, t), [0, 0], a)
            b = pl.store(pl.mul(t, t), [0, 0], b)
            return a, b

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], a: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
                 b: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> tuple[pl.Tensor[[16, 16], pl.FP32],
                                                                  pl.Tensor[[16, 16], pl.FP32]]:
            return self.k(x, a, b)

    assert len(P.functions["main"].returns) == 2
    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 11
    a = np.zeros((16, 16), np.float32)
    b = np.zeros((16, 16), np.float32)
    pypto_runner.run(P, x, a, b)
    np.testing.assert_allclose(a, x + x, rtol=1e-6)
    np.testing.assert_allclose(b, x * x, rtol=1e-6)


def test_a_kernel_may_return_its_in_parameter(pypto_runner):
    # The result of the call is the caller's argument itself, unchanged.
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def side(self, x: pl.Tensor[[16, 16], pl.FP32],
                 w: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            w = pl.store(pl.add(t, t), [0, 0], w)
            return x

        @pl.function(type=pl.FunctionType.InCore)
        def neg(self, x: pl.Tensor[[16, 16], pl.FP32],
                o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [16, 16])
            return pl.store(pl.neg(t), [0, 0], o)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], w: pl.InOut[pl.Tensor[[16, 16], pl.FP32]],
                 o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            r = self.side(x, w)
            o = self.neg(r, o)
            return o

    x = np.arange(256, dtype=np.float32).reshape(16, 16) / 13
    w = np.zeros((16, 16), np.float32)
    o = np.zeros((16, 16), np.float32)
    pypto_runner.run(P, x, w, o)
    np.testing.assert_allclose(w, 2 * x, rtol=1e-6)
    np.testing.assert_allclose(o, -x, rtol=1e-6)
