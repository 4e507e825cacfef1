# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Precise mode (RunConfig.precise, --pypto-precise): BF16/FP16 chains without per-op rounding.

The two references are written here from the definition, not from the toolchain:
*per-op* rounds every op's result to the tile dtype (docs/design/numerics.md: computed wide,
rounded once per op, scalars converted to the tile dtype); *precise* computes the
whole chain in FP32 from the inputs and rounds once, where the result is stored.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.apply import PRECISE
from pytest_pypto.ir.dtypes import BF16, INT16
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.values import TileValue
from pytest_pypto.runtime.loader import registry_bind
from pytest_pypto.runtime.precise import precise_bind

PLATFORMS = ("a2a3sim", "a5sim")
STORAGE = {"BF16": ml_dtypes.bfloat16, "FP16": np.float16}
R, C = 16, 32
SCALE = 0.1  # not representable in BF16/FP16: rounding the scalar is a per-op loss too


def chain(DT, OUT, VR, VC):
    """out = (x * y + x) * 0.1 on DT tiles over a [VR, VC] valid region, stored as DT, or
    cast to OUT first when OUT differs."""
    if OUT is DT:

        @pl.program
        class Chain:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                  out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
                a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
                b = pl.load(y, [0, 0], [R, C], valid_shape=[VR, VC])
                t = pl.muls(pl.add(pl.mul(a, b), a), SCALE)
                out = pl.store(t, [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                     out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
                out = self.k(x, y, out)
                return out

        return Chain

    @pl.program
    class ChainCast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], OUT]]) -> pl.Tensor[[R, C], OUT]:
            a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            b = pl.load(y, [0, 0], [R, C], valid_shape=[VR, VC])
            t = pl.muls(pl.add(pl.mul(a, b), a), SCALE)
            out = pl.store(pl.cast(t, OUT), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], OUT]]) -> pl.Tensor[[R, C], OUT]:
            out = self.k(x, y, out)
            return out

    return ChainCast


_COMPILED: dict[tuple, object] = {}


def _run(dt, out_dt, valid, platform, precise, rng):
    key = (dt.name, out_dt.name, valid, platform)
    if key not in _COMPILED:
        _COMPILED[key] = pytest_pypto.compile(chain(dt, out_dt, *valid),
                                              RunConfig(platform=platform))
    st = STORAGE[dt.name]
    x = rng.uniform(-4, 4, (R, C)).astype(np.float32).astype(st)
    y = rng.uniform(-4, 4, (R, C)).astype(np.float32).astype(st)
    out_np = np.float32 if out_dt.name == "FP32" else STORAGE[out_dt.name]
    out = np.full((R, C), -7.0, out_np)
    pytest_pypto.run(_COMPILED[key], x, y, out,
                     config=RunConfig(platform=platform, precise=precise))
    return x, y, out


def per_op_reference(x, y, st):
    """Every op's result rounded to the tile dtype; the scalar converted to it first."""
    f32 = np.float32

    def rnd(a):
        return np.asarray(a, f32).astype(st).astype(f32)

    a, b = x.astype(f32), y.astype(f32)
    t = rnd(a * b)
    t = rnd(t + a)
    return rnd(t * rnd(f32(SCALE)))


def precise_reference(x, y):
    """The chain in FP32, no rounding in between (the caller rounds once, at the store)."""
    f32 = np.float32
    a, b = x.astype(f32), y.astype(f32)
    return (a * b + a) * f32(SCALE)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dtype", [pl.BF16, pl.FP16], ids=["BF16", "FP16"])
@pytest.mark.parametrize("valid", [(R, C), (11, 19)], ids=["full", "ragged"])
def test_precise_rounds_once_at_the_store_and_plain_rounds_per_op(dtype, valid, platform):
    st = STORAGE[dtype.name]
    vr, vc = valid
    rng = np.random.default_rng(7)
    x, y, plain = _run(dtype, dtype, valid, platform, False, rng)
    rng = np.random.default_rng(7)
    _, _, precise = _run(dtype, dtype, valid, platform, True, rng)
    region = (slice(0, vr), slice(0, vc))
    want_plain = per_op_reference(x, y, st).astype(st)[region]
    want_precise = precise_reference(x, y).astype(st)[region]
    assert not np.array_equal(want_plain, want_precise)  # the chain loses precision per op
    np.testing.assert_array_equal(plain[region], want_plain)
    np.testing.assert_array_equal(precise[region], want_precise)
    outside = np.ones((R, C), bool)
    outside[region] = False
    assert (precise[outside] == st(-7.0)).all()  # a ragged store writes only its region
    assert PRECISE.get() is False  # nothing stays set after the run


@pytest.mark.parametrize("platform", PLATFORMS)
def test_precise_cast_to_fp32_keeps_every_bit_of_the_fp32_chain(platform):
    rng = np.random.default_rng(3)
    x, y, precise = _run(pl.BF16, pl.FP32, (R, C), platform, True, rng)
    np.testing.assert_array_equal(precise, precise_reference(x, y))
    rng = np.random.default_rng(3)
    _, _, plain = _run(pl.BF16, pl.FP32, (R, C), platform, False, rng)  # after a precise run
    np.testing.assert_array_equal(plain, per_op_reference(x, y, ml_dtypes.bfloat16))


def test_fp32_kernels_are_the_same_under_precise():
    rng = np.random.default_rng(5)
    key = ("FP32",)
    if key not in _COMPILED:
        _COMPILED[key] = pytest_pypto.compile(chain(pl.FP32, pl.FP32, R, C),
                                              RunConfig(platform="a5sim"))
    x = rng.standard_normal((R, C)).astype(np.float32)
    y = rng.standard_normal((R, C)).astype(np.float32)
    outs = []
    for precise in (False, True):
        out = np.zeros((R, C), np.float32)
        pytest_pypto.run(_COMPILED[key], x, y, out,
                         config=RunConfig(platform="a5sim", precise=precise))
        outs.append(out)
    np.testing.assert_array_equal(outs[0], outs[1])
    np.testing.assert_array_equal(outs[1], (x * y + x) * np.float32(SCALE))


def _wide_bf16_tile() -> tuple[TileValue, np.ndarray]:
    """A BF16 tile as precise mode holds it: FP32 storage with values BF16 cannot hold."""
    data = (np.arange(8, dtype=np.float32).reshape(2, 4) + np.float32(1.0 / 3.0))
    return TileValue(data, (2, 4), BF16, "Vec"), data


def test_memory_ops_that_read_bits_see_the_tile_rounded_to_its_dtype():
    tile, data = _wide_bf16_tile()
    assert not REGISTRY["tile.reinterpret_view"].wide_safe
    got = precise_bind("tile.reinterpret_view")(tile, dtype=INT16)
    want = data.astype(ml_dtypes.bfloat16).view(np.int16)  # the BF16 bit patterns
    assert got.data.shape == (2, 4)
    np.testing.assert_array_equal(got.data, want)
    assert tile.data.dtype == np.float32  # the caller's tile is left as it was


def test_wide_safe_memory_ops_keep_the_fp32_values():
    tile, data = _wide_bf16_tile()
    moved = precise_bind("tile.move")(tile, target_memory="Mat")
    assert moved.data.dtype == np.float32
    np.testing.assert_array_equal(moved.data, data)
    add = precise_bind("tile.add")  # value ops: the registry's `apply` partial, unwrapped
    assert add.func is registry_bind("tile.add").func and add.args == registry_bind("tile.add").args
