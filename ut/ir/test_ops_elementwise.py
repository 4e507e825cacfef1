"""Binary/scalar/unary elementwise ops against plain numpy, rounding once per op."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import (
    STORAGE,
    TIER1_DTYPES,
    assert_poisoned_outside,
    info,
    random_data,
    round_once,
    tt,
    tv,
)

from pytest_pypto.arch import spec
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.errors import PyptoWarning
from pytest_pypto.ir.registry import REGISTRY, OpTypeError
from pytest_pypto.ir.types import ScalarType

REF = {
    "add": lambda a, b: a + b,
    "sub": lambda a, b: a - b,
    "mul": lambda a, b: a * b,
    "maximum": np.maximum,
    "minimum": np.minimum,
}


def _wide(x, dtype):
    return x.astype(np.float32) if dtype.is_float else x.astype(np.int64)


@st.composite
def ragged(draw):
    rows, cols = draw(st.integers(1, 8)), draw(st.integers(1, 16))
    valid = (draw(st.integers(0, rows)), draw(st.integers(0, cols)))
    return (rows, cols), valid


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(sorted(REF)), dtype=st.sampled_from(TIER1_DTYPES), geo=ragged(),
       seed=st.integers(0, 2**32 - 1))
def test_binary_ops_match_numpy_over_the_valid_region(op, dtype, geo, seed):
    shape, valid = geo
    rng = np.random.default_rng(seed)
    a, b = random_data(rng, shape, dtype), random_data(rng, shape, dtype)
    out = apply(REGISTRY[f"tile.{op}"], tv(a, dtype, valid), tv(b, dtype, valid),
                out=tt(shape, dtype))
    vr, vc = valid
    expected = round_once(REF[op](_wide(a[:vr, :vc], dtype), _wide(b[:vr, :vc], dtype)), dtype)
    assert out.valid == valid and out.data.shape == shape and out.data.dtype == expected.dtype
    np.testing.assert_array_equal(out.data[:vr, :vc], expected)
    assert_poisoned_outside(out)


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(sorted(REF)), dtype=st.sampled_from(TIER1_DTYPES),
       scalar=st.floats(-300, 300, allow_nan=False), seed=st.integers(0, 2**32 - 1))
def test_scalar_forms_convert_the_scalar_to_the_tile_dtype_first(op, dtype, scalar, seed):
    a = random_data(np.random.default_rng(seed), (4, 8), dtype)
    sname = {"add": "adds", "sub": "subs", "mul": "muls", "maximum": "maximums",
             "minimum": "minimums"}[op]
    out = apply(REGISTRY[f"tile.{sname}"], tv(a, dtype), scalar, out=tt((4, 8), dtype))
    if dtype.is_float:
        s = np.float32(np.float64(scalar).astype(STORAGE[dtype.name]))
    else:  # C truncation, then wrap to the width
        s = np.int64(np.array(int(scalar)).astype(STORAGE[dtype.name]))
    np.testing.assert_array_equal(out.data, round_once(REF[op](_wide(a, dtype), s), dtype))


def test_fp16_add_rounds_once_to_nearest_even():
    # 2048 + 1 is a tie in FP16 (spacing 2): RNE keeps 2048; 2050 + 1 rounds up to 2052.
    a = tv([[2048.0, 2050.0, 65504.0]], D.FP16)
    b = tv([[1.0, 1.0, 65504.0]], D.FP16)
    out = apply(REGISTRY["tile.add"], a, b)
    assert out.data.tolist() == [[2048.0, 2052.0, np.inf]]


def test_bf16_mul_rounds_the_float32_product_once():
    x = np.array([[1.0078125, 3.0]], dtype=ml_dtypes.bfloat16)  # 1 + 2**-7
    out = apply(REGISTRY["tile.mul"], tv(x, D.BF16), tv(x, D.BF16))
    # (1 + 2**-7)**2 = 1 + 2**-6 + 2**-14: bf16 keeps 7 fraction bits -> 1 + 2**-6
    assert out.data.astype(np.float32).tolist() == [[1.015625, 9.0]]


def test_int_add_and_mul_wrap():
    out = apply(REGISTRY["tile.add"], tv([[127, -128]], D.INT8), tv([[1, -1]], D.INT8))
    assert out.data.tolist() == [[-128, 127]]
    out = apply(REGISTRY["tile.mul"], tv([[65536, 3]], D.INT32), tv([[65536, 5]], D.INT32))
    assert out.data.tolist() == [[0, 15]]


def test_int_div_truncates_toward_zero():
    a = tv([[7, -7, 7, -7, 0]], D.INT32)
    b = tv([[2, 2, -2, -2, 5]], D.INT32)
    assert apply(REGISTRY["tile.div"], a, b).data.tolist() == [[3, -3, -3, 3, 0]]
    assert apply(REGISTRY["tile.divs"], tv([[-9, 9]], D.INT16), 4).data.tolist() == [[-2, 2]]


def test_int_div_by_zero_is_poisoned_and_warns():
    with pytest.warns(PyptoWarning, match="division by zero"):
        out = apply(REGISTRY["tile.div"], tv([[6, 1]], D.INT16), tv([[3, 0]], D.INT16))
    assert out.data.tolist() == [[2, -0x5A5B]]


def test_float_div_is_ieee():
    out = apply(REGISTRY["tile.div"], tv([[1.0, -1.0, 0.0]], D.FP32), tv([[0.0, 0.0, 0.0]], D.FP32))
    assert out.data[0, 0] == np.inf and out.data[0, 1] == -np.inf and np.isnan(out.data[0, 2])


def test_rhs_is_read_over_lhs_valid_region_and_broadcasts():
    a = tv(np.ones((2, 4)), D.FP32, valid=(2, 3))
    row = tv([[10.0, 20.0, 30.0, 40.0]], D.FP32)  # [1, 4] broadcast over rows
    out = apply(REGISTRY["tile.add"], a, row, out=tt((2, 4), D.FP32))
    assert out.valid == (2, 3)
    assert out.data[:, :3].tolist() == [[11.0, 21.0, 31.0]] * 2
    # an rhs whose valid region is smaller: the device reads undefined memory there
    b = tv(np.ones((2, 4)), D.FP32, valid=(1, 3))
    out = apply(REGISTRY["tile.add"], a, b, out=tt((2, 4), D.FP32))
    assert out.data[0, :3].tolist() == [2.0, 2.0, 2.0] and np.isnan(out.data[1, :3]).all()


UNARY_REF = {
    "exp": np.exp, "log": np.log, "sqrt": np.sqrt,
    "rsqrt": lambda x: np.float32(1) / np.sqrt(x), "recip": lambda x: np.float32(1) / x,
    "abs": np.abs, "neg": np.negative, "relu": lambda x: np.maximum(x, 0),
}


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(sorted(UNARY_REF)), dtype=st.sampled_from((D.FP32, D.FP16, D.BF16)),
       geo=ragged(), seed=st.integers(0, 2**32 - 1))
def test_unary_float_ops_match_numpy(op, dtype, geo, seed):
    if op == "log" and dtype is D.BF16:
        dtype = D.FP16
    shape, valid = geo
    a = random_data(np.random.default_rng(seed), shape, dtype)
    if op in ("log", "sqrt", "rsqrt"):
        a = np.abs(a)
    with np.errstate(all="ignore"):
        out = apply(REGISTRY[f"tile.{op}"], tv(a, dtype, valid), out=tt(shape, dtype))
        ref = round_once(UNARY_REF[op](a[: valid[0], : valid[1]].astype(np.float32)), dtype)
    np.testing.assert_array_equal(out.data[: valid[0], : valid[1]], ref)
    assert_poisoned_outside(out)


def test_int_unary_ops_wrap():
    a = tv([[-128, -5, 7]], D.INT8)
    assert apply(REGISTRY["tile.neg"], a).data.tolist() == [[-128, 5, -7]]
    assert apply(REGISTRY["tile.abs"], a).data.tolist() == [[-128, 5, 7]]
    assert apply(REGISTRY["tile.relu"], a).data.tolist() == [[0, 0, 7]]


# ------------------------------------------------------------------ type rules


def test_binary_dtype_mismatch_error():
    with pytest.raises(OpTypeError) as e:
        REGISTRY["tile.add"].type_rule(
            info("tile.add", {"lhs": tt((4, 4), D.FP16), "rhs": tt((4, 4), D.FP32)}))
    assert "tile.add" in e.value.message and "FP16 and FP32" in e.value.message
    assert "pl.cast" in e.value.hint and "pl.FP32" in e.value.hint


def test_binary_result_type_follows_lhs_valid():
    t = REGISTRY["tile.mul"].type_rule(info(
        "tile.mul", {"lhs": tt((8, 16), D.FP32, (5, None)), "rhs": tt((8, 16), D.FP32)}))
    assert t.shape == (8, 16) and t.dtype is D.FP32 and t.valid == (5, None)


def test_broadcast_mismatch_error_names_the_dimension():
    with pytest.raises(OpTypeError, match=r"\[8, 16\] and \[8, 4\] \(dimension 1\)"):
        REGISTRY["tile.sub"].type_rule(
            info("tile.sub", {"lhs": tt((8, 16), D.FP32), "rhs": tt((8, 4), D.FP32)}))


@pytest.mark.parametrize("dtype", [D.INT8, D.BF16])
def test_div_dtype_set(dtype):
    with pytest.raises(OpTypeError) as e:
        REGISTRY["tile.div"].type_rule(
            info("tile.div", {"lhs": tt((4, 4), dtype), "rhs": tt((4, 4), dtype)}))
    assert "INT16, INT32, FP16 or FP32" in e.value.message and dtype.name in e.value.message


def test_div_requires_identical_valid_shapes():
    with pytest.raises(OpTypeError, match=r"identical valid shapes.*\[4, 3\] and \[4, 4\]"):
        REGISTRY["tile.div"].type_rule(info(
            "tile.div", {"lhs": tt((4, 4), D.FP32, (4, 3)), "rhs": tt((4, 4), D.FP32)}))


def test_subs_dtype_set_and_scalar_required():
    subs = REGISTRY["tile.subs"]
    with pytest.raises(OpTypeError, match="INT8, INT16, INT32, FP16, FP32 or BF16, but got UINT8"):
        subs.type_rule(info("tile.subs", {"lhs": tt((4, 4), D.UINT8),
                                          "rhs": ScalarType(D.INDEX)}))
    with pytest.raises(OpTypeError, match="'rhs' to be a scalar"):
        subs.type_rule(info("tile.subs", {"lhs": tt((4, 4), D.FP32), "rhs": tt((4, 4), D.FP32)}))
    ok = subs.type_rule(info("tile.subs", {"lhs": tt((4, 4), D.BF16), "rhs": ScalarType(D.FP32)}))
    assert ok.dtype is D.BF16


def test_log_dtype_set():
    with pytest.raises(OpTypeError, match="FP16 or FP32, but got BF16"):
        REGISTRY["tile.log"].type_rule(info("tile.log", {"tile": tt((4, 4), D.BF16)}))


@pytest.mark.parametrize("op,dtype", [("subs", "INT8"), ("subs", "BF16"), ("div", "INT16"),
                                      ("div", "INT32")])
def test_unvalidated_combinations_warn_on_a2a3_only(op, dtype):
    dt = getattr(D, dtype)
    rhs = ScalarType(D.INDEX) if op == "subs" else tt((4, 4), dt)
    for name, expect in (("a2a3", 1), ("a5", 0)):
        call = info(f"tile.{op}", {"lhs": tt((4, 4), dt), "rhs": rhs}, arch=spec(name))
        REGISTRY[f"tile.{op}"].arch_rule(spec(name), call)
        assert len(call.warnings) == expect
        if expect:
            assert "not validated on 'a2a3' hardware" in call.warnings[0]
            assert dtype in call.warnings[0]
