"""cmp/cmps/sel/sels entries against an independent numpy reference (docs/design/numerics.md §5)."""

from __future__ import annotations

import operator

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import assert_poisoned_outside, info, tt, tv

from pytest_pypto.arch import spec
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpRuleError, OpTypeError
from pytest_pypto.ir.types import ScalarType

OPS = [operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge]
NAMES = ["EQ", "NE", "LT", "LE", "GT", "GE"]
CMP_DTYPES = (D.FP32, D.FP16, D.INT8, D.UINT8, D.INT16, D.UINT16, D.INT32, D.UINT32)


def ref_mask(pred: np.ndarray, shape: tuple[int, int]) -> np.ndarray:
    """The packed mask written bit by bit: (i, j) -> bit j % 8 of byte j // 8, rest 0."""
    rows, cols = shape
    row_bytes = (cols + 7) // 8
    out = np.zeros((rows, (row_bytes + 31) // 32 * 32), dtype=np.uint8)
    for i, j in zip(*np.nonzero(pred)):
        out[i, j // 8] |= 1 << (j % 8)
    return out


def values(rng, shape, dt):
    """Few distinct values, so every comparison is often true and often false."""
    x = rng.integers(-3, 4, size=shape)
    if dt.kind == "uint":
        x = x + 3
    return x.astype(dt.np)


@st.composite
def ragged(draw):
    rows, cols = draw(st.integers(1, 6)), draw(st.integers(1, 70))
    return (rows, cols), (draw(st.integers(1, rows)), draw(st.integers(1, cols)))


@settings(max_examples=40, deadline=None)
@given(geo=ragged(), mode=st.integers(0, 5), dt=st.sampled_from(CMP_DTYPES),
       seed=st.integers(0, 2**32 - 1))
def test_cmp_packs_the_predicate_of_the_valid_region(geo, mode, dt, seed):
    (shape, valid), rng = geo, np.random.default_rng(seed)
    a, b = values(rng, shape, dt), values(rng, shape, dt)
    out = apply(REGISTRY["tile.cmp"], tv(a, dt, valid), tv(b, dt, valid), cmp_type=mode)
    vr, vc = valid
    pred = OPS[mode](a[:vr, :vc].astype(np.float64), b[:vr, :vc].astype(np.float64))
    assert out.dtype is D.UINT8 and out.valid == (vr, -(-vc // 8))
    np.testing.assert_array_equal(out.data, ref_mask(pred, shape))


@pytest.mark.parametrize("mode", range(6))
def test_cmps_converts_the_scalar_and_accepts_names(mode):
    a = np.array([[-2.0, -0.5, 0.0, 0.5, 1.0, 2.0, np.nan, 3.0]], dtype=np.float32)
    by_int = apply(REGISTRY["tile.cmps"], tv(a, D.FP32), 0.5, cmp_type=mode)
    by_name = apply(REGISTRY["tile.cmps"], tv(a, D.FP32), 0.5, cmp_type=NAMES[mode].lower())
    pred = OPS[mode](a.astype(np.float64), 0.5)  # NaN: False for all but NE
    np.testing.assert_array_equal(by_int.data, ref_mask(pred, (1, 8)))
    np.testing.assert_array_equal(by_name.data, by_int.data)
    # an INT16 tile compares against the scalar truncated to INT16 (2.9 -> 2)
    i = apply(REGISTRY["tile.cmps"], tv([[1, 2, 3]], D.INT16), 2.9, cmp_type=mode)
    np.testing.assert_array_equal(i.data, ref_mask(OPS[mode](np.array([[1, 2, 3]]), 2), (1, 3)))


def test_mask_layout_of_pyptos_16x16_case_is_16x32():
    t = REGISTRY["tile.cmp"].type_rule(info("tile.cmp", {"lhs": tt((16, 16), D.FP32),
                                                         "rhs": tt((16, 16), D.FP32)}))
    assert t.shape == (16, 32) and t.dtype is D.UINT8 and t.valid == (16, 2)
    wide = REGISTRY["tile.cmps"].type_rule(info(
        "tile.cmps", {"lhs": tt((2, 264), D.FP32, (2, 257)), "rhs": ScalarType(D.FP32)}))
    assert wide.shape == (2, 64) and wide.valid == (2, 33)  # 33 bytes -> two 32-byte blocks


def test_cmp_rhs_broadcasts_along_a_dim_of_one():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    row = np.array([[1.0, 5.0, 9.0, 0.0]], dtype=np.float32)
    out = apply(REGISTRY["tile.cmp"], tv(a, D.FP32), tv(row, D.FP32), cmp_type=4)
    np.testing.assert_array_equal(out.data, ref_mask(a > row, (3, 4)))


def test_cmp_type_rules():
    rule = REGISTRY["tile.cmp"].type_rule
    with pytest.raises(OpTypeError, match="requires dtype .* but got BF16"):
        rule(info("tile.cmp", {"lhs": tt((4, 8), D.BF16), "rhs": tt((4, 8), D.BF16)}))
    with pytest.raises(OpTypeError, match="one dtype, but got FP32 and FP16"):
        rule(info("tile.cmp", {"lhs": tt((4, 8), D.FP32), "rhs": tt((4, 8), D.FP16)}))
    with pytest.raises(OpTypeError, match=r"cmp_type must be 0\.\.5 .* but got 6"):
        rule(info("tile.cmp", {"lhs": tt((4, 8), D.FP32), "rhs": tt((4, 8), D.FP32)},
                  {"cmp_type": 6}))
    with pytest.raises(OpTypeError, match="requires 'rhs' to be a scalar"):
        REGISTRY["tile.cmps"].type_rule(info("tile.cmps", {"lhs": tt((4, 8), D.FP32),
                                                           "rhs": tt((4, 8), D.FP32)}))


@pytest.mark.parametrize("op", ["tile.cmp", "tile.cmps"])
def test_cmp_arch_gate_names_the_arch(op):
    """a2a3's TCMP takes INT32/FP16/FP32 (TCMPS also 16-bit ints); a5 every 8-32-bit dtype."""
    types = {"lhs": tt((4, 8), D.UINT8),
             "rhs": tt((4, 8), D.UINT8) if op == "tile.cmp" else ScalarType(D.INT32)}
    a2a3, a5 = spec("a2a3"), spec("a5")
    with pytest.raises(OpArchError) as e:
        REGISTRY[op].arch_rule(a2a3, info(op, types, arch=a2a3))
    assert e.value.message == f"The operator {op} does not support dtype UINT8 on the 'a2a3' backend"
    assert e.value.hint.endswith("or target a5")
    REGISTRY[op].arch_rule(a5, info(op, types, arch=a5))


# ------------------------------------------------------------------ sel / sels


def test_sel_reads_the_bits_cmp_wrote():
    rng = np.random.default_rng(1)
    a, b = values(rng, (5, 40), D.FP32), values(rng, (5, 40), D.FP32)
    x, y = rng.standard_normal((5, 40)).astype(np.float32), np.zeros((5, 40), np.float32)
    mask = apply(REGISTRY["tile.cmp"], tv(a, D.FP32, (4, 37)), tv(b, D.FP32, (4, 37)),
                 cmp_type=2)
    out = apply(REGISTRY["tile.sel"], mask, tv(x, D.FP32, (4, 37)), tv(y, D.FP32, (4, 37)),
                tv(np.zeros((1, 32)), D.UINT8), out=tt((5, 40), D.FP32))
    want = np.where(a[:4, :37] < b[:4, :37], x[:4, :37], 0.0)
    np.testing.assert_array_equal(out.data[:4, :37], want)
    assert out.valid == (4, 37)
    assert_poisoned_outside(out)


@pytest.mark.parametrize("carrier,value", [(D.INT8, -86), (D.UINT8, 0xAA), (D.INT16, -21846),
                                           (D.UINT16, 0xAAAA), (D.INT32, -1431655766),
                                           (D.UINT32, 0xAAAAAAAA)])
def test_sels_mask_carriers_of_every_width_read_row_bytes(carrier, value):
    """PyPTO's carrier test: every byte 0xAA selects the odd columns, whatever the dtype."""
    cols = 32 // carrier.itemsize
    mask = tv(np.full((2, cols), value), carrier)
    src = np.arange(32, dtype=np.float32).reshape(2, 16)
    out = apply(REGISTRY["tile.sels"], mask, tv(src, D.FP32), tv(np.zeros((1, 32)), D.UINT8),
                -3.0)
    want = np.full((2, 16), -3.0, np.float32)
    want[:, 1::2] = src[:, 1::2]
    np.testing.assert_array_equal(out.data, want)


def test_sels_keeps_an_unsigned_scalars_bit_pattern():
    mask = tv(np.zeros((1, 32)), D.UINT8)  # no bit set: every element takes the scalar
    out = apply(REGISTRY["tile.sels"], mask, tv(np.ones((1, 4)), D.UINT16),
                tv(np.zeros((1, 32)), D.UINT8), 0x8007)
    assert out.data.tolist() == [[0x8007] * 4]
    signed = apply(REGISTRY["tile.sels"], mask, tv(np.ones((1, 4)), D.INT16),
                   tv(np.zeros((1, 32)), D.UINT8), -7)
    assert signed.data.tolist() == [[-7] * 4]


def test_sel_sels_type_rules():
    sel, sels = REGISTRY["tile.sel"].type_rule, REGISTRY["tile.sels"].type_rule
    m, tmp = tt((16, 32), D.UINT8, (16, 2)), tt((1, 32), D.UINT8)
    with pytest.raises(OpTypeError, match="requires lhs and rhs in one dtype"):
        sel(info("tile.sel", {"mask": m, "lhs": tt((16, 16), D.FP32), "rhs": tt((16, 16), D.FP16),
                              "tmp": tmp}))
    with pytest.raises(OpTypeError, match="requires dtype .* but got INT8"):
        sel(info("tile.sel", {"mask": m, "lhs": tt((16, 16), D.INT8), "rhs": tt((16, 16), D.INT8),
                              "tmp": tmp}))
    with pytest.raises(OpTypeError, match=r"ceil\(37 / 8\) = 5 packed bytes.*hold 2"):
        sels(info("tile.sels", {"mask": tt((16, 32), D.UINT8, (16, 2)),
                                "src": tt((16, 64), D.FP32, (16, 37)), "tmp": tmp,
                                "scalar": ScalarType(D.FP32)}))
    with pytest.raises(OpTypeError, match="valid rows to cover"):
        sels(info("tile.sels", {"mask": tt((16, 32), D.UINT8, (8, 32)),
                                "src": tt((16, 16), D.FP32), "tmp": tmp,
                                "scalar": ScalarType(D.FP32)}))
    with pytest.raises(OpTypeError, match="integer mask, i.e. dtype .* but got FP32"):
        sels(info("tile.sels", {"mask": tt((16, 32), D.FP32), "src": tt((16, 16), D.FP32),
                                "tmp": tmp, "scalar": ScalarType(D.FP32)}))
    with pytest.raises(OpTypeError, match="'src' to be rank 2"):
        sels(info("tile.sels", {"mask": m, "src": tt((2, 16, 16), D.FP32), "tmp": tmp,
                                "scalar": ScalarType(D.FP32)}))


def test_sels_int8_source_is_a5_only():
    types = {"mask": tt((2, 32), D.UINT8), "src": tt((2, 16), D.INT8), "tmp": tt((1, 32), D.UINT8),
             "scalar": ScalarType(D.INT8)}
    a2a3, a5 = spec("a2a3"), spec("a5")
    with pytest.raises(OpArchError, match="src dtype INT8 on the 'a2a3' backend"):
        REGISTRY["tile.sels"].arch_rule(a2a3, info("tile.sels", types, arch=a2a3))
    REGISTRY["tile.sels"].arch_rule(a5, info("tile.sels", types, arch=a5))


def test_a_mask_too_small_at_run_time_is_an_op_error():
    with pytest.raises(OpRuleError, match="does not cover the selected region"):
        apply(REGISTRY["tile.sel"], tv(np.zeros((2, 1)), D.UINT8), tv(np.ones((2, 16)), D.FP32),
              tv(np.ones((2, 16)), D.FP32), tv(np.zeros((1, 32)), D.UINT8))
