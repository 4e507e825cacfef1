# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Tier-2 reductions, broadcasts, fills and combine ops through the whole pipeline.

Each kernel is parsed, compiled and run on both sim platforms; expected values are
plain numpy written here (col_sum's device order re-derived from PyPTO's golden:
rows added in the tile dtype, sequentially, or as a halving tree with a tmp tile).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from pipeline_kit import (
    PLATFORMS,
    assert_exact,
    assert_region,
    data,
    program,
    round_to,
    run,
    sentinel,
    storage,
    wide,
)

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import ArchSupportError, ParserTypeError, PyptoWarning
from ut.helpers import line_finder

line_of = line_finder(__file__)


# ------------------------------------------------------------------ kernels


def k_reduce2(DT, R, C, VR, VC):
    """row/col prod, the four arg reductions and both col_sum forms, one kernel."""

    @pl.program
    class Reduce2:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], rp: pl.InOut[pl.Tensor[[R, 1], DT]],
              cp: pl.InOut[pl.Tensor[[1, C], DT]], rmax: pl.InOut[pl.Tensor[[R, 1], pl.INT32]],
              rmin: pl.InOut[pl.Tensor[[R, 1], pl.INT32]],
              cmax: pl.InOut[pl.Tensor[[1, C], pl.INT32]],
              cmin: pl.InOut[pl.Tensor[[1, C], pl.INT32]], cs: pl.InOut[pl.Tensor[[1, C], DT]],
              cst: pl.InOut[pl.Tensor[[1, C], DT]]):
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            tmp = pl.create_tile([R, C], DT)
            rp = pl.store(pl.row_prod(t, tmp), [0, 0], rp)
            cp = pl.store(pl.col_prod(t), [0, 0], cp)
            rmax = pl.store(pl.row_argmax(t, tmp), [0, 0], rmax)
            rmin = pl.store(pl.tile.row_argmin(t, tmp), [0, 0], rmin)
            cmax = pl.store(pl.col_argmax(t, tmp), [0, 0], cmax)
            cmin = pl.store(pl.tile.col_argmin(t, tmp_tile=tmp), [0, 0], cmin)
            cs = pl.store(pl.col_sum(t), [0, 0], cs)
            cst = pl.store(pl.col_sum(t, tmp), [0, 0], cst)
            return rp, cp, rmax, rmin, cmax, cmin, cs, cst

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], rp: pl.InOut[pl.Tensor[[R, 1], DT]],
                 cp: pl.InOut[pl.Tensor[[1, C], DT]], rmax: pl.InOut[pl.Tensor[[R, 1], pl.INT32]],
                 rmin: pl.InOut[pl.Tensor[[R, 1], pl.INT32]],
                 cmax: pl.InOut[pl.Tensor[[1, C], pl.INT32]],
                 cmin: pl.InOut[pl.Tensor[[1, C], pl.INT32]], cs: pl.InOut[pl.Tensor[[1, C], DT]],
                 cst: pl.InOut[pl.Tensor[[1, C], DT]]):
            rp, cp, rmax, rmin, cmax, cmin, cs, cst = self.k(x, rp, cp, rmax, rmin, cmax, cmin,
                                                             cs, cst)
            return rp

    return Reduce2


def k_expand2(DT, R, C, VR, VC):
    """Every row/col broadcast op against one tile, a [R, 1] and a [1, C] vector."""

    @pl.program
    class Expand2:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], rv: pl.Tensor[[R, 1], DT], cv: pl.Tensor[[1, C], DT],
              out: pl.InOut[pl.Tensor[[10, R, C], DT]]):
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            r = pl.load(rv, [0, 0], [R, 1], valid_shape=[VR, 1])
            c = pl.load(cv, [0, 0], [1, C], valid_shape=[1, VC])
            o = pl.reshape(out, [10 * R, C])
            o = pl.store(pl.row_expand_max(t, r), [0, 0], o)
            o = pl.store(pl.row_expand_min(t, r), [R, 0], o)
            o = pl.store(pl.col_expand_add(t, c), [2 * R, 0], o)
            o = pl.store(pl.col_expand_sub(t, c), [3 * R, 0], o)
            o = pl.store(pl.col_expand_mul(t, c), [4 * R, 0], o)
            o = pl.store(pl.col_expand_max(t, c), [5 * R, 0], o)
            o = pl.store(pl.tile.col_expand_min(t, c), [6 * R, 0], o)
            o = pl.store(pl.row_expand(t, r), [7 * R, 0], o)
            o = pl.store(pl.col_expand(t, c), [8 * R, 0], o)
            o = pl.store(pl.expands(t, 3), [9 * R, 0], o)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], rv: pl.Tensor[[R, 1], DT],
                 cv: pl.Tensor[[1, C], DT], out: pl.InOut[pl.Tensor[[10, R, C], DT]]):
            out = self.k(x, rv, cv, out)
            return out

    return Expand2


def k_float_expand(DT, R, C):
    """The float-only broadcasts: col_expand_div and both expdifs."""

    @pl.program
    class FloatExpand:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], rv: pl.Tensor[[R, 1], DT], cv: pl.Tensor[[1, C], DT],
              o1: pl.Out[pl.Tensor[[R, C], DT]], o2: pl.Out[pl.Tensor[[R, C], DT]],
              o3: pl.Out[pl.Tensor[[R, C], DT]]):
            t = pl.load(x, [0, 0], [R, C])
            r = pl.load(rv, [0, 0], [R, 1])
            c = pl.load(cv, [0, 0], [1, C])
            o1 = pl.store(pl.col_expand_div(t, c), [0, 0], o1)
            o2 = pl.store(pl.row_expand_expdif(t, r), [0, 0], o2)
            o3 = pl.store(pl.col_expand_expdif(t, c), [0, 0], o3)
            return o1, o2, o3

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], rv: pl.Tensor[[R, 1], DT],
                 cv: pl.Tensor[[1, C], DT], o1: pl.Out[pl.Tensor[[R, C], DT]],
                 o2: pl.Out[pl.Tensor[[R, C], DT]], o3: pl.Out[pl.Tensor[[R, C], DT]]):
            o1, o2, o3 = self.k(x, rv, cv, o1, o2, o3)
            return o1

    return FloatExpand


def k_packed_add(DT, R, C, L, VR, VC, TMP_DT):
    """row_expand_add with a packed [R, L] carrier and a workspace of another dtype."""

    @pl.program
    class PackedAdd:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], rv: pl.Tensor[[R, L], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            r = pl.load(rv, [0, 0], [R, L], valid_shape=[VR, L])
            tmp = pl.create_tile([16, 1], TMP_DT)
            out = pl.store(pl.row_expand_add(t, r, tmp=tmp), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], rv: pl.Tensor[[R, L], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, rv, out)
            return out

    return PackedAdd


def k_fills(DT, R, C, VR, VC):
    """fillpad (max), fillpad_inplace (-inf literal), fillpad_expand (zero), one kernel."""

    @pl.program
    class Fills:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o1: pl.Out[pl.Tensor[[R, C], DT]],
              o2: pl.Out[pl.Tensor[[R, C], DT]], o3: pl.Out[pl.Tensor[[R + 8, C + 16], DT]]):
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            o1 = pl.store(pl.fillpad(t, pad_value=pl.PadValue.max), [0, 0], o1)
            o3 = pl.store(pl.fillpad_expand(t, [R + 8, C + 16]), [0, 0], o3)
            u = pl.tile.fillpad_inplace(t, pad_value=-math.inf)
            o2 = pl.store(u, [0, 0], o2)
            return o1, o2, o3

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o1: pl.Out[pl.Tensor[[R, C], DT]],
                 o2: pl.Out[pl.Tensor[[R, C], DT]], o3: pl.Out[pl.Tensor[[R + 8, C + 16], DT]]):
            o1, o2, o3 = self.k(x, o1, o2, o3)
            return o1

    return Fills


def k_generators(DT, CI_DT, D, UPPER):
    """tri (valid 12x20 of 16x32, scalar diagonal from a tensor) and ci (descending)."""

    @pl.program
    class Generators:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, d: pl.Tensor[[1], pl.INT32], o1: pl.InOut[pl.Tensor[[16, 32], DT]],
              o2: pl.InOut[pl.Tensor[[16, 32], DT]], o3: pl.Out[pl.Tensor[[1, 32], CI_DT]]):
            diag: pl.Scalar[pl.INT32] = pl.tensor.read(d, [0])
            o1 = pl.store(pl.tri(D, [16, 32], valid_shape=[12, 20], dtype=DT, upper=UPPER),
                          [0, 0], o1)
            o2 = pl.store(pl.tile.tri(diag, [16, 32], dtype=DT), [0, 0], o2)
            o3 = pl.store(pl.tile.arange(7, [1, 32], dtype=CI_DT, descending=True), [0, 0], o3)
            return o1, o2, o3

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, d: pl.Tensor[[1], pl.INT32], o1: pl.InOut[pl.Tensor[[16, 32], DT]],
                 o2: pl.InOut[pl.Tensor[[16, 32], DT]], o3: pl.Out[pl.Tensor[[1, 32], CI_DT]]):
            o1, o2, o3 = self.k(d, o1, o2, o3)
            return o1

    return Generators


def k_combine(DT, R, C0, C1, VT):
    """concat, a Vec extract window and a reinterpret_view to INT16."""

    @pl.program
    class Combine:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[R, C0], DT], b: pl.Tensor[[R, C1], DT],
              o1: pl.Out[pl.Tensor[[R, C0 + C1], DT]], o2: pl.Out[pl.Tensor[[8, C1], DT]],
              o3: pl.Out[pl.Tensor[[R, C0 * 2], VT]]):
            ta = pl.load(a, [0, 0], [R, C0])
            tb = pl.load(b, [0, 0], [R, C1])
            o1 = pl.store(pl.concat(ta, tb), [0, 0], o1)
            o2 = pl.store(pl.tile.extract(tb, 4, 0, [8, C1], target_memory=pl.MemorySpace.Vec),
                          [0, 0], o2)
            o3 = pl.store(pl.reinterpret_view(ta, VT), [0, 0], o3)
            return o1, o2, o3

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[R, C0], DT], b: pl.Tensor[[R, C1], DT],
                 o1: pl.Out[pl.Tensor[[R, C0 + C1], DT]], o2: pl.Out[pl.Tensor[[8, C1], DT]],
                 o3: pl.Out[pl.Tensor[[R, C0 * 2], VT]]):
            o1, o2, o3 = self.k(a, b, o1, o2, o3)
            return o1

    return Combine


# --------------------------------------------------------------- references


def seq_sum(x, dt):
    acc = x[0].astype(np.float64)
    for row in x[1:]:
        acc = round_to(acc + row.astype(np.float64), dt).astype(np.float64)
    return round_to(acc[None], dt)


def tree_sum(x, dt):
    buf = [r.astype(np.float64) for r in x]
    while len(buf) > 1:
        n, half = len(buf), len(buf) // 2
        nxt = [round_to(buf[2 * i] + buf[2 * i + 1], dt).astype(np.float64) for i in range(half)]
        if n % 2:
            nxt[0] = round_to(nxt[0] + buf[n - 1], dt).astype(np.float64)
        buf = nxt
    return round_to(buf[0][None], dt)


def first_index(v, axis, biggest):
    """Lowest index of the extremum along ``axis`` (explicit scan, no np.arg*)."""
    lines = v if axis == 1 else v.T
    out = []
    for line in lines:
        best = 0
        for k in range(1, len(line)):
            if (line[k] > line[best]) if biggest else (line[k] < line[best]):
                best = k
        out.append(best)
    return np.array(out, np.int32)


# --------------------------------------------------------------------- tests


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16])
@pytest.mark.parametrize("shape", [(32, 64, 32, 64), (16, 32, 11, 20)], ids=["full", "ragged"])
def test_tier2_reductions(dt, platform, shape):
    R, C, VR, VC = shape
    rng = np.random.default_rng(5)
    x = rng.uniform(0.8, 1.2, (R, C)).astype(storage(dt))
    x[:VR, :VC] = rng.permutation(VR * VC).reshape(VR, VC) % 97 * 0.5 + 0.5  # no arg ties
    outs = [sentinel((R, 1), dt), sentinel((1, C), dt)] + [
        np.full(s, -1, np.int32) for s in ((R, 1), (R, 1), (1, C), (1, C))] + [
        sentinel((1, C), dt), sentinel((1, C), dt)]
    inits = [o.copy() for o in outs]
    # Products of [0.5, 48.5] overflow: use the near-one block for prod, its own run.
    run(k_reduce2, (dt, R, C, VR, VC), platform, x, *outs)
    v = x[:VR, :VC]
    assert_region(outs[2], (VR, 1), first_index(wide(v), 1, True)[:, None], inits[2], pl.INT32)
    assert_region(outs[3], (VR, 1), first_index(wide(v), 1, False)[:, None], inits[3], pl.INT32)
    assert_region(outs[4], (1, VC), first_index(wide(v), 0, True)[None], inits[4], pl.INT32)
    assert_region(outs[5], (1, VC), first_index(wide(v), 0, False)[None], inits[5], pl.INT32)
    assert_region(outs[6], (1, VC), seq_sum(v, dt), inits[6], dt, 0, "col_sum sequential")
    assert_region(outs[7], (1, VC), tree_sum(v, dt), inits[7], dt, 0, "col_sum tree")
    near_one = rng.uniform(0.9, 1.1, (R, C)).astype(storage(dt))
    outs = [o.copy() for o in inits]
    run(k_reduce2, (dt, R, C, VR, VC), platform, near_one, *outs)
    w = wide(near_one[:VR, :VC])
    tol = 1e-5 if dt.name == "FP32" else 2e-3
    np.testing.assert_allclose(wide(outs[0][:VR]), np.prod(w, axis=1, keepdims=True), rtol=tol)
    np.testing.assert_allclose(wide(outs[1][:, :VC]), np.prod(w, axis=0, keepdims=True), rtol=tol)
    assert_exact(outs[0][VR:], inits[0][VR:], "row_prod outside the valid rows")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.INT32, pl.INT16])
def test_row_and_col_broadcasts(dt, platform):
    R, C, VR, VC = 16, 32, 12, 20
    rng = np.random.default_rng(9)
    x, rv, cv = data(rng, (R, C), dt, "mid"), data(rng, (R, 1), dt, "mid"), data(rng, (1, C), dt, "mid")
    out = np.stack([sentinel((R, C), dt)] * 10)
    init = out.copy()
    run(k_expand2, (dt, R, C, VR, VC), platform, x, rv, cv, out)
    X, RV, CV = wide(x[:VR, :VC]), wide(rv[:VR]), wide(cv[:, :VC])
    wants = [np.maximum(X, RV), np.minimum(X, RV), X + CV, X - CV, X * CV, np.maximum(X, CV),
             np.minimum(X, CV), np.broadcast_to(RV, X.shape), np.broadcast_to(CV, X.shape),
             np.full(X.shape, 3)]
    for i, want in enumerate(wants):
        assert_region(out[i], (VR, VC), round_to(want, dt), init[i], dt, 0, f"op {i}")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16])
def test_float_broadcasts(dt, platform):
    R, C = 16, 32
    rng = np.random.default_rng(2)
    x, rv = data(rng, (R, C), dt, "small"), data(rng, (R, 1), dt, "small")
    cv = data(rng, (1, C), dt, "nonzero")
    outs = [np.zeros((R, C), storage(dt)) for _ in range(3)]
    run(k_float_expand, (dt, R, C), platform, x, rv, cv, *outs)
    f = lambda a: a.astype(np.float32)  # noqa: E731  (docs/design/numerics.md §2: float32, rounded once)
    assert_exact(outs[0], round_to(f(x) / f(cv), dt), "col_expand_div")
    for got, want in ((outs[1], np.exp(f(x) - f(rv))), (outs[2], np.exp(f(x) - f(cv)))):
        np.testing.assert_allclose(wide(got), wide(round_to(want, dt)),
                                   rtol=1e-6 if dt.name == "FP32" else 1e-3)


@pytest.mark.filterwarnings("ignore:.*not validated on 'a2a3':pytest_pypto.ir.errors.PyptoWarning")
@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.INT32, pl.INT16])
@pytest.mark.parametrize("valid", [(32, 64), (20, 47)], ids=["full", "tail"])
def test_row_expand_add_packed_carrier(dt, platform, valid):
    R, C = 32, 64
    L = 32 // np.dtype(storage(dt)).itemsize
    VR, VC = valid
    rng = np.random.default_rng(3)
    x, rv = data(rng, (R, C), dt, "mid"), data(rng, (R, L), dt, "mid")
    out = sentinel((R, C), dt)
    init = out.copy()
    run(k_packed_add, (dt, R, C, L, VR, VC, pl.INT16), platform, x, rv, out)
    lanes = np.concatenate([rv[:VR]] * (C // L), axis=1)[:, :VC]
    assert_region(out, (VR, VC), round_to(wide(x[:VR, :VC]) + wide(lanes), dt), init, dt)


def test_packed_row_expand_add_warns_on_a2a3_only():
    prog = program(k_packed_add, (pl.FP32, 32, 64, 8, 32, 64, pl.FP32))
    with pytest.warns(PyptoWarning, match="row_expand_add with a packed row_vec is not "
                                          "validated on 'a2a3'"):
        pytest_pypto.compile(prog, RunConfig(platform="a2a3sim"))
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", PyptoWarning)
        pytest_pypto.compile(prog, RunConfig(platform="a5sim"))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.BF16, pl.INT32, pl.INT8])
def test_fillpads(dt, platform):
    R, C, VR, VC = 16, 32, 10, 17
    x = data(np.random.default_rng(4), (R, C), dt)
    outs = [np.zeros((R, C), storage(dt)), np.zeros((R, C), storage(dt)),
            np.ones((R + 8, C + 16), storage(dt))]
    run(k_fills, (dt, R, C, VR, VC), platform, x, *outs)
    hi, lo = ((np.inf, -np.inf) if dt.is_float else
              (np.iinfo(storage(dt)).max, np.iinfo(storage(dt)).min))
    for out, fill in zip(outs, (hi, lo, 0)):
        want = np.full(out.shape, fill).astype(storage(dt))
        want[:VR, :VC] = x[:VR, :VC]
        assert_exact(out, want, f"fill {fill}")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt,ci_dt", [(pl.FP32, pl.INT32), (pl.FP16, pl.INT16),
                                      (pl.INT32, pl.UINT16), (pl.INT16, pl.UINT32)])
@pytest.mark.parametrize("diag,upper", [(0, False), (3, True), (-2, False)])
def test_tri_and_ci(dt, ci_dt, diag, upper, platform):
    o1, o2 = np.full((16, 32), 9, storage(dt)), np.full((16, 32), 9, storage(dt))
    o3 = np.zeros((1, 32), {"INT32": np.int32, "INT16": np.int16, "UINT16": np.uint16,
                            "UINT32": np.uint32}[ci_dt.name])
    run(k_generators, (dt, ci_dt, diag, upper), platform, np.array([2], np.int32), o1, o2, o3)
    i, j = np.indices((12, 20))
    want = np.full((16, 32), 9, storage(dt))
    want[:12, :20] = (j >= i + diag) if upper else (j <= i + diag)
    assert_exact(o1, want, "tri valid region, rest untouched")
    i, j = np.indices((16, 32))
    assert_exact(o2, (j <= i + 2).astype(storage(dt)), "tri with a Scalar diagonal")
    assert_exact(o3, (7 - np.arange(32, dtype=np.int64)).astype(o3.dtype)[None], "ci wraps")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt,vt", [(pl.FP32, pl.INT16), (pl.INT32, pl.FP16), (pl.FP16, pl.INT8)])
def test_concat_extract_reinterpret(dt, vt, platform):
    R, C0, C1 = 16, 16, 32
    rng = np.random.default_rng(8)
    a, b = data(rng, (R, C0), dt), data(rng, (R, C1), dt)
    vstore = {"INT16": np.int16, "FP16": np.float16, "INT8": np.int8}[vt.name]
    isz = np.dtype(storage(dt)).itemsize // np.dtype(vstore).itemsize
    o1, o2 = np.zeros((R, C0 + C1), storage(dt)), np.zeros((8, C1), storage(dt))
    o3 = np.zeros((R, C0 * isz), vstore)
    run(k_combine, (dt, R, C0, C1, vt), platform, a, b, o1, o2, o3)
    assert_exact(o1, np.concatenate([a, b], axis=1), "concat")
    assert_exact(o2, b[4:12], "extract")
    np.testing.assert_array_equal(o3.view(np.uint8), np.ascontiguousarray(a).view(np.uint8))


# ------------------------------------------------------------- diagnostics


def k_bad_tri(DT):
    @pl.program
    class BadTri:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, o: pl.Out[pl.Tensor[[16, 32], DT]]) -> pl.Tensor[[16, 32], DT]:
            t = pl.tri(0, [16, 32], dtype=DT)  # tri-line
            o = pl.store(t, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, o: pl.Out[pl.Tensor[[16, 32], DT]]) -> pl.Tensor[[16, 32], DT]:
            o = self.k(o)
            return o

    return BadTri


@pytest.mark.parametrize("dt", [pl.BF16, pl.INT8, pl.UINT8])
def test_tri_dtype_gate_names_the_arch_and_line(dt):
    prog = program(k_bad_tri, (dt,))
    with pytest.raises(ArchSupportError, match=f"tile.tri does not support dtype {dt.name} on "
                                               "the 'a2a3' backend") as ei:
        pytest_pypto.compile(prog, RunConfig(platform="a2a3sim"))
    assert ei.value.file == __file__ and ei.value.line == line_of("# tri-line")
    pytest_pypto.compile(prog, RunConfig(platform="a5sim"))


def k_int8_add():
    @pl.program
    class Int8Add:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 64], pl.INT8], v: pl.Tensor[[32, 1], pl.INT8],
              o: pl.Out[pl.Tensor[[32, 64], pl.INT8]]) -> pl.Tensor[[32, 64], pl.INT8]:
            t = pl.load(x, [0, 0], [32, 64])
            r = pl.load(v, [0, 0], [32, 1])
            o = pl.store(pl.row_expand_add(t, r), [0, 0], o)  # int8-add-line
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 64], pl.INT8], v: pl.Tensor[[32, 1], pl.INT8],
                 o: pl.Out[pl.Tensor[[32, 64], pl.INT8]]) -> pl.Tensor[[32, 64], pl.INT8]:
            o = self.k(x, v, o)
            return o

    return Int8Add


def test_int8_row_expand_add_runs_on_a5_only():
    prog = program(k_int8_add, ())
    with pytest.raises(ArchSupportError, match="row_expand_add does not support dtype INT8 on "
                                               "the 'a2a3' backend") as ei:
        pytest_pypto.compile(prog, RunConfig(platform="a2a3sim"))
    assert ei.value.line == line_of("# int8-add-line")
    x = data(np.random.default_rng(1), (32, 64), pl.INT8)
    v = data(np.random.default_rng(2), (32, 1), pl.INT8)
    out = np.zeros((32, 64), np.int8)
    run(k_int8_add, (), "a5sim", x, v, out)
    assert_exact(out, round_to(wide(x) + wide(v), pl.INT8), "INT8 row_expand_add wraps")


def test_fillpad_pad_value_error_points_at_the_call():
    with pytest.raises(ParserTypeError, match=r"requires pad_value pl.PadValue.zero, "
                                              r"pl.PadValue.min or pl.PadValue.max .* but got 2.5"
                       ) as ei:
        @pl.program
        class BadPad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[8, 8], pl.FP32],
                  o: pl.Out[pl.Tensor[[8, 8], pl.FP32]]) -> pl.Tensor[[8, 8], pl.FP32]:
                t = pl.load(x, [0, 0], [8, 8], valid_shape=[4, 8])
                o = pl.store(pl.fillpad(t, pad_value=2.5), [0, 0], o)  # bad-pad-line
                return o

    assert ei.value.file == __file__ and ei.value.line == line_of("# bad-pad-line")


def test_row_expand_add_valid_rows_error_points_at_the_call():
    with pytest.raises(ParserTypeError, match="row_vec's valid rows to equal the tile's") as ei:
        @pl.program
        class BadRows:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[32, 64], pl.FP32], v: pl.Tensor[[32, 1], pl.FP32],
                  o: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
                t = pl.load(x, [0, 0], [32, 64], valid_shape=[20, 64])
                r = pl.load(v, [0, 0], [32, 1])
                o = pl.store(pl.row_expand_add(t, r), [0, 0], o)  # rows-line
                return o

    assert ei.value.line == line_of("# rows-line")
