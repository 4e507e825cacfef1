# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""tile.cast through the whole pipeline (docs/design/language.md §21, docs/design/numerics.md §4) on
both archs.

float -> int applies the mode (round = half away from zero, rint = half to even,
odd = ties to odd, none = truncate); float -> float and int -> float round to
nearest even; int -> int wraps.  Non-native pairs run as a legalized chain; the
inputs of those tests are chosen so that every hop is exact but the last.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_kit import PLATFORMS, assert_exact, assert_region, run, sentinel, storage

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import PyptoWarning


def k_cast(SRC, DST, MODE, R, C, VR, VC):
    @pl.program
    class Cast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], SRC],
              out: pl.InOut[pl.Tensor[[R, C], DST]]) -> pl.Tensor[[R, C], DST]:
            t = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.cast(t, DST, mode=MODE), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], SRC],
                 out: pl.InOut[pl.Tensor[[R, C], DST]]) -> pl.Tensor[[R, C], DST]:
            out = self.k(x, out)
            return out

    return Cast


def k_cast_default(SRC, DST, R, C):
    """pl.cast(t, dtype) without a mode: the default is "round" (half away from zero)."""

    @pl.program
    class CastDefault:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], SRC],
              out: pl.Out[pl.Tensor[[R, C], DST]]) -> pl.Tensor[[R, C], DST]:
            t = pl.load(x, [0, 0], [R, C])
            out = pl.store(pl.cast(t, DST), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], SRC],
                 out: pl.Out[pl.Tensor[[R, C], DST]]) -> pl.Tensor[[R, C], DST]:
            out = self.k(x, out)
            return out

    return CastDefault


# ------------------------------------------------------------- references


def _ties_to_odd(x):
    f = np.floor(x)
    tie = (x - f) == 0.5
    odd_floor = np.mod(f, 2) != 0
    return np.where(tie, np.where(odd_floor, f, f + 1), np.rint(x))


ROUND = {  # docs/design/numerics.md §4 float -> int modes, on float64 values
    "none": np.trunc,
    "rint": np.rint,
    "round": lambda x: np.where(x >= 0, np.floor(x + 0.5), np.ceil(x - 0.5)),
    "floor": np.floor,
    "ceil": np.ceil,
    "trunc": np.trunc,
    "odd": _ties_to_odd,
}
TIES = [0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 3.5, -3.5, 1.25, -1.75, 0.0, 100.5, -100.5, 7.0]


def float_inputs(rng, shape, dt, limit):
    """Ties, quarters and random values within +-limit, exactly representable in ``dt``."""
    x = rng.uniform(-limit, limit, shape)
    x = np.where(rng.random(shape) < 0.5, np.round(x * 4) / 4, x)  # many ties / quarters
    flat = x.ravel()
    flat[: len(TIES)] = TIES[: flat.size]
    return x.astype(np.float32).astype(storage(dt))


# ------------------------------------------------------------------ tests


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", list(ROUND))
@pytest.mark.parametrize(("src", "dst"), [(pl.FP32, pl.INT32), (pl.FP16, pl.INT16)],
                         ids=["FP32-INT32", "FP16-INT16"])
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_float_to_int_applies_the_mode(src, dst, mode, platform, seed):
    R, C, VR, VC = 16, 32, 16, 20
    x = float_inputs(np.random.default_rng(seed), (R, C), src, 1000)
    out = sentinel((R, C), dst)
    init = out.copy()
    run(k_cast, (src, dst, mode, R, C, VR, VC), platform, x, out)
    want = ROUND[mode](x[:VR, :VC].astype(np.float64)).astype(storage(dst))
    assert_region(out, (VR, VC), want, init, dst, what=f"{src.name}->{dst.name} {mode}")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["round", "floor", "ceil", "rint"])
def test_fp32_to_int8_runs_as_a_legalized_chain(mode, platform):
    """FP32 -> INT8 is native on neither arch; values exact at FP16 make the chain's first
    hop exact, so the result is the mode applied once."""
    R, C = 4, 16
    x = float_inputs(np.random.default_rng(3), (R, C), pl.FP16, 100).astype(np.float32)
    out = sentinel((R, C), pl.INT8)
    init = out.copy()
    run(k_cast, (pl.FP32, pl.INT8, mode, R, C, R, C), platform, x, out)
    want = ROUND[mode](x.astype(np.float64)).astype(np.int8)
    assert_region(out, (R, C), want, init, pl.INT8, what=f"FP32->INT8 {mode}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_default_mode_is_round_half_away_from_zero(platform):
    x = np.array([[0.5, -0.5, 1.5, -1.5, 2.5, -2.5, 2.4, -2.6]], np.float32)
    out = np.zeros(x.shape, np.int32)
    run(k_cast_default, (pl.FP32, pl.INT32, 1, 8), platform, x, out)
    assert out[0].tolist() == [1, -1, 2, -2, 3, -3, 2, -3]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("src", "dst"), [
    (pl.FP32, pl.FP16), (pl.FP32, pl.BF16), (pl.FP16, pl.FP32), (pl.BF16, pl.FP32),
    (pl.INT32, pl.FP32), (pl.INT16, pl.FP16), (pl.INT8, pl.FP16), (pl.INT32, pl.INT16),
], ids=lambda d: d.name)
@settings(max_examples=3, deadline=None)
@given(seed=st.integers(0, 2**32 - 1))
def test_rne_and_wrapping_casts(src, dst, platform, seed):
    """float->float and int->float round to nearest even (overflow to inf); int->int wraps."""
    rng = np.random.default_rng(seed)
    R, C, VR, VC = 8, 32, 5, 32
    if src.is_float:
        x = (rng.standard_normal((R, C)) * rng.choice([1e-3, 1.0, 1e3, 1e5], (R, C)))
        with np.errstate(over="ignore"):  # FP16 sources get some infs: they must stay inf
            x = x.astype(np.float32).astype(storage(src))
    else:
        info = np.iinfo(storage(src))
        x = rng.integers(info.min, info.max, (R, C), endpoint=True).astype(storage(src))
    out = sentinel((R, C), dst)
    init = out.copy()
    mode = "round" if not src.is_float and not dst.is_float else "rint"
    run(k_cast, (src, dst, mode, R, C, VR, VC), platform, x, out)
    xv = x[:VR, :VC]
    with np.errstate(over="ignore"):
        if dst.is_float:  # one RNE rounding of the exact value (float64 holds every source)
            want = xv.astype(np.float64).astype(storage(dst))
        else:
            want = xv.astype(np.int64).astype(storage(dst))  # two's complement wrap
    assert_region(out, (VR, VC), want, init, dst, what=f"{src.name}->{dst.name}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp32_to_fp16_overflows_to_inf_and_ties_go_to_even(platform):
    x = np.array([[70000.0, -70000.0, 65504.0, 65520.0, 1 + 2**-11, 1 + 3 * 2**-11, 0.1, 2**-25]],
                 np.float32)
    out = sentinel(x.shape, pl.FP16)
    run(k_cast, (pl.FP32, pl.FP16, "round", 1, 8, 1, 8), platform, x, out)
    got = out[0].astype(np.float64).tolist()
    assert got[:4] == [np.inf, -np.inf, 65504.0, np.inf]  # 65520 is the tie to inf
    assert got[4] == 1.0 and got[5] == 1 + 2 * 2**-10  # ties to even
    assert got[6] == float(np.float16(0.1)) and got[7] == 0.0  # 2**-25 ties to 0


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int32_to_fp32_rounds_large_values_to_nearest_even(platform):
    x = np.array([[2**24 + 1, 2**24 + 3, -(2**24 + 1), 2**31 - 1]], np.int32)
    out = sentinel(x.shape, pl.FP32)
    run(k_cast, (pl.INT32, pl.FP32, "round", 1, 4, 1, 4), platform, x, out)
    assert out[0].astype(np.float64).tolist() == [2**24, 2**24 + 4, -(2**24), 2**31]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_out_of_range_float_to_int_clamps_with_a_warning(platform):
    """docs/design/numerics.md §4: the simulator clamps to the destination range, NaN -> 0, and
    warns."""
    x = np.array([[40000.0, -40000.0, np.nan, 12.5]], np.float32)
    out = sentinel(x.shape, pl.INT16)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run(k_cast, (pl.FP32, pl.INT16, "round", 1, 4, 1, 4), platform, x, out)
    assert out[0].tolist() == [32767, -32768, 0, 13]
    assert any(issubclass(w.category, PyptoWarning) for w in seen)
    assert_exact(out[0, 3:], np.array([13], np.int16))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("src", "dst"), [(pl.BF16, pl.FP16), (pl.FP16, pl.BF16),
                                          (pl.INT32, pl.INT8), (pl.INT16, pl.INT8)],
                         ids=lambda d: d.name)
def test_legalized_chains_with_an_exact_first_hop(src, dst, platform):
    """Pairs that are non-native on at least one arch: BF16<->FP16 through FP32 (exact),
    INT32 -> INT8 and INT16 -> INT8 on every INT8 value (exact at every hop)."""
    if src.is_float:
        x = (np.random.default_rng(7).standard_normal((8, 32)) * 1000).astype(np.float32)
        with np.errstate(over="ignore"):
            x = x.astype(storage(src))
    else:
        x = np.arange(-128, 128).reshape(8, 32).astype(storage(src))
    out = sentinel((8, 32), dst)
    run(k_cast, (src, dst, "rint", 8, 32, 8, 32), platform, x, out)
    with np.errstate(over="ignore"):
        want = x.astype(np.float64).astype(storage(dst))  # one RNE rounding / exact
    assert_exact(out, want, f"{src.name}->{dst.name}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int16_to_int32_is_exact_on_a5_and_refused_on_a2a3(platform):
    """a5 converts INT16 -> INT32 natively (all 65,536 values kept); a2a3 has no such
    instruction and PyPTO's legalization refuses a chain through FP16/FP32, so the
    compile fails at the cast's line with the explicit exact route as the hint."""
    from pipeline_kit import program

    import pytest_pypto
    from pytest_pypto import RunConfig
    from pytest_pypto.ir.errors import ArchSupportError

    key = (pl.INT16, pl.INT32, "none", 128, 128, 128, 128)
    if platform == "a5sim":
        for part in np.arange(-32768, 32768, dtype=np.int16).reshape(4, 128, 128):
            out = sentinel((128, 128), pl.INT32)
            run(k_cast, key, platform, part, out)
            assert_exact(out, part.astype(np.int32), "INT16->INT32")
        return
    prog = program(k_cast, key)
    with pytest.raises(ArchSupportError) as e:
        pytest_pypto.compile(prog, RunConfig(platform=platform))
    assert "INT16 to INT32" in str(e.value) and "'a2a3'" in str(e.value)
    assert "pl.cast(pl.cast(x, pl.FP32), pl.INT32)" in str(e.value)
    assert "test_pipeline_cast.py:" in str(e.value)
