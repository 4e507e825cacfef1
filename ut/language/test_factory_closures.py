"""Kernels built inside a factory function see the factory's locals, as Python would:
the enclosing function's locals, then the module's globals, then builtins
(language/templates.py `enclosing_locals`).  A factory parameter used only in an
annotation is no closure cell of the kernel, so it has to come from the frame the
kernel was decorated in."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.errors import ParserSyntaxError

ROWS = 999  # a global the factory's parameter of the same name must shadow
COLS = 64


def make_double(ROWS: int):  # noqa: N803 - the name shadows the global on purpose
    @pl.function(type=pl.FunctionType.InCore)
    def double(x: pl.Tensor[[ROWS, COLS], pl.FP32],
               out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
        t = pl.load(x, [0, 0], [16, COLS])  # ROWS appears only in the annotations
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    return double


def make_scaled(n: int, factor: float):
    @pl.inline
    def scaled(t: pl.Tile[[n, COLS], pl.FP32]) -> pl.Tile[[n, COLS], pl.FP32]:
        return pl.mul(t, factor)

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(x: pl.Tensor[[n, COLS], pl.FP32],
               out: pl.Out[pl.Tensor[[n, COLS], pl.FP32]]) -> pl.Tensor[[n, COLS], pl.FP32]:
        out = pl.store(scaled(pl.load(x, [0, 0], [16, COLS])), [0, 0], out)
        return out

    return kernel


def program_calling(kernel):
    @pl.program
    class Calls:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
            out = kernel(x, out)
            return out

    return Calls


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_factory_parameter_used_only_in_annotations_resolves(platform: str) -> None:
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS)
    out = np.zeros_like(x)
    pytest_pypto.run(program_calling(make_double(16)), x, out,
                     config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out, x + x)


def test_inline_helpers_and_body_constants_of_a_factory_resolve() -> None:
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS)
    out = np.zeros_like(x)
    pytest_pypto.run(program_calling(make_scaled(16, 0.5)), x, out,
                     config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, x * np.float32(0.5))


def test_each_factory_call_keeps_its_own_values() -> None:
    x = np.ones((16, COLS), np.float32)
    got = []
    for factor in (2.0, 3.0):
        out = np.zeros_like(x)
        pytest_pypto.run(program_calling(make_scaled(16, factor)), x, out,
                         config=RunConfig(platform="a2a3sim"))
        got.append(float(out[0, 0]))
    assert got == [2.0, 3.0]


def test_a_jit_kernel_made_in_a_factory_sees_its_parameters() -> None:
    def make(cols: int):
        @pl.jit.incore
        def copy_k(a: pl.Tensor[[16, cols], pl.FP32], out: pl.Out[pl.Tensor[[16, cols], pl.FP32]]):
            out = pl.store(pl.load(a, [0, 0], [16, 32]), [0, 0], out)  # cols: annotations only
            return out

        @pl.jit  # shaped annotations: their Out direction must survive (string annotations)
        def copy(a: pl.Tensor[[16, cols], pl.FP32], out: pl.Out[pl.Tensor[[16, cols], pl.FP32]]):
            out = copy_k(a, out)
            return out

        return copy

    a = np.arange(16 * 32, dtype=np.float32).reshape(16, 32)
    out = np.zeros_like(a)
    make(32)(a, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, a)


def test_a_name_the_factory_never_bound_is_still_an_error_at_its_line() -> None:
    def make():
        @pl.function(type=pl.FunctionType.InCore)
        def k(x: pl.Tensor[[16, UNBOUND_WIDTH], pl.FP32],  # noqa: F821
              out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            out = pl.store(pl.load(x, [0, 0], [16, 64]), [0, 0], out)
            return out

        return k

    with pytest.raises(ParserSyntaxError, match="name 'UNBOUND_WIDTH' is not defined"):
        pytest_pypto.compile(program_calling(make()), RunConfig(platform="a2a3sim"))
