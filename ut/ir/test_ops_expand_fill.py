"""Broadcasts (row/col expand, expands), fills (fillpad*, tri, ci) and combine ops
(concat, extract, reinterpret_view) against plain numpy, plus their rules and gates."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import (
    STORAGE,
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
from pytest_pypto.ir.ops._rules import OpBoundsError
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpSpaceError, OpTypeError
from pytest_pypto.ir.types import ScalarType
from pytest_pypto.ir.values import TileValue

A2A3, A5 = spec("a2a3"), spec("a5")
WIDE = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "max": np.maximum,
        "min": np.minimum}


def _wide(x):
    return x.astype(np.float32) if x.dtype.kind == "f" or x.dtype == STORAGE["BF16"] \
        else x.astype(np.int64)


# ------------------------------------------------------------- row / col expand


@settings(max_examples=40, deadline=None)
@given(side=st.sampled_from(("row", "col")), op=st.sampled_from(sorted(WIDE) + ["expdif"]),
       dtype=st.sampled_from((D.FP32, D.FP16, D.BF16, D.INT16, D.INT32)),
       r=st.integers(1, 8), c=st.integers(1, 16), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_row_and_col_expand_ops(side, op, dtype, r, c, data, seed):
    if op == "expdif" and not dtype.is_float:
        dtype = D.FP32
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    rng = np.random.default_rng(seed)
    a = random_data(rng, (r, c), dtype)
    vshape = (r, 1) if side == "row" else (1, c)
    v = random_data(rng, vshape, dtype)
    vvalid = (vr, 1) if side == "row" else (1, vc)
    out = apply(REGISTRY[f"tile.{side}_expand_{op}"], tv(a, dtype, (vr, vc)), tv(v, dtype, vvalid),
                out=tt((r, c), dtype))
    av = _wide(a[:vr, :vc])
    vv = _wide(v[:vr] if side == "row" else v[:, :vc])
    with np.errstate(all="ignore"):
        ref = np.exp(av - vv) if op == "expdif" else WIDE[op](av, vv)
    np.testing.assert_array_equal(out.data[:vr, :vc], round_once(ref, dtype))
    assert out.valid == (vr, vc)
    assert_poisoned_outside(out)


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16, D.INT32, D.INT16, D.INT8])
@pytest.mark.parametrize("vshape", [(16, 64), (5, 47), (5, 3)])
def test_row_expand_add_packed_carrier_repeats_its_lanes(dtype, vshape):
    lanes = 32 // np.dtype(STORAGE[dtype.name]).itemsize
    rng = np.random.default_rng(1)
    a = random_data(rng, (16, 64), dtype)
    v = random_data(rng, (16, lanes), dtype)
    vr, vc = vshape
    out = apply(REGISTRY["tile.row_expand_add"], tv(a, dtype, (vr, vc)), tv(v, dtype, (vr, lanes)),
                out=tt((16, 64), dtype))
    rep = np.concatenate([v[:vr]] * (64 // lanes + 1), axis=1)[:, :vc]
    np.testing.assert_array_equal(out.data[:vr, :vc],
                                  round_once(_wide(a[:vr, :vc]) + _wide(rep), dtype))
    assert_poisoned_outside(out)


def test_row_expand_add_rules():
    rule = REGISTRY["tile.row_expand_add"].type_rule
    ok = rule(info("tile.row_expand_add", {"tile": tt((32, 64), D.FP32, (20, 47)),
                                           "row_vec": tt((32, 8), D.FP32, (20, 8)),
                                           "tmp": tt((16, 1), D.INT16)}))
    assert ok.shape == (32, 64) and ok.valid == (20, 47)  # tmp: any dtype and shape
    with pytest.raises(OpTypeError, match=r"row_vec's valid rows to equal the tile's, but got "
                                          r"row_vec valid \[32, 1\] for tile valid \[20, 64\]"):
        rule(info("tile.row_expand_add", {"tile": tt((32, 64), D.FP32, (20, 64)),
                                          "row_vec": tt((32, 1), D.FP32)}))
    with pytest.raises(OpTypeError, match=r"packed 32-byte carrier \[R, 16\], but got row_vec "
                                          r"\[16, 8\]"):
        rule(info("tile.row_expand_add", {"tile": tt((16, 64), D.FP16),
                                          "row_vec": tt((16, 8), D.FP16)}))
    with pytest.raises(OpTypeError, match="INT8, INT16, INT32, FP16 or FP32, but got BF16"):
        rule(info("tile.row_expand_add", {"tile": tt((16, 64), D.BF16),
                                          "row_vec": tt((16, 1), D.BF16)}))
    with pytest.raises(OpTypeError, match="tile and row_vec in one dtype"):
        rule(info("tile.row_expand_add", {"tile": tt((16, 64), D.FP32),
                                          "row_vec": tt((16, 1), D.FP16)}))


def test_row_expand_add_arch_gates():
    gate = REGISTRY["tile.row_expand_add"].arch_rule
    i8 = {"tile": tt((16, 64), D.INT8), "row_vec": tt((16, 1), D.INT8)}
    with pytest.raises(OpArchError, match="does not support dtype INT8 on the 'a2a3' backend"):
        gate(A2A3, info("tile.row_expand_add", i8, arch=A2A3))
    gate(A5, info("tile.row_expand_add", i8, arch=A5))
    packed = info("tile.row_expand_add", {"tile": tt((16, 64), D.FP32),
                                          "row_vec": tt((16, 8), D.FP32)}, arch=A2A3)
    gate(A2A3, packed)
    assert packed.warnings == [
        "The operator tile.row_expand_add with a packed row_vec is not validated on 'a2a3' "
        "hardware"]
    packed5 = info("tile.row_expand_add", {"tile": tt((16, 64), D.FP32),
                                           "row_vec": tt((16, 8), D.FP32)}, arch=A5)
    gate(A5, packed5)
    assert packed5.warnings == []


def test_expand_shape_rules():
    with pytest.raises(OpTypeError, match=r"col_vec of shape \[1, 64\].*got col_vec \[1, 32\]"):
        REGISTRY["tile.col_expand_max"].type_rule(info("tile.col_expand_max", {
            "tile": tt((32, 64), D.FP32), "col_vec": tt((1, 32), D.FP32)}))
    with pytest.raises(OpTypeError, match=r"row_vec of shape \[32, 1\].*got row_vec \[32, 2\]"):
        REGISTRY["tile.row_expand_min"].type_rule(info("tile.row_expand_min", {
            "tile": tt((32, 64), D.FP32), "row_vec": tt((32, 2), D.FP32)}))
    with pytest.raises(OpTypeError, match="FP16, FP32 or BF16, but got INT32"):
        REGISTRY["tile.col_expand_expdif"].type_rule(info("tile.col_expand_expdif", {
            "tile": tt((8, 8), D.INT32), "col_vec": tt((1, 8), D.INT32)}))
    with pytest.raises(OpTypeError, match="INT16, INT32, FP16 or FP32, but got INT8"):
        REGISTRY["tile.col_expand_div"].type_rule(info("tile.col_expand_div", {
            "tile": tt((8, 8), D.INT8), "col_vec": tt((1, 8), D.INT8)}))


# ------------------------------------------------------ row_expand / col_expand / expands


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16, D.INT8, D.INT32)), r=st.integers(1, 8),
       c=st.integers(1, 12), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_plain_broadcasts_ignore_the_target_values(dtype, r, c, data, seed):
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    rng = np.random.default_rng(seed)
    target = tv(random_data(rng, (r, c), dtype), dtype, (vr, vc))
    rv, cv = random_data(rng, (r, 1), dtype), random_data(rng, (1, c), dtype)
    row = apply(REGISTRY["tile.row_expand"], target, tv(rv, dtype), out=tt((r, c), dtype))
    col = apply(REGISTRY["tile.col_expand"], target, tv(cv, dtype), out=tt((r, c), dtype))
    full = apply(REGISTRY["tile.expands"], target, 3, out=tt((r, c), dtype))
    for got, want in ((row, np.repeat(rv[:vr], vc, axis=1)), (col, np.repeat(cv[:, :vc], vr, axis=0)),
                      (full, np.full((vr, vc), 3, STORAGE[dtype.name]))):
        np.testing.assert_array_equal(got.data[:vr, :vc], want)
        assert got.valid == (vr, vc)
        assert_poisoned_outside(got)


def test_expands_rounds_the_scalar_to_the_tile_dtype():
    out = apply(REGISTRY["tile.expands"], tv(np.zeros((2, 2)), D.FP16), 0.1, out=tt((2, 2), D.FP16))
    assert out.data[0, 0] == np.float16(0.1)
    with pytest.raises(OpTypeError, match="requires 'scalar' to be a scalar, but got a Tile"):
        REGISTRY["tile.expands"].type_rule(info("tile.expands", {
            "tile": tt((2, 2), D.FP32), "scalar": tt((2, 2), D.FP32)}))


# ------------------------------------------------------------------------ fillpad


PADS = {"zero": (0, lambda dt: 0), "max": (math.inf, lambda dt: _extreme(dt, True)),
        "min": (-math.inf, lambda dt: _extreme(dt, False))}


def _extreme(dt, high):
    if dt.is_float:
        return np.inf if high else -np.inf
    i = np.iinfo(STORAGE[dt.name])
    return i.max if high else i.min


@settings(max_examples=30, deadline=None)
@given(op=st.sampled_from(("fillpad", "fillpad_inplace", "fillpad_expand")),
       pad=st.sampled_from(sorted(PADS)), literal=st.booleans(),
       dtype=st.sampled_from((D.FP32, D.FP16, D.BF16, D.INT32, D.INT8)),
       r=st.integers(1, 8), c=st.integers(1, 12), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_fillpads_fill_outside_the_valid_region(op, pad, literal, dtype, r, c, data, seed):
    vr, vc = data.draw(st.integers(0, r)), data.draw(st.integers(0, c))
    a = random_data(np.random.default_rng(seed), (r, c), dtype)
    src = tv(a, dtype, (vr, vc))
    pad_value = PADS[pad][0] if literal else pad
    shape = (r, c)
    if op == "fillpad_expand":
        shape = (r + data.draw(st.integers(0, 3)), c + data.draw(st.integers(0, 3)))
        out = apply(REGISTRY["tile.fillpad_expand"], src, shape=shape, pad_value=pad_value)
    else:
        out = apply(REGISTRY[f"tile.{op}"], src, pad_value=pad_value)
    want = np.full(shape, PADS[pad][1](dtype)).astype(STORAGE[dtype.name])
    want[:vr, :vc] = a[:vr, :vc]
    np.testing.assert_array_equal(out.data.astype(np.float64), want.astype(np.float64))
    assert out.valid == shape and out.pad == pad
    if op == "fillpad_inplace":
        assert out.data is src.data  # one buffer
    else:
        assert not np.shares_memory(out.data, src.data)


def test_fillpad_rules():
    for op in ("tile.fillpad", "tile.fillpad_inplace"):
        t = REGISTRY[op].type_rule(info(op, {"tile": tt((64, 64), D.FP32, (48, 64))},
                                        {"pad_value": "max"}))
        assert t.valid == (64, 64) and t.pad == "max"
        with pytest.raises(OpTypeError, match=r"pad_value pl.PadValue.zero, pl.PadValue.min or "
                                              r"pl.PadValue.max \(or 0, -math.inf, math.inf\), "
                                              r"but got 1.5"):
            REGISTRY[op].type_rule(info(op, {"tile": tt((8, 8), D.FP32)}, {"pad_value": 1.5}))
        with pytest.raises(OpTypeError, match="but got pl.PadValue.null"):
            REGISTRY[op].type_rule(info(op, {"tile": tt((8, 8), D.FP32)}, {"pad_value": "null"}))
    fe = REGISTRY["tile.fillpad_expand"].type_rule
    t = fe(info("tile.fillpad_expand", {"tile": tt((48, 64), D.FP16, (40, 50))},
                {"shape": (64, 128), "pad_value": "zero"}))
    assert t.shape == (64, 128) and t.valid == (64, 128)
    with pytest.raises(OpTypeError, match=r"at least the source's, but got shape \[32, 64\] for "
                                          r"a source \[48, 64\] \(dimension 0\)"):
        fe(info("tile.fillpad_expand", {"tile": tt((48, 64), D.FP32)}, {"shape": (32, 64)}))
    with pytest.raises(OpTypeError, match="shape of the source's rank 2"):
        fe(info("tile.fillpad_expand", {"tile": tt((48, 64), D.FP32)}, {"shape": (64,)}))
    assert REGISTRY["tile.fillpad_inplace"].mem.result == "same:tile"


# ---------------------------------------------------------------------- tri / ci


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16, D.INT16, D.UINT16, D.INT32, D.UINT32)),
       upper=st.booleans(), d=st.integers(-10, 10), r=st.integers(1, 12), c=st.integers(1, 12),
       data=st.data())
def test_tri_matches_tril_and_triu(dtype, upper, d, r, c, data):
    vr, vc = data.draw(st.integers(1, r)), data.draw(st.integers(1, c))
    out = apply(REGISTRY["tile.tri"], d, shape=(r, c), valid_shape=(vr, vc), upper=upper,
                out=tt((r, c), dtype, (vr, vc), "Vec"))
    ones = np.ones((vr, vc))
    want = np.triu(ones, d) if upper else np.tril(ones, d)
    np.testing.assert_array_equal(out.data[:vr, :vc].astype(np.float64), want)
    assert out.valid == (vr, vc) and out.data.dtype == np.dtype(dtype.np)


def test_tri_rules_and_arch_gate():
    rule = REGISTRY["tile.tri"].type_rule
    t = rule(info("tile.tri", {"diagonal": ScalarType(D.INDEX)},
                  {"shape": (16, 32), "valid_shape": (8, 20), "dtype": D.FP16}))
    assert t.shape == (16, 32) and t.valid == (8, 20) and t.dtype is D.FP16
    with pytest.raises(OpTypeError, match=r"0 < valid_shape <= shape .* valid_shape \[17, 20\]"):
        rule(info("tile.tri", {"diagonal": ScalarType(D.INT32)},
                  {"shape": (16, 32), "valid_shape": (17, 20), "dtype": D.FP32}))
    with pytest.raises(OpTypeError, match="'diagonal' to be an integer scalar, but got FP32"):
        rule(info("tile.tri", {"diagonal": ScalarType(D.FP32)}, {"shape": (4, 4), "dtype": D.FP32}))
    with pytest.raises(OpTypeError, match="requires a 2-D shape"):
        rule(info("tile.tri", {"diagonal": ScalarType(D.INT32)}, {"shape": (4,), "dtype": D.FP32}))
    with pytest.raises(OpTypeError, match="requires dtype INT8, .* but got INT64"):
        rule(info("tile.tri", {"diagonal": ScalarType(D.INT32)}, {"shape": (4, 4),
                                                                   "dtype": D.INT64}))
    gate = REGISTRY["tile.tri"].arch_rule
    for dt in (D.INT8, D.UINT8, D.BF16):
        with pytest.raises(OpArchError,
                           match=f"does not support dtype {dt.name} on the 'a2a3' backend"):
            gate(A2A3, info("tile.tri", values={"dtype": dt}, arch=A2A3))
        gate(A5, info("tile.tri", values={"dtype": dt}, arch=A5))


@pytest.mark.parametrize("dtype", [D.INT16, D.INT32, D.UINT16, D.UINT32])
@pytest.mark.parametrize("start,descending", [(0, False), (10, False), (5, True), (-3, False)])
def test_ci_generates_one_wrapping_row(dtype, start, descending):
    out = apply(REGISTRY["tile.ci"], start, shape=(1, 40), descending=descending,
                out=tt((1, 40), dtype, space="Vec"))
    seq = start - np.arange(40) if descending else start + np.arange(40)
    np.testing.assert_array_equal(out.data[0].astype(np.int64),
                                  seq.astype(np.int64).astype(STORAGE.get(dtype.name, dtype.np))
                                  if dtype.name in STORAGE else seq % 2**dtype.bits)
    assert out.valid == (1, 40)


def test_ci_rules():
    rule = REGISTRY["tile.ci"].type_rule
    assert rule(info("tile.ci", {"start": ScalarType(D.INDEX)},
                     {"shape": (1, 8), "dtype": D.INT32})).dtype is D.INT32
    with pytest.raises(OpTypeError, match="leading dimensions must be 1, but got shape "
                                          r"\[4, 8\]"):
        rule(info("tile.ci", {"start": ScalarType(D.INDEX)}, {"shape": (4, 8), "dtype": D.INT32}))
    with pytest.raises(OpTypeError, match=r"innermost dimension to be != 1, but got shape \[1, 1\]"):
        rule(info("tile.ci", {"start": ScalarType(D.INDEX)}, {"shape": (1, 1), "dtype": D.INT32}))
    with pytest.raises(OpTypeError, match="INT16, INT32, UINT16 or UINT32, but got FP32"):
        rule(info("tile.ci", {"start": ScalarType(D.INDEX)}, {"shape": (1, 8), "dtype": D.FP32}))
    with pytest.raises(OpTypeError, match="'start' of the destination dtype INT16, but got a "
                                          "INT32 scalar"):
        rule(info("tile.ci", {"start": ScalarType(D.INT32)}, {"shape": (1, 8), "dtype": D.INT16}))


# --------------------------------------------------------------------- combine


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16, D.INT8)), r=st.integers(1, 8),
       c0=st.integers(1, 9), c1=st.integers(1, 9), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_concat_packs_valid_columns(dtype, r, c0, c1, data, seed):
    ragged = data.draw(st.booleans())
    rng = np.random.default_rng(seed)
    a, b = random_data(rng, (r, c0), dtype), random_data(rng, (r, c1), dtype)
    va = (r, data.draw(st.integers(1, c0))) if ragged else (r, c0)
    out = apply(REGISTRY["tile.concat"], tv(a, dtype, va), tv(b, dtype), out=tt((r, c0 + c1), dtype))
    assert out.valid == (r, c0 + c1)
    vc = va[1]
    np.testing.assert_array_equal(out.data[:, :vc], a[:, :vc])
    np.testing.assert_array_equal(out.data[:, vc:vc + c1], b)
    tail = out.data[:, vc + c1:]
    if dtype.is_float:
        assert np.isnan(tail.astype(np.float32)).all()  # undefined: poisoned
    else:
        assert (tail.astype(np.int64) == -0x5B).all()


def test_concat_rules():
    rule = REGISTRY["tile.concat"].type_rule
    with pytest.raises(OpTypeError, match=r"one row count, but got \[8, 4\] and \[16, 4\]"):
        rule(info("tile.concat", {"src0": tt((8, 4), D.FP32), "src1": tt((16, 4), D.FP32)}))
    with pytest.raises(OpTypeError, match="src0 and src1 in one dtype"):
        rule(info("tile.concat", {"src0": tt((8, 4), D.FP32), "src1": tt((8, 4), D.FP16)}))


def test_extract_copies_a_window_valid_where_the_source_is():
    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    out = apply(REGISTRY["tile.extract"], tv(a, D.FP32, (6, 8)), 4, 2, shape=(4, 4),
                target_memory="Vec", out=tt((4, 4), D.FP32, (None, None), "Vec"))
    assert out.valid == (2, 4)
    np.testing.assert_array_equal(out.data[:2], a[4:6, 2:6])
    assert_poisoned_outside(out)
    with pytest.raises(OpBoundsError, match="offset 6 \\+ extent 4 > source extent 8"):
        apply(REGISTRY["tile.extract"], tv(a, D.FP32), 0, 6, shape=(4, 4))


def test_extract_rules():
    rule = REGISTRY["tile.extract"].type_rule
    i = ScalarType(D.INDEX)
    t = rule(info("tile.extract", {"tile": tt((32, 32), D.FP16, space="Mat"), "index_row": i,
                                   "index_col": i}, {"shape": (16, 32), "target_memory": "Left"}))
    assert t.shape == (16, 32) and t.space == "Left" and t.valid == (16, 32)
    with pytest.raises(OpSpaceError, match="cannot extract from Mat into Vec"):
        rule(info("tile.extract", {"tile": tt((32, 32), D.FP16, space="Mat"), "index_row": i,
                                   "index_col": i}, {"shape": (16, 32), "target_memory": "Vec"}))
    with pytest.raises(OpTypeError, match=r"window inside the source, but got shape \[16, 64\]"):
        rule(info("tile.extract", {"tile": tt((32, 32), D.FP16), "index_row": i, "index_col": i},
                  {"shape": (16, 64)}))
    with pytest.raises(OpTypeError, match="'index_col' to be an INDEX/INT64 scalar, but got FP32"):
        rule(info("tile.extract", {"tile": tt((32, 32), D.FP16), "index_row": i,
                                   "index_col": ScalarType(D.FP32)}, {"shape": (16, 16)}))


@pytest.mark.parametrize("src,dst", [(D.FP32, D.INT32), (D.FP32, D.INT16), (D.INT16, D.FP32),
                                     (D.FP16, D.BF16), (D.INT8, D.INT32)])
def test_reinterpret_view_reads_the_same_bytes(src, dst):
    a = random_data(np.random.default_rng(4), (4, 16), src)
    out = apply(REGISTRY["tile.reinterpret_view"], tv(a, src), dtype=dst)
    want = np.ascontiguousarray(a).view(STORAGE[dst.name])
    np.testing.assert_array_equal(out.data.view(np.uint8), want.view(np.uint8))
    assert out.data.shape == want.shape and out.valid == want.shape


def test_reinterpret_view_rules():
    rule = REGISTRY["tile.reinterpret_view"].type_rule
    t = rule(info("tile.reinterpret_view", {"tile": tt((8, 16), D.FP32, (8, 10))},
                  {"dtype": D.INT16}))
    assert t.shape == (8, 32) and t.valid == (8, 20) and t.dtype is D.INT16
    t = rule(info("tile.reinterpret_view", {"tile": tt((8, 16), D.FP32)},
                  {"dtype": D.FP16, "shape": (16, 16)}))
    assert t.shape == (16, 16) and t.valid == (16, 16)
    with pytest.raises(OpTypeError, match="byte size 512, but got \\[8, 8\\] of FP16 "):
        rule(info("tile.reinterpret_view", {"tile": tt((8, 16), D.FP32)},
                  {"dtype": D.FP16, "shape": (8, 8)}))
    with pytest.raises(OpTypeError, match="cannot split the last dim 3 into whole elements"):
        rule(info("tile.reinterpret_view", {"tile": tt((8, 3), D.INT8)}, {"dtype": D.INT32}))
    with pytest.raises(OpTypeError, match="a dtype other than the source's FP32"):
        rule(info("tile.reinterpret_view", {"tile": tt((8, 16), D.FP32)}, {"dtype": D.FP32}))
    with pytest.raises(OpTypeError, match="cannot map the valid region"):
        rule(info("tile.reinterpret_view", {"tile": tt((8, 16), D.FP32, (4, 16))},
                  {"dtype": D.FP16, "shape": (16, 16)}))
    assert REGISTRY["tile.reinterpret_view"].mem.result == "same:tile"



@pytest.mark.parametrize("op", ["fillpad", "fillpad_expand"])
@pytest.mark.parametrize("valid", [(3, 4, 6), (3, 2, 6), (3, 4, 0), (3, 1, 5), (2, 4, 6)])
@pytest.mark.parametrize("dtype", [D.FP32, D.BF16, D.INT8])
def test_a_stacked_fillpad_pads_exactly_what_its_valid_region_leaves(op, valid, dtype):
    """A task-batched fillpad (a leading task axis, docs/design/runtime.md §6): the source's
    valid region is copied, every other element is the pad (also along the task axis),
    and a fully valid source comes back as a copy of its own bits."""
    shape = (3, 4, 6)
    a = random_data(np.random.default_rng(7), shape, dtype)
    src = tv(a, dtype, valid)
    out_shape = shape if op == "fillpad" else (3, 5, 8)
    if op == "fillpad":
        out = apply(REGISTRY["tile.fillpad"], src, pad_value="max")
    else:
        out = apply(REGISTRY["tile.fillpad_expand"], src, shape=out_shape, pad_value="max")
    want = np.full(out_shape, _extreme(dtype, True)).astype(STORAGE[dtype.name])
    region = tuple(slice(0, v) for v in valid)
    want[region] = a[region]
    assert out.data.dtype == want.dtype and out.data.shape == out_shape
    assert out.data.tobytes() == want.tobytes()
    assert out.valid == out_shape and not np.shares_memory(out.data, src.data)


def test_a_fully_valid_fillpad_of_fp32_storage_still_rounds_to_its_dtype():
    """A BF16 tile held in FP32 storage (a precise run) is rounded to BF16 storage by
    fillpad, fully valid or not: the plain-copy path takes only a tile in its own dtype."""
    wide = np.array([[1.0 + 2.0 ** -10, 3.0], [-2.5, 1.0 / 3.0]], np.float32)
    for valid in ((2, 2), (2, 1)):
        src = TileValue(wide.copy(), valid, D.BF16, "Vec")  # FP32 storage, as precise keeps
        out = apply(REGISTRY["tile.fillpad"], src, pad_value="zero")
        assert out.data.dtype == STORAGE["BF16"]
        want = np.zeros((2, 2), np.float32)
        want[:, :valid[1]] = wide[:, :valid[1]]
        assert out.data.tobytes() == want.astype(STORAGE["BF16"]).tobytes()
