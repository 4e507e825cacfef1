# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Unary tile ops through the whole pipeline (docs/design/language.md §21, docs/design/numerics.md
§2) vs numpy.

Each kernel loads a [R, C] tile with valid [VR, VC], applies one op and stores the
result into an InOut tensor: the stored window must equal numpy and everything
outside it must keep the tensor's initial contents.
"""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_kit import (
    FLOATS,
    INTS,
    NUMERIC,
    PLATFORMS,
    assert_region,
    assert_ulp,
    data,
    each_case,
    f32_then,
    k_unary,
    round_to,
    run,
    sentinel,
    storage,
    sweep,
    wide,
)

import pytest_pypto.language as pl

# ------------------------------------------------------------------ kernels
# The one-op kernels use pipeline_kit.k_unary; below, the kernels with more.


def k_unary_spellings(DT, R, C):
    """The unary ops spelled as users write them, in one kernel."""

    @pl.program
    class UnarySpellings:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o_exp: pl.Out[pl.Tensor[[R, C], DT]],
              o_log: pl.Out[pl.Tensor[[R, C], DT]], o_sqrt: pl.Out[pl.Tensor[[R, C], DT]],
              o_abs: pl.Out[pl.Tensor[[R, C], DT]], o_neg: pl.Out[pl.Tensor[[R, C], DT]],
              o_relu: pl.Out[pl.Tensor[[R, C], DT]]):
            t = pl.load(x, [0, 0], [R, C])
            o_exp = pl.store(pl.exp(t), [0, 0], o_exp)
            o_log = pl.store(pl.log(t), [0, 0], o_log)
            o_sqrt = pl.store(pl.sqrt(t), [0, 0], o_sqrt)
            o_abs = pl.store(pl.abs(t), [0, 0], o_abs)
            o_neg = pl.store(pl.neg(t), [0, 0], o_neg)
            o_relu = pl.store(pl.relu(t), [0, 0], o_relu)
            return o_exp, o_log, o_sqrt, o_abs, o_neg, o_relu

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o_exp: pl.Out[pl.Tensor[[R, C], DT]],
                 o_log: pl.Out[pl.Tensor[[R, C], DT]], o_sqrt: pl.Out[pl.Tensor[[R, C], DT]],
                 o_abs: pl.Out[pl.Tensor[[R, C], DT]], o_neg: pl.Out[pl.Tensor[[R, C], DT]],
                 o_relu: pl.Out[pl.Tensor[[R, C], DT]]):
            o_exp, o_log, o_sqrt, o_abs, o_neg, o_relu = self.k(
                x, o_exp, o_log, o_sqrt, o_abs, o_neg, o_relu)
            return o_exp

    return UnarySpellings


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


# --------------------------------------------------------------- references


def _exact(fn):
    """Correctly rounded ops: compute in float64 (ints in int64), round/wrap once."""
    return lambda x, dt: round_to(fn(wide(x)), dt)


def _f32(fn):
    """Transcendentals per docs/design/numerics.md §2: numpy float32 math, rounded once to the tile
    dtype."""
    return lambda x, dt: f32_then(fn, dt, x)


def _ulps(fp32: int, low: int):
    return lambda dt: fp32 if dt.name == "FP32" else low


EXACT = _ulps(0, 0)
TRANSCENDENTAL = _ulps(2, 1)  # the brief: ~1-2 ULP at FP16/BF16; small FP32 drift

# name -> (builder, its leading key: the op stub for k_unary), dtypes the op allows (docs/ops.md),
#         input kind, reference, ULP tolerance
UNARY = {
    "exp": (k_unary, (pl.exp,), FLOATS, "small", _f32(np.exp), TRANSCENDENTAL),
    "log": (k_unary, (pl.log,), (pl.FP32, pl.FP16), "pos", _f32(np.log), TRANSCENDENTAL),
    "sqrt": (k_unary, (pl.sqrt,), FLOATS, "pos", _exact(np.sqrt), EXACT),
    "rsqrt": (k_unary, (pl.rsqrt,), FLOATS, "pos", _f32(lambda x: 1 / np.sqrt(x)),
              TRANSCENDENTAL),
    "rsqrt_tmp": (k_rsqrt_tmp, (), FLOATS, "pos", _f32(lambda x: 1 / np.sqrt(x)),
                  TRANSCENDENTAL),
    "recip": (k_unary, (pl.recip,), FLOATS, "nonzero", _f32(lambda x: 1 / x), TRANSCENDENTAL),
    "recip_hp": (k_recip_hp, (), (pl.FP32, pl.FP16), "nonzero", _f32(lambda x: 1 / x),
                 TRANSCENDENTAL),
    "abs": (k_unary, (pl.abs,), NUMERIC, "any", _exact(np.abs), EXACT),
    "neg": (k_unary, (pl.neg,), NUMERIC, "any", _exact(np.negative), EXACT),
    "relu": (k_unary, (pl.relu,), NUMERIC, "any", _exact(lambda x: np.maximum(x, 0)), EXACT),
    "sin": (k_unary, (pl.sin,), (pl.FP32,), "any", _f32(np.sin), TRANSCENDENTAL),
    "cos": (k_unary, (pl.cos,), (pl.FP32,), "any", _f32(np.cos), TRANSCENDENTAL),
}
CASES = [
    pytest.param(name, dt, id=f"{name}-{dt.name}") for name, row in UNARY.items() for dt in row[2]
]


def check_unary(name, dt, platform, shape, seed):
    builder, ops, _, kind, ref, ulps = UNARY[name]
    R, C, VR, VC = shape
    x = data(np.random.default_rng(seed), (R, C), dt, kind)
    out = sentinel((R, C), dt)
    init = out.copy()
    run(builder, (*ops, dt, R, C, VR, VC), platform, x, out)
    assert_region(out, (VR, VC), ref(x[:VR, :VC], dt), init, dt, ulps(dt), f"{name} {dt.name}")


@sweep(CASES)
def test_unary_op_matches_numpy(name, dt, platform, shape, seed):
    check_unary(name, dt, platform, shape, seed)


@each_case(CASES)
def test_unary_op_ragged_16x32_valid_16x20(name, dt, platform):
    """The brief's ragged case, always run: only the [16, 20] window is stored."""
    check_unary(name, dt, platform, (16, 32, 16, 20), seed=5)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", INTS)
def test_abs_and_neg_wrap_at_the_int_minimum(dt, platform):
    """docs/design/numerics.md §2: ints compute in int64 then wrap, so abs(MIN) = neg(MIN) = MIN."""
    lo = int(np.iinfo(storage(dt)).min)
    x = np.array([[lo, lo + 1, -1, 0, 1, 5, -5, 127]], dtype=storage(dt))
    for op in (pl.abs, pl.neg):
        out = sentinel(x.shape, dt)
        run(k_unary, (op, dt, 1, 8, 1, 8), platform, x, out)
        assert out[0, 0] == lo
    out = sentinel(x.shape, dt)
    run(k_unary, (pl.abs, dt, 1, 8, 1, 8), platform, x, out)
    assert list(out[0, 1:]) == [-(lo + 1), 1, 0, 1, 5, 5, 127]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_special_float_values(platform):
    """IEEE edges at FP16: sqrt(-1)=NaN, log(0)=-inf, recip(-0)=-inf, exp overflows to inf."""
    dt = pl.FP16
    x = np.array([[-1.0, 0.0, -0.0, 12.0, np.inf, 1.0, 4.0, 0.25]], dtype=np.float16)
    got = {}
    for name, op in (("sqrt", pl.sqrt), ("log", pl.log), ("recip", pl.recip), ("exp", pl.exp)):
        out = sentinel(x.shape, dt)
        run(k_unary, (op, dt, 1, 8, 1, 8), platform, x, out)
        got[name] = out[0].astype(np.float64)
    assert np.isnan(got["sqrt"][0]) and got["sqrt"][6] == 2.0 and got["sqrt"][7] == 0.5
    assert got["log"][1] == -np.inf and got["log"][4] == np.inf and got["log"][5] == 0.0
    assert got["recip"][2] == -np.inf and got["recip"][1] == np.inf and got["recip"][6] == 0.25
    assert got["exp"][3] == np.inf  # e**12 > 65504, the FP16 max
    assert got["exp"][1] == 1.0


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16])
def test_unary_ops_spelled_literally(dt, platform):
    """exp/log/sqrt/abs/neg/relu as written in user code, on positive inputs (log, sqrt)."""
    x = np.minimum(data(np.random.default_rng(12), (8, 16), dt, "pos"), storage(dt)(8))
    x[0, :2] = [1, 4]  # log(1) = 0, sqrt(4) = 2 exactly; all <= 8 so exp fits FP16
    outs = [sentinel((8, 16), dt) for _ in range(6)]
    run(k_unary_spellings, (dt, 8, 16), platform, x, *outs)
    for got, (name, ref, ulps) in zip(outs, (
            ("exp", _f32(np.exp), TRANSCENDENTAL), ("log", _f32(np.log), TRANSCENDENTAL),
            ("sqrt", _exact(np.sqrt), EXACT), ("abs", _exact(np.abs), EXACT),
            ("neg", _exact(np.negative), EXACT),
            ("relu", _exact(lambda v: np.maximum(v, 0)), EXACT))):
        assert_ulp(got, ref(x, dt), dt, ulps(dt), f"pl.{name} {dt.name}")
    assert outs[1][0, 0] == 0 and outs[2][0, 1] == 2
