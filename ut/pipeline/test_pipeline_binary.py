# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Binary tile ops through the whole pipeline (docs/design/language.md §21
add/sub/mul/div/maximum/minimum).

Same dtype on both sides, no promotion; floats are correctly rounded (+ - * /),
ints wrap (add/sub/mul) or truncate toward zero (div).  Both operands are loaded
with the valid region [VR, VC]; the store writes only that window.
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from pipeline_kit import (
    DIV_DTYPES,
    NUMERIC,
    PLATFORMS,
    POISON_INT,
    assert_exact,
    assert_region,
    data,
    each_case,
    k_binary,
    round_to,
    run,
    sentinel,
    sweep,
    wide,
)

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import PyptoWarning

# the arch table (docs/design/arch.md §7) lists these combos as accepted but unvalidated on a2a3;
# the warning has its own test.
pytestmark = pytest.mark.filterwarnings("ignore:.*not validated on 'a2a3':pytest_pypto.ir.errors.PyptoWarning")

# ------------------------------------------------------------------ kernels

def k_div_hp(DT, R, C, VR, VC):
    @pl.program
    class DivHp:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            a = pl.load(x, [0, 0], [R, C], valid_shape=[VR, VC])
            b = pl.load(y, [0, 0], [R, C], valid_shape=[VR, VC])
            out = pl.store(pl.div(a, b, high_precision=True), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 out: pl.InOut[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, y, out)
            return out

    return DivHp


def k_broadcast(DT, R, C):
    """Right-aligned broadcast: rhs [1, C] (a column vector of rows) and rhs [R, 1]."""

    @pl.program
    class Broadcast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], r: pl.Tensor[[1, C], DT],
              c: pl.Tensor[[R, 1], DT], o_add: pl.Out[pl.Tensor[[R, C], DT]],
              o_sub: pl.Out[pl.Tensor[[R, C], DT]], o_mul: pl.Out[pl.Tensor[[R, C], DT]],
              o_max: pl.Out[pl.Tensor[[R, C], DT]]):
            a = pl.load(x, [0, 0], [R, C])
            rt = pl.load(r, [0, 0], [1, C])
            ct = pl.load(c, [0, 0], [R, 1])
            o_add = pl.store(pl.add(a, rt), [0, 0], o_add)
            o_sub = pl.store(pl.sub(a, ct), [0, 0], o_sub)
            o_mul = pl.store(pl.mul(a, rt), [0, 0], o_mul)
            o_max = pl.store(pl.maximum(a, ct), [0, 0], o_max)
            return o_add, o_sub, o_mul, o_max

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], r: pl.Tensor[[1, C], DT],
                 c: pl.Tensor[[R, 1], DT], o_add: pl.Out[pl.Tensor[[R, C], DT]],
                 o_sub: pl.Out[pl.Tensor[[R, C], DT]], o_mul: pl.Out[pl.Tensor[[R, C], DT]],
                 o_max: pl.Out[pl.Tensor[[R, C], DT]]):
            o_add, o_sub, o_mul, o_max = self.k(x, r, c, o_add, o_sub, o_mul, o_max)
            return o_add

    return Broadcast


# --------------------------------------------------------------- references


def _int_div(a, b):
    """C division: truncate toward zero (int64 operands, b != 0)."""
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def _div(a, b):
    return a / b if a.dtype.kind == "f" else _int_div(a, b)


BINARY = {  # name -> (builder, its leading key: the op stub for k_binary), dtypes, numpy op
    "add": (k_binary, (pl.add,), NUMERIC, np.add),
    "sub": (k_binary, (pl.sub,), NUMERIC, np.subtract),
    "mul": (k_binary, (pl.mul,), NUMERIC, np.multiply),
    "div": (k_binary, (pl.div,), DIV_DTYPES, _div),
    "div_hp": (k_div_hp, (), (pl.FP32, pl.FP16), _div),
    "maximum": (k_binary, (pl.maximum,), NUMERIC, np.maximum),
    "minimum": (k_binary, (pl.minimum,), NUMERIC, np.minimum),
}
CASES = [pytest.param(n, dt, id=f"{n}-{dt.name}") for n, row in BINARY.items() for dt in row[2]]


def reference(name, x, y, dt):
    """float64 math is exact for these products/sums of tile floats, so one rounding = RNE."""
    with np.errstate(all="ignore"):
        return round_to(BINARY[name][3](wide(x), wide(y)), dt)


def check_binary(name, dt, platform, shape, seed):
    builder, ops = BINARY[name][:2]
    R, C, VR, VC = shape
    rng = np.random.default_rng(seed)
    x = data(rng, (R, C), dt)
    y = data(rng, (R, C), dt, "nonzero" if name.startswith("div") else "any")
    out = sentinel((R, C), dt)
    init = out.copy()
    run(builder, (*ops, dt, R, C, VR, VC), platform, x, y, out)
    want = reference(name, x[:VR, :VC], y[:VR, :VC], dt)
    assert_region(out, (VR, VC), want, init, dt, what=f"{name} {dt.name}")


@sweep(CASES)
def test_binary_op_matches_numpy(name, dt, platform, shape, seed):
    check_binary(name, dt, platform, shape, seed)


@each_case(CASES)
def test_binary_op_ragged_16x32_valid_16x20(name, dt, platform):
    check_binary(name, dt, platform, (16, 32, 16, 20), seed=11)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP32, pl.BF16, pl.INT16])
def test_right_aligned_broadcast_of_row_and_column_operands(dt, platform):
    R, C = 8, 16
    rng = np.random.default_rng(2)
    x, r, c = data(rng, (R, C), dt), data(rng, (1, C), dt), data(rng, (R, 1), dt)
    outs = [np.zeros((R, C), x.dtype) for _ in range(4)]
    run(k_broadcast, (dt, R, C), platform, x, r, c, *outs)
    with np.errstate(all="ignore"):
        X, Rw, Cw = wide(x), wide(r), wide(c)
        wants = [X + Rw, X - Cw, X * Rw, np.maximum(X, Cw)]
    for got, want, what in zip(outs, wants, ("add [1,C]", "sub [R,1]", "mul [1,C]", "max [R,1]")):
        assert_exact(got, round_to(want, dt), what)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_add_rounds_once_to_nearest_even(platform):
    """Ties at FP16 go to even: 2048 + 1 -> 2048, 2050 + 1 -> 2052, 0.5 + 2**-12 -> 0.5."""
    x = np.array([[2048, 2048, 2050, -2048, 1, 65504, 0.5, 1024]], np.float16)
    y = np.array([[1, 3, 1, -1, 2**-24, 32, 2**-12, 0.5]], np.float16)
    out = sentinel(x.shape, pl.FP16)
    run(k_binary, (pl.add, pl.FP16, 1, 8, 1, 8), platform, x, y, out)
    want = [2048, 2052, 2052, -2048, 1, np.inf, 0.5, 1024]  # 65504+32 rounds up to inf
    assert out[0].astype(np.float64).tolist() == want


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int8_add_and_mul_wrap(platform):
    x = np.array([[127, -128, 100, -100, 64, 16, -1, 0]], np.int8)
    y = np.array([[1, -1, 100, -100, 2, 16, -1, 0]], np.int8)
    o_add, o_mul = sentinel(x.shape, pl.INT8), sentinel(x.shape, pl.INT8)
    run(k_binary, (pl.add, pl.INT8, 1, 8, 1, 8), platform, x, y, o_add)
    run(k_binary, (pl.mul, pl.INT8, 1, 8, 1, 8), platform, x, y, o_mul)
    assert o_add[0].tolist() == [-128, 127, -56, 56, 66, 32, -2, 0]
    assert o_mul[0].tolist() == [127, -128, 16, 16, -128, 0, 1, 0]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int_div_truncates_toward_zero(platform):
    x = np.array([[7, -7, 7, -7, 0, 32767, -32768, 5]], np.int16)
    y = np.array([[2, 2, -2, -2, 5, -1, -1, 7]], np.int16)
    out = sentinel(x.shape, pl.INT16)
    run(k_binary, (pl.div, pl.INT16, 1, 8, 1, 8), platform, x, y, out)
    assert out[0].tolist() == [3, -3, -3, 3, 0, -32767, -32768, 0]  # -32768 / -1 wraps


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int_div_by_zero_is_poisoned_with_a_warning(platform):
    """docs/design/numerics.md §2: integer x/0 yields the poison pattern and a recorded warning."""
    x = np.array([[9, -9, 4, 0]], np.int32)
    y = np.array([[0, 3, 0, 2]], np.int32)
    out = sentinel(x.shape, pl.INT32)
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        run(k_binary, (pl.div, pl.INT32, 1, 4, 1, 4), platform, x, y, out)
    assert out[0].tolist() == [POISON_INT["INT32"], -3, POISON_INT["INT32"], 0]
    assert any(issubclass(w.category, PyptoWarning) and "division by zero" in str(w.message)
               for w in seen)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_float_div_by_zero_follows_ieee(platform):
    x = np.array([[1, -1, 0, 3]], np.float32)
    y = np.array([[0, 0, 0, -0.0]], np.float32)
    out = sentinel(x.shape, pl.FP32)
    run(k_binary, (pl.div, pl.FP32, 1, 4, 1, 4), platform, x, y, out)
    assert out[0, 0] == np.inf and out[0, 1] == -np.inf and np.isnan(out[0, 2])
    assert out[0, 3] == -np.inf
