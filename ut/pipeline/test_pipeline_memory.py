# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Memory ops through the whole pipeline: load/store windows, clamp, create, full
(docs/design/language.md
§15, §21, docs/design/numerics.md §6) on both archs.

Undefined memory is poisoned (docs/design/numerics.md §6): NaN for floats, bytes 0xA5 for ints.  A
pure Out
tensor starts poisoned, so whatever a kernel does not store stays poisoned.
"""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_kit import (
    FLOATS,
    INTS,
    NUMERIC,
    PLATFORMS,
    POISON_INT,
    assert_exact,
    data,
    round_to,
    run,
    sentinel,
    storage,
    wide,
)

import pytest_pypto.language as pl


def k_tiled_neg(DT, M, N, TM):
    """docs/design/language.md §3's loop shape: row tiles at offsets [r, 0], each stored back at [r,
    0]."""

    @pl.program
    class TiledNeg:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[M, N], DT],
              out: pl.Out[pl.Tensor[[M, N], DT]]) -> pl.Tensor[[M, N], DT]:
            for r in pl.range(0, M, TM):
                t = pl.load(x, [r, 0], [TM, N])
                out = pl.store(pl.neg(t), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, N], DT],
                 out: pl.Out[pl.Tensor[[M, N], DT]]) -> pl.Tensor[[M, N], DT]:
            out = self.k(x, out)
            return out

    return TiledNeg


def k_clamped_tail(DT, M, N, TM, STOP):
    """Row tiles that overhang the tensor's end: clamp=True cuts the last one to M - r rows."""

    @pl.program
    class ClampedTail:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[M, N], DT],
              out: pl.InOut[pl.Tensor[[M, N], DT]]) -> pl.Tensor[[M, N], DT]:
            for r in pl.range(0, STOP, TM):
                t = pl.load(x, [r, 0], [TM, N], clamp=True)
                out = pl.store(pl.relu(t), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, N], DT],
                 out: pl.InOut[pl.Tensor[[M, N], DT]]) -> pl.Tensor[[M, N], DT]:
            out = self.k(x, out)
            return out

    return ClampedTail


def k_window(DT, LO, SO, SHAPE, VALID):
    """Load a window at offsets LO with a valid region, store it at other offsets SO."""

    @pl.program
    class Window:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 48], DT],
              out: pl.InOut[pl.Tensor[[32, 48], DT]]) -> pl.Tensor[[32, 48], DT]:
            t = pl.load(x, LO, SHAPE, valid_shape=VALID)
            out = pl.store(t, SO, out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 48], DT],
                 out: pl.InOut[pl.Tensor[[32, 48], DT]]) -> pl.Tensor[[32, 48], DT]:
            out = self.k(x, out)
            return out

    return Window


def k_ragged_to_out(DT, R, C, VR, VC):
    """A ragged store into a pure Out tensor: the unstored part stays poisoned."""

    @pl.program
    class RaggedToOut:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT],
              out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT],
                 out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return RaggedToOut


def k_create(DT, R, C):
    """A fresh create_tile is poisoned; storing it shows the poison (or zeros on request)."""

    @pl.program
    class Create:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.create_tile([R, C], DT)
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(out)
            return out

    return Create


def k_full(DT, R, C, V):
    @pl.program
    class Full:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], o_full: pl.Out[pl.Tensor[[R, C], DT]],
              o_sum: pl.Out[pl.Tensor[[R, C], DT]]):
            f = pl.tile.full([R, C], DT, V)
            t = pl.load(x, [0, 0], [R, C])
            o_full = pl.store(f, [0, 0], o_full)
            o_sum = pl.store(pl.add(t, f), [0, 0], o_sum)
            return o_full, o_sum

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], o_full: pl.Out[pl.Tensor[[R, C], DT]],
                 o_sum: pl.Out[pl.Tensor[[R, C], DT]]):
            o_full, o_sum = self.k(x, o_full, o_sum)
            return o_full

    return Full


def k_add_short_rhs(DT, R, C, VC_B):
    """lhs fully valid, rhs valid only on its first VC_B columns: the sum's valid region is
    lhs's, and where rhs is undefined the poison propagates (docs/design/language.md §15,
    docs/design/numerics.md §6)."""

    @pl.program
    class AddShortRhs:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C], valid_shape=[R, VC_B])
            out = pl.store(pl.add(a, b), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, y, out)
            return out

    return AddShortRhs


def k_dynamic_tail(DT, M, N, TM):
    """A Scalar-valued valid_shape: the last tile's valid rows are pl.min(TM, M - r)."""

    @pl.program
    class DynamicTail:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[M, N], DT],
              out: pl.Out[pl.Tensor[[M, N], DT]]) -> pl.Tensor[[M, N], DT]:
            for r in pl.range(0, M, TM):
                v = pl.min(TM, M - r)
                t = pl.load(x, [r, 0], [TM, N], valid_shape=[v, N])
                out = pl.store(pl.abs(t), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M, N], DT],
                 out: pl.Out[pl.Tensor[[M, N], DT]]) -> pl.Tensor[[M, N], DT]:
            out = self.k(x, out)
            return out

    return DynamicTail


def k_accumulate_twice(R, C):
    """Read-modify-write of an InOut tensor by two tasks: out = out + x, twice (RAW)."""

    @pl.program
    class AccumulateTwice:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32],
              out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            a = pl.load(x, [0, 0], [R, C])
            o = pl.load(out, [0, 0], [R, C])
            out = pl.store(pl.add(o, a), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.k(x, out)
            out = self.k(x, out)
            return out

    return AccumulateTwice


def k_three_d(DT):
    """Elementwise ops accept N-D tiles; row reductions reduce the last axis of rank >= 2."""

    @pl.program
    class ThreeD:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2, 4, 8], DT], y: pl.Tensor[[2, 4, 8], DT],
              o_add: pl.Out[pl.Tensor[[2, 4, 8], DT]], o_max: pl.Out[pl.Tensor[[2, 4, 1], DT]]):
            a = pl.load(x, [0, 0, 0], [2, 4, 8])
            b = pl.load(y, [0, 0, 0], [2, 4, 8])
            tmp = pl.create_tile([2, 4, 8], DT)
            o_add = pl.store(pl.add(a, b), [0, 0, 0], o_add)
            o_max = pl.store(pl.row_max(a, tmp), [0, 0, 0], o_max)
            return o_add, o_max

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[2, 4, 8], DT], y: pl.Tensor[[2, 4, 8], DT],
                 o_add: pl.Out[pl.Tensor[[2, 4, 8], DT]],
                 o_max: pl.Out[pl.Tensor[[2, 4, 1], DT]]):
            o_add, o_max = self.k(x, y, o_add, o_max)
            return o_add

    return ThreeD


# ------------------------------------------------------------------ helpers


def is_poison(values: np.ndarray, dt) -> np.ndarray:
    if dt.is_float:
        return np.isnan(values.astype(np.float32))
    return values.astype(np.int64) == POISON_INT[dt.name]


# -------------------------------------------------------------------- tests


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", NUMERIC, ids=lambda d: d.name)
def test_tiled_load_and_store_at_loop_offsets(dt, platform):
    M, N, TM = 64, 48, 16
    x = data(np.random.default_rng(1), (M, N), dt)
    out = np.zeros((M, N), storage(dt))
    run(k_tiled_neg, (dt, M, N, TM), platform, x, out)
    assert_exact(out, round_to(-wide(x), dt))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.INT16], ids=lambda d: d.name)
def test_clamped_tail_tile_stores_only_the_rows_that_exist(dt, platform):
    M, N, TM = 40, 32, 16  # tiles at rows 0, 16, 32; the last one has 8 valid rows
    x = data(np.random.default_rng(2), (M, N), dt)
    out = sentinel((M, N), dt)
    run(k_clamped_tail, (dt, M, N, TM, 48), platform, x, out)
    assert_exact(out, round_to(np.maximum(wide(x), 0), dt))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.BF16, pl.INT8], ids=lambda d: d.name)
def test_window_load_with_valid_shape_stored_at_other_offsets(dt, platform):
    lo, so, shape, valid = (4, 8), (2, 3), (16, 32), (8, 20)
    x = data(np.random.default_rng(3), (32, 48), dt)
    out = sentinel((32, 48), dt)
    want = out.copy()
    want[so[0]:so[0] + valid[0], so[1]:so[1] + valid[1]] = \
        x[lo[0]:lo[0] + valid[0], lo[1]:lo[1] + valid[1]]
    run(k_window, (dt, lo, so, shape, valid), platform, x, out)
    assert_exact(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", FLOATS + INTS, ids=lambda d: d.name)
def test_unstored_part_of_a_pure_out_tensor_is_poisoned(dt, platform):
    R, C, VR, VC = 16, 32, 16, 20
    x = data(np.random.default_rng(4), (R, C), dt)
    out = np.zeros((R, C), storage(dt))
    run(k_ragged_to_out, (dt, R, C, VR, VC), platform, x, out)
    assert_exact(out[:VR, :VC], x[:VR, :VC])
    assert is_poison(out[:, VC:], dt).all()


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.INT32, pl.INT8], ids=lambda d: d.name)
def test_created_tile_is_poisoned_or_zero_on_request(dt, platform):
    R, C = 8, 32
    out = sentinel((R, C), dt)
    run(k_create, (dt, R, C), platform, out)
    assert is_poison(out, dt).all()
    out = sentinel((R, C), dt)
    run(k_create, (dt, R, C), platform, out, uninitialized="zero")
    assert (out.astype(np.float64) == 0).all()


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("dt", "value"), [(pl.FP32, 2.5), (pl.FP16, 0.1), (pl.BF16, -3.3),
                                           (pl.INT32, 7), (pl.INT8, -9)],
                         ids=["FP32", "FP16", "BF16", "INT32", "INT8"])
def test_tile_full_fills_with_the_value_in_the_tile_dtype(dt, value, platform):
    R, C = 8, 32
    x = data(np.random.default_rng(5), (R, C), dt, "mid")
    o_full, o_sum = np.zeros((R, C), storage(dt)), np.zeros((R, C), storage(dt))
    run(k_full, (dt, R, C, value), platform, x, o_full, o_sum)
    v = round_to(np.array(value), dt)
    assert_exact(o_full, np.full((R, C), v, storage(dt)))
    with np.errstate(all="ignore"):
        assert_exact(o_sum, round_to(wide(x) + wide(v), dt))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.FP16, pl.INT32], ids=lambda d: d.name)
def test_poison_of_an_undefined_rhs_propagates_into_the_result(dt, platform):
    R, C, VC_B = 4, 32, 12
    rng = np.random.default_rng(6)
    x, y = data(rng, (R, C), dt, "mid"), data(rng, (R, C), dt, "mid")
    out = np.zeros((R, C), storage(dt))
    run(k_add_short_rhs, (dt, R, C, VC_B), platform, x, y, out)
    assert_exact(out[:, :VC_B], round_to(wide(x[:, :VC_B]) + wide(y[:, :VC_B]), dt))
    if dt.is_float:
        assert np.isnan(out[:, VC_B:].astype(np.float32)).all()
    else:  # the int poison pattern is a value, not a NaN: the sum differs from x + y
        assert not (out[:, VC_B:] == round_to(wide(x[:, VC_B:]) + wide(y[:, VC_B:]), dt)).any()


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP16, pl.INT32], ids=lambda d: d.name)
def test_scalar_valued_valid_shape_on_the_tail_tile(dt, platform):
    M, N, TM = 40, 32, 16
    x = data(np.random.default_rng(8), (M, N), dt, "mid")
    out = np.zeros((M, N), storage(dt))
    run(k_dynamic_tail, (dt, M, N, TM), platform, x, out)
    assert_exact(out, round_to(np.abs(wide(x)), dt))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_inout_read_modify_write_by_two_tasks(platform):
    x = data(np.random.default_rng(9), (8, 16), pl.FP32)
    out = np.full((8, 16), 1.0, np.float32)
    sim = run(k_accumulate_twice, (8, 16), platform, x, out)
    want = ((np.float32(1.0) + x) + x).astype(np.float32)  # one FP32 rounding per task
    assert_exact(out, want)
    assert [e["kind"] for e in sim.deps()["edges"]] == ["RAW"]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.INT8], ids=lambda d: d.name)
def test_three_d_tiles(dt, platform):
    rng = np.random.default_rng(10)
    x, y = data(rng, (2, 4, 8), dt), data(rng, (2, 4, 8), dt)
    o_add, o_max = np.zeros((2, 4, 8), storage(dt)), np.zeros((2, 4, 1), storage(dt))
    run(k_three_d, (dt,), platform, x, y, o_add, o_max)
    assert_exact(o_add, round_to(wide(x) + wide(y), dt))
    assert_exact(o_max, x.max(axis=-1, keepdims=True))
