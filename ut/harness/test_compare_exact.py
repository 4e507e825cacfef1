"""assert_close on complex numbers, on integers past 2**53, and on what is not numbers
(issue 26, items 3 and 12).

Complex outputs are compared on both parts (the modulus of the difference); integer
outputs are compared in exact integer arithmetic, with or without a tolerance; a
string or an object array is refused with a TypeError naming the argument.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pytest_pypto.harness.compare import MismatchError, assert_close, find_mismatch

BIG = 2**53


# --------------------------------------------------------------------- complex


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_imaginary_parts_are_compared(dtype) -> None:
    expected = np.array([1 + 1j, 2 + 2j, 3 - 3j], dtype)
    actual = expected.copy()
    actual[1] = 2 - 5j  # same real part, wrong imaginary part
    with pytest.raises(MismatchError) as info:
        assert_close(actual, expected, name="z")
    (m,) = info.value.outputs
    assert (m.mismatched, m.total) == (1, 3)
    assert [row[0] for row in m.first] == [(1,)]
    assert m.max_abs.value == pytest.approx(7.0)  # |(2-5j) - (2+2j)|
    text = str(info.value)
    assert text.splitlines()[0].startswith(f"output 'z': 1 / 3 elements mismatch (33.33%); "
                                           f"{np.dtype(dtype).name}")
    assert "    [1]: 2-5j, 2+2j, 7" in text


def test_complex_within_tolerance_passes_and_equal_parts_pass() -> None:
    expected = np.array([1 + 1j, -2 + 0.5j], np.complex64)
    assert_close(expected.copy(), expected)
    assert_close(expected + np.complex64(1e-7j), expected)  # well inside 1e-5


def test_torch_complex_imaginary_parts_are_compared() -> None:
    expected = torch.tensor([1 + 1j, 2 + 2j], dtype=torch.complex64)
    actual = torch.tensor([1 + 1j, 2 - 2j], dtype=torch.complex64)
    with pytest.raises(MismatchError) as info:
        assert_close(actual, expected)
    assert info.value.outputs[0].mismatched == 1
    assert_close(expected.clone(), expected)


def test_complex_actual_against_a_real_golden_compares_the_imaginary_part() -> None:
    m = find_mismatch(np.array([1 + 3j, 2 + 0j]), np.array([1.0, 2.0]))
    assert m is not None and m.mismatched == 1 and m.first[0][0] == (0,)


def test_complex_nan_in_either_part_is_counted_as_nan() -> None:
    actual = np.array([complex(1, np.nan), 2 + 0j], np.complex128)
    m = find_mismatch(actual, np.array([1 + 0j, 2 + 0j]))
    assert (m.mismatched, m.nan) == (1, 1)


# --------------------------------------------------------------- big integers


@pytest.mark.parametrize("dtype", [np.int64, np.uint64])
def test_big_ints_that_differ_fail_with_a_tolerance(dtype) -> None:
    expected = np.array([BIG, BIG + 2, 5], dtype)
    actual = np.array([BIG + 1, BIG + 2, 5], dtype)  # equal as float64, not as ints
    with pytest.raises(MismatchError) as info:
        assert_close(actual, expected, rtol=1e-20, atol=0.5)
    (m,) = info.value.outputs
    assert (m.mismatched, m.first[0][0]) == (1, (0,))
    # the report shows the exact integers and their exact difference
    assert f"    [0]: {BIG + 1}, {BIG}, 1" in str(info.value)
    assert m.max_abs.value == 1


def test_big_ints_differ_without_a_tolerance_too() -> None:
    expected = np.array([2**63 - 1], np.int64)
    with pytest.raises(MismatchError):
        assert_close(np.array([2**63 - 2], np.int64), expected)
    assert_close(expected.copy(), expected)


def test_uint64_top_values_and_mixed_signedness_compare_exactly() -> None:
    top = np.array([2**64 - 1, 2**63], np.uint64)
    assert_close(top.copy(), top, rtol=0.0, atol=0.0)
    m = find_mismatch(np.array([2**64 - 2, 2**63], np.uint64), top, 0.0, 0.5)
    assert m is not None and m.mismatched == 1
    # int64 against a uint64 golden: exact, in either direction
    assert find_mismatch(np.array([BIG + 1], np.int64), np.array([BIG], np.uint64), 0, 0.5)
    assert find_mismatch(np.array([-1], np.int64), np.array([2**64 - 1], np.uint64), 0, 1) \
        is not None


def test_an_int_tolerance_is_applied_in_exact_arithmetic() -> None:
    # atol 1 allows a difference of exactly 1, at any magnitude
    expected = np.array([2**62, -(2**63), 7], np.int64)
    assert_close(expected + np.array([1, 1, -1], np.int64), expected, rtol=0.0, atol=1.0)
    m = find_mismatch(expected + np.array([2, 0, 0], np.int64), expected, 0.0, 1.0)
    assert m is not None and m.mismatched == 1
    # rtol relative to the exact golden: 2**60 * 2**-10 = 2**50 allowed, 2**50 + 1 not
    e = np.array([2**60, 2**60], np.int64)
    a = e + np.array([2**50, 2**50 + 1], np.int64)
    m = find_mismatch(a, e, 2.0**-10, 0.0)
    assert m is not None and [row[0] for row in m.first] == [(1,)]


def test_an_int_tolerance_still_passes_small_differences() -> None:
    expected = np.arange(10, dtype=np.int32)
    assert_close(expected + 1, expected, rtol=0.0, atol=1.0)
    with pytest.raises(MismatchError):
        assert_close(expected + 2, expected, rtol=0.0, atol=1.0)


def test_an_infinite_tolerance_on_ints_passes_everything() -> None:
    assert_close(np.array([2**62], np.int64), np.array([0], np.int64), rtol=0.0, atol=np.inf)


# ------------------------------------------------------------ not numbers


@pytest.mark.parametrize(
    ("actual", "expected", "which"),
    [
        ("abc", "abd", "actual"),
        (["a"], ["a"], "actual"),
        (np.ones(2), np.array(["x", "y"]), "expected"),
        (np.array([1, None], dtype=object), np.ones(2), "actual"),
        (b"ab", b"ab", "actual"),
    ],
)
def test_strings_and_objects_are_refused_naming_the_argument(actual, expected, which) -> None:
    with pytest.raises(TypeError) as info:
        assert_close(actual, expected)
    text = str(info.value)
    assert text.startswith(f"assert_close(): {which} is ")
    assert "numbers" in text and "numpy array" in text and "torch tensor" in text


@pytest.mark.parametrize(("rtol", "atol", "error"), [
    (-1e-3, 1e-3, ValueError),
    (1e-3, -1.0, ValueError),
    (float("nan"), 0.0, ValueError),
    ("1e-3", 1e-3, TypeError),
    (True, 0.0, TypeError),
])
def test_a_tolerance_that_means_nothing_is_refused(rtol, atol, error) -> None:
    a = np.ones(4, np.float32)
    with pytest.raises(error, match="assert_close: (rtol|atol)="):
        assert_close(a, a, rtol=rtol, atol=atol)


def test_an_infinite_tolerance_still_passes_finite_differences() -> None:
    assert_close(np.ones(3), np.zeros(3), rtol=0.0, atol=float("inf"))
