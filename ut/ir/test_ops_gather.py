"""Gather / scatter entries (gather, gather_mask, gatherb, gather_row, mgather, scatter,
scatter_mask, scatter_update, mscatter) against plain numpy (docs/design/language.md §21)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import ARCHS, assert_poisoned_outside, info, random_data, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.ops._indexing import OpIndexError
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpTypeError
from pytest_pypto.ir.types import TensorType

R = REGISTRY
GATHER_DTYPES = (D.FP32, D.FP16, D.INT16, D.INT32)


# --------------------------------------------------------------------- gather


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from(GATHER_DTYPES), rows=st.integers(1, 6), cols=st.integers(1, 12),
       data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_gather_reads_src_flat_at_each_index(dtype, rows, cols, data, seed):
    rng = np.random.default_rng(seed)
    src = random_data(rng, (4, 16), dtype)
    vr, vc = data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols))
    idx = rng.integers(0, 64, (rows, cols)).astype(np.int32)
    t = R["tile.gather"].type_rule(info("tile.gather", {
        "src": tt((4, 16), dtype), "indices": tt((rows, cols), D.INT32, (vr, vc)),
        "tmp": tt((rows, cols), D.INT32)}))
    assert t.shape == (rows, cols) and t.valid == (vr, vc) and t.dtype is dtype
    out = apply(R["tile.gather"], tv(src, dtype), tv(idx, D.INT32, (vr, vc)),
                tv(idx, D.INT32), out=t.with_(space="Vec"))
    want = src.reshape(-1)[idx[:vr, :vc].reshape(-1)].reshape(vr, vc)
    np.testing.assert_array_equal(out.data[:vr, :vc].astype(np.float64), want.astype(np.float64))
    assert_poisoned_outside(out)


def test_gather_index_past_src_is_an_index_error_naming_it():
    idx = np.zeros((2, 8), np.int32)
    idx[1, 3] = 64
    with pytest.raises(OpIndexError) as exc:
        apply(R["tile.gather"], tv(np.ones((4, 16), np.float32), D.FP32), tv(idx, D.INT32),
              tv(idx, D.INT32), out=tt((2, 8), D.FP32, space="Vec"))
    assert "index 64 at position [1, 3]" in exc.value.message
    assert "valid indices are 0..63" in exc.value.message


@pytest.mark.parametrize(("src", "idx", "message"), [
    (D.INT8, D.INT32, "requires src dtype FP16, FP32, INT16 or INT32, but got INT8"),
    (D.FP32, D.INT16, "INT16 with a 16-bit src, but got INT16 with src FP32"),
    (D.FP16, D.UINT32, "requires indices dtype INT32"),
])
def test_gather_type_rules(src, idx, message):
    with pytest.raises(OpTypeError) as exc:
        R["tile.gather"].type_rule(info("tile.gather", {
            "src": tt((4, 16), src), "indices": tt((2, 8), idx), "tmp": tt((2, 8), D.INT32)}))
    assert message in exc.value.message


def test_int16_gather_indices_are_an_a5_form(arch):
    call = info("tile.gather", {"src": tt((4, 16), D.FP16), "indices": tt((2, 8), D.INT16),
                                "tmp": tt((2, 8), D.INT16)}, arch=arch)
    if arch.name == "a5":
        R["tile.gather"].arch_rule(arch, call)
        return
    with pytest.raises(OpArchError, match="INT16 indices on the 'a2a3' backend"):
        R["tile.gather"].arch_rule(arch, call)


# ---------------------------------------------------------------- gather_mask


@pytest.mark.parametrize(("pattern", "start", "stride"),
                         [(1, 0, 2), (2, 1, 2), (3, 0, 4), (4, 1, 4), (5, 2, 4), (6, 3, 4), (7, 0, 1)])
@pytest.mark.parametrize("dtype", GATHER_DTYPES, ids=lambda d: d.name)
def test_gather_mask_compacts_the_marked_columns(pattern, start, stride, dtype):
    rng = np.random.default_rng(pattern)
    src = random_data(rng, (3, 16), dtype)
    t = R["tile.gather_mask"].type_rule(info("tile.gather_mask", {"src": tt((3, 16), dtype, (2, 13))},
                                             {"mask_pattern": pattern}))
    cols = list(range(start, 13, stride))
    assert t.shape == (3, 16 // stride) and t.valid == (2, len(cols))
    out = apply(R["tile.gather_mask"], tv(src, dtype, (2, 13)), mask_pattern=pattern,
                out=t.with_(space="Vec"))
    np.testing.assert_array_equal(out.data[:2, :len(cols)].astype(np.float64),
                                  src[:2, cols].astype(np.float64))


def test_gather_mask_output_dtype_reinterprets_bits():
    bits = np.array([[1.5, 0]], np.float32)
    bits[0, 1] = np.array([42], np.uint32).view(np.float32)[0]
    out = apply(R["tile.gather_mask"], tv(bits, D.FP32), mask_pattern=2, output_dtype=D.UINT32,
                out=tt((1, 1), D.UINT32, space="Vec"))
    assert out.data.tolist() == [[42]] and out.dtype is D.UINT32


@pytest.mark.parametrize(("src", "values", "message"), [
    (tt((2, 16), D.FP32), {"mask_pattern": 9}, "mask_pattern in range [1, 7], but got 9"),
    (tt((2, 6), D.FP32), {"mask_pattern": 3}, "requires src columns divisible by 4, got 6"),
    (tt((2, 16), D.FP32), {"mask_pattern": 1, "output_dtype": D.UINT16}, "same bit width"),
    (tt((2, 16), D.BF16), {"mask_pattern": 1}, "requires src dtype FP16, FP32, INT16 or INT32"),
])
def test_gather_mask_type_rules(src, values, message):
    with pytest.raises(OpTypeError) as exc:
        R["tile.gather_mask"].type_rule(info("tile.gather_mask", {"src": src}, values))
    assert message in exc.value.message


# -------------------------------------------------------------------- gatherb


@pytest.mark.parametrize(("src_dt", "out_dt"), [(D.FP32, D.FP32), (D.INT8, D.INT8),
                                                (D.FP16, D.UINT16), (D.INT32, D.FP32)])
def test_gatherb_copies_32_byte_blocks_at_byte_offsets(src_dt, out_dt):
    per_src = 32 // src_dt.itemsize
    src = np.arange(16 * per_src).astype(src_dt.np).reshape(1, -1)
    offsets = ((15 - np.arange(16)) * 32).astype(np.uint32).reshape(2, 8)
    t = R["tile.gatherb"].type_rule(info("tile.gatherb", {
        "src": tt(src.shape, src_dt), "offset": tt((2, 8), D.UINT32, (2, 5))},
        {"output_dtype": out_dt}))
    per = 32 // out_dt.itemsize
    assert t.shape == (2, 8 * per) and t.valid == (2, 5 * per) and t.dtype is out_dt
    out = apply(R["tile.gatherb"], tv(src, src_dt), tv(offsets, D.UINT32, (2, 5)),
                output_dtype=out_dt, out=t.with_(space="Vec"))
    raw = src.reshape(-1).view(np.uint8)
    want = np.stack([raw[o:o + 32] for o in offsets[:, :5].reshape(-1)]).view(out_dt.np)
    np.testing.assert_array_equal(out.data[:, :5 * per].reshape(-1), want.reshape(-1))


def test_gatherb_block_past_the_source_is_an_index_error():
    offsets = np.zeros((1, 8), np.uint32)
    offsets[0, 2] = 40
    with pytest.raises(OpIndexError, match="byte offset 40 at position \\[0, 2\\] reads past src"):
        apply(R["tile.gatherb"], tv(np.zeros((1, 16), np.float32), D.FP32), tv(offsets, D.UINT32),
              out=tt((1, 64), D.FP32, space="Vec"))


@pytest.mark.parametrize(("types", "message"), [
    ({"src": tt((1, 64), D.FP32), "offset": tt((1, 8), D.INT32)}, "requires offset dtype UINT32"),
    ({"src": tt((1, 64), D.FP32), "offset": tt((1, 6), D.UINT32)}, "positive multiple of 8"),
    ({"src": tt((1, 64), D.INT64), "offset": tt((1, 8), D.UINT32)}, "requires src dtype"),
])
def test_gatherb_type_rules(types, message):
    with pytest.raises(OpTypeError) as exc:
        R["tile.gatherb"].type_rule(info("tile.gatherb", types))
    assert message in exc.value.message


# ----------------------------------------------------------------- gather_row


def test_gather_row_copies_a_window_in_place_and_transposes():
    src = np.arange(8 * 16, dtype=np.float16).reshape(8, 16)
    dst = tv(np.full((4, 16), -1), D.FP16, space="Mat")
    res = apply(R["tile.gather_row"], dst, src, dst_offset=(1, 0), src_offset=(5, 0),
                shapes=(1, 16))
    assert res is dst
    np.testing.assert_array_equal(dst.data[1], src[5])
    assert (dst.data[[0, 2, 3]] == -1).all()
    apply(R["tile.gather_row"], dst, src, dst_offset=(0, 0), src_offset=(0, 0), shapes=(4, 16),
          valid_shape=(2, 16))
    np.testing.assert_array_equal(dst.data[:2], src[:2])
    col = tv(np.zeros((16, 4)), D.FP16, space="Mat")
    apply(R["tile.gather_row"], col, src, dst_offset=(0, 2), src_offset=(3, 0), shapes=(1, 16),
          transpose=True)
    np.testing.assert_array_equal(col.data[:, 2], src[3])
    with pytest.raises(OpIndexError, match="outside src"):
        apply(R["tile.gather_row"], dst, src, dst_offset=(0, 0), src_offset=(8, 0), shapes=(1, 16))


def test_gather_row_type_rules():
    base = {"dst": tt((4, 16), D.FP16), "src": TensorType((8, 16), D.FP16)}
    ok = {"dst_offset": (0, 0), "src_offset": (0, 0), "shapes": (1, 16)}
    with pytest.raises(OpTypeError, match="dst dtype \\(FP32\\) to match src dtype \\(FP16\\)"):
        R["tile.gather_row"].type_rule(info("tile.gather_row",
                                            {**base, "dst": tt((4, 16), D.FP32)}, ok))
    with pytest.raises(OpTypeError, match="writes past dst"):
        R["tile.gather_row"].type_rule(info("tile.gather_row", base, {**ok, "dst_offset": (4, 0)}))
    with pytest.raises(OpTypeError, match="valid_shape together with transpose"):
        R["tile.gather_row"].type_rule(info("tile.gather_row", base,
                                            {**ok, "transpose": True, "valid_shape": (1, 16)}))


# -------------------------------------------------------------------- mgather


@pytest.mark.parametrize("oob", ["clamp", "wrap", "zero"])
def test_mgather_rows_and_elements_with_each_oob_rule(oob):
    mem = np.arange(10 * 8, dtype=np.float32).reshape(10, 8)
    idx = np.array([[3, 12, 0, 9]], np.int32)
    bound = {"clamp": lambda i, n: np.minimum(i, n - 1), "wrap": lambda i, n: i % n,
             "zero": lambda i, n: np.where(i < n, i, -1)}[oob]
    t = R["tile.mgather"].type_rule(info("tile.mgather", {"mem": TensorType((10, 8), D.FP32),
                                                          "idx": tt((1, 4), D.INT32)},
                                         {"coalesce": "row", "gather_oob": oob}))
    assert t.shape == (4, 8)
    out = apply(R["tile.mgather"], mem, tv(idx, D.INT32), coalesce="row", gather_oob=oob, out=t)
    rows = bound(idx[0], 10)
    want = np.stack([mem[r] if r >= 0 else np.zeros(8, np.float32) for r in rows])
    np.testing.assert_array_equal(out.data, want)
    eidx = np.array([[5, 79], [80, 100]], np.int32)
    te = R["tile.mgather"].type_rule(info("tile.mgather", {"mem": TensorType((10, 8), D.FP32),
                                                           "idx": tt((2, 2), D.INT32)},
                                          {"coalesce": "elem", "gather_oob": oob}))
    oute = apply(R["tile.mgather"], mem, tv(eidx, D.INT32), coalesce="elem", gather_oob=oob,
                 out=te)
    flat = bound(eidx, 80)
    np.testing.assert_array_equal(oute.data, np.where(flat >= 0, mem.reshape(-1)[flat], 0))


def test_mgather_undefined_oob_is_an_index_error():
    with pytest.raises(OpIndexError, match="index 12 at position \\[1\\]"):
        apply(R["tile.mgather"], np.zeros((10, 8), np.float32),
              tv(np.array([[3, 12]], np.int32), D.INT32), coalesce="row",
              out=tt((2, 8), D.FP32, space="Vec"))


def test_mgather_fp8_and_column_index_forms_are_a5_only(arch):
    fp8 = info("tile.mgather", {"mem": TensorType((10, 32), D.FP8E4M3FN), "idx": tt((1, 4), D.INT32)},
               {"coalesce": "row", "gather_oob": "undefined"}, arch)
    column = info("tile.mgather", {"mem": TensorType((10, 32), D.FP32), "idx": tt((4, 1), D.INT32)},
                  {"coalesce": "row", "gather_oob": "undefined"}, arch)
    for call in (fp8, column):
        if arch.name == "a5":
            R["tile.mgather"].arch_rule(arch, call)
        else:
            with pytest.raises(OpArchError, match="on the 'a2a3' backend"):
                R["tile.mgather"].arch_rule(arch, call)


@pytest.mark.parametrize(("types", "values", "message"), [
    ({"mem": TensorType((10, 8), D.FP32), "idx": tt((1, 4), D.INT16)}, {},
     "requires idx dtype to be INT32"),
    ({"mem": TensorType((10, 8), D.FP32), "idx": tt((2, 4), D.INT32)}, {"coalesce": "row"},
     "[1, R] or [R, 1] idx shape"),
    ({"mem": TensorType((10, 8), D.FP32), "idx": tt((1, 4), D.INT32)}, {"gather_oob": "saturate"},
     "requires gather_oob in"),
    ({"mem": TensorType((80,), D.FP32), "idx": tt((1, 4), D.INT32)}, {"coalesce": "row"},
     "row mode requires mem rank >= 2"),
    ({"mem": TensorType((10, 8), D.INT64), "idx": tt((1, 4), D.INT32)}, {}, "requires mem dtype"),
])
def test_mgather_type_rules(types, values, message):
    values = {"coalesce": "row", "gather_oob": "undefined", **values}
    with pytest.raises(OpTypeError) as exc:
        R["tile.mgather"].type_rule(info("tile.mgather", types, values))
    assert message in exc.value.message


# -------------------------------------------------------------------- scatter


@settings(max_examples=30, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16, D.BF16, D.INT8, D.INT16, D.INT32)),
       rows=st.integers(1, 4), cols=st.integers(1, 8), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_scatter_writes_dst_flat_last_write_wins(dtype, rows, cols, data, seed):
    rng = np.random.default_rng(seed)
    idx_dt = D.INT32 if dtype.itemsize == 4 else D.INT16
    vr, vc = data.draw(st.integers(0, rows)), data.draw(st.integers(0, cols))
    base = random_data(rng, (4, 8), dtype)
    src = random_data(rng, (rows, cols), dtype)
    idx = rng.integers(0, 32, (rows, cols)).astype(idx_dt.np)
    dst = tv(base, dtype)
    res = apply(R["tile.scatter"], dst, tv(src, dtype, (vr, vc)), tv(idx, idx_dt))
    want = base.copy().reshape(-1)
    for i in range(vr):
        for j in range(vc):
            want[idx[i, j]] = src[i, j]
    assert res is dst
    np.testing.assert_array_equal(dst.data.reshape(-1).astype(np.float64), want.astype(np.float64))


def test_scatter_index_past_dst_is_an_index_error():
    with pytest.raises(OpIndexError, match="index -1 at position \\[0, 1\\]"):
        apply(R["tile.scatter"], tv(np.zeros((2, 8)), D.FP32), tv(np.ones((1, 2)), D.FP32),
              tv(np.array([[0, -1]]), D.INT32))


@pytest.mark.parametrize(("types", "message"), [
    ({"dst": tt((2, 8), D.FP32), "src": tt((1, 4), D.FP32), "indexes": tt((1, 4), D.INT16)},
     "with dst dtype FP32 (4 bytes) requires indexes dtype of 4 bytes, but got INT16"),
    ({"dst": tt((2, 8), D.INT8), "src": tt((1, 4), D.INT8), "indexes": tt((1, 4), D.INT32)},
     "requires indexes dtype of 2 bytes"),
    ({"dst": tt((2, 8), D.FP32), "src": tt((1, 4), D.FP16), "indexes": tt((1, 4), D.INT32)},
     "dst and src in one dtype"),
    ({"dst": tt((2, 8), D.FP32), "src": tt((1, 4), D.FP32), "indexes": tt((1, 2), D.INT32)},
     "indexes of src's shape [1, 4]"),
    ({"dst": tt((2, 8), D.UINT32), "src": tt((1, 4), D.UINT32), "indexes": tt((1, 4), D.INT32)},
     "requires dst dtype"),
])
def test_scatter_type_rules(types, message):
    with pytest.raises(OpTypeError) as exc:
        R["tile.scatter"].type_rule(info("tile.scatter", types))
    assert message in exc.value.message


@pytest.mark.parametrize(("pattern", "start", "stride"), [(1, 0, 2), (2, 1, 2), (5, 2, 4)])
def test_scatter_mask_places_rows_in_marked_columns(pattern, start, stride):
    src = np.arange(12, dtype=np.float32).reshape(3, 4) + 1
    dst = tv(np.full((3, 4 * stride), -5.0), D.FP32)
    apply(R["tile.scatter_mask"], dst, tv(src, D.FP32), mask_pattern=pattern)
    want = np.full((3, 4 * stride), -5.0, np.float32)
    want[:, start::stride] = src
    np.testing.assert_array_equal(dst.data, want)
    with pytest.raises(OpTypeError, match=f"dst.shape\\[1\\] \\(8\\) == src.shape\\[1\\] \\(4\\) \\* {stride}"
                       if stride != 2 else "mask_pattern in range"):
        R["tile.scatter_mask"].type_rule(info("tile.scatter_mask", {
            "dst": tt((3, 8), D.FP32), "src": tt((3, 4), D.FP32)},
            {"mask_pattern": pattern if stride != 2 else 0}))


@pytest.mark.parametrize("rank", [2, 4])
def test_scatter_update_replaces_rows_by_index(rank):
    rng = np.random.default_rng(rank)
    base = random_data(rng, (8, 4), D.FP16)
    src = random_data(rng, (6, 4), D.FP16)
    index = np.array([[7, 2, 5], [0, 3, 6]], np.int32)
    shape_in = (8, 4) if rank == 2 else (2, 4, 1, 4)
    shape_src = (6, 4) if rank == 2 else (2, 3, 1, 4)
    inp = tv(base.reshape(shape_in), D.FP16)
    t = R["tile.scatter_update"].type_rule(info("tile.scatter_update", {
        "input": tt(shape_in, D.FP16), "index": tt((2, 3), D.INT32), "src": tt(shape_src, D.FP16)},
        {"dim": -2}))
    assert t.shape == shape_in
    apply(R["tile.scatter_update"], inp, tv(index, D.INT32), tv(src.reshape(shape_src), D.FP16))
    want = base.copy()
    want[index.reshape(-1)] = src
    np.testing.assert_array_equal(inp.data.reshape(8, 4), want)
    with pytest.raises(OpIndexError, match="index 8"):
        apply(R["tile.scatter_update"], inp, tv(index + 1, D.INT32),
              tv(src.reshape(shape_src), D.FP16))


def test_scatter_update_type_rules():
    ok = {"input": tt((8, 4), D.FP16), "index": tt((2, 3), D.INT32), "src": tt((6, 4), D.FP16)}
    for change, values, message in [
        ({}, {"dim": 0}, "supports only dim=-2"),
        ({"input": tt((2, 8, 4), D.FP16)}, {}, "input to be 2D or 4D"),
        ({"src": tt((6, 4), D.FP32)}, {}, "input and src in one dtype"),
        ({"index": tt((2, 3), D.FP32)}, {}, "integer index dtype"),
        ({"src": tt((4, 4), D.FP16)}, {}, "one row per index"),
    ]:
        with pytest.raises(OpTypeError) as exc:
            R["tile.scatter_update"].type_rule(info("tile.scatter_update", {**ok, **change},
                                                    {"dim": -2, **values}))
        assert message in exc.value.message


# -------------------------------------------------------------------- mscatter


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16, D.INT16, D.INT32], ids=lambda d: d.name)
def test_mscatter_stores_each_element_at_its_flat_index(dtype):
    rng = np.random.default_rng(5)
    src = random_data(rng, (4, 8), dtype)
    idx = rng.permutation(64)[:32].reshape(4, 8).astype(np.int32)
    out = np.zeros((8, 8), dtype.np)
    res = apply(R["tile.mscatter"], tv(src, dtype, (3, 8)), tv(idx, D.INT32, (3, 8)), out)
    assert res is out
    want = np.zeros(64, dtype.np)
    want[idx[:3].reshape(-1)] = src[:3].reshape(-1)
    np.testing.assert_array_equal(out.reshape(-1), want)
    with pytest.raises(OpIndexError, match="index 64 .* output_tensor of 64 elements"):
        apply(R["tile.mscatter"], tv(src, dtype), tv(np.full((4, 8), 64), D.INT32), out)


@pytest.mark.parametrize(("types", "message"), [
    ({"src": tt((4, 8), D.INT8), "idx": tt((4, 8), D.INT32)}, "requires src dtype"),
    ({"src": tt((4, 8), D.FP32), "idx": tt((4, 8), D.INT16)}, "requires idx dtype INT32"),
    ({"src": tt((4, 8), D.FP32), "idx": tt((4, 4), D.INT32)}, "idx of src's shape"),
    ({"src": tt((4, 8), D.FP16), "idx": tt((4, 8), D.INT32)}, "output_tensor dtype (FP32)"),
])
def test_mscatter_type_rules(types, message):
    with pytest.raises(OpTypeError) as exc:
        R["tile.mscatter"].type_rule(info("tile.mscatter", {
            **types, "output_tensor": TensorType((64,), D.FP32)}))
    assert message in exc.value.message


def test_mscatter_is_a5_only_in_the_arch_table():
    a2a3, a5 = ARCHS
    assert "tile.mscatter" in a2a3.unavailable_ops and "tile.mscatter" not in a5.unavailable_ops


@pytest.mark.parametrize(("types", "values", "message"), [
    ({"mem": TensorType((40, 32), D.FP16), "idx": tt((1, 16), D.INT32)},
     {"target_memory": "Mat"}, "with Mat output requires idx to be a GM INT32 index tensor"),
    ({"mem": TensorType((40, 32), D.FP16), "idx": TensorType((1, 16), D.INT32)}, {},
     "with Vec output requires idx to be an INT32 index tile"),
    ({"mem": TensorType((40, 32), D.FP16), "idx": TensorType((2, 16), D.INT32)},
     {"target_memory": "Mat"}, "Mat row mode requires a [1, R] GM idx tensor"),
    ({"mem": TensorType((40, 32), D.FP16), "idx": TensorType((1, 8), D.INT32)},
     {"target_memory": "Mat"}, "Mat output must be [16k, 16k] for FP16"),
    ({"mem": TensorType((512,), D.FP16), "idx": TensorType((16, 32), D.INT32),
      "scratch": TensorType((500,), D.FP16)},
     {"target_memory": "Mat", "coalesce": "elem"}, "scratch requires at least 512 elements"),
    ({"mem": TensorType((512,), D.FP16), "idx": TensorType((16, 32), D.INT32),
      "scratch": TensorType((512,), D.FP32)},
     {"target_memory": "Mat", "coalesce": "elem"}, "scratch dtype must match mem dtype"),
    ({"mem": TensorType((512,), D.FP16), "idx": TensorType((16, 32), D.INT32)},
     {"target_memory": "Mat", "coalesce": "elem"}, "takes scratch exactly in Mat elem mode"),
    ({"mem": TensorType((40, 32), D.FP16), "idx": TensorType((1, 16), D.INT32)},
     {"target_memory": "Mat", "valid_shape": (17, 32)},
     "0 < Mat valid_shape[0] <= output_shape[0], but got 17 and 16"),
], ids=["mat-tile-idx", "vec-tensor-idx", "mat-row-2d", "mat-rows-16", "small-scratch",
        "scratch-dtype", "no-scratch", "valid-too-big"])
def test_mgather_mat_and_vec_index_forms_are_checked(types, values, message):
    values = {"coalesce": "row", "gather_oob": "undefined", **values}
    with pytest.raises(OpTypeError) as exc:
        R["tile.mgather"].type_rule(info("tile.mgather", types, values))
    assert message in exc.value.message


def test_mgather_mat_result_takes_the_index_tensor_shape_and_valid_shape():
    t = R["tile.mgather"].type_rule(info(
        "tile.mgather", {"mem": TensorType((40, 32), D.FP16), "idx": TensorType((1, 16), D.INT32)},
        {"coalesce": "row", "gather_oob": "undefined", "target_memory": "Mat",
         "valid_shape": (8, 32)}))
    assert (t.shape, t.valid, t.space) == ((16, 32), (8, 32), "Mat")
