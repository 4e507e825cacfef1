# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Reductions and row broadcasts through the whole pipeline (docs/design/language.md §21,
docs/design/numerics.md §2).

row_sum/row_max/row_min take a scratch tmp tile and reduce the valid columns into
[R, 1] (valid [VR, 1]); col_sum/col_max/col_min reduce the valid rows into [1, C]
(valid [1, VC]).  Sums accumulate wide and round once; the order is numpy's, so
float sums get a tolerance while max/min and integer sums are exact.
"""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_kit import (
    DIV_DTYPES,
    FLOATS,
    NUMERIC,
    PLATFORMS,
    assert_exact,
    assert_region,
    assert_ulp,
    data,
    each_case,
    f32_then,
    k_col_reduce,
    k_row_expand,
    k_row_reduce,
    round_to,
    run,
    sentinel,
    sweep,
    wide,
)

import pytest_pypto.language as pl

# ------------------------------------------------------------------ kernels


def k_reduce_spellings(DT, R, C):
    """Every reduction spelled as users write it, in one kernel (row ones share a scratch)."""

    @pl.program
    class ReduceSpellings:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o_rsum: pl.Out[pl.Tensor[[R, 1], DT]],
              o_rmax: pl.Out[pl.Tensor[[R, 1], DT]], o_rmin: pl.Out[pl.Tensor[[R, 1], DT]],
              o_cmax: pl.Out[pl.Tensor[[1, C], DT]], o_cmin: pl.Out[pl.Tensor[[1, C], DT]]):
            t = pl.load(x, [0, 0], [R, C])
            tmp = pl.create_tile([R, C], DT)
            o_rsum = pl.store(pl.row_sum(t, tmp), [0, 0], o_rsum)
            o_rmax = pl.store(pl.row_max(t, tmp), [0, 0], o_rmax)
            o_rmin = pl.store(pl.row_min(t, tmp), [0, 0], o_rmin)
            o_cmax = pl.store(pl.col_max(t), [0, 0], o_cmax)
            o_cmin = pl.store(pl.col_min(t), [0, 0], o_cmin)
            return o_rsum, o_rmax, o_rmin, o_cmax, o_cmin

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o_rsum: pl.Out[pl.Tensor[[R, 1], DT]],
                 o_rmax: pl.Out[pl.Tensor[[R, 1], DT]], o_rmin: pl.Out[pl.Tensor[[R, 1], DT]],
                 o_cmax: pl.Out[pl.Tensor[[1, C], DT]], o_cmin: pl.Out[pl.Tensor[[1, C], DT]]):
            o_rsum, o_rmax, o_rmin, o_cmax, o_cmin = self.k(
                x, o_rsum, o_rmax, o_rmin, o_cmax, o_cmin)
            return o_rsum

    return ReduceSpellings


def k_col_sum(DT, R, C, VR, VC):
    """Both tile forms: without and with the optional scratch tile."""

    @pl.program
    class ColSum:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o1: pl.InOut[pl.Tensor[[1, C], DT]],
              o2: pl.InOut[pl.Tensor[[1, C], DT]]):
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            tmp = pl.create_tile([R, C], DT)
            o1 = pl.store(pl.col_sum(t), [0, 0], o1)
            o2 = pl.store(pl.col_sum(t, tmp), [0, 0], o2)
            return o1, o2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o1: pl.InOut[pl.Tensor[[1, C], DT]],
                 o2: pl.InOut[pl.Tensor[[1, C], DT]]):
            o1, o2 = self.k(x, o1, o2)
            return o1

    return ColSum


def k_softmax(DT, R, C, VR, VC):
    """The row-softmax chain: row_max -> row_expand_expdif -> row_sum -> row_expand_div."""

    @pl.program
    class Softmax:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            tmp = pl.create_tile([R, C], DT)
            m = pl.row_max(t, tmp)
            e = pl.row_expand_expdif(t, m)
            s = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, s), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Softmax


# --------------------------------------------------------------- references

MANTISSA = {"FP32": 23, "FP16": 10, "BF16": 7}  # stored fraction bits
ROW_MIN_DTYPES = (pl.INT32, pl.INT16, pl.FP32, pl.FP16)  # docs/design/language.md §21 row_min

REDUCE = {  # name -> (builder, its leading key: the op stub), dtypes, axis, numpy reducer
    "row_sum": (k_row_reduce, (pl.row_sum,), NUMERIC, 1, np.sum),
    "row_max": (k_row_reduce, (pl.row_max,), NUMERIC, 1, np.max),
    "row_min": (k_row_reduce, (pl.row_min,), ROW_MIN_DTYPES, 1, np.min),
    "col_sum": (k_col_sum, (), NUMERIC, 0, np.sum),
    "col_max": (k_col_reduce, (pl.col_max,), NUMERIC, 0, np.max),
    "col_min": (k_col_reduce, (pl.col_min,), NUMERIC, 0, np.min),
}
R_CASES = [pytest.param(n, dt, id=f"{n}-{dt.name}") for n, row in REDUCE.items() for dt in row[2]]


def check_reduction(name, dt, platform, shape, seed):
    builder, ops, _, axis, fn = REDUCE[name]
    R, C, VR, VC = shape
    x = data(np.random.default_rng(seed), (R, C), dt)
    out_shape, region = ((R, 1), (VR, 1)) if axis == 1 else ((1, C), (1, VC))
    outs = [sentinel(out_shape, dt) for _ in range(2 if name == "col_sum" else 1)]
    init = outs[0].copy()
    run(builder, (*ops, dt, R, C, VR, VC), platform, x, *outs)
    # Reduce the valid window only: float64 (exact for these sizes) or int64, then round/wrap.
    exact = fn(wide(x[:VR, :VC]), axis=axis, keepdims=True)
    want = round_to(exact, dt)
    for out in outs:
        if name.endswith("sum") and dt.is_float:
            # float32 accumulation in numpy's order, rounded once: within one rounding of
            # the tile dtype plus the accumulator's error bound n * 2**-24 * sum(|x|).
            # col_sum adds in the tile dtype instead (the device's order, each add rounded;
            # the exact order is pinned in ut/pipeline/test_pipeline_reduce_tier2.py).
            got = out[: region[0], : region[1]].astype(np.float64)
            n = VC if axis == 1 else VR
            unit = 2.0 ** -(MANTISSA[dt.name] + 1) if name == "col_sum" else 2.0**-24
            bound = n * unit * np.abs(wide(x[:VR, :VC])).sum(axis=axis, keepdims=True)
            half_ulp = np.abs(exact) * 2.0 ** -(MANTISSA[dt.name] + 1)
            assert (np.abs(got - exact) <= bound + half_ulp + 1e-30).all(), f"{name} {dt.name}"
            assert_region(out, region, out[: region[0], : region[1]], init, dt)  # outside kept
        else:
            assert_region(out, region, want, init, dt, 0, f"{name} {dt.name}")


@sweep(R_CASES)
def test_reduction_matches_numpy(name, dt, platform, shape, seed):
    check_reduction(name, dt, platform, shape, seed)


@each_case(R_CASES)
def test_reduction_ragged_16x32_valid_12x20(name, dt, platform):
    """Only valid rows/cols are reduced (poisoned padding would show as NaN/0xA5)."""
    check_reduction(name, dt, platform, (16, 32, 12, 20), seed=21)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int8_row_sum_wraps_and_int32_col_sum_does_too(platform):
    x8 = np.full((2, 8), 100, np.int8)
    out = sentinel((2, 1), pl.INT8)
    run(k_row_reduce, (pl.row_sum, pl.INT8, 2, 8, 2, 8), platform, x8, out)
    assert out.ravel().tolist() == [800 - 768] * 2  # 800 wraps to 32
    x32 = np.full((4, 8), 2**30, np.int32)
    o1, o2 = sentinel((1, 8), pl.INT32), sentinel((1, 8), pl.INT32)
    run(k_col_sum, (pl.INT32, 4, 8, 4, 8), platform, x32, o1, o2)
    assert o1.ravel().tolist() == [0] * 8 and o2.ravel().tolist() == [0] * 8  # 2**32 wraps


EXPAND = {  # name -> (k_row_expand's op stub, dtypes, numpy op on (tile, row_vec)), wide
    "row_expand_add": (pl.row_expand_add, (pl.FP32, pl.FP16, pl.INT32, pl.INT16), np.add),
    "row_expand_sub": (pl.row_expand_sub, NUMERIC, np.subtract),
    "row_expand_mul": (pl.row_expand_mul, NUMERIC, np.multiply),
    "row_expand_div": (pl.row_expand_div, DIV_DTYPES, None),
    "row_expand_expdif": (pl.row_expand_expdif, FLOATS, None),
}
E_CASES = [pytest.param(n, dt, id=f"{n}-{dt.name}") for n, row in EXPAND.items() for dt in row[1]]


def _expand_reference(name, x, v, dt):
    if name == "row_expand_expdif":  # exp(a - v): float32 math, rounded once (docs/design/numerics.md §2)
        return f32_then(lambda a, b: np.exp(a - b), dt, x, v)
    with np.errstate(all="ignore"):
        if name == "row_expand_div":
            a, b = wide(x), wide(v)
            if dt.is_float:
                return round_to(a / b, dt)
            q = np.abs(a) // np.abs(b)
            return round_to(np.where((a < 0) != (b < 0), -q, q), dt)
        return round_to(EXPAND[name][2](wide(x), wide(v)), dt)


def check_expand(name, dt, platform, shape, seed):
    R, C, VR, VC = shape
    rng = np.random.default_rng(seed)
    x = data(rng, (R, C), dt, "small" if name.endswith("expdif") else "any")
    v = data(rng, (R, 1), dt, "nonzero" if name.endswith("div") else
             "small" if name.endswith("expdif") else "any")
    out = sentinel((R, C), dt)
    init = out.copy()
    run(k_row_expand, (EXPAND[name][0], dt, R, C, VR, VC), platform, x, v, out)
    want = _expand_reference(name, x[:VR, :VC], v[:VR], dt)
    ulps = (2 if dt.name == "FP32" else 1) if name.endswith("expdif") else 0
    assert_region(out, (VR, VC), want, init, dt, ulps, f"{name} {dt.name}")


@sweep(E_CASES)
def test_row_expand_matches_numpy(name, dt, platform, shape, seed):
    check_expand(name, dt, platform, shape, seed)


@each_case(E_CASES)
def test_row_expand_ragged_16x32_valid_16x20(name, dt, platform):
    check_expand(name, dt, platform, (16, 32, 16, 20), seed=8)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16])
@pytest.mark.parametrize("shape", [(16, 32, 16, 32), (16, 32, 10, 20)], ids=["full", "ragged"])
def test_row_softmax_chain(dt, platform, shape):
    R, C, VR, VC = shape
    x = data(np.random.default_rng(3), (R, C), dt)
    out = sentinel((R, C), dt)
    init = out.copy()
    run(k_softmax, (dt, R, C, VR, VC), platform, x, out)
    xv = x[:VR, :VC].astype(np.float64)
    e = np.exp(xv - xv.max(axis=1, keepdims=True))
    want = e / e.sum(axis=1, keepdims=True)
    got = out[:VR, :VC].astype(np.float64)
    # Each of the four steps rounds to the tile dtype: a few ULP of the dtype overall.
    tol = 1e-5 if dt.name == "FP32" else 4e-3
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol * 1e-2)
    np.testing.assert_allclose(got.sum(axis=1), 1.0, rtol=tol * 8)
    mask = np.ones((R, C), bool)
    mask[:VR, :VC] = False
    assert_exact(out[mask], init[mask], "outside the valid region")
    # Step by step as docs/design/numerics.md §2 defines it: each op computes in float32 and rounds
    # to
    # the tile dtype, and the row sum runs in numpy's order, so bit for bit.
    xs = x[:VR, :VC].astype(np.float32)
    m = xs.max(axis=1, keepdims=True)
    e = round_to(np.exp(xs - m), dt).astype(np.float32)
    s = round_to(e.sum(axis=1, keepdims=True), dt).astype(np.float32)
    assert_ulp(out[:VR, :VC], round_to(e / s, dt), dt, 0, "per-op rounding")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_every_reduction_spelled_literally(platform):
    """row_sum/row_max/row_min/col_max/col_min as written in user code, INT32 (exact)."""
    x = data(np.random.default_rng(6), (8, 16), pl.INT32, "mid")
    rows = [sentinel((8, 1), pl.INT32) for _ in range(3)]
    cols = [sentinel((1, 16), pl.INT32) for _ in range(2)]
    run(k_reduce_spellings, (pl.INT32, 8, 16), platform, x, *rows, *cols)
    X = wide(x)
    wants = [X.sum(1, keepdims=True), X.max(1, keepdims=True), X.min(1, keepdims=True),
             X.max(0, keepdims=True), X.min(0, keepdims=True)]
    for got, want, op in zip(rows + cols, wants, ("row_sum", "row_max", "row_min", "col_max",
                                                  "col_min")):
        assert_exact(got, round_to(want, pl.INT32), f"pl.{op} INT32")
