"""load / store / move / create / full: windows, valid regions, poison, rules."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ophelpers import ARCHS, assert_poisoned_outside, info, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.ops._rules import OpBoundsError
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpSpaceError, OpTypeError
from pytest_pypto.ir.types import TensorType, TileType
from pytest_pypto.ir.values import UNINITIALIZED

LOAD, STORE = REGISTRY["tile.load"], REGISTRY["tile.store"]


def test_load_copies_the_window_and_poisons_the_rest():
    src = np.arange(8 * 6, dtype=np.float32).reshape(8, 6)
    t = apply(LOAD, src, offsets=(2, 1), shapes=(4, 4), valid_shapes=(3, 2))
    assert t.valid == (3, 2) and t.space == "Vec" and t.dtype is D.FP32
    np.testing.assert_array_equal(t.data[:3, :2], src[2:5, 1:3])
    assert_poisoned_outside(t)
    t.data[0, 0] = -1  # the tile is a copy, not a view of the tensor
    assert src[2, 1] == 13


def test_load_clamp_cuts_at_the_source_edge_and_int_poison_is_a5_bytes():
    src = np.arange(10, dtype=np.int32).reshape(2, 5)
    t = apply(LOAD, src, offsets=(1, 3), shapes=(2, 4), clamp=True,
              out=TileType((2, 4), D.INT32, "Mat"))
    assert t.valid == (1, 2) and t.space == "Mat"
    assert t.data.tolist() == [[8, 9, -0x5A5A5A5B, -0x5A5A5A5B], [-0x5A5A5A5B] * 4]


def test_load_zero_initialized_mode():
    token = UNINITIALIZED.set("zero")
    try:
        t = apply(LOAD, np.ones((4, 4), np.float16), offsets=(0, 0), shapes=(4, 4),
                  valid_shapes=(2, 2))
    finally:
        UNINITIALIZED.reset(token)
    assert t.data.sum() == 4


def test_load_out_of_bounds_at_run_time():
    with pytest.raises(OpBoundsError, match="dimension 0: offset 96 \\+ extent 64 > source extent 128"):
        apply(LOAD, np.zeros((128, 8), np.float32), offsets=(96, 0), shapes=(64, 8))


def test_load_type_rule():
    src = TensorType((128, 64), D.FP16)
    t = LOAD.type_rule(info("tile.load", {"tensor": src},
                            {"offsets": (0, None), "shapes": (32, 64), "valid_shapes": (None, 48)}))
    assert t == TileType((32, 64), D.FP16, None, (None, 48))
    clamped = LOAD.type_rule(info("tile.load", {"tensor": src},
                                  {"offsets": (112, 0), "shapes": (32, 64), "clamp": True}))
    assert clamped.valid == (16, 64)
    oob = {"offsets": (96, 0), "shapes": (64, 64)}
    LOAD.type_rule(info("tile.load", {"tensor": src}, oob))  # parse time: bounds are compile's
    with pytest.raises(OpBoundsError) as e:
        LOAD.type_rule(info("tile.load", {"tensor": src}, oob, arch=ARCHS[0]))
    assert "offset 96 + extent 64 > source extent 128" in e.value.message
    assert "clamp=True" in e.value.hint
    with pytest.raises(OpTypeError, match="one offset per dimension"):
        LOAD.type_rule(info("tile.load", {"tensor": src}, {"offsets": (0,), "shapes": (32, 64)}))
    with pytest.raises(OpTypeError, match="static positive 'shapes'"):
        LOAD.type_rule(info("tile.load", {"tensor": src}, {"offsets": (0, 0), "shapes": (0, 64)}))


def test_load_bounds_over_a_loop_range():
    call = info("tile.load", {"tensor": TensorType((128, 64), D.FP32)},
                {"offsets": (None, 0), "shapes": (32, 64)}, ARCHS[1])
    call.bounds["offsets"] = ((0, 112), None)
    with pytest.raises(OpBoundsError, match="offset 112 \\+ extent 32 > source extent 128"):
        LOAD.type_rule(call)


def test_load_cannot_target_left(arch):
    call = info("tile.load", {"tensor": TensorType((16, 16), D.FP16)},
                {"offsets": (0, 0), "shapes": (16, 16), "target_memory": "Left"}, arch)
    with pytest.raises(OpSpaceError) as e:
        LOAD.arch_rule(arch, call)
    assert e.value.message.startswith("The operator tile.load cannot target Left")
    assert "Vec or Mat" in e.value.message
    assert "pl.Mem.Mat" in e.value.hint and "target_memory=pl.Mem.Left" in e.value.hint


def test_store_writes_only_the_valid_region():
    dst = np.zeros((4, 6), np.float32)
    t = tv(np.full((2, 4), 7.0), D.FP32, valid=(2, 3))
    res = apply(STORE, t, dst, offsets=(1, 2))
    assert res is dst
    expected = np.zeros((4, 6), np.float32)
    expected[1:3, 2:5] = 7.0
    np.testing.assert_array_equal(dst, expected)


def test_store_from_acc_rounds_once_and_atomic_adds():
    acc = tv([[1.0 + 2**-9, 3.0]], D.FP32, space="Acc")
    dst = np.zeros((1, 2), ml_dtypes.bfloat16)
    apply(STORE, acc, dst, offsets=(0, 0))
    assert dst.astype(np.float32).tolist() == [[1.0, 3.0]]
    total = np.array([[10, 20]], np.int32)
    apply(STORE, tv([[1, 2]], D.INT32, space="Acc"), total, offsets=(0, 0), atomic="Add")
    assert total.tolist() == [[11, 22]]


def test_store_rules(arch):
    acc = tt((16, 16), D.INT32, space="Acc")
    call = info("tile.store", {"tile": acc, "output_tensor": TensorType((16, 16), D.INT8)},
                {"offsets": (0, 0)}, arch)
    STORE.type_rule(call)  # dtype of an Acc store is an arch rule
    with pytest.raises(OpArchError) as e:
        STORE.arch_rule(arch, call)
    assert "Acc tile into an INT8 tensor" in e.value.message
    assert f"'{arch.name}'" in e.value.message and "INT32, FP32, FP16 or BF16" in e.value.message
    vec = info("tile.store", {"tile": tt((16, 16), D.FP16, space="Vec"),
                              "output_tensor": TensorType((16, 16), D.FP32)}, {"offsets": (0, 0)})
    with pytest.raises(OpTypeError, match="FP16 and FP32"):
        STORE.type_rule(vec)
    left = info("tile.store", {"tile": tt((16, 16), D.FP16, space="Left"),
                               "output_tensor": TensorType((16, 16), D.FP16)}, {"offsets": (0, 0)})
    with pytest.raises(OpSpaceError, match="requires a tile in Vec or Acc, but got Left"):
        STORE.arch_rule(arch, left)
    ret = STORE.type_rule(info("tile.store", {"tile": tt((16, 8), D.FP32),
                                              "output_tensor": TensorType((16, 16), D.FP32)},
                               {"offsets": (0, 8)}))
    assert ret == TensorType((16, 16), D.FP32)


def test_atomic_bf16_only_on_a2a3(arch):
    call = info("tile.store", {"tile": tt((16, 16), D.BF16, space="Vec"),
                               "output_tensor": TensorType((16, 16), D.BF16)},
                {"offsets": (0, 0), "atomic": "Add"}, arch)
    if arch.name == "a2a3":
        STORE.arch_rule(arch, call)
    else:
        with pytest.raises(OpArchError, match="atomically adds into a BF16 tensor.*'a5'") as e:
            STORE.arch_rule(arch, call)
        assert "fp32" in e.value.hint


def test_move_copies_and_checks_the_graph(arch):
    src = tv(np.ones((4, 4)), D.FP32, valid=(2, 4), space="Mat")
    out = apply(REGISTRY["tile.move"], src, target_memory="Left")
    assert out.space == "Left" and out.valid == (2, 4) and out.data is not src.data
    move = REGISTRY["tile.move"]
    call = info("tile.move", {"tile": tt((16, 16), D.FP16, space="Vec")},
                {"target_memory": "Left"}, arch)
    with pytest.raises(OpSpaceError) as e:
        move.arch_rule(arch, call)
    assert f"no path from Vec to Left on '{arch.name}'" in e.value.message
    assert "Mat (cross-core transfer)" in e.value.message or "Mat" in e.value.message
    ok = info("tile.move", {"tile": tt((16, 16), D.FP32, space="Acc")},
              {"target_memory": "Vec"}, arch)
    move.arch_rule(arch, ok)  # Acc->Vec: a direct edge on a5, a cross-core transfer on a2a3
    with pytest.raises(OpSpaceError, match="already in Vec"):
        move.type_rule(info("tile.move", {"tile": tt((4, 4), D.FP32, space="Vec")},
                            {"target_memory": "Vec"}))


def test_create_is_poisoned_and_full_is_filled():
    t = apply(REGISTRY["tile.create"], shape=(2, 3), dtype=D.INT16)
    assert t.valid == (2, 3) and (t.data == -0x5A5B).all()
    f = apply(REGISTRY["tile.full"], shape=(2, 2), dtype=D.FP16, value=0.1)
    assert f.data.dtype == np.float16 and (f.data == np.float16(0.1)).all()
    ct = REGISTRY["tile.create"].type_rule(
        info("tile.create", values={"shape": (16, 32), "dtype": D.BF16, "target_memory": "Mat"}))
    assert ct == TileType((16, 32), D.BF16, "Mat")
    with pytest.raises(OpSpaceError, match="LeftScale"):
        REGISTRY["tile.create"].type_rule(info("tile.create", values={
            "shape": (16, 32), "dtype": D.FP16, "target_memory": "LeftScale"}))
    with pytest.raises(OpTypeError, match="literal int or float"):
        REGISTRY["tile.full"].type_rule(info("tile.full", values={
            "shape": (4, 4), "dtype": D.FP32, "value": None}))
