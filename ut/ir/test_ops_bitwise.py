"""Bitwise entries (and_/or_/xor/not_/shl/shr and scalar forms) against Python ints."""

from __future__ import annotations

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

INTS = (D.INT8, D.UINT8, D.INT16, D.UINT16, D.INT32, D.UINT32)


def to_width(v: int, dt) -> int:
    """A Python int as the two's-complement value of ``dt``."""
    v &= (1 << dt.bits) - 1
    return v - (1 << dt.bits) if dt.kind == "int" and v >= 1 << (dt.bits - 1) else v


def ref(op: str, a: int, b: int, dt) -> int:
    """C semantics on values of the tile width (Python ints are exact)."""
    if op == "and":
        return to_width(a & b, dt)
    if op == "or":
        return to_width(a | b, dt)
    if op == "xor":
        return to_width(a ^ b, dt)
    if op == "shl":
        return to_width(a << b, dt) if b < dt.bits else 0
    # shr: Python's >> is arithmetic on negative ints; unsigned values are non-negative
    return a >> min(b, dt.bits)


def rand_ints(rng, shape, dt):
    i = np.iinfo(dt.np)
    return rng.integers(int(i.min), int(i.max), size=shape, endpoint=True).astype(dt.np)


@settings(max_examples=40, deadline=None)
@given(op=st.sampled_from(["and", "or", "xor", "shl", "shr"]), dt=st.sampled_from(INTS),
       rows=st.integers(1, 4), cols=st.integers(1, 20), seed=st.integers(0, 2**32 - 1),
       data=st.data())
def test_tile_forms_match_c_semantics_over_the_valid_region(op, dt, rows, cols, seed, data):
    rng = np.random.default_rng(seed)
    valid = (data.draw(st.integers(1, rows)), data.draw(st.integers(1, cols)))
    a = rand_ints(rng, (rows, cols), dt)
    shifts = op in ("shl", "shr")
    b = rng.integers(0, dt.bits + 3, (rows, cols)).astype(dt.np) if shifts else \
        rand_ints(rng, (rows, cols), dt)
    extra = (tv(np.zeros((rows, cols)), dt),) if op == "xor" else ()
    out = apply(REGISTRY[f"tile.{op}"], tv(a, dt, valid), tv(b, dt, valid), *extra,
                out=tt((rows, cols), dt))
    vr, vc = valid
    want = [[ref(op, int(a[i, j]), int(b[i, j]), dt) for j in range(vc)] for i in range(vr)]
    assert out.data[:vr, :vc].astype(np.int64).tolist() == want
    assert out.data.dtype == dt.np
    if dt.name in ("INT8", "INT16", "INT32"):
        assert_poisoned_outside(out)


@pytest.mark.parametrize("dt", INTS)
@pytest.mark.parametrize("op", ["ands", "ors", "xors", "shls", "shrs"])
def test_scalar_forms(op, dt):
    a = rand_ints(np.random.default_rng(3), (2, 8), dt)
    s = 5 if op in ("shls", "shrs") else 0x5A
    extra = (tv(np.zeros((2, 8)), dt),) if op == "xors" else ()
    out = apply(REGISTRY[f"tile.{op}"], tv(a, dt), s, *extra)
    want = [[ref(op[:-1], int(v), s, dt) for v in row] for row in a]
    assert out.data.astype(np.int64).tolist() == want


def test_shift_edges():
    i16 = tv([[-8, 7, -1, 1]], D.INT16)
    assert apply(REGISTRY["tile.shrs"], i16, 1).data.tolist() == [[-4, 3, -1, 0]]  # arithmetic
    assert apply(REGISTRY["tile.shrs"], i16, 40).data.tolist() == [[-1, 0, -1, 0]]
    assert apply(REGISTRY["tile.shls"], i16, 16).data.tolist() == [[0, 0, 0, 0]]
    u16 = tv([[0xFFFF, 0x8000]], D.UINT16)
    assert apply(REGISTRY["tile.shrs"], u16, 15).data.tolist() == [[1, 1]]  # logical
    assert apply(REGISTRY["tile.shls"], u16, 1).data.tolist() == [[0xFFFE, 0]]  # wraps


def test_negative_shift_amount_is_a_run_time_error():
    with pytest.raises(OpRuleError, match="shift amounts must be >= 0, but 1 are negative"):
        apply(REGISTRY["tile.shl"], tv([[1, 2]], D.INT32), tv([[1, -3]], D.INT32))


@pytest.mark.parametrize("dt", [D.INT16, D.UINT16])
def test_not_inverts_every_bit(dt):
    x = rand_ints(np.random.default_rng(5), (3, 9), dt)
    out = apply(REGISTRY["tile.not"], tv(x, dt, (2, 7)), out=tt((3, 9), dt))
    want = [[to_width(~int(v), dt) for v in row[:7]] for row in x[:2]]
    assert out.data[:2, :7].astype(np.int64).tolist() == want


def test_type_rules():
    with pytest.raises(OpTypeError, match="integer tile dtype .* but got FP32"):
        REGISTRY["tile.and"].type_rule(info("tile.and", {"lhs": tt((4, 4), D.FP32),
                                                         "rhs": tt((4, 4), D.FP32)}))
    with pytest.raises(OpTypeError, match="one dtype, but got INT16 and INT32"):
        REGISTRY["tile.or"].type_rule(info("tile.or", {"lhs": tt((4, 4), D.INT16),
                                                       "rhs": tt((4, 4), D.INT32)}))
    # the shift amount may have another integer width (PyPTO's rule), not a float
    t = REGISTRY["tile.shl"].type_rule(info("tile.shl", {"lhs": tt((4, 4), D.INT16),
                                                         "rhs": tt((4, 4), D.INT32)}))
    assert t.dtype is D.INT16
    with pytest.raises(OpTypeError, match="integer shift tile dtype .* but got FP16"):
        REGISTRY["tile.shr"].type_rule(info("tile.shr", {"lhs": tt((4, 4), D.INT16),
                                                         "rhs": tt((4, 4), D.FP16)}))
    with pytest.raises(OpTypeError, match="requires an integer scalar, but got FP32"):
        REGISTRY["tile.ands"].type_rule(info("tile.ands", {"lhs": tt((4, 4), D.INT16),
                                                           "rhs": ScalarType(D.FP32)}))
    with pytest.raises(OpTypeError, match="requires 'tmp' to be a Tile"):
        REGISTRY["tile.xor"].type_rule(info("tile.xor", {"lhs": tt((4, 4), D.INT16),
                                                         "rhs": tt((4, 4), D.INT16)}))
    with pytest.raises(OpTypeError, match="requires dtype INT16 or UINT16, but got INT32"):
        REGISTRY["tile.not"].type_rule(info("tile.not", {"tile": tt((4, 4), D.INT32)}))
    with pytest.raises(OpTypeError, match="but got INT64"):
        REGISTRY["tile.xors"].type_rule(info("tile.xors", {"lhs": tt((4, 4), D.INT64),
                                                           "rhs": ScalarType(D.INT64),
                                                           "tmp": tt((4, 4), D.INT64)}))


@pytest.mark.parametrize("op", ["tile.and", "tile.ors", "tile.xor", "tile.xors"])
def test_a2a3_gates_name_the_arch(op):
    """a2a3's TAND/TOR/TXOR take 8/16-bit ints only; a5 every 8-32-bit int (shifts take
    8-32 bits on both)."""
    types = {"lhs": tt((4, 8), D.INT32)}
    a2a3, a5 = spec("a2a3"), spec("a5")
    with pytest.raises(OpArchError) as e:
        REGISTRY[op].arch_rule(a2a3, info(op, types, arch=a2a3))
    assert e.value.message == f"The operator {op} does not support dtype INT32 on the 'a2a3' backend"
    assert e.value.hint == "use INT8, UINT8, INT16 or UINT16, or target a5"
    REGISTRY[op].arch_rule(a5, info(op, types, arch=a5))
    REGISTRY["tile.shl"].arch_rule(a2a3, info("tile.shl", types, arch=a2a3))
