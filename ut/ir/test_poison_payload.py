"""Float poison is a NaN with its own payload (issue 26, item 14).

An ordinary NaN in a result (np.nan, 0/0, a NaN input copied through) is not memory
no store reached: only the poison bit pattern is reported as never written.  Formats
with a single NaN encoding (FP8E4M3FN, FP8E8M0) cannot tell the two apart, so their
NaN is never called never-written (docs/design/numerics.md §6).
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.harness.compare import find_mismatch
from pytest_pypto.ir.dtypes import DTYPES
from pytest_pypto.ir.values import new_buffer, poison_is_distinct, poison_value

# dtype name -> (numpy dtype, poison bits), written out here independently of ir/values.py
PAYLOADS = {
    "FP32": (np.float32, 0x7FE5A5A5),
    "FP16": (np.float16, 0x7EA5),
    "BF16": (ml_dtypes.bfloat16, 0x7FE5),
    "FP8E5M2": (ml_dtypes.float8_e5m2, 0x7F),
}


def _bits(value: object, npd: object) -> int:
    dt = np.dtype(npd)
    return int(np.asarray(value, dtype=dt).reshape(1).view(f"u{dt.itemsize}")[0])


def _ordinary_nans(npd: object) -> set[int]:
    """The bits a NaN made on the host has in ``npd``: np.nan, -np.nan, 0/0."""
    with np.errstate(invalid="ignore", divide="ignore"):
        made = [np.nan, -np.nan, np.float32(0) / np.float32(0), np.float64(0) / np.float64(0)]
    return {_bits(np.array(v).astype(npd), npd) for v in made}


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_float_poison_is_a_quiet_nan_with_a_distinct_payload(name) -> None:
    npd, bits = PAYLOADS[name]
    value = poison_value(DTYPES[name])
    assert np.isnan(np.float32(value))
    assert _bits(value, npd) == bits
    assert bits not in _ordinary_nans(npd)
    assert poison_is_distinct(DTYPES[name])
    # a fresh buffer holds it bit for bit, and numpy copies and views keep it
    buf = new_buffer((2, 3), DTYPES[name])
    assert {_bits(v, npd) for v in buf.copy().reshape(-1)[::2]} == {bits}


@pytest.mark.parametrize("name", ["FP8E4M3FN", "FP8E8M0"])
def test_single_nan_formats_cannot_tell_poison_from_a_nan(name) -> None:
    dtype = DTYPES[name]
    assert np.isnan(np.float32(poison_value(dtype)))
    assert not poison_is_distinct(dtype)
    npd = dtype.np
    nan = np.array([np.nan], np.float32).astype(npd)
    m = find_mismatch(nan, np.zeros(1, npd))
    assert m is not None and (m.nan, m.poisoned) == (1, 0)


def test_ints_keep_the_a5_bytes() -> None:
    assert _bits(poison_value(DTYPES["INT32"]), np.int32) == 0xA5A5A5A5
    assert poison_is_distinct(DTYPES["INT32"])
    assert not poison_is_distinct(DTYPES["BOOL"])


@pytest.mark.parametrize("name", sorted(PAYLOADS))
def test_an_ordinary_nan_is_not_called_never_written(name) -> None:
    npd, bits = PAYLOADS[name]
    expected = np.ones(6, npd)
    actual = expected.copy()
    actual[0] = np.nan
    actual[1:3] = np.array([bits, bits], f"u{np.dtype(npd).itemsize}").view(npd)
    m = find_mismatch(actual, expected)
    assert (m.mismatched, m.nan, m.poisoned, m.first_poisoned) == (3, 3, 2, (1,))
    text = "\n".join(m.lines())
    assert "never written: 2 elements" in text


R, C, TR = 16, 32, 8


@pl.program
class HalfCopy:
    """Copies rows [0, TR) of x; rows [TR, R) of out are never written."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [TR, C])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.copy(x, out)
        return out


def test_a_nan_copied_through_a_kernel_is_not_never_written_but_unstored_rows_are() -> None:
    x = np.ones((R, C), np.float32)
    x[0, 0] = np.nan  # an ordinary NaN in the input, copied to out[0, 0]
    out = np.zeros((R, C), np.float32)
    pytest_pypto.run(HalfCopy, x, out)
    m = find_mismatch(out, np.ones((R, C), np.float32))
    unwritten = (R - TR) * C
    assert (m.mismatched, m.nan) == (unwritten + 1, unwritten + 1)
    assert (m.poisoned, m.first_poisoned) == (unwritten, (TR, 0))
