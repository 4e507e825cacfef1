# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Scalar forms through the whole pipeline: adds/subs/muls/divs/maximums/minimums.

Each kernel spells the op twice, as users do: the dispatching `pl.add(t, 2.0)` and
the explicit `pl.adds(t, 2.0)`; both must equal numpy.  docs/design/language.md §21,
docs/design/numerics.md §2: the scalar
is first converted to the tile dtype, then the op is computed wide and rounded once.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_kit import (
    DIV_DTYPES,
    NUMERIC,
    PLATFORMS,
    SHAPES,
    assert_exact,
    assert_region,
    data,
    each_case,
    k_scalar,
    round_to,
    run,
    sentinel,
    wide,
)

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import PyptoWarning

# the arch table (docs/design/arch.md §7) lists these combos as accepted but unvalidated on a2a3;
# the warning has its own test.
pytestmark = pytest.mark.filterwarnings("ignore:.*not validated on 'a2a3':pytest_pypto.ir.errors.PyptoWarning")

# ------------------------------------------------------------------ kernels


def k_scalar_spellings(DT, R, C):
    """Every scalar op spelled as users write it, on a literal scalar, in one kernel."""

    @pl.program
    class ScalarSpellings:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o_add: pl.Out[pl.Tensor[[R, C], DT]],
              o_sub: pl.Out[pl.Tensor[[R, C], DT]], o_mul: pl.Out[pl.Tensor[[R, C], DT]],
              o_div: pl.Out[pl.Tensor[[R, C], DT]], o_max: pl.Out[pl.Tensor[[R, C], DT]],
              o_min: pl.Out[pl.Tensor[[R, C], DT]]):
            a = pl.load(x, [0, 0], [R, C])
            o_add = pl.store(pl.adds(a, 2.5), [0, 0], o_add)
            o_sub = pl.store(pl.subs(a, 2.5), [0, 0], o_sub)
            o_mul = pl.store(pl.muls(a, 2.5), [0, 0], o_mul)
            o_div = pl.store(pl.divs(a, 2.5), [0, 0], o_div)
            o_max = pl.store(pl.maximums(a, 2.5), [0, 0], o_max)
            o_min = pl.store(pl.minimums(a, 2.5), [0, 0], o_min)
            return o_add, o_sub, o_mul, o_div, o_max, o_min

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o_add: pl.Out[pl.Tensor[[R, C], DT]],
                 o_sub: pl.Out[pl.Tensor[[R, C], DT]], o_mul: pl.Out[pl.Tensor[[R, C], DT]],
                 o_div: pl.Out[pl.Tensor[[R, C], DT]], o_max: pl.Out[pl.Tensor[[R, C], DT]],
                 o_min: pl.Out[pl.Tensor[[R, C], DT]]):
            o_add, o_sub, o_mul, o_div, o_max, o_min = self.k(
                x, o_add, o_sub, o_mul, o_div, o_max, o_min)
            return o_add

    return ScalarSpellings


def k_axpy_scalar_param(DT, R, C):
    """A run-time scalar (docs/design/language.md §3 Axpy): the entry's FP32 Scalar reaches
    muls/adds."""

    @pl.program
    class ScalarParam:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], alpha: pl.Scalar[pl.FP32],
              out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C])
            out = pl.store(pl.add(pl.mul(t, alpha), alpha), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], alpha: pl.Scalar[pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, alpha, out)
            return out

    return ScalarParam


# --------------------------------------------------------------- references


def _int_div(a, b):
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


SCALAR = {  # name -> (k_scalar's two op stubs: dispatching, explicit), dtypes, numpy op
    "adds": ((pl.add, pl.adds), NUMERIC, np.add),
    "subs": ((pl.sub, pl.subs), NUMERIC, np.subtract),  # INT8..INT32, FP16, FP32, BF16: all
    "muls": ((pl.mul, pl.muls), NUMERIC, np.multiply),
    "divs": ((pl.div, pl.divs), DIV_DTYPES,
             lambda a, s: a / s if a.dtype.kind == "f" else _int_div(a, s)),
    "maximums": ((pl.maximum, pl.maximums), NUMERIC, np.maximum),
    "minimums": ((pl.minimum, pl.minimums), NUMERIC, np.minimum),
}
# Float scalars that are not exact at FP16/BF16 (so converting first matters), int scalars
# of both signs.
FLOAT_SCALARS = (0.1, -3.3)
INT_SCALARS = (3, -100)
CASES = [pytest.param(n, dt, id=f"{n}-{dt.name}") for n, row in SCALAR.items() for dt in row[1]]


def reference(name, x, s, dt):
    s_t = wide(round_to(np.array(s), dt))  # converted to the tile dtype first
    with np.errstate(all="ignore"):
        return round_to(SCALAR[name][2](wide(x), s_t), dt)


def check_scalar(name, dt, platform, shape, s, seed):
    R, C, VR, VC = shape
    x = data(np.random.default_rng(seed), (R, C), dt)
    o1, o2 = sentinel((R, C), dt), sentinel((R, C), dt)
    init = o1.copy()
    run(k_scalar, (*SCALAR[name][0], dt, R, C, VR, VC, s), platform, x, o1, o2)
    want = reference(name, x[:VR, :VC], s, dt)
    assert_region(o1, (VR, VC), want, init, dt, what=f"pl.{name[:-1]}(t, {s}) {dt.name}")
    assert_region(o2, (VR, VC), want, init, dt, what=f"pl.{name}(t, {s}) {dt.name}")


@each_case(CASES)
@settings(max_examples=4, deadline=None)
@given(which=st.integers(0, 1), seed=st.integers(0, 2**32 - 1))
def test_scalar_form_matches_numpy(name, dt, platform, which, seed):
    # Shape and scalar vary together: each pair is one compiled kernel (kept in a cache).
    s = (FLOAT_SCALARS if dt.is_float else INT_SCALARS)[which]
    check_scalar(name, dt, platform, SHAPES[which], s, seed)


@each_case(CASES)
def test_scalar_form_ragged_16x32_valid_16x20(name, dt, platform):
    check_scalar(name, dt, platform, (16, 32, 16, 20), 0.1 if dt.is_float else -7, seed=4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scalar_is_converted_to_fp16_before_the_op(platform):
    """1 + 0.1: 0.1 -> FP16 first (0.0999755859375); the sum rounds to 1.099609375 either
    way, but 1024 * 0.1 shows the conversion: 1024 * fp16(0.1) = 102.375, not 102.4."""
    x = np.array([[1024.0, 1.0, -512.0, 0.0]], np.float16)
    o1, o2 = sentinel(x.shape, pl.FP16), sentinel(x.shape, pl.FP16)
    run(k_scalar, (pl.mul, pl.muls, pl.FP16, 1, 4, 1, 4, 0.1), platform, x, o1, o2)
    assert o1[0].astype(np.float64).tolist() == [102.375, 0.0999755859375, -51.1875, 0.0]
    assert_exact(o2, o1)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int8_scalar_ops_wrap(platform):
    x = np.array([[127, -128, 50, -50]], np.int8)
    o1, o2 = sentinel(x.shape, pl.INT8), sentinel(x.shape, pl.INT8)
    run(k_scalar, (pl.add, pl.adds, pl.INT8, 1, 4, 1, 4, 3), platform, x, o1, o2)
    assert o1[0].tolist() == [-126, -125, 53, -47]
    run(k_scalar, (pl.mul, pl.muls, pl.INT8, 1, 4, 1, 4, 3), platform, x, o1, o2)
    assert o2[0].tolist() == [125, -128, -106, 106]
    run(k_scalar, (pl.sub, pl.subs, pl.INT8, 1, 4, 1, 4, 3), platform, x, o1, o2)
    assert o1[0].tolist() == [124, 125, 47, -53]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.BF16])
def test_runtime_scalar_parameter_reaches_the_kernel(dt, platform):
    R, C = 8, 16
    x = data(np.random.default_rng(9), (R, C), dt)
    for alpha in (0.5, -1.3):
        out = sentinel((R, C), dt)
        run(k_axpy_scalar_param, (dt, R, C), platform, x, alpha, out)
        a_t = wide(round_to(np.float32(alpha), dt))
        with np.errstate(all="ignore"):
            want = round_to(wide(round_to(wide(x) * a_t, dt)) + a_t, dt)
        assert_exact(out, want, f"x * {alpha} + {alpha} at {dt.name}")


@pytest.mark.filterwarnings("error")
def test_subs_on_int8_warns_unvalidated_on_a2a3_only():
    """docs/design/arch.md §7: subs on INT8/BF16 is accepted but unvalidated on a2a3 (a warning, not
    an error)."""
    prog = k_scalar(pl.sub, pl.subs, pl.INT8, 4, 32, 4, 32, 3)
    with pytest.warns(PyptoWarning, match="tile.subs on INT8 is not validated on 'a2a3'"):
        pytest_pypto.compile(prog, RunConfig(platform="a2a3sim"))
    pytest_pypto.compile(prog, RunConfig(platform="a5sim"))  # "error" filter: no warning here


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int_scalar_is_wrapped_to_the_tile_width_first(platform):
    """200 does not fit INT8: it becomes -56 before the op, so maximums(t, 200) is
    max(t, -56) (computing max(t, 200) and then wrapping would give -56 everywhere)."""
    x = np.array([[-100, -56, -10, 0, 5, 50, 100, 127]], np.int8)
    o1, o2 = sentinel(x.shape, pl.INT8), sentinel(x.shape, pl.INT8)
    run(k_scalar, (pl.maximum, pl.maximums, pl.INT8, 1, 8, 1, 8, 200), platform, x, o1, o2)
    assert o1[0].tolist() == [-56, -56, -10, 0, 5, 50, 100, 127]
    assert_exact(o2, o1)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tiny_float_scalar_underflows_to_zero_at_fp16(platform):
    """1e-8 is below half the smallest FP16 subnormal: maximums(t, 1e-8) is max(t, 0)."""
    x = np.array([[-3, -2, -1, 0, 1, 2, 3, 4]], np.float16)
    o1, o2 = sentinel(x.shape, pl.FP16), sentinel(x.shape, pl.FP16)
    run(k_scalar, (pl.maximum, pl.maximums, pl.FP16, 1, 8, 1, 8, 1e-8), platform, x, o1, o2)
    assert o1[0].astype(np.float64).tolist() == [0, 0, 0, 0, 1, 2, 3, 4]
    assert_exact(o2, o1)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16])
def test_every_scalar_op_spelled_literally(dt, platform):
    """adds/subs/muls/divs/maximums/minimums as written in user code (2.5 is exact in FP16)."""
    x = data(np.random.default_rng(5), (8, 16), dt)
    outs = [sentinel((8, 16), dt) for _ in range(6)]
    run(k_scalar_spellings, (dt, 8, 16), platform, x, *outs)
    X = wide(x)
    wants = [X + 2.5, X - 2.5, X * 2.5, X / 2.5, np.maximum(X, 2.5), np.minimum(X, 2.5)]
    for got, want, op in zip(outs, wants, ("adds", "subs", "muls", "divs", "maximums", "minimums")):
        assert_exact(got, round_to(want, dt), f"pl.{op}(t, 2.5) {dt.name}")
