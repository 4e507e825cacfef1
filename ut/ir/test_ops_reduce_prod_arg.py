"""row/col prod, argmax/argmin and the device-order col_sum against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import STORAGE, assert_poisoned_outside, info, random_data, round_once, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY, OpTypeError

FLOATS = (D.FP32, D.FP16, D.BF16)


# ------------------------------------------------------------ references


def ref_col_sum_sequential(x, dtype):
    """Rows added one after another, every sum rounded to the tile dtype."""
    st_ = STORAGE[dtype.name]
    acc = x[0].astype(np.float64)
    for row in x[1:]:
        acc = (acc + row.astype(np.float64)).astype(np.float32).astype(st_).astype(np.float64)
    return acc[None].astype(st_)


def ref_col_sum_tree(x, dtype):
    """PyPTO's golden for TCOLSUM with a tmp tile: pairwise halving, odd row into row 0."""
    st_ = STORAGE[dtype.name]
    rnd = lambda v: v.astype(np.float32).astype(st_).astype(np.float64)  # noqa: E731
    buf = [r.astype(np.float64) for r in x]
    n = len(buf)
    while n > 1:
        half = n // 2
        nxt = [rnd(buf[2 * i] + buf[2 * i + 1]) for i in range(half)]
        if n % 2:
            nxt[0] = rnd(nxt[0] + buf[n - 1])
        buf, n = nxt, half
    return buf[0][None].astype(st_)


# -------------------------------------------------------------- col_sum


@settings(max_examples=40, deadline=None)
@given(dtype=st.sampled_from(FLOATS), r=st.integers(1, 33), c=st.integers(1, 9),
       tree=st.booleans(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_float_col_sum_follows_the_device_order(dtype, r, c, tree, data, seed):
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    a = random_data(np.random.default_rng(seed), (r, c), dtype)
    tmp = tv(np.zeros((r, c)), dtype) if tree else None
    out = apply(REGISTRY["tile.col_sum"], tv(a, dtype, (vr, vc)), tmp, out=tt((1, c), dtype))
    ref = (ref_col_sum_tree if tree else ref_col_sum_sequential)(a[:vr, :vc], dtype)
    np.testing.assert_array_equal(out.data[:, :vc].astype(np.float64), ref.astype(np.float64))
    assert out.valid == (1, vc)
    assert_poisoned_outside(out)


def test_fp16_col_sum_orders_differ_and_each_matches_its_golden():
    """A case where sequential, tree and fp32-accumulated sums give three answers."""
    x = np.array([[2048.0], [1.0], [1.0], [1.0]], np.float16)  # 2048 + 1 rounds back to 2048
    t = tv(x, D.FP16)
    seq = apply(REGISTRY["tile.col_sum"], t, None, out=tt((1, 1), D.FP16)).data.item()
    tree = apply(REGISTRY["tile.col_sum"], t, tv(x, D.FP16), out=tt((1, 1), D.FP16)).data.item()
    assert seq == 2048.0  # every +1 is lost
    assert tree == 2050.0  # (2048+1) + (1+1) = 2048 + 2
    assert float(x.astype(np.float32).sum()) == 2051.0  # what a wide accumulator would say


def test_int_col_sum_wraps_in_any_order():
    x = np.full((5, 3), 2**30, np.int32)
    for tmp in (None, tv(x, D.INT32)):
        out = apply(REGISTRY["tile.col_sum"], tv(x, D.INT32), tmp, out=tt((1, 3), D.INT32))
        assert out.data.tolist() == [[(5 * 2**30 + 2**31) % 2**32 - 2**31] * 3]


# ---------------------------------------------------------------- prod


@settings(max_examples=30, deadline=None)
@given(axis=st.sampled_from(("row", "col")), dtype=st.sampled_from((D.FP32, D.FP16, D.INT32)),
       r=st.integers(1, 8), c=st.integers(1, 12), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_prod_over_the_valid_region(axis, dtype, r, c, data, seed):
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    rng = np.random.default_rng(seed)
    if dtype.is_float:
        a = rng.uniform(0.8, 1.2, (r, c)).astype(STORAGE[dtype.name])
    else:
        a = rng.integers(-5, 6, (r, c)).astype(np.int32)
    t = tv(a, dtype, (vr, vc))
    if axis == "row":
        out = apply(REGISTRY["tile.row_prod"], t, tv(np.zeros((r, c)), dtype), out=tt((r, 1), dtype))
        wide = np.ones((vr, 1))
        for j in range(vc):
            wide = wide * a[:vr, j:j + 1].astype(np.float64)
    else:
        out = apply(REGISTRY["tile.col_prod"], t, out=tt((1, c), dtype))
        wide = np.ones((1, vc))
        for i in range(vr):
            wide = wide * a[i:i + 1, :vc].astype(np.float64)
    got = out.data[: wide.shape[0], : wide.shape[1]]
    if dtype.is_float:
        np.testing.assert_allclose(got.astype(np.float64), wide, rtol=2e-3 if dtype is D.FP16 else 1e-5)
    else:
        np.testing.assert_array_equal(got, round_once(wide.astype(np.int64), dtype))
    assert_poisoned_outside(out)


def test_int_prod_wraps():
    a = np.full((1, 4), 300, np.int16)
    out = apply(REGISTRY["tile.row_prod"], tv(a, D.INT16), tv(a, D.INT16), out=tt((1, 1), D.INT16))
    assert out.data.item() == np.int64(300**4).astype(np.int16)


# -------------------------------------------------------------- argmax


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(("row_argmax", "row_argmin", "col_argmax", "col_argmin")),
       dtype=st.sampled_from((D.FP32, D.FP16)), r=st.integers(1, 9), c=st.integers(1, 17),
       ties=st.booleans(), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_arg_reductions_give_int32_lowest_index(op, dtype, r, c, ties, data, seed):
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    rng = np.random.default_rng(seed)
    a = (rng.integers(-3, 4, (r, c)) if ties else rng.permutation(r * c).reshape(r, c))
    a = a.astype(STORAGE[dtype.name])
    row = op.startswith("row")
    shape = (r, 1) if row else (1, c)
    out = apply(REGISTRY[f"tile.{op}"], tv(a, dtype, (vr, vc)), tv(np.zeros((r, c)), dtype),
                out=tt(shape, D.INT32))
    v = a[:vr, :vc].astype(np.float64)
    want_max = op.endswith("argmax")
    if row:
        lines = [v[i] for i in range(vr)]
    else:
        lines = [v[:, j] for j in range(vc)]
    expected = []
    for line in lines:  # first index of the extremum, scanning upward
        best = 0
        for k in range(1, len(line)):
            if (line[k] > line[best]) if want_max else (line[k] < line[best]):
                best = k
        expected.append(best)
    got = out.data[:vr, 0] if row else out.data[0, :vc]
    assert out.data.dtype == np.int32
    assert got.tolist() == expected
    assert out.valid == ((vr, 1) if row else (1, vc))
    assert_poisoned_outside(out)


# ------------------------------------------------------------ type rules


def test_arg_reduction_rules():
    rule = REGISTRY["tile.row_argmax"].type_rule
    t = rule(info("tile.row_argmax", {"tile": tt((16, 16), D.FP16, (8, 12)),
                                      "tmp_tile": tt((16, 16), D.FP16)}))
    assert t.dtype is D.INT32 and t.shape == (16, 1) and t.valid == (8, 1)
    with pytest.raises(OpTypeError, match=r"tmp_tile of exactly the input's shape, but got "
                                          r"tmp_tile \[16, 32\] for input \[16, 16\]"):
        rule(info("tile.row_argmax", {"tile": tt((16, 16), D.FP32),
                                      "tmp_tile": tt((16, 32), D.FP32)}))
    with pytest.raises(OpTypeError, match="requires dtype FP16 or FP32, but got INT32"):
        rule(info("tile.row_argmax", {"tile": tt((16, 16), D.INT32),
                                      "tmp_tile": tt((16, 16), D.INT32)}))
    with pytest.raises(OpTypeError, match="requires tmp_tile in its tile form"):
        REGISTRY["tile.col_argmin"].type_rule(info("tile.col_argmin", {
            "tile": tt((16, 16), D.FP32), "tmp_tile": None}))
    c = REGISTRY["tile.col_argmin"].type_rule(info("tile.col_argmin", {
        "tile": tt((16, 32), D.FP32, (4, 20)), "tmp_tile": tt((16, 32), D.FP32)}))
    assert c.dtype is D.INT32 and c.shape == (1, 32) and c.valid == (1, 20)
    with pytest.raises(OpTypeError, match="tmp_tile and the input in one dtype"):
        REGISTRY["tile.col_argmax"].type_rule(info("tile.col_argmax", {
            "tile": tt((16, 16), D.FP32), "tmp_tile": tt((16, 16), D.FP16)}))


def test_prod_rules():
    with pytest.raises(OpTypeError, match="requires tmp_tile in its tile form"):
        REGISTRY["tile.row_prod"].type_rule(info("tile.row_prod", {
            "tile": tt((8, 8), D.FP32), "tmp_tile": None}))
    with pytest.raises(OpTypeError, match=r"at least the input size .* \(dimension 0\)"):
        REGISTRY["tile.row_prod"].type_rule(info("tile.row_prod", {
            "tile": tt((8, 8), D.FP32), "tmp_tile": tt((4, 8), D.FP32)}))
    with pytest.raises(OpTypeError, match="to be rank 2, but got rank 3"):
        REGISTRY["tile.col_prod"].type_rule(info("tile.col_prod", {"tile": tt((2, 8, 8), D.FP32)}))
    assert REGISTRY["tile.col_prod"].type_rule(info("tile.col_prod", {
        "tile": tt((8, 8), D.FP16, (3, 5))})).valid == (1, 5)
    with pytest.raises(OpTypeError, match="requires dtype .* but got BOOL"):
        REGISTRY["tile.col_prod"].type_rule(info("tile.col_prod", {"tile": tt((8, 8), D.BOOL)}))


def test_col_sum_tmp_dtype_rule():
    with pytest.raises(OpTypeError, match="tmp_tile and the input in one dtype, but got FP16 "
                                          "and FP32"):
        REGISTRY["tile.col_sum"].type_rule(info("tile.col_sum", {
            "tile": tt((8, 8), D.FP16), "tmp_tile": tt((8, 8), D.FP32)}))
