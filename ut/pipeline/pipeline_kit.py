"""Helpers of the whole-pipeline op tests: compile caches, input data, numpy references.

Every test here builds a small DSL kernel, compiles it with the public
`pytest_pypto.compile` and dispatches it with `pytest_pypto.run` on both sim
platforms.  The references below follow docs/design/numerics.md independently of the toolchain:
floats are computed wide and rounded once to the tile dtype, ints in int64 then
wrapped.  Nothing here imports the op registry's numerics.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
FLOATS = (pl.FP32, pl.FP16, pl.BF16)
INTS = (pl.INT32, pl.INT16, pl.INT8)
NUMERIC = FLOATS + INTS
DIV_DTYPES = (pl.FP32, pl.FP16, pl.INT32, pl.INT16)  # docs/design/language.md §21, tile.div
# (R, C, VR, VC) of the op sweeps: full tiles, and ragged ones (rows and cols at once).
SHAPES = [(16, 32, 16, 32), (4, 64, 3, 33)]

STORAGE = {
    "FP32": np.float32, "FP16": np.float16, "BF16": ml_dtypes.bfloat16,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
}
# Ordering integers for ULP distances (same width as the float).
_BITS = {"FP32": np.int32, "FP16": np.int16, "BF16": np.int16}
# docs/design/numerics.md §6: integer poison is every byte 0xA5.
POISON_INT = {"INT8": -0x5B, "INT16": -0x5A5B, "INT32": -0x5A5A5A5B}
# Initial contents of InOut outputs: what a ragged store must leave untouched.
SENTINEL = {"FP32": -7.25, "FP16": -7.25, "BF16": -7.25, "INT8": -77, "INT16": -7777,
            "INT32": -777777}


def storage(dtype: Any) -> Any:
    return STORAGE[dtype.name]


@functools.cache
def program(builder: Callable[..., Any], key: tuple[Any, ...]) -> Any:
    """The parsed program ``builder(*key)`` (one parse per key, shared by both platforms)."""
    return builder(*key)


@functools.cache
def _compiled(builder: Callable[..., Any], platform: str, key: tuple[Any, ...]) -> Any:
    return pytest_pypto.compile(program(builder, key), RunConfig(platform=platform))


def run(builder: Callable[..., Any], key: tuple[Any, ...], platform: str, *arrays: Any,
        **config: Any) -> Any:
    """Compile ``builder(*key)`` for ``platform`` once per process, then dispatch it.

    Compiled programs are cached per (builder, platform, key) so hypothesis examples
    that revisit a dtype/shape only pay for the simulator run.
    """
    compiled = _compiled(builder, platform, tuple(key))
    return pytest_pypto.run(compiled, *arrays, config=RunConfig(platform=platform, **config))


def sweep(cases: list[Any]) -> Callable[[Callable[..., Any]], Any]:
    """The op-table sweep: each (name, dt) case on both platforms, 4 hypothesis examples
    over SHAPES and seeds; the test takes (name, dt, platform, shape, seed)."""

    def apply(test: Callable[..., Any]) -> Any:
        test = given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**32 - 1))(test)
        test = settings(max_examples=4, deadline=None)(test)
        test = pytest.mark.parametrize(("name", "dt"), cases)(test)
        return pytest.mark.parametrize("platform", PLATFORMS)(test)

    return apply


def each_case(cases: list[Any]) -> Callable[[Callable[..., Any]], Any]:
    """Each (name, dt) case on both platforms, once; the test takes (name, dt, platform)."""

    def apply(test: Callable[..., Any]) -> Any:
        test = pytest.mark.parametrize(("name", "dt"), cases)(test)
        return pytest.mark.parametrize("platform", PLATFORMS)(test)

    return apply


# ----------------------------------------------------------------------- data


def data(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any,
         kind: str = "any") -> np.ndarray:
    """Random values of ``dtype`` (exactly representable, so no conversion hides bugs).

    kind: ``any`` (floats ~N(0, 8), ints over the whole range so ops wrap),
    ``pos`` (positive, for log/sqrt/rsqrt), ``nonzero`` (divisors), ``small``
    (|x| < 4, for exp without overflow), ``mid`` (ints within a tenth of the range).
    """
    st = storage(dtype)
    if dtype.is_float:
        if kind == "pos":
            x = rng.uniform(0.05, 50.0, shape)
        elif kind == "small":
            x = rng.uniform(-4.0, 4.0, shape)
        else:
            x = rng.standard_normal(shape) * 8
            if kind == "nonzero":
                x = np.where(np.abs(x) < 0.25, 0.5, x)
        return x.astype(np.float32).astype(st)
    info = np.iinfo(st)
    lo, hi = int(info.min), int(info.max)
    if kind in ("mid", "pos", "nonzero", "small"):
        lo, hi = lo // 10, hi // 10
    x = rng.integers(lo, hi, size=shape, endpoint=True)
    if kind == "pos":
        x = np.abs(x) + 1
    if kind == "nonzero":
        x = np.where(x == 0, 3, x)
    return x.astype(st)


def sentinel(shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    return np.full(shape, SENTINEL[dtype.name], dtype=storage(dtype))


def wide(x: np.ndarray) -> np.ndarray:
    """float64 for floats (exact for every tile float dtype), int64 for ints."""
    return x.astype(np.float64 if np.asarray(x).dtype.kind == "f" or _is_bf16(x) else np.int64)


def _is_bf16(x: Any) -> bool:
    return np.asarray(x).dtype == ml_dtypes.bfloat16


def round_to(values: Any, dtype: Any) -> np.ndarray:
    """Round wide float values once (RNE, overflow to inf) or wrap wide ints to ``dtype``."""
    values = np.asarray(values)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype.is_float:
            return values.astype(storage(dtype))
        return values.astype(np.int64).astype(storage(dtype))


def f32_then(fn: Callable[..., Any], dtype: Any, *xs: np.ndarray) -> np.ndarray:
    """docs/design/numerics.md §2: widen to float32, compute in float32, round once to ``dtype``."""
    with np.errstate(all="ignore"):
        return round_to(fn(*(x.astype(np.float32) for x in xs)), dtype)


# ------------------------------------------------------------------ comparing


def ulp_distance(a: np.ndarray, b: np.ndarray, dtype: Any) -> np.ndarray:
    """Units in the last place between two arrays of one float dtype (NaN==NaN is 0)."""
    ib = _BITS[dtype.name]
    a = np.ascontiguousarray(a, dtype=storage(dtype))
    b = np.ascontiguousarray(b, dtype=storage(dtype))

    def ordered(x: np.ndarray) -> np.ndarray:
        i = x.view(ib).astype(np.int64)
        return np.where(i < 0, np.iinfo(ib).min - i, i)

    d = np.abs(ordered(a) - ordered(b))
    both_nan = np.isnan(a.astype(np.float32)) & np.isnan(b.astype(np.float32))
    return np.where(both_nan, 0, d)


def assert_ulp(got: np.ndarray, want: np.ndarray, dtype: Any, ulps: int, what: str = "") -> None:
    """``got`` within ``ulps`` units in the last place of ``want``, elementwise."""
    d = ulp_distance(got, want, dtype)
    worst = int(d.max()) if d.size else 0
    assert worst <= ulps, (
        f"{what}: {worst} ULP apart at {np.unravel_index(int(d.argmax()), d.shape)} "
        f"(got {got.ravel()[int(d.argmax())]!r}, want {want.ravel()[int(d.argmax())]!r})"
    )


def assert_exact(got: np.ndarray, want: np.ndarray, what: str = "") -> None:
    """Bit-for-bit value equality (floats compared as float64, NaN positions must match)."""
    assert got.shape == want.shape, what
    if want.dtype.kind in "iu":
        np.testing.assert_array_equal(got, want, err_msg=what)
    else:
        np.testing.assert_array_equal(got.astype(np.float64), want.astype(np.float64),
                                      err_msg=what)


def assert_region(out: np.ndarray, region: tuple[int, ...], want: np.ndarray, init: np.ndarray,
                  dtype: Any, ulps: int = 0, what: str = "") -> None:
    """The stored ``region`` equals ``want`` (within ``ulps``); the rest keeps ``init``."""
    win = tuple(slice(0, n) for n in region)
    got = out[win]
    if ulps and dtype.is_float:
        assert_ulp(got, want[win] if want.shape != got.shape else want, dtype, ulps, what)
    else:
        assert_exact(got, want[win] if want.shape != got.shape else want, what)
    outside = np.ones(out.shape, dtype=bool)
    outside[win] = False
    assert_exact(out[outside], init[outside], f"{what}: outside the valid region")


# ------------------------------------------------------------- kernel builders
# One builder per op family: the op itself is a closure constant (a ``pl.*`` op
# stub such as ``pl.add``, folded by the parser like the shapes, docs/design/language.md §7).
# Operands are loaded with the valid region [VR, VC]; the store writes that window.


def k_unary(OP, DT, R, C, VR, VC):  # noqa: N803  (DSL closure constants)
    """out = OP(x) on [R, C] of DT."""

    @pl.program
    class Unary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(OP(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Unary


def k_binary(OP, DT, R, C, VR, VC):  # noqa: N803
    """out = OP(x, y), both operands [R, C] of DT."""

    @pl.program
    class Binary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            b = pl.load(y, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(OP(a, b), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, y, out)
            return out

    return Binary


def k_scalar(OP, OPS, DT, R, C, VR, VC, S):  # noqa: N803
    """The two spellings of a scalar op: o1 = OP(t, S) (dispatching), o2 = OPS(t, S)."""

    @pl.program
    class Scalar:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o1: pl.InOut[pl.Tensor[[R, C], DT]],
              o2: pl.InOut[pl.Tensor[[R, C], DT]]):
            a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            o1 = pl.store(OP(a, S), [0, 0], o1)
            o2 = pl.store(OPS(a, S), [0, 0], o2)
            return o1, o2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o1: pl.InOut[pl.Tensor[[R, C], DT]],
                 o2: pl.InOut[pl.Tensor[[R, C], DT]]):
            o1, o2 = self.k(x, o1, o2)
            return o1

    return Scalar


def k_row_reduce(OP, DT, R, C, VR, VC):  # noqa: N803
    """out[R, 1] = OP(t, tmp): a row reduction with its scratch tile."""

    @pl.program
    class RowReduce:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, 1], DT]]) -> pl.Tensor[[R, 1], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            tmp = pl.create_tile([R, C], DT)
            out = pl.store(OP(t, tmp), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, 1], DT]]) -> pl.Tensor[[R, 1], DT]:
            out = self.k(x, out)
            return out

    return RowReduce


def k_col_reduce(OP, DT, R, C, VR, VC):  # noqa: N803
    """out[1, C] = OP(t): a column reduction without scratch."""

    @pl.program
    class ColReduce:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[1, C], DT]]) -> pl.Tensor[[1, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(OP(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[1, C], DT]]) -> pl.Tensor[[1, C], DT]:
            out = self.k(x, out)
            return out

    return ColReduce


def k_row_expand(OP, DT, R, C, VR, VC):  # noqa: N803
    """out = OP(t, v): a [R, C] tile against a per-row [R, 1] vector."""

    @pl.program
    class RowExpand:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], v: pl.Tensor[[R, 1], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            rv = pl.load(v, [0, 0], [R, 1], valid_shape=[VR, 1])  # valid rows as t's
            out = pl.store(OP(t, rv), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], v: pl.Tensor[[R, 1], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, v, out)
            return out

    return RowExpand
