"""assert_close / assert_all_close: tolerances, NaN rules and the exact report text."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import pytest_pypto
from pytest_pypto.harness.compare import MismatchError, assert_all_close, assert_close


def _fail(*args, **kwargs) -> MismatchError:
    with pytest.raises(MismatchError) as info:
        assert_close(*args, **kwargs)
    return info.value


def test_exact_report_of_a_small_wrong_output() -> None:
    # Hand computation (rtol = atol = 0.01): allowed = 0.01 + 0.01 * |expected|
    # [0, 1]: |2.5 - 2| = 0.5 > 0.03 (relative 0.25, allowed 0.03 / 2 = 0.015)
    # [1, 0]: |4.5 - 4| = 0.5 > 0.05 (relative 0.125)
    # [1, 2]: |8.0625 - 8| = 0.0625 <= 0.09 passes.  2 of 6 = 33.33%.
    expected = np.array([[1, 2, 3], [4, -1, 8]], np.float32)
    actual = np.array([[1, 2.5, 3], [4.5, -1, 8.0625]], np.float32)
    err = _fail(actual, expected, 0.01, 0.01, name="c", context=["platform: a5sim", "seed: 7"])
    assert str(err) == (
        "output 'c': 2 / 6 elements mismatch (33.33%); float32, rtol=0.01, atol=0.01\n"
        "  greatest absolute difference: 0.5 at index [0, 1] (allowed 0.03)\n"
        "  greatest relative difference: 0.25 at index [0, 1] (allowed 0.015)\n"
        "  mismatching elements (index: actual, expected, diff):\n"
        "    [0, 1]: 2.5, 2, 0.5\n"
        "    [1, 0]: 4.5, 4, 0.5\n"
        "platform: a5sim\n"
        "seed: 7"
    )
    assert isinstance(err, AssertionError)
    assert err.failure_class == "mismatch"
    (m,) = err.outputs
    assert (m.name, m.mismatched, m.total) == ("c", 2, 6)
    assert m.max_abs.index == (0, 1) and m.max_rel.value == 0.25
    assert [row[0] for row in m.first] == [(0, 1), (1, 0)]


def test_public_name_is_lazy_export() -> None:
    assert pytest_pypto.assert_close is assert_close


def test_report_lists_only_the_first_ten() -> None:
    expected = np.zeros(25, np.int32)
    actual = np.arange(1, 26, dtype=np.int32)
    err = _fail(actual, expected, name="idx")
    text = str(err)
    assert text.splitlines()[0] == (
        "output 'idx': 25 / 25 elements mismatch (100%); int32, rtol=0, atol=0"
    )
    assert "  first 10 of 25 mismatching elements (index: actual, expected, diff):" in text
    assert "    [9]: 10, 0, 10" in text and "[10]:" not in text
    assert "greatest absolute difference: 25 at index [24] (allowed 0)" in text
    # relative difference against 0 is infinite everywhere: the first one is reported
    assert "greatest relative difference: inf at index [0] (allowed 0)" in text


@pytest.mark.parametrize(
    ("dtype", "close", "far"),
    [
        (np.float32, 1 + 5e-6, 1 + 5e-5),
        (np.float16, 1 + 9.765625e-4, 1 + 4e-3),
        (ml_dtypes.bfloat16, 1 + 7.8125e-3, 1 + 3.125e-2),
        (ml_dtypes.float8_e4m3fn, 1.125, 1.5),
    ],
)
def test_default_tolerance_per_dtype(dtype, close, far) -> None:
    expected = np.ones(4, dtype)
    ok = np.array([1, 1, close, 1]).astype(dtype)
    assert_close(ok, expected)
    bad = np.array([1, 1, far, 1]).astype(dtype)
    err = _fail(bad, expected)
    assert err.outputs[0].mismatched == 1


def test_integers_are_exact_even_beyond_float64() -> None:
    expected = np.array([2**62], np.int64)
    assert_close(expected.copy(), expected)
    err = _fail(expected + 1, expected)
    assert err.outputs[0].mismatched == 1


def test_bf16_output_against_fp32_golden_gets_bf16_tolerance() -> None:
    golden = np.array([1.0, 3.0], np.float32)
    actual = golden.astype(ml_dtypes.bfloat16) + ml_dtypes.bfloat16(0.0078125)
    assert_close(actual, golden)


def test_rtol_and_atol_come_together() -> None:
    with pytest.raises(ValueError, match="both rtol and atol"):
        assert_close(np.ones(2), np.ones(2), rtol=0.1)
    with pytest.raises(ValueError, match="both rtol and atol"):
        assert_close(np.ones(2), np.ones(2), atol=0.1)


def test_nan_rules() -> None:
    expected = np.array([1.0, np.nan, np.inf], np.float32)
    assert_close(np.array([1.0, np.nan, np.inf], np.float32), expected)
    err = _fail(np.array([1.0, 5.0, np.inf], np.float32), expected)
    assert err.outputs[0].first[0][0] == (1,)
    assert_close(np.array([1.0, 5.0, np.inf], np.float32), expected, equal_nan=True)
    err = _fail(np.array([1.0, np.nan, -np.inf], np.float32), expected)
    assert [r[0] for r in err.outputs[0].first] == [(2,)]
    # NaN where a number is expected is a mismatch even with equal_nan
    _fail(np.array([np.nan], np.float32), np.array([1.0], np.float32), equal_nan=True)


def test_shape_mismatch_is_reported() -> None:
    err = _fail(np.zeros((2, 3)), np.zeros((3, 2)), name="y")
    assert str(err) == "output 'y': shape (2, 3) differs from the expected shape (3, 2)"


def test_all_close_reports_every_failing_output() -> None:
    good = np.ones(3, np.float32)
    with pytest.raises(MismatchError) as info:
        assert_all_close(
            {
                "a": (good + 1, good),
                "b": (good, good),
                "c": (np.array([1, 2, 4], np.int32), np.array([1, 2, 3], np.int32)),
            },
            context={"platform": "a2a3sim"},
        )
    err = info.value
    assert [m.name for m in err.outputs] == ["a", "c"]
    lines = str(err).splitlines()
    assert lines[0].startswith("output 'a': 3 / 3 elements mismatch (100%)")
    assert "output 'c': 1 / 3 elements mismatch (33.33%); int32, rtol=0, atol=0" in lines
    assert lines[-1] == "platform: a2a3sim"
    assert "output 'b'" not in str(err)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float64, 8, elements=st.floats(-1e3, 1e3)),
    hnp.arrays(np.float64, 8, elements=st.floats(-1e3, 1e3)),
    st.sampled_from([(1e-3, 1e-3), (0.1, 0.0), (0.0, 0.5)]),
)
def test_agrees_with_numpy_isclose(actual, expected, tol) -> None:
    rtol, atol = tol
    want = int((~np.isclose(actual, expected, rtol=rtol, atol=atol)).sum())
    if want == 0:
        assert_close(actual, expected, rtol, atol)
    else:
        err = _fail(actual, expected, rtol, atol)
        assert err.outputs[0].mismatched == want
