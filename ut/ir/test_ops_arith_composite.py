"""fmod/rem, lrelu/prelu, addc/subc/addsc/subsc and part_* entries vs numpy references."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import assert_poisoned_outside, info, tt, tv

from pytest_pypto.arch import spec
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.errors import PyptoWarning
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpTypeError
from pytest_pypto.ir.types import ScalarType

STORE = {"FP32": np.float32, "FP16": np.float16, "INT16": np.int16, "INT32": np.int32,
         "UINT16": np.uint16, "UINT32": np.uint32}


def c_fmod(a: float, b: float) -> float:
    return math.fmod(a, b)


def floor_mod(a: float, b: float) -> float:
    """a - floor(a / b) * b, exactly (Python's % on floats is the floored remainder)."""
    return a % b


# PyPTO's test_fmod inputs: dividends -6..6, divisors 1.5..5.5, and the scalar divisors.
LHS = (np.arange(256, dtype=np.float32).reshape(16, 16) % 13) - 6
RHS = (np.arange(256, dtype=np.float32).reshape(16, 16) % 5) + 1.5


def test_fmod_takes_the_dividends_sign_as_torch_fmod():
    out = apply(REGISTRY["tile.fmod"], tv(LHS, D.FP32), tv(RHS, D.FP32))
    want = np.vectorize(c_fmod)(LHS.astype(np.float64), RHS.astype(np.float64))
    np.testing.assert_array_equal(out.data, want.astype(np.float32))
    for s in (-2.5, 2.5, 3.0):
        got = apply(REGISTRY["tile.fmods"], tv(LHS, D.FP32), s).data
        np.testing.assert_array_equal(got, np.vectorize(c_fmod)(LHS.astype(np.float64), s))


def test_rem_takes_the_divisors_sign():
    a = np.array([[-7.0, 7.0, -7.0, 7.0, 5.5, -5.5]], np.float32)
    b = np.array([[2.0, -2.0, -2.0, 2.0, 2.0, 2.0]], np.float32)
    out = apply(REGISTRY["tile.rem"], tv(a, D.FP32), tv(b, D.FP32), tv(a, D.FP32))
    assert out.data.tolist() == [[1.0, -1.0, -1.0, 1.0, 1.5, 0.5]]
    ints = apply(REGISTRY["tile.rems"], tv([[-7, 7, -1]], D.INT32), -3, tv([[0, 0, 0]], D.INT32))
    assert ints.data.tolist() == [[-1, -2, -1]]


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(["fmod", "rem"]), dt=st.sampled_from(sorted(STORE)),
       seed=st.integers(0, 2**32 - 1), valid=st.tuples(st.integers(1, 4), st.integers(1, 12)))
def test_mod_ops_are_exact(op, dt, seed, valid):
    dtype = getattr(D, dt)
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        a = (rng.standard_normal((4, 12)) * 50).astype(STORE[dt])
        b = (rng.standard_normal((4, 12)) * 5).astype(STORE[dt])
        b[b == 0] = 1
    else:
        lo = 0 if dt.startswith("U") else -1000
        a = rng.integers(lo, 1000, (4, 12)).astype(STORE[dt])
        sign = np.ones((4, 12), np.int64) if lo == 0 else rng.choice([-1, 1], (4, 12))
        b = (rng.integers(1, 50, (4, 12)) * sign).astype(STORE[dt])
    extra = (tv(np.zeros((4, 12)), dtype),) if op == "rem" else ()
    out = apply(REGISTRY[f"tile.{op}"], tv(a, dtype, valid), tv(b, dtype, valid), *extra,
                out=tt((4, 12), dtype))
    vr, vc = valid
    if dtype.is_float:
        fn = c_fmod if op == "fmod" else floor_mod
        exact = [[fn(float(a[i, j]), float(b[i, j])) for j in range(vc)] for i in range(vr)]
        # fmod is exact; the floored remainder's final "+ b" rounds: once to float32 (the
        # DSL's compute precision, docs/design/numerics.md §2), then to the tile dtype
        want = np.array(exact, np.float64).astype(np.float32).astype(STORE[dt]).tolist()
    else:
        def fn(x, y):
            r = abs(x) % abs(y) * (1 if x >= 0 else -1)  # C: the dividend's sign
            return r if op == "fmod" or r == 0 or (r < 0) == (y < 0) else r + y
        want = [[fn(int(a[i, j]), int(b[i, j])) for j in range(vc)] for i in range(vr)]
    assert out.data[:vr, :vc].tolist() == want
    if dtype.name in ("FP32", "FP16", "INT16", "INT32"):
        assert_poisoned_outside(out)


def test_integer_mod_by_zero_is_poisoned_with_a_warning():
    with pytest.warns(PyptoWarning, match="integer fmod by zero in 1 element"):
        out = apply(REGISTRY["tile.fmod"], tv([[7, 8]], D.INT32), tv([[0, 3]], D.INT32))
    assert out.data.tolist() == [[-0x5A5A5A5B, 2]]


@pytest.mark.parametrize("slope", [0.0, 0.1, 1.0, -0.5, 2.0])
@pytest.mark.parametrize("dt", [D.FP32, D.FP16])
def test_lrelu_is_x_or_slope_times_x(dt, slope):
    x = (np.random.default_rng(2).standard_normal((8, 16)) * 4).astype(STORE[dt.name])
    out = apply(REGISTRY["tile.lrelu"], tv(x, dt, (5, 11)), slope, out=tt((8, 16), dt))
    s = np.float32(np.float64(slope).astype(STORE[dt.name]))  # the slope in the tile dtype
    v = x[:5, :11].astype(np.float32)
    want = np.where(v > 0, v, v * s).astype(STORE[dt.name])
    np.testing.assert_array_equal(out.data[:5, :11], want)


def test_prelu_uses_the_slope_tile():
    x = (np.arange(64, dtype=np.float32).reshape(4, 16) % 23) - 11
    slope = np.array([-1.0, 0.0, 0.25, 1.5], np.float32)[np.arange(64).reshape(4, 16) % 4]
    out = apply(REGISTRY["tile.prelu"], tv(x, D.FP32), tv(slope, D.FP32),
                tv(np.zeros((5, 32)), D.UINT8))
    np.testing.assert_array_equal(out.data, np.where(x > 0, x, x * slope))


def test_prelu_rules_and_the_a2a3_scratch_gate():
    rule = REGISTRY["tile.prelu"].type_rule
    src, sl = tt((16, 64), D.FP32, (9, 37)), tt((16, 64), D.FP32, (9, 37))
    with pytest.raises(OpTypeError, match="requires dtype FP16 or FP32, but got INT32"):
        rule(info("tile.prelu", {"tile": tt((16, 64), D.INT32), "slope": tt((16, 64), D.INT32),
                                 "tmp": tt((10, 32), D.UINT8)}))
    with pytest.raises(OpTypeError, match="slope to have the input's valid shape"):
        rule(info("tile.prelu", {"tile": src, "slope": tt((16, 64), D.FP32),
                                 "tmp": tt((10, 32), D.UINT8)}))
    gate = REGISTRY["tile.prelu"].arch_rule
    a2a3, a5 = spec("a2a3"), spec("a5")
    ok = {"tile": src, "slope": sl, "tmp": tt((10, 32), D.UINT8, (9, 5))}
    gate(a2a3, info("tile.prelu", ok, arch=a2a3))
    with pytest.raises(OpArchError, match="requires a UINT8 tmp on the 'a2a3' backend"):
        gate(a2a3, info("tile.prelu", {**ok, "tmp": tt((1, 8), D.INT32)}, arch=a2a3))
    gate(a5, info("tile.prelu", {**ok, "tmp": tt((1, 8), D.INT32)}, arch=a5))  # a5: unused
    with pytest.raises(OpArchError, match=r"at least 10 rows \(valid rows \+ 1\)"):
        gate(a2a3, info("tile.prelu", {**ok, "tmp": tt((9, 32), D.UINT8)}, arch=a2a3))
    with pytest.raises(OpArchError, match=r"ceil\(37 / 8\) = 5 valid columns"):
        gate(a2a3, info("tile.prelu", {**ok, "tmp": tt((10, 32), D.UINT8, (9, 4))}, arch=a2a3))


def test_three_input_forms_round_after_each_device_op():
    """FP16: 2048 + 1 rounds to 2048 first (ties to even), so (2048 + 1) + 1 = 2048, where
    a single rounding of 2050 would give 2050; subc is lhs - rhs + rhs2 (TSUB + TADD)."""
    h = D.FP16
    a, one = tv([[2048.0, 10.0]], h), tv([[1.0, 4.0]], h)
    assert apply(REGISTRY["tile.addc"], a, one, one).data.tolist() == [[2048.0, 18.0]]
    assert apply(REGISTRY["tile.addsc"], a, 1.0, one).data.tolist() == [[2048.0, 15.0]]
    assert apply(REGISTRY["tile.subc"], a, one, one).data.tolist() == [[2048.0, 10.0]]
    assert apply(REGISTRY["tile.subsc"], a, 1.0, one).data.tolist() == [[2048.0, 13.0]]
    i8 = D.INT8
    wrapped = apply(REGISTRY["tile.addc"], tv([[127]], i8), tv([[1]], i8), tv([[1]], i8))
    assert wrapped.data.tolist() == [[-127]]  # wraps at each step: (127 + 1) + 1


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(["tile.part_add", "tile.part_mul", "tile.part_max", "tile.part_min"]),
       v1=st.tuples(st.integers(1, 6), st.integers(1, 10)), seed=st.integers(0, 2**32 - 1))
def test_part_ops_combine_where_both_are_valid(op, v1, seed):
    rng = np.random.default_rng(seed)
    a = rng.integers(-6, 7, (6, 10)).astype(np.float32)
    b = rng.integers(-3, 4, (6, 10)).astype(np.float32)
    out = apply(REGISTRY[op], tv(a, D.FP32), tv(b, D.FP32, v1))
    fn = {"add": np.add, "mul": np.multiply, "max": np.maximum, "min": np.minimum}[op[10:]]
    want = a.copy()
    r, c = v1
    want[:r, :c] = fn(a[:r, :c], b[:r, :c])
    np.testing.assert_array_equal(out.data, want)
    assert out.valid == (6, 10)


def test_type_and_arch_rules():
    with pytest.raises(OpTypeError, match="requires dtype .* but got BF16"):
        REGISTRY["tile.fmod"].type_rule(info("tile.fmod", {"lhs": tt((4, 4), D.BF16),
                                                           "rhs": tt((4, 4), D.BF16)}))
    with pytest.raises(OpTypeError, match="requires 'tmp' to be a Tile"):
        REGISTRY["tile.rems"].type_rule(info("tile.rems", {"lhs": tt((4, 4), D.FP32),
                                                           "rhs": ScalarType(D.FP32)}))
    with pytest.raises(OpTypeError, match="requires dtype FP16 or FP32, but got INT32"):
        REGISTRY["tile.lrelu"].type_rule(info("tile.lrelu", {"tile": tt((4, 4), D.INT32),
                                                             "slope": ScalarType(D.FP32)}))
    with pytest.raises(OpTypeError, match="lhs and rhs2 in one dtype"):
        REGISTRY["tile.addc"].type_rule(info("tile.addc", {
            "lhs": tt((4, 4), D.FP32), "rhs": tt((4, 4), D.FP32), "rhs2": tt((4, 4), D.FP16)}))
    a2a3, a5 = spec("a2a3"), spec("a5")
    for op, dt, key in (("tile.fmod", D.UINT16, "lhs"), ("tile.rem", D.UINT32, "lhs"),
                        ("tile.part_add", D.BF16, "src0")):
        call = info(op, {key: tt((4, 4), dt)}, arch=a2a3)
        with pytest.raises(OpArchError) as e:
            REGISTRY[op].arch_rule(a2a3, call)
        assert e.value.message == (f"The operator {op} does not support dtype {dt.name} on "
                                   "the 'a2a3' backend")
        assert e.value.hint.endswith("or target a5")
        REGISTRY[op].arch_rule(a5, info(op, {key: tt((4, 4), dt)}, arch=a5))
