"""The run-time fast paths give exactly what plain numpy float32 math gives.

`ir.apply` runs a binary float32-ufunc op on two full FP32 tiles without widen/place;
`ir.batch.store_into` computes such an op (elementwise, row/col expand) straight into
the destination windows.  Both must be bit-identical to the float32 ufunc, specials
included (NaN, inf, signed zeros, division by zero), and fall back to the general path
where they do not apply (a packed row vector, a third operand, other dtypes).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import tt, tv

from pytest_pypto.ir import batch
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import QUIET_FLOATS, apply
from pytest_pypto.ir.ops._rules import OpBoundsError
from pytest_pypto.ir.ops.tensor_scalar import _read
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.runtime.loader import registry_bind

UFUNC = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
         "maximum": np.maximum, "minimum": np.minimum}
SPECIALS = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1e-45, 3.4e38, -1.5], np.float32)


def _with_specials(rng: np.random.Generator, shape: tuple[int, ...]) -> np.ndarray:
    a = (rng.standard_normal(shape) * 4).astype(np.float32)
    flat = a.reshape(-1)
    flat[: len(SPECIALS)] = SPECIALS[: flat.size]
    return a


def _bits(a: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(a).view(np.uint32)


@pytest.mark.parametrize("quiet", [False, True])
@pytest.mark.parametrize("name", sorted(UFUNC))
def test_binary_fast_path_is_the_float32_ufunc_bit_for_bit(name, quiet):
    rng = np.random.default_rng(3)
    a, b = _with_specials(rng, (8, 16)), _with_specials(rng, (8, 16))[::-1].copy()
    b[0, :4] = 0.0  # division by zero, 0/0
    ta, tb = tv(a, D.FP32), tv(b, D.FP32)
    token = QUIET_FLOATS.set(quiet)  # quiet: as inside a run, which silences numpy itself
    try:
        with np.errstate(all="ignore" if quiet else "raise"):
            got = apply(REGISTRY[f"tile.{name}"], ta, tb, out=tt((8, 16), D.FP32, space="Vec"))
    finally:
        QUIET_FLOATS.reset(token)
    with np.errstate(all="ignore"):
        want = UFUNC[name](a, b)
    assert got.data.dtype == np.float32 and got.valid == (8, 16) and got.space == "Vec"
    np.testing.assert_array_equal(_bits(got.data), _bits(want))
    assert not np.shares_memory(got.data, ta.data) and not np.shares_memory(got.data, tb.data)


def test_binary_fast_path_declines_other_dtypes_and_partial_tiles():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    half = tv(a.astype(np.float16), D.FP16)
    got = apply(REGISTRY["tile.add"], half, half, out=tt((4, 4), D.FP16, space="Vec"))
    assert got.data.dtype == np.float16  # the general path rounded to FP16
    np.testing.assert_array_equal(got.data, (a + a).astype(np.float16))
    partial = tv(a, D.FP32, valid=(2, 4))
    got = apply(REGISTRY["tile.add"], partial, tv(a, D.FP32), out=tt((4, 4), D.FP32,
                                                                       space="Vec"))
    np.testing.assert_array_equal(got.data[:2], (a + a)[:2])


def _store_into(op: str, operands: tuple, out: np.ndarray, n: int) -> None:
    tile = operands[0]
    out_type = tt(tile.data.shape, D.FP32, space="Vec")
    with np.errstate(all="ignore"):  # what a run holds (store_into runs inside one)
        batch.store_into(registry_bind(op), operands, {}, out, (0, 0), 0, n, out_type)


@settings(max_examples=25, deadline=None)
@given(kind=st.sampled_from(["add", "sub", "mul", "div", "max", "min"]),
       n=st.integers(1, 4), rows=st.sampled_from([1, 2, 8]), cols=st.sampled_from([1, 8, 32]))
def test_row_expand_store_into_is_the_broadcast_ufunc(kind, n, rows, cols):
    rng = np.random.default_rng(n * 100 + rows * 10 + cols)
    x = _with_specials(rng, (n * rows, cols))
    v = _with_specials(rng, (n * rows, 1))
    out = np.full((n * rows, cols), 7.0, np.float32)
    tile = tv(x.reshape(n, rows, cols), D.FP32)
    vec = tv(v.reshape(n, rows, 1), D.FP32)
    _store_into(f"tile.row_expand_{kind}", (tile, vec), out, n)
    fn = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
          "max": np.maximum, "min": np.minimum}[kind]
    with np.errstate(all="ignore"):
        want = fn(x, v)
    np.testing.assert_array_equal(_bits(out), _bits(want))


def test_row_expand_add_with_a_packed_vector_takes_the_general_path():
    """A 32-byte packed carrier (8 FP32 lanes) repeats across the columns: not a plain
    broadcast, so the fast path must decline instead of raising or mis-broadcasting."""
    x = np.arange(2 * 4 * 64, dtype=np.float32).reshape(2, 4, 64)
    lanes = np.arange(2 * 4 * 8, dtype=np.float32).reshape(2, 4, 8) / 8
    out = np.zeros((8, 64), np.float32)
    _store_into("tile.row_expand_add", (tv(x, D.FP32), tv(lanes, D.FP32)), out, 2)
    want = x + np.tile(lanes, (1, 1, 8))
    np.testing.assert_array_equal(out, want.reshape(8, 64))


def test_row_expand_add_with_its_tmp_operand_takes_the_general_path():
    x = np.ones((1, 4, 16), np.float32)
    v = np.full((1, 4, 1), 2.0, np.float32)
    tmp = tv(np.zeros((1, 4, 16), np.float32), D.FP32)
    out = np.zeros((4, 16), np.float32)
    _store_into("tile.row_expand_add", (tv(x, D.FP32), tv(v, D.FP32), tmp), out, 1)
    np.testing.assert_array_equal(out, 3.0)


def test_windows_fast_path_matches_the_general_windows():
    t = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
    fast = batch.windows(t, (2, 3), (3, 4), 0, 3)  # 2-D, axis 0: the loop-free path
    assert fast.shape == (3, 3, 4)
    for i in range(3):
        np.testing.assert_array_equal(fast[i], t[2 + 3 * i:5 + 3 * i, 3:7])
    assert np.shares_memory(fast, t)
    with pytest.raises(OpBoundsError, match="outside the tensor"):
        batch.windows(t, (2, 8), (3, 4), 0, 3)  # past the last column


@pytest.mark.parametrize("name", ["BF16", "FP8E4M3FN", "FP16", "FP32", "INT8", "INT32"])
@pytest.mark.parametrize("lead", [(), (3,)], ids=["tile", "stacked"])
def test_a_row_major_copy_keeps_every_bit_of_a_transposed_view(name, lead):
    """`values.row_major_copy` (the copy a move makes of a transpose_view) gives a
    C-contiguous array of the same dtype and bits, NaN payloads and the poison included;
    extension float types go through the unsigned integer of their width."""
    from pytest_pypto.ir.values import row_major_copy

    npd = np.dtype(D.dtype_by_name(name).np)
    rng = np.random.default_rng(3)
    raw = rng.integers(0, 256, size=(*lead, 24, 40 * npd.itemsize), dtype=np.uint8)
    data = raw.view(npd)  # every bit pattern: NaNs with payloads, infs, subnormals
    view = np.swapaxes(data, -1, -2)
    got = row_major_copy(view)
    assert got.dtype == view.dtype and got.shape == view.shape and got.flags.c_contiguous
    assert not np.shares_memory(got, data)
    want = np.ascontiguousarray(view.view(f"u{npd.itemsize}"))
    assert got.view(f"u{npd.itemsize}").tobytes() == want.tobytes()


# -- tensor.read: one element as a Python scalar, without a numpy scalar in between -----


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.uint8, np.float32, np.float16,
                                   ml_dtypes.bfloat16, np.bool_])
@pytest.mark.parametrize("shape,index", [((7,), (3,)), ((7,), (6,)), ((3, 4), (2, 1)),
                                         ((), ())])
def test_a_read_is_the_elements_python_scalar(dtype, shape, index):
    data = (np.arange(int(np.prod(shape)) or 1) % 5 * 1.5).astype(dtype).reshape(shape)
    got = _read(data, index)
    want = data[index].item()
    assert type(got) is type(want) and got == want
    if len(index) == 1:  # a numpy integer index reads the same
        assert _read(data, (np.int64(index[0]),)) == want


@pytest.mark.parametrize("index", [(-1,), (7,), (100,)])
def test_a_read_out_of_bounds_is_refused_on_every_form(index):
    with pytest.raises(OpBoundsError, match=rf"tensor index {index[0]} on axis 0 is out of "
                                            r"bounds for shape \[7\]"):
        _read(np.arange(7, dtype=np.int32), index)
