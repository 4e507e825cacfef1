"""The explicit tensor-level entries (ir/ops/tensor_level.py) and the derived forms
(ir/tensor_forms.py): type rules, negative rules, and the whole-array numpy semantics
against references written here."""

from __future__ import annotations

import numpy as np
import pytest
from ophelpers import info

from pytest_pypto.ir import tensor_forms
from pytest_pypto.ir.dtypes import FP16, FP32, INT8, INT32
from pytest_pypto.ir.registry import REGISTRY, OpRuleError, OpTypeError
from pytest_pypto.ir.types import TensorType


def T(*shape, dtype=FP32):
    return TensorType(tuple(shape), dtype)


def rule(op, types=None, values=None):
    return REGISTRY[op].type_rule(info(op, types, values))


# ------------------------------------------------------------------ matmul


def test_matmul_rule_applies_flags_before_the_tile_rule():
    t = rule("tensor.matmul", {"lhs": T(64, 16), "rhs": T(2, 32, 64)},
             {"a_trans": True, "b_trans": True, "out_dtype": FP16})
    assert t == TensorType((2, 16, 32), FP16)
    assert rule("tensor.matmul", {"lhs": T(16, 64, dtype=INT8), "rhs": T(64, 8, dtype=INT8)},
                {}).dtype is INT8  # no out_dtype: the operands' dtype


def test_matmul_rule_rejects_rank_batch_and_k_mismatches():
    with pytest.raises(OpTypeError, match=r"requires 'lhs' of rank >= 2, but got rank 1"):
        rule("tensor.matmul", {"lhs": T(64), "rhs": T(64, 8)})
    with pytest.raises(OpTypeError, match=r"batch dims that broadcast, but got \[2\] and \[3\]"):
        rule("tensor.matmul", {"lhs": T(2, 8, 16), "rhs": T(3, 16, 8)})
    with pytest.raises(OpTypeError) as ei:
        rule("tensor.matmul", {"lhs": T(8, 16), "rhs": T(8, 16)}, {"b_trans": False})
    assert ei.value.message.startswith("The operator tensor.matmul requires lhs K to equal rhs K")


def test_matmul_acc_rule_wants_the_accumulator_dtype_and_shape():
    ok = rule("tensor.matmul_acc", {"acc": T(8, 8), "lhs": T(8, 16, dtype=FP16),
                                    "rhs": T(16, 8, dtype=FP16)})
    assert ok == T(8, 8)
    with pytest.raises(OpTypeError, match=r"acc dtype INT32 \(the accumulator of INT8"):
        rule("tensor.matmul_acc", {"acc": T(8, 8), "lhs": T(8, 16, dtype=INT8),
                                   "rhs": T(16, 8, dtype=INT8)})
    with pytest.raises(OpTypeError, match=r"acc of the product's shape \[8, 8\], but got \[8, 4\]"):
        rule("tensor.matmul_acc", {"acc": T(8, 4), "lhs": T(8, 16), "rhs": T(16, 8)})


def test_matmul_semantics_round_the_fp32_sum_once():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 40)).astype(np.float16)
    b = rng.standard_normal((24, 40)).astype(np.float16)
    got = REGISTRY["tensor.matmul"].execute(a, b, out_dtype=FP16, b_trans=True)
    want = (a.astype(np.float32) @ b.astype(np.float32).T).astype(np.float16)
    assert got.dtype == np.float16 and np.array_equal(got, want)
    acc = np.ones((3, 24), np.float32)
    REGISTRY["tensor.matmul_acc"].execute(acc, a, b, b_trans=True)
    np.testing.assert_allclose(acc, 1 + a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-5)
    REGISTRY["tensor.matmul_acc"].execute(acc, a, b, True, b_trans=True)  # init_cond: overwrite
    np.testing.assert_allclose(acc, a.astype(np.float64) @ b.astype(np.float64).T, rtol=1e-5)
    i8 = rng.integers(-128, 128, (4, 300)).astype(np.int8)
    prod = REGISTRY["tensor.matmul"].execute(i8, i8, out_dtype=INT32, b_trans=True)
    assert np.array_equal(prod, i8.astype(np.int64) @ i8.astype(np.int64).T)


# ---------------------------------------------------- full / local / views


def test_full_checks_the_value_like_tile_full():
    assert rule("tensor.full", {}, {"shape": (4, 5), "dtype": FP16, "value": 1.5}) == T(4, 5, dtype=FP16)
    with pytest.raises(OpTypeError, match=r"tensor.full requires a fill value within the range"):
        rule("tensor.full", {}, {"shape": (4, 5), "dtype": INT8, "value": 300})
    got = REGISTRY["tensor.full"].execute(shape=(2, 3), dtype=FP16, value=0.1)
    assert np.array_equal(got, np.full((2, 3), np.float16(0.1)))


def test_local_tensor_starts_poisoned():
    t = REGISTRY["tensor.local"].execute(shape=(2, 3), dtype=FP32)
    assert t.shape == (2, 3) and np.isnan(t).all()
    assert rule("tensor.local", {}, {"shape": (2, 3), "dtype": FP32}) == T(2, 3)


def test_matrix_view_is_a_zero_copy_batch_item_optionally_transposed():
    base = np.arange(2 * 3 * 4, dtype=np.float32).reshape(2, 3, 4)
    view = REGISTRY["tensor.matrix_view"].execute(base, index=(1,), transpose=True)
    assert np.array_equal(view, base[1].T)
    view[0, 0] = -1.0
    assert base[1, 0, 0] == -1.0  # writes reach the tensor
    assert rule("tensor.matrix_view", {"tensor": T(2, 3, 4)},
                {"index": (1,), "transpose": True}) == T(4, 3)
    with pytest.raises(OpTypeError, match=r"indices for all but the last two dims"):
        rule("tensor.matrix_view", {"tensor": T(2, 3, 4)}, {"index": ()})


# ----------------------------------------------------------- derived forms


def test_derived_forms_exist_for_vec_ops_only_and_drop_scratch():
    row_sum = tensor_forms.resolve(REGISTRY, "row_sum")
    assert row_sum is not None and [p.name for p in row_sum.params] == ["tile"]
    assert row_sum.params[0].kind == "tensor"
    assert tensor_forms.tile_entry(row_sum) is REGISTRY["tile.row_sum"]
    assert tensor_forms.resolve(REGISTRY, "load") is None  # memory op: no tensor form
    assert tensor_forms.resolve(REGISTRY, "matmul") is REGISTRY["tensor.matmul"]  # explicit
    assert tensor_forms.resolve(REGISTRY, "add").scalar_form == "tensor.adds"
    with pytest.raises(RuntimeError, match="lowered to tile ops"):
        row_sum.execute(np.zeros((2, 2)))


def test_derived_rule_is_the_tile_rule_on_whole_tensors():
    row_sum = tensor_forms.resolve(REGISTRY, "row_sum")
    assert row_sum.type_rule(info("tensor.row_sum", {"tile": T(8, 100)})) == T(8, 1)
    div = tensor_forms.resolve(REGISTRY, "div")
    with pytest.raises(OpTypeError) as ei:
        div.type_rule(info("tensor.div", {"lhs": T(8, 8), "rhs": T(8, 1)}))
    assert ei.value.message.startswith("The operator tensor.div requires identical shapes")
    from pytest_pypto.ir.types import DynVar

    m, k = DynVar("M"), DynVar("K")
    # A pl.dynamic dim is carried into the result (the lowering loops over it) ...
    got = row_sum.type_rule(info("tensor.row_sum", {"tile": TensorType((m, 4), FP32)}))
    assert got == TensorType((m, 1), FP32) and got.shape[0] is m
    # ... and an error names it, never the int that stood in for it while the rule ran.
    with pytest.raises(OpTypeError) as ei:
        div.type_rule(info("tensor.div", {"lhs": T(m, 8), "rhs": T(k, 8)}))
    assert "[M, 8]" in ei.value.message and "[K, 8]" in ei.value.message
    assert str(1 << 20) not in ei.value.message
    with pytest.raises(OpRuleError, match=r"needs static"):
        tensor_forms.tile_view(TensorType((m, 4), FP32), "tile", "tensor.read")
