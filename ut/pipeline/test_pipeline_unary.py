# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Unary tile ops through the whole pipeline (DSL.md §4.1 unary row, §5.1) vs numpy.

Each kernel loads a [R, C] tile with valid [VR, VC], applies one op and stores the
result into an InOut tensor: the stored window must equal numpy and everything
outside it must keep the tensor's initial contents.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_kit import (
    FLOATS,
    INTS,
    NUMERIC,
    PLATFORMS,
    assert_region,
    data,
    f32_then,
    round_to,
    run,
    sentinel,
    storage,
    wide,
)

import pytest_pypto.language as pl

# ------------------------------------------------------------------ kernels


def k_exp(DT, R, C, VR, VC):
    @pl.program
    class Exp:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.exp(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Exp


def k_log(DT, R, C, VR, VC):
    @pl.program
    class Log:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.log(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Log


def k_sqrt(DT, R, C, VR, VC):
    @pl.program
    class Sqrt:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.sqrt(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Sqrt


def k_rsqrt(DT, R, C, VR, VC):
    @pl.program
    class Rsqrt:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.rsqrt(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Rsqrt


def k_rsqrt_tmp(DT, R, C, VR, VC):
    """The tile form with an explicit scratch tile: pl.tile.rsqrt(a, tmp)."""

    @pl.program
    class RsqrtTmp:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            tmp = pl.create_tile([R, C], DT)
            out = pl.store(pl.tile.rsqrt(t, tmp), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return RsqrtTmp


def k_recip(DT, R, C, VR, VC):
    @pl.program
    class Recip:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.recip(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Recip


def k_recip_hp(DT, R, C, VR, VC):
    @pl.program
    class RecipHp:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.recip(t, high_precision=True), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return RecipHp


def k_abs(DT, R, C, VR, VC):
    @pl.program
    class Abs:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.abs(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Abs


def k_neg(DT, R, C, VR, VC):
    @pl.program
    class Neg:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.neg(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Neg


def k_relu(DT, R, C, VR, VC):
    @pl.program
    class Relu:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.relu(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Relu


def k_sin(DT, R, C, VR, VC):
    @pl.program
    class Sin:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.sin(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Sin


def k_cos(DT, R, C, VR, VC):
    @pl.program
    class Cos:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.cos(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Cos


# --------------------------------------------------------------- references


def _exact(fn):
    """Correctly rounded ops: compute in float64 (ints in int64), round/wrap once."""
    return lambda x, dt: round_to(fn(wide(x)), dt)


def _f32(fn):
    """Transcendentals per DSL.md §5.1: numpy float32 math, rounded once to the tile dtype."""
    return lambda x, dt: f32_then(fn, dt, x)


def _ulps(fp32: int, low: int):
    return lambda dt: fp32 if dt.name == "FP32" else low


EXACT = _ulps(0, 0)
TRANSCENDENTAL = _ulps(2, 1)  # the brief: ~1-2 ULP at FP16/BF16; small FP32 drift

# name -> (builder, dtypes DSL.md allows, input kind, reference, ULP tolerance)
UNARY = {
    "exp": (k_exp, FLOATS, "small", _f32(np.exp), TRANSCENDENTAL),
    "log": (k_log, (pl.FP32, pl.FP16), "pos", _f32(np.log), TRANSCENDENTAL),
    "sqrt": (k_sqrt, FLOATS, "pos", _exact(np.sqrt), EXACT),
    "rsqrt": (k_rsqrt, FLOATS, "pos", _f32(lambda x: 1 / np.sqrt(x)), TRANSCENDENTAL),
    "rsqrt_tmp": (k_rsqrt_tmp, FLOATS, "pos", _f32(lambda x: 1 / np.sqrt(x)), TRANSCENDENTAL),
    "recip": (k_recip, FLOATS, "nonzero", _f32(lambda x: 1 / x), TRANSCENDENTAL),
    "recip_hp": (k_recip_hp, (pl.FP32, pl.FP16), "nonzero", _f32(lambda x: 1 / x),
                 TRANSCENDENTAL),
    "abs": (k_abs, NUMERIC, "any", _exact(np.abs), EXACT),
    "neg": (k_neg, NUMERIC, "any", _exact(np.negative), EXACT),
    "relu": (k_relu, NUMERIC, "any", _exact(lambda x: np.maximum(x, 0)), EXACT),
    "sin": (k_sin, (pl.FP32,), "any", _f32(np.sin), TRANSCENDENTAL),
    "cos": (k_cos, (pl.FP32,), "any", _f32(np.cos), TRANSCENDENTAL),
}
CASES = [
    pytest.param(name, dt, id=f"{name}-{dt.name}") for name, row in UNARY.items() for dt in row[1]
]
# (R, C, VR, VC): full tiles and ragged ones (rows, cols, both).
SHAPES = [(16, 32, 16, 32), (4, 64, 3, 33)]


def check_unary(name, dt, platform, shape, seed):
    builder, _, kind, ref, ulps = UNARY[name]
    R, C, VR, VC = shape
    x = data(np.random.default_rng(seed), (R, C), dt, kind)
    out = sentinel((R, C), dt)
    init = out.copy()
    run(builder, (dt, R, C, VR, VC), platform, x, out)
    assert_region(out, (VR, VC), ref(x[:VR, :VC], dt), init, dt, ulps(dt), f"{name} {dt.name}")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("name", "dt"), CASES)
@settings(max_examples=4, deadline=None)
@given(shape=st.sampled_from(SHAPES), seed=st.integers(0, 2**32 - 1))
def test_unary_op_matches_numpy(name, dt, platform, shape, seed):
    check_unary(name, dt, platform, shape, seed)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("name", "dt"), CASES)
def test_unary_op_ragged_16x32_valid_16x20(name, dt, platform):
    """The brief's ragged case, always run: only the [16, 20] window is stored."""
    check_unary(name, dt, platform, (16, 32, 16, 20), seed=5)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", INTS)
def test_abs_and_neg_wrap_at_the_int_minimum(dt, platform):
    """DSL.md §5.1: ints compute in int64 then wrap, so abs(MIN) = neg(MIN) = MIN."""
    lo = int(np.iinfo(storage(dt)).min)
    x = np.array([[lo, lo + 1, -1, 0, 1, 5, -5, 127]], dtype=storage(dt))
    for builder in (k_abs, k_neg):
        out = sentinel(x.shape, dt)
        run(builder, (dt, 1, 8, 1, 8), platform, x, out)
        assert out[0, 0] == lo
    out = sentinel(x.shape, dt)
    run(k_abs, (dt, 1, 8, 1, 8), platform, x, out)
    assert list(out[0, 1:]) == [-(lo + 1), 1, 0, 1, 5, 5, 127]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_special_float_values(platform):
    """IEEE edges at FP16: sqrt(-1)=NaN, log(0)=-inf, recip(-0)=-inf, exp overflows to inf."""
    dt = pl.FP16
    x = np.array([[-1.0, 0.0, -0.0, 12.0, np.inf, 1.0, 4.0, 0.25]], dtype=np.float16)
    got = {}
    for name, builder in (("sqrt", k_sqrt), ("log", k_log), ("recip", k_recip), ("exp", k_exp)):
        out = sentinel(x.shape, dt)
        run(builder, (dt, 1, 8, 1, 8), platform, x, out)
        got[name] = out[0].astype(np.float64)
    assert np.isnan(got["sqrt"][0]) and got["sqrt"][6] == 2.0 and got["sqrt"][7] == 0.5
    assert got["log"][1] == -np.inf and got["log"][4] == np.inf and got["log"][5] == 0.0
    assert got["recip"][2] == -np.inf and got["recip"][1] == np.inf and got["recip"][6] == 0.25
    assert got["exp"][3] == np.inf  # e**12 > 65504, the FP16 max
    assert got["exp"][1] == 1.0
