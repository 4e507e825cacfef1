"""Views and element access: slice, reshape, transpose(_view), set_validshape, assemble,
read/write, their tensor forms, and the N-D store rule; each against plain numpy."""

from __future__ import annotations

import math

import numpy as np
import pytest
from ophelpers import ARCHS, assert_poisoned_outside, info, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.ops._rules import OpBoundsError
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpTypeError
from pytest_pypto.ir.types import ScalarType, TensorType, TileType

A2A3, A5 = ARCHS


def op(name):
    return REGISTRY[name]


def rule(name, types=None, values=None, arch=None, bounds=None):
    i = info(name, types, values, arch)
    if bounds:
        i.bounds.update(bounds)
    return op(name).type_rule(i)


# ----------------------------------------------------------------------- slice


def test_slice_valid_is_requested_cut_by_the_shifted_source_valid():
    src = tt((16, 32), D.FP32, valid=(10, 20), space="Mat")
    t = rule("tile.slice", {"tile": src}, {"shape": (8, 16), "offset": (4, 8)})
    assert t == TileType((8, 16), D.FP32, "Mat", (6, 12))  # min(8, 10-4), min(16, 20-8)
    t = rule("tile.slice", {"tile": src},
             {"shape": (8, 16), "offset": (0, 0), "valid_shape": (5, 16)})
    assert t.valid == (5, 16)
    t = rule("tile.slice", {"tile": src}, {"shape": (4, 8), "offset": (12, 24)})
    assert t.valid == (0, 0)  # entirely outside the source's valid region
    t = rule("tile.slice", {"tile": src}, {"shape": (4, 8), "offset": (None, 0)})
    assert t.valid == (None, 8)  # dynamic offset: known at run time


def test_slice_is_a_view_sharing_the_source_buffer():
    a = np.arange(8 * 8, dtype=np.float32).reshape(8, 8)
    src = tv(a, D.FP32, valid=(6, 8))
    v = op("tile.slice").execute(src, shape=(4, 4), offset=(4, 2))
    assert v.valid == (2, 4)
    np.testing.assert_array_equal(v.valid_view(), a[4:6, 2:6])
    v.data[0, 0] = -1.0
    assert src.data[4, 2] == -1.0  # zero-copy, as PyPTO's view


def test_slice_drop_dims_and_the_2d_floor():
    src = tt((4, 16), D.FP32)
    t = rule("tile.slice", {"tile": src}, {"shape": (1, 16), "offset": (2, 0), "drop_dims": (0,)})
    assert t.shape == (1, 16) and t.valid == (1, 16)  # dropped, then floored back to 2-D
    src3 = tt((2, 4, 16), D.FP32)
    t = rule("tile.slice", {"tile": src3},
             {"shape": (1, 4, 16), "offset": (1, 0, 0), "drop_dims": (0,)})
    assert t.shape == (4, 16)
    a = np.arange(2 * 4 * 16, dtype=np.float32).reshape(2, 4, 16)
    v = op("tile.slice").execute(tv(a, D.FP32), shape=(1, 4, 16), offset=(1, 0, 0),
                                 drop_dims=(0,), out=t)
    np.testing.assert_array_equal(v.data, a[1])
    with pytest.raises(OpTypeError, match="can drop only unit axes, but dimension 1 has extent 4"):
        rule("tile.slice", {"tile": src3},
             {"shape": (1, 4, 16), "offset": (0, 0, 0), "drop_dims": (1,)})


def test_slice_pad_value_paints_a_copy_and_leaves_the_source():
    a = np.arange(4 * 8, dtype=np.float32).reshape(4, 8)
    src = tv(a, D.FP32)
    out = rule("tile.slice", {"tile": tt((4, 8), D.FP32)},
               {"shape": (4, 8), "offset": (0, 0), "valid_shape": (2, 8), "pad_value": "min"})
    assert out.pad == "min" and out.valid == (2, 8)
    v = op("tile.slice").execute(src, shape=(4, 8), offset=(0, 0), valid_shape=(2, 8),
                                 pad_value="min", out=out)
    assert np.isneginf(v.data[2:]).all()
    np.testing.assert_array_equal(src.data, a)  # the source keeps its cells
    for literal, name in ((0, "zero"), (math.inf, "max"), (-math.inf, "min")):
        t = rule("tile.slice", {"tile": tt((4, 8), D.FP32)},
                 {"shape": (4, 8), "offset": (0, 0), "valid_shape": (1, 8), "pad_value": literal})
        assert t.pad == name
    with pytest.raises(OpTypeError, match="pad_value pl.PadValue.zero/min/max"):
        rule("tile.slice", {"tile": tt((4, 8), D.FP32)},
             {"shape": (4, 8), "offset": (0, 0), "pad_value": 3.5})


def test_tile_slice_rejects_clamp_and_windows_past_the_tile():
    src = tt((16, 16), D.FP32)
    with pytest.raises(OpTypeError, match="does not take clamp=True"):
        rule("tile.slice", {"tile": src}, {"shape": (8, 8), "offset": (0, 0), "clamp": True})
    with pytest.raises(OpTypeError, match="dimension 1 has offset 12 \\+ extent 8 > source extent 16"):
        rule("tile.slice", {"tile": src}, {"shape": (8, 8), "offset": (0, 12)})
    # A loop-variable offset is checked over its whole range at compile time ...
    with pytest.raises(OpBoundsError, match="offset 12 \\+ extent 8 > source tile extent 16"):
        rule("tile.slice", {"tile": src}, {"shape": (8, 8), "offset": (0, None)}, arch=A2A3,
             bounds={"offset": ((0, 0), (0, 12))})
    # ... and a dynamic one at run time.
    with pytest.raises(OpBoundsError, match="offset 9 \\+ extent 8 > source tile extent 16"):
        op("tile.slice").execute(tv(np.zeros((16, 16)), D.FP32), shape=(8, 8), offset=(0, 9))


# ----------------------------------------------------------------------- reshape


@pytest.mark.parametrize(("shape", "valid", "target", "want"), [
    ((4, 16), (4, 16), (8, 8), (8, 8)),          # fully valid stays fully valid
    ((4, 16), (0, 16), (8, 8), (0, 0)),          # empty stays empty
    ((1, 16), (1, 5), (16, 1), (5, 1)),          # unit-axis change keeps the rectangle
    ((4, 16), (3, 7), (1, 4, 16), (1, 3, 7)),
    ((4, 16), (2, 16), (8, 8), (4, 8)),          # a row-major prefix of 32 cells
    ((4, 16), (2, 16), (64, 1), (32, 1)),
])
def test_reshape_maps_valid_regions_without_widening(shape, valid, target, want):
    t = rule("tile.reshape", {"tile": tt(shape, D.FP32, valid=valid)}, {"shape": target})
    assert t.shape == target and t.valid == want
    # independent check: the valid cells are the same cells of the flat buffer
    flat = np.zeros(shape, bool)
    flat[tuple(slice(0, v) for v in valid)] = True
    got = np.zeros(target, bool)
    got[tuple(slice(0, v) for v in want)] = True
    np.testing.assert_array_equal(flat.reshape(-1), got.reshape(-1))


def test_reshape_rejects_regions_no_rectangle_describes_and_count_changes():
    with pytest.raises(OpTypeError, match="cannot map valid region \\[3, 7\\] of shape \\[4, 16\\] onto"):
        rule("tile.reshape", {"tile": tt((4, 16), D.FP32, valid=(3, 7))}, {"shape": (8, 8)})
    with pytest.raises(OpTypeError, match="same element count"):
        rule("tile.reshape", {"tile": tt((4, 16), D.FP32)}, {"shape": (8, 16)})


def test_reshape_execute_is_a_view_in_the_new_shape():
    a = np.arange(64, dtype=np.int32).reshape(4, 16)
    src = tv(a, D.INT32)
    r = op("tile.reshape").execute(src, shape=(16, 4))
    np.testing.assert_array_equal(r.data, a.reshape(16, 4))
    assert r.valid == (16, 4) and np.shares_memory(r.data, src.data)


# --------------------------------------------------------------------- transpose


def test_transpose_copies_with_swapped_axes_and_valid():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    src = tv(a, D.FP32, valid=(5, 16))
    out = rule("tile.transpose", {"tile": tt((8, 16), D.FP32, valid=(5, 16))},
               {"axis1": 0, "axis2": -1})
    assert out.shape == (16, 8) and out.valid == (16, 5)
    t = apply(op("tile.transpose"), src, None, axis1=0, axis2=1, out=out.with_(space="Vec"))
    np.testing.assert_array_equal(t.data[:, :5], a[:5].T)
    assert_poisoned_outside(t)
    assert not np.shares_memory(t.data, src.data)
    with pytest.raises(OpTypeError, match="two different axes, but both name axis 1"):
        rule("tile.transpose", {"tile": tt((8, 16), D.FP32)}, {"axis1": 1, "axis2": -1})
    with pytest.raises(OpTypeError, match="'axis2' in \\[-2, 1\\]"):
        rule("tile.transpose", {"tile": tt((8, 16), D.FP32)}, {"axis1": 0, "axis2": 2})


def test_transpose_view_swaps_the_trailing_axes_zero_copy():
    a = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8)
    t = rule("tile.transpose_view", {"tile": tt((2, 4, 8), D.FP32, valid=(2, 3, 8), space="Mat")})
    assert t.shape == (2, 8, 4) and t.valid == (2, 8, 3) and t.space == "Mat"
    v = op("tile.transpose_view").execute(tv(a, D.FP32, space="Mat"))
    np.testing.assert_array_equal(v.data, np.swapaxes(a, 1, 2))
    assert op("tile.transpose_view").mem.operands["tile"] == ("Mat",)
    with pytest.raises(OpTypeError, match="rank >= 2"):
        rule("tile.transpose_view", {"tile": tt((8,), D.FP32)})


# ----------------------------------------------------------------- set_validshape


def test_set_validshape_is_metadata_over_the_same_buffer():
    t = rule("tile.set_validshape",
             {"tile": tt((16, 32), D.FP16), "valid_rows": ScalarType(D.INDEX),
              "valid_cols": ScalarType(D.INDEX)}, {"valid_rows": 9, "valid_cols": 17})
    assert t.valid == (9, 17) and t.shape == (16, 32)
    dyn = rule("tile.set_validshape", {"tile": tt((16, 32), D.FP16),
                                       "valid_rows": ScalarType(D.INDEX),
                                       "valid_cols": ScalarType(D.INDEX)})
    assert dyn.valid == (None, None)
    src = tv(np.ones((16, 32)), D.FP16)
    v = op("tile.set_validshape").execute(src, 3, 4)
    assert v.valid == (3, 4) and v.data is src.data
    with pytest.raises(OpTypeError, match="0 <= valid_cols <= 32, but got 33"):
        rule("tile.set_validshape", {"tile": tt((16, 32), D.FP16)},
             {"valid_rows": 1, "valid_cols": 33})
    with pytest.raises(OpBoundsError, match="valid extent 17 of dimension 0 is outside 0..16"):
        op("tile.set_validshape").execute(src, 17, 4)
    with pytest.raises(OpTypeError, match="requires a 2-D tile"):
        rule("tile.set_validshape", {"tile": tt((2, 4, 8), D.FP16)},
             {"valid_rows": 1, "valid_cols": 1})


# ----------------------------------------------------------------------- assemble


def test_tile_assemble_writes_the_source_valid_region_in_place():
    dst_a = np.zeros((8, 8), np.float32)
    src_a = np.arange(16, dtype=np.float32).reshape(4, 4)
    dst, src = tv(dst_a, D.FP32), tv(src_a, D.FP32, valid=(2, 3))
    t = rule("tile.assemble", {"target": tt((8, 8), D.FP32), "source": tt((4, 4), D.FP32, (2, 3))},
             {"offset": (6, 5)})
    assert t.shape == (8, 8)
    r = op("tile.assemble").execute(dst, src, offset=(6, 5))
    want = np.zeros((8, 8), np.float32)
    want[6:8, 5:8] = src_a[:2, :3]
    np.testing.assert_array_equal(r.data, want)
    with pytest.raises(OpTypeError, match="dimension 1 has 6 \\+ 3 > 8"):
        rule("tile.assemble", {"target": tt((8, 8), D.FP32),
                               "source": tt((4, 4), D.FP32, (2, 3))}, {"offset": (0, 6)})
    with pytest.raises(OpTypeError, match="in one dtype"):
        rule("tile.assemble", {"target": tt((8, 8), D.FP32), "source": tt((4, 4), D.FP16)},
             {"offset": (0, 0)})
    assert "tile.assemble" not in A2A3.unavailable_ops and "tile.assemble" not in A5.unavailable_ops


# -------------------------------------------------------------------- read / write


def test_tile_read_and_write_elements():
    a = np.arange(32, dtype=np.int16).reshape(4, 8)
    src = tv(a, D.INT16)
    assert rule("tile.read", {"tile": tt((4, 8), D.INT16)}, {"indices": (3, 7)}) == ScalarType(D.INT16)
    assert op("tile.read").execute(src, indices=(3, 7)) == 31
    op("tile.write").execute(src, -5, indices=(1, 2))
    assert src.data[1, 2] == -5
    with pytest.raises(OpBoundsError, match="index 8 is outside dimension 1 of extent 8"):
        op("tile.read").execute(src, indices=(0, 8))
    with pytest.raises(OpTypeError, match="one index per dimension \\(2\\), but got 1"):
        rule("tile.read", {"tile": tt((4, 8), D.INT16)}, {"indices": (1,)})
    with pytest.raises(OpTypeError, match="destination dtype INT16, but got FP32"):
        rule("tile.write", {"tile": tt((4, 8), D.INT16), "value": ScalarType(D.FP32)},
             {"indices": (0, 0)})
    # an int literal converts to the int tile's dtype
    rule("tile.write", {"tile": tt((4, 8), D.INT16), "value": ScalarType(D.INDEX)},
         {"indices": (0, 0), "value": 7})
    with pytest.raises(OpBoundsError, match="reaches past the end of dimension 0"):
        rule("tile.write", {"tile": tt((4, 8), D.INT16), "value": ScalarType(D.INT16)},
             {"indices": (None, 0)}, arch=A5, bounds={"indices": ((0, 4), (0, 0))})


# ------------------------------------------------------------------ tensor forms


def test_tensor_slice_reshape_transpose_are_views():
    a = np.arange(6 * 8, dtype=np.float32).reshape(6, 8)
    x = TensorType((6, 8), D.FP32)
    assert rule("tensor.slice", {"tensor": x}, {"shape": (2, 4), "offset": (1, 4)}) == \
        TensorType((2, 4), D.FP32)
    v = op("tensor.slice").execute(a, shape=(2, 4), offset=(1, 4))
    np.testing.assert_array_equal(v, a[1:3, 4:8])
    assert np.shares_memory(v, a)
    row = op("tensor.slice").execute(a, shape=(1, 8), offset=(5, 0), drop_dims=(0,))
    np.testing.assert_array_equal(row, a[5])
    assert rule("tensor.slice", {"tensor": x},
                {"shape": (1, 8), "offset": (5, 0), "drop_dims": (0,)}).shape == (8,)
    r = op("tensor.reshape").execute(a, shape=(3, 16))
    r[0, 0] = -1.0
    assert a[0, 0] == -1.0  # a view: writes reach the tensor
    t = op("tensor.transpose").execute(a, axis1=0, axis2=1)
    np.testing.assert_array_equal(t, a.T)
    assert rule("tensor.transpose", {"tensor": x}, {"axis1": -1, "axis2": 0}).shape == (8, 6)
    with pytest.raises(OpBoundsError, match="offset 4 \\+ extent 4 > source extent 6"):
        op("tensor.slice").execute(a, shape=(4, 4), offset=(4, 0))
    with pytest.raises(OpTypeError, match="same element count"):
        rule("tensor.reshape", {"tensor": x}, {"shape": (5, 8)})


def test_tensor_slice_valid_shape_and_clamp_narrow_the_valid_region():
    x = TensorType((6, 8), D.FP32)
    t = rule("tensor.slice", {"tensor": x},
             {"shape": (4, 8), "offset": (0, 0), "valid_shape": (2, 8)})
    assert (t.shape, t.valid) == ((4, 8), (2, 8))
    # clamp=True: the window overhanging the source is valid only inside it
    t = rule("tensor.slice", {"tensor": x}, {"shape": (4, 8), "offset": (4, 0), "clamp": True})
    assert (t.shape, t.valid) == ((4, 8), (2, 8))
    with pytest.raises(OpTypeError, match="reads past the end of dimension 0: offset 4 \\+ extent 4"):
        rule("tensor.slice", {"tensor": x}, {"shape": (4, 8), "offset": (4, 0)})
    # clamp=True that stays inside the source is a plain window
    t = rule("tensor.slice", {"tensor": x}, {"shape": (2, 8), "offset": (4, 0), "clamp": True})
    assert (t.shape, t.valid) == ((2, 8), None)


def test_tensor_assemble_writes_a_lower_rank_source_into_the_trailing_axes():
    dst = np.zeros((2, 4, 16), np.float32)
    src = np.arange(64, dtype=np.float32).reshape(4, 16)
    t = rule("tensor.assemble", {"target": TensorType((2, 4, 16), D.FP32),
                                 "source": TensorType((4, 16), D.FP32)}, {"offset": (1, 0, 0)})
    assert t == TensorType((2, 4, 16), D.FP32)
    op("tensor.assemble").execute(dst, src, offset=(1, 0, 0))
    np.testing.assert_array_equal(dst[1], src)
    assert not dst[0].any()
    op("tensor.assemble").execute(dst, src, offset=(1, 0, 0), atomic="Add")
    np.testing.assert_array_equal(dst[1], 2 * src)
    with pytest.raises(OpBoundsError, match="offset 2 \\+ extent 1 > target extent 2"):
        op("tensor.assemble").execute(dst, src, offset=(2, 0, 0))
    with pytest.raises(OpTypeError, match="source and target in one dtype"):
        rule("tensor.assemble", {"target": TensorType((4, 16), D.FP32),
                                 "source": TensorType((4, 16), D.FP16)}, {"offset": (0, 0)})
    info_ = info("tensor.assemble", {"target": TensorType((4, 16), D.BF16),
                                     "source": TensorType((4, 16), D.BF16)},
                 {"offset": (0, 0), "atomic": "Add"})
    op("tensor.assemble").arch_rule(A2A3, info_)  # bf16 atomic add exists on a2a3 ...
    with pytest.raises(OpArchError, match="BF16 tensor, which the 'a5' backend cannot do") as ei:
        op("tensor.assemble").arch_rule(A5, info_)  # ... not on a5
    assert ei.value.hint == "accumulate in fp32, cast after"


# --------------------------------------------------------------- N-D store rule


def test_store_takes_a_lower_rank_tile_into_the_trailing_axes():
    dst = np.zeros((2, 4, 16), np.float32)
    a = np.arange(16, dtype=np.float32).reshape(1, 16)
    store = op("tile.store")
    t = store.type_rule(info("tile.store", {"tile": tt((1, 16), D.FP32, space="Vec"),
                                            "output_tensor": TensorType((2, 4, 16), D.FP32)},
                             {"offsets": (1, 2, 0)}))
    assert t == TensorType((2, 4, 16), D.FP32)
    store.execute(tv(a, D.FP32), dst, offsets=(1, 2, 0))
    np.testing.assert_array_equal(dst[1, 2], a[0])
    assert np.count_nonzero(dst) == 15  # a[0, 0] is 0; nothing else was written
    with pytest.raises(OpTypeError, match="tile rank to be at most the tensor rank"):
        store.type_rule(info("tile.store", {"tile": tt((2, 4, 16), D.FP32),
                                            "output_tensor": TensorType((4, 16), D.FP32)},
                             {"offsets": (0, 0)}))
    with pytest.raises(OpBoundsError, match="offset 2 \\+ extent 1 > destination extent 2"):
        store.type_rule(info("tile.store", {"tile": tt((1, 16), D.FP32),
                                            "output_tensor": TensorType((2, 4, 16), D.FP32)},
                             {"offsets": (2, 0, 0)}, A2A3))
