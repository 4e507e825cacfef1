"""matmul_bias, gemv/gemv_acc/gemv_bias, batch_matmul(_acc) and matmul_mx* entries against
plain numpy references (docs/design/language.md §21, docs/design/numerics.md §3)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import assert_poisoned_outside, info, random_data, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY, OpTypeError

R = REGISTRY


def ref_mm(a, b, dtype):
    """float64 (exact for these sizes) or int64 product, rounded to the accumulator."""
    if dtype is D.INT8:
        return (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    return (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)


# ------------------------------------------------------------------ matmul_bias / gemv


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16, D.BF16, D.INT8], ids=lambda d: d.name)
def test_matmul_bias_adds_the_row_once_over_the_valid_region(dtype):
    rng = np.random.default_rng(1)
    a, b = random_data(rng, (16, 8), dtype), random_data(rng, (8, 16), dtype)
    acc = D.INT32 if dtype is D.INT8 else D.FP32
    bias = (np.arange(16) - 5).astype(np.int32 if dtype is D.INT8 else np.float32).reshape(1, 16)
    out = apply(R["tile.matmul_bias"], tv(a, dtype, (12, 6), "Left"), tv(b, dtype, (6, 10), "Right"),
                tv(bias, acc, (1, 16), "Bias"), out=tt((16, 16), acc, space="Acc"))
    want = ref_mm(a[:12, :6], b[:6, :10], dtype).astype(np.float64) + bias[:, :10]
    np.testing.assert_allclose(out.data[:12, :10], want, rtol=1e-5, atol=1e-3)
    assert out.valid == (12, 10)
    assert_poisoned_outside(out)


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16, D.BF16, D.INT8], ids=lambda d: d.name)
def test_gemv_is_one_row_in_a_sixteen_row_acc_tile(dtype):
    rng = np.random.default_rng(2)
    a, b = random_data(rng, (1, 32), dtype), random_data(rng, (32, 16), dtype)
    acc_dt = D.INT32 if dtype is D.INT8 else D.FP32
    t = R["tile.gemv"].type_rule(info("tile.gemv", {"lhs": tt((1, 32), dtype, (1, 20)),
                                                  "rhs": tt((32, 16), dtype, (20, 12))},
                                      {"acc_phase": "partial"}))
    assert t.shape == (16, 16) and t.valid == (1, 12) and t.dtype is acc_dt
    out = apply(R["tile.gemv"], tv(a, dtype, (1, 20)), tv(b, dtype, (20, 12)),
                out=t.with_(space="Acc"), acc_phase="partial")
    np.testing.assert_allclose(out.data[:1, :12], ref_mm(a[:, :20], b[:20, :12], dtype), rtol=1e-5)
    assert_poisoned_outside(out)
    acc = apply(R["tile.gemv_acc"], out, tv(a, dtype, (1, 20)), tv(b, dtype, (20, 12)))
    assert acc is out
    twice = 2 * ref_mm(a[:, :20], b[:20, :12], dtype).astype(np.float64)
    np.testing.assert_allclose(acc.data[:1, :12], twice, rtol=1e-5)
    bias = np.full((1, 16), 3, dtype=acc_dt.np)
    gb = apply(R["tile.gemv_bias"], tv(a, dtype, (1, 20)), tv(b, dtype, (20, 12)),
               tv(bias, acc_dt), out=t.with_(space="Acc"))
    np.testing.assert_allclose(gb.data[:1, :12], ref_mm(a[:, :20], b[:20, :12], dtype) + 3,
                               rtol=1e-5)


@pytest.mark.parametrize(("op", "types", "values", "message"), [
    ("tile.matmul_bias", {"lhs": tt((16, 8), D.FP16), "rhs": tt((8, 16), D.FP16),
                          "bias": tt((2, 16), D.FP32)}, {}, "requires bias to have shape [1, N]"),
    ("tile.matmul_bias", {"lhs": tt((16, 8), D.FP16), "rhs": tt((8, 16), D.FP16),
                          "bias": tt((1, 16), D.FP16)}, {}, "requires bias dtype FP32 to match"),
    ("tile.matmul_bias", {"lhs": tt((16, 8), D.INT8), "rhs": tt((8, 16), D.INT8),
                          "bias": tt((1, 16), D.FP32)}, {}, "requires bias dtype INT32"),
    ("tile.matmul_bias", {"lhs": tt((16, 8), D.FP32), "rhs": tt((8, 16), D.FP32),
                          "bias": tt((1, 16), D.FP32, (1, 8))}, {}, "bias valid N to cover"),
    ("tile.matmul_bias", {"lhs": tt((16, 8), D.FP32), "rhs": tt((8, 16), D.FP32),
                          "bias": tt((1, 32), D.FP32)}, {}, "bias N dimension to match output N=16"),
    ("tile.gemv", {"lhs": tt((2, 8), D.FP32), "rhs": tt((8, 16), D.FP32)}, {},
     "lhs physical row extent to be exactly 1"),
    ("tile.gemv", {"lhs": tt((1, 8), D.FP32), "rhs": tt((8, 16), D.FP32)},
     {"acc_phase": "late"}, "acc_phase to be one of {unspecified, partial, final}"),
    ("tile.gemv", {"lhs": tt((1, 8), D.FP32, (0, 8)), "rhs": tt((8, 16), D.FP32)}, {},
     "lhs logical row extent to be exactly 1"),
    ("tile.gemv_acc", {"acc": tt((1, 16), D.FP32), "lhs": tt((1, 8), D.FP32),
                       "rhs": tt((8, 16), D.FP32)}, {}, "accumulator physical shape [16, 16]"),
    ("tile.gemv_acc", {"acc": tt((16, 16), D.INT32, (1, 16)), "lhs": tt((1, 8), D.FP32),
                       "rhs": tt((8, 16), D.FP32)}, {}, "accumulator dtype FP32"),
    ("tile.gemv_bias", {"lhs": tt((1, 8), D.FP32), "rhs": tt((8, 16), D.FP32),
                        "bias": tt((1, 16), D.FP32, (0, 16))}, {}, "exactly one valid row"),
])
def test_matmul_bias_and_gemv_type_rules(op, types, values, message):
    with pytest.raises(OpTypeError) as exc:
        R[op].type_rule(info(op, types, values))
    assert message in exc.value.message and op in exc.value.message


# ------------------------------------------------------------------ batch matmul


@settings(max_examples=20, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16, D.BF16, D.INT8)),
       batch=st.sampled_from([((2,), (2,)), ((1,), (3,)), ((2, 1), (1, 3)), ((), (2,)), ((2,), ())]),
       m=st.integers(1, 6), k=st.integers(1, 8), n=st.integers(1, 6), data=st.data(),
       seed=st.integers(0, 2**32 - 1))
def test_batch_matmul_broadcasts_batch_dims_like_numpy(dtype, batch, m, k, n, data, seed):
    ba, bb = batch
    vm, vk, vn = (data.draw(st.integers(0, x)) for x in (m, k, n))
    rng = np.random.default_rng(seed)
    a = random_data(rng, ba + (m, k), dtype)
    b = random_data(rng, bb + (k, n), dtype)
    lhs_t = tt(ba + (m, k), dtype, ba + (vm, vk))
    rhs_t = tt(bb + (k, n), dtype, bb + (vk, vn))
    t = R["tile.batch_matmul"].type_rule(info("tile.batch_matmul", {"lhs": lhs_t, "rhs": rhs_t}))
    bshape = np.broadcast_shapes(ba, bb)
    assert t.shape == bshape + (m, n) and t.valid == bshape + (vm, vn)
    out = apply(R["tile.batch_matmul"], tv(a, dtype, lhs_t.valid, "Left"),
                tv(b, dtype, rhs_t.valid, "Right"), out=t.with_(space="Acc"))
    want = np.zeros(bshape + (vm, vn))
    for idx in np.ndindex(*bshape) if bshape else [()]:
        ia = tuple(i if d > 1 else 0 for i, d in zip(idx[len(idx) - len(ba):], ba))
        ib = tuple(i if d > 1 else 0 for i, d in zip(idx[len(idx) - len(bb):], bb))
        want[idx] = ref_mm(a[ia][:vm, :vk], b[ib][:vk, :vn], dtype)
    np.testing.assert_allclose(out.data[..., :vm, :vn], want, rtol=1e-5, atol=1e-4)
    assert_poisoned_outside(out)


def test_batch_matmul_acc_accumulates_per_batch_in_place():
    rng = np.random.default_rng(3)
    a, b = random_data(rng, (3, 4, 5), D.FP32), random_data(rng, (1, 5, 6), D.FP32)
    start = random_data(rng, (3, 4, 6), D.FP32)
    acc = tv(start, D.FP32, space="Acc")
    res = apply(R["tile.batch_matmul_acc"], acc, tv(a, D.FP32), tv(b, D.FP32))
    assert res is acc
    want = start.astype(np.float64) + np.stack([a[i].astype(np.float64) @ b[0] for i in range(3)])
    np.testing.assert_allclose(acc.data, want, rtol=1e-5, atol=1e-4)


@pytest.mark.parametrize(("op", "types", "message"), [
    ("tile.batch_matmul", {"lhs": tt((2, 4, 8), D.FP32), "rhs": tt((3, 8, 4), D.FP32)},
     "Cannot broadcast batch dimensions for tile.batch_matmul"),
    ("tile.batch_matmul", {"lhs": tt((2, 4, 8), D.FP32), "rhs": tt((2, 6, 4), D.FP32)},
     "requires matching inner dimensions, but got lhs K=8 and rhs K=6"),
    ("tile.batch_matmul", {"lhs": tt((8,), D.FP32), "rhs": tt((2, 8, 4), D.FP32)},
     "requires 'lhs' to be at least rank 2"),
    ("tile.batch_matmul", {"lhs": tt((2, 4, 8), D.FP16), "rhs": tt((2, 8, 4), D.FP32)},
     "lhs and rhs in one dtype"),
    ("tile.batch_matmul", {"lhs": tt((2, 4, 8), D.INT32), "rhs": tt((2, 8, 4), D.INT32)},
     "requires operand dtype INT8, FP16, BF16 or FP32"),
    ("tile.batch_matmul_acc", {"acc": tt((2, 4, 4), D.INT32), "lhs": tt((2, 4, 8), D.FP32),
                               "rhs": tt((2, 8, 4), D.FP32)}, "requires accumulator dtype FP32"),
    ("tile.batch_matmul_acc", {"acc": tt((1, 4, 4), D.FP32), "lhs": tt((2, 4, 8), D.FP32),
                               "rhs": tt((2, 8, 4), D.FP32)}, "never broadcast"),
    ("tile.batch_matmul_acc", {"acc": tt((4, 4), D.FP32), "lhs": tt((2, 4, 8), D.FP32),
                               "rhs": tt((2, 8, 4), D.FP32)}, "acc batch rank (0) to equal"),
])
def test_batch_matmul_type_rules(op, types, message):
    with pytest.raises(OpTypeError) as exc:
        R[op].type_rule(info(op, types))
    assert message in exc.value.message


# ------------------------------------------------------------------ MX matmul


def _mx_inputs(rng, m, k, n):
    a = rng.integers(-3, 4, (m, k)).astype(np.float32) * 0.5
    b = rng.integers(-3, 4, (k, n)).astype(np.float32) * 0.25
    sa = rng.integers(120, 134, (m, k // 32)).astype(np.uint8)
    sb = rng.integers(120, 134, (k // 32, n)).astype(np.uint8)
    return (a.astype(ml_dtypes.float8_e4m3fn), sa.view(ml_dtypes.float8_e8m0fnu),
            b.astype(ml_dtypes.float8_e4m3fn), sb.view(ml_dtypes.float8_e8m0fnu), sa, sb)


def _mx_ref(a, sa_codes, b, sb_codes):
    """Exact float64 reference from the E8M0 codes (2**(code-127))."""
    g = np.arange(a.shape[1]) // 32
    aa = a.astype(np.float64) * np.exp2(sa_codes.astype(np.float64) - 127)[:, g]
    bb = b.astype(np.float64) * np.exp2(sb_codes.astype(np.float64) - 127)[g, :]
    return aa @ bb


def test_matmul_mx_family_scales_each_32_group_of_k():
    rng = np.random.default_rng(4)
    a, sa, b, sb, sa_codes, sb_codes = _mx_inputs(rng, 16, 64, 32)
    ops = [tv(a, D.FP8E4M3FN, space="Left"), tv(sa, D.FP8E8M0, space="LeftScale"),
           tv(b, D.FP8E4M3FN, space="Right"), tv(sb, D.FP8E8M0, space="RightScale")]
    types = {"lhs": tt((16, 64), D.FP8E4M3FN), "lhs_scale": tt((16, 2), D.FP8E8M0),
             "rhs": tt((64, 32), D.FP8E4M3FN), "rhs_scale": tt((2, 32), D.FP8E8M0)}
    t = R["tile.matmul_mx"].type_rule(info("tile.matmul_mx", types))
    assert t.shape == (16, 32) and t.dtype is D.FP32
    want = _mx_ref(a, sa_codes, b, sb_codes)
    out = apply(R["tile.matmul_mx"], *ops, out=t.with_(space="Acc"))
    np.testing.assert_array_equal(out.data, want.astype(np.float32))
    apply(R["tile.matmul_mx_acc"], out, *ops)
    np.testing.assert_array_equal(out.data, (2 * want).astype(np.float32))
    bias = np.arange(32, dtype=np.float32).reshape(1, 32)
    ob = apply(R["tile.matmul_mx_bias"], *ops, tv(bias, D.FP32, space="Bias"),
               out=t.with_(space="Acc"))
    np.testing.assert_array_equal(ob.data, (want + bias).astype(np.float32))


_MX_OK = {"lhs": tt((16, 64), D.FP8E4M3FN), "lhs_scale": tt((16, 2), D.FP8E8M0),
          "rhs": tt((64, 32), D.FP8E4M3FN), "rhs_scale": tt((2, 32), D.FP8E8M0)}


@pytest.mark.parametrize(("change", "message"), [
    ({"lhs": tt((16, 64), D.FP4)}, "requires lhs dtype FP8E4M3FN, but got FP4"),
    ({"rhs": tt((64, 32), D.FP16)}, "requires rhs dtype FP8E4M3FN, but got FP16"),
    ({"lhs_scale": tt((16, 2), D.FP8E4M3FN)}, "requires lhs_scale dtype FP8E8M0"),
    ({"rhs_scale": tt((4, 32), D.FP8E8M0)}, "requires rhs_scale of shape [2, 32]"),
    ({"lhs": tt((8, 64), D.FP8E4M3FN), "lhs_scale": tt((8, 2), D.FP8E8M0)},
     "physical M divisible by 16"),
    ({"rhs": tt((64, 16), D.FP8E4M3FN), "rhs_scale": tt((2, 16), D.FP8E8M0)},
     "physical N divisible by 32"),
    ({"lhs": tt((16, 32), D.FP8E4M3FN), "rhs": tt((32, 32), D.FP8E4M3FN),
      "lhs_scale": tt((16, 1), D.FP8E8M0), "rhs_scale": tt((1, 32), D.FP8E8M0)},
     "physical K divisible by 64"),
    ({"lhs": tt((16, 64), D.FP8E4M3FN, (16, 30))}, "matching valid K"),
])
def test_matmul_mx_type_rules(change, message):
    with pytest.raises(OpTypeError) as exc:
        R["tile.matmul_mx"].type_rule(info("tile.matmul_mx", {**_MX_OK, **change}))
    assert message in exc.value.message


def test_matmul_mx_acc_and_bias_dtype_rules():
    with pytest.raises(OpTypeError, match="requires acc dtype FP32"):
        R["tile.matmul_mx_acc"].type_rule(info("tile.matmul_mx_acc",
                                               {**_MX_OK, "acc": tt((16, 32), D.INT32)}))
    with pytest.raises(OpTypeError, match=r"requires bias of shape \[1, 32\]"):
        R["tile.matmul_mx_bias"].type_rule(info("tile.matmul_mx_bias",
                                                {**_MX_OK, "bias": tt((1, 16), D.FP32)}))


def test_mx_ops_are_a5_only_in_the_arch_table():
    from pytest_pypto.arch import spec

    for op in ("tile.matmul_mx", "tile.matmul_mx_acc", "tile.matmul_mx_bias"):
        assert op in spec("a2a3").unavailable_ops and op not in spec("a5").unavailable_ops
