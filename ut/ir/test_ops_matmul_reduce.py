"""matmul / matmul_acc, row/col reductions and row_expand ops against plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import STORAGE, assert_poisoned_outside, info, random_data, round_once, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY, OpTypeError

MM, MMA = REGISTRY["tile.matmul"], REGISTRY["tile.matmul_acc"]


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16, D.BF16, D.INT8)),
       m=st.integers(1, 8), k=st.integers(1, 12), n=st.integers(1, 8),
       data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_matmul_over_valid_mkn(dtype, m, k, n, data, seed):
    vm, vk, vn = data.draw(st.integers(0, m)), data.draw(st.integers(0, k)), \
        data.draw(st.integers(0, n))
    rng = np.random.default_rng(seed)
    a, b = random_data(rng, (m, k), dtype), random_data(rng, (k, n), dtype)
    acc_dt = D.INT32 if dtype is D.INT8 else D.FP32
    lhs = tv(a, dtype, (vm, vk), "Left")
    rhs = tv(b, dtype, (vk, vn), "Right")
    out = apply(MM, lhs, rhs, out=tt((m, n), acc_dt, space="Acc"))
    if dtype is D.INT8:
        ref = (a[:vm, :vk].astype(np.int64) @ b[:vk, :vn].astype(np.int64)).astype(np.int32)
        np.testing.assert_array_equal(out.data[:vm, :vn], ref)
    else:
        ref = a[:vm, :vk].astype(np.float64) @ b[:vk, :vn].astype(np.float64)
        np.testing.assert_allclose(out.data[:vm, :vn], ref, rtol=1e-5, atol=1e-4)
    assert out.valid == (vm, vn) and out.space == "Acc"
    assert_poisoned_outside(out)


def test_int8_matmul_accumulates_exactly_and_wraps():
    a = np.full((1, 4), 127, np.int8)
    out = apply(MM, tv(a, D.INT8), tv(a.T.copy(), D.INT8), out=tt((1, 1), D.INT32))
    assert out.data.tolist() == [[4 * 127 * 127]]
    acc = tv([[2**31 - 10]], D.INT32, space="Acc")
    apply(MMA, acc, tv([[4]], D.INT8), tv([[5]], D.INT8))
    assert acc.data.tolist() == [[2**31 - 10 + 20 - 2**32]]


def test_matmul_acc_adds_in_place_and_init_cond_overwrites():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    b = np.ones((3, 2), np.float32)
    acc = tv(np.full((2, 2), 100.0), D.FP32, space="Acc")
    res = apply(MMA, acc, tv(a, D.FP32), tv(b, D.FP32))
    assert res is acc
    np.testing.assert_array_equal(acc.data, 100.0 + a @ b)
    apply(MMA, acc, tv(a, D.FP32), tv(b, D.FP32), True)
    np.testing.assert_array_equal(acc.data, a @ b)


def test_matmul_type_rules():
    t = MM.type_rule(info("tile.matmul", {"lhs": tt((32, 64), D.BF16, (20, 64)),
                                          "rhs": tt((64, 16), D.BF16, (64, None))}))
    assert t.shape == (32, 16) and t.dtype is D.FP32 and t.valid == (20, None)
    assert MM.type_rule(info("tile.matmul", {"lhs": tt((16, 16), D.INT8),
                                             "rhs": tt((16, 16), D.INT8)})).dtype is D.INT32
    with pytest.raises(OpTypeError) as e:
        MM.type_rule(info("tile.matmul", {"lhs": tt((16, 64), D.FP16),
                                          "rhs": tt((32, 16), D.FP16)}))
    assert "requires lhs K to equal rhs K, but got lhs K=64 and rhs K=32" in e.value.message
    with pytest.raises(OpTypeError, match="INT8, FP16, BF16 or FP32, but got INT16"):
        MM.type_rule(info("tile.matmul", {"lhs": tt((16, 16), D.INT16),
                                          "rhs": tt((16, 16), D.INT16)}))
    with pytest.raises(OpTypeError, match="FP16 and BF16"):
        MM.type_rule(info("tile.matmul", {"lhs": tt((16, 16), D.FP16),
                                          "rhs": tt((16, 16), D.BF16)}))
    with pytest.raises(OpTypeError, match="acc dtype FP32 .* but got INT32"):
        MMA.type_rule(info("tile.matmul_acc", {"acc": tt((16, 16), D.INT32),
                                               "lhs": tt((16, 16), D.FP16),
                                               "rhs": tt((16, 16), D.FP16)}))


REDUCE_REF = {"row_sum": lambda x: x.sum(-1, keepdims=True), "row_max": lambda x: x.max(-1, keepdims=True),
              "row_min": lambda x: x.min(-1, keepdims=True), "col_sum": lambda x: x.sum(0, keepdims=True)}


def tree_col_sum(rows: np.ndarray) -> np.ndarray:
    """The device's FP16 TCOLSUM with a tmp_tile, as PyPTO's golden encodes it: rows
    (i, i+1) are added pairwise, each sum rounded to the storage dtype; an odd leftover
    row is added into the first pair's sum; repeat until one row is left."""
    level = [rows[i] for i in range(rows.shape[0])]
    while len(level) > 1:
        nxt = [level[i] + level[i + 1] for i in range(0, len(level) - 1, 2)]
        if len(level) % 2:
            nxt[0] = nxt[0] + level[-1]
        level = nxt
    return level[0][None, :]


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(sorted(REDUCE_REF)),
       dtype=st.sampled_from((D.FP32, D.FP16, D.INT16, D.INT32)),
       r=st.integers(1, 8), c=st.integers(1, 16), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_reductions_over_the_valid_region(op, dtype, r, c, data, seed):
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    a = random_data(np.random.default_rng(seed), (r, c), dtype)
    tile = tv(a, dtype, (vr, vc))
    tmp = tv(np.zeros((r, c)), dtype)
    outshape = (r, 1) if op.startswith("row") else (1, c)
    out = apply(REGISTRY[f"tile.{op}"], tile, tmp, out=tt(outshape, dtype))
    wide = a[:vr, :vc].astype(np.float32 if dtype.is_float else np.int64)
    if op == "col_sum" and dtype.is_float:  # per-step rounding in the tile dtype
        ref = tree_col_sum(a[:vr, :vc].astype(STORAGE[dtype.name]))
    else:
        ref = round_once(REDUCE_REF[op](wide), dtype)
    assert out.valid == ref.shape
    got = out.data[: ref.shape[0], : ref.shape[1]].astype(np.float64)
    if op == "col_sum" and dtype.is_float:  # same order, same roundings: bit-exact
        np.testing.assert_array_equal(got, ref.astype(np.float64))
    else:
        np.testing.assert_allclose(got, ref.astype(np.float64),
                                   rtol=2e-3 if dtype is D.FP16 else 1e-6)
    assert_poisoned_outside(out)


def test_row_sum_type_rules():
    rs = REGISTRY["tile.row_sum"]
    t = rs.type_rule(info("tile.row_sum", {"tile": tt((32, 64), D.FP32, (None, 50)),
                                           "tmp_tile": tt((32, 64), D.FP32)}))
    assert t.shape == (32, 1) and t.valid == (None, 1)
    with pytest.raises(OpTypeError) as e:
        rs.type_rule(info("tile.row_sum", {"tile": tt((32, 64), D.FP32),
                                           "tmp_tile": tt((32, 32), D.FP32)}))
    assert ("requires tmp_tile to be at least the input size in every dimension, but got "
            "tmp_tile [32, 32] for input [32, 64] (dimension 1)") in e.value.message
    with pytest.raises(OpTypeError, match="requires tmp_tile"):
        rs.type_rule(info("tile.row_sum", {"tile": tt((32, 64), D.FP32), "tmp_tile": None}))
    with pytest.raises(OpTypeError, match="INT16, INT32, FP16 or FP32, but got BF16"):
        REGISTRY["tile.row_min"].type_rule(info("tile.row_min", {
            "tile": tt((8, 8), D.BF16), "tmp_tile": tt((8, 8), D.BF16)}))
    cs = REGISTRY["tile.col_sum"].type_rule(info("tile.col_sum", {
        "tile": tt((8, 16), D.FP16, (8, 12)), "tmp_tile": None}))
    assert cs.shape == (1, 16) and cs.valid == (1, 12)


EXPAND_REF = {"add": lambda a, v: a + v, "sub": lambda a, v: a - v, "mul": lambda a, v: a * v,
              "div": lambda a, v: a / v, "expdif": lambda a, v: np.exp(a - v)}


@settings(max_examples=25, deadline=None)
@given(op=st.sampled_from(sorted(EXPAND_REF)), dtype=st.sampled_from((D.FP32, D.FP16)),
       r=st.integers(1, 8), c=st.integers(1, 16), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_row_expand_ops(op, dtype, r, c, data, seed):
    vr, vc = data.draw(st.integers(0, r)), data.draw(st.integers(0, c))
    rng = np.random.default_rng(seed)
    a, v = random_data(rng, (r, c), dtype), random_data(rng, (r, 1), dtype)
    out = apply(REGISTRY[f"tile.row_expand_{op}"], tv(a, dtype, (vr, vc)), tv(v, dtype, (vr, 1)),
                out=tt((r, c), dtype))
    with np.errstate(all="ignore"):
        ref = round_once(EXPAND_REF[op](a[:vr, :vc].astype(np.float32),
                                        v[:vr].astype(np.float32)), dtype)
    np.testing.assert_array_equal(out.data[:vr, :vc], ref)
    assert out.valid == (vr, vc)
    assert_poisoned_outside(out)


def test_row_expand_shape_rule():
    with pytest.raises(OpTypeError, match=r"row_vec of shape \[32, 1\].*got row_vec \[16, 1\]"):
        REGISTRY["tile.row_expand_expdif"].type_rule(info("tile.row_expand_expdif", {
            "tile": tt((32, 64), D.FP32), "row_vec": tt((16, 1), D.FP32)}))
    t = REGISTRY["tile.row_expand_sub"].type_rule(info("tile.row_expand_sub", {
        "tile": tt((32, 64), D.FP32, (None, 40)), "row_vec": tt((32, 1), D.FP32)}))
    assert t.shape == (32, 64) and t.valid == (None, 40)


def test_init_cond_must_be_a_condition():
    from pytest_pypto.ir.types import ScalarType

    types = {"acc": tt((16, 16), D.FP32), "lhs": tt((16, 16), D.FP16),
             "rhs": tt((16, 16), D.FP16)}
    MMA.type_rule(info("tile.matmul_acc", {**types, "init_cond": ScalarType(D.BOOL)}))
    with pytest.raises(OpTypeError, match="init_cond to be a BOOL or int scalar, but got FP32"):
        MMA.type_rule(info("tile.matmul_acc", {**types, "init_cond": ScalarType(D.FP32)}))
