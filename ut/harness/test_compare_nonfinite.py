"""assert_close with NaN, inf and never-written (poisoned) elements in the actual output.

The poison patterns are written here bit by bit (docs/design/numerics.md §6: a quiet NaN of
its own payload for floats, 0x7FE5A5A5 for FP32; 0xA5 bytes for ints), independently of
`pytest_pypto.ir.values`.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from pytest_pypto.harness.compare import MismatchError, assert_close, find_mismatch


def _bits(pattern: int, dtype: object, shape: tuple[int, ...]) -> np.ndarray:
    """An array of ``shape`` whose every element has the raw bits ``pattern``."""
    dt = np.dtype(dtype)
    raw = np.full(shape, pattern, dtype=f"u{dt.itemsize}")
    return raw.view(dt)


def _report(actual: np.ndarray, expected: np.ndarray, **kw: object) -> str:
    with pytest.raises(MismatchError) as info:
        assert_close(actual, expected, **kw)
    return str(info.value)


def test_exact_report_of_never_written_rows() -> None:
    # Rows 0-1 written correctly (1.0 vs 1.0), [2, 0] off by 0.5, rows 2-3 otherwise
    # never written (the float32 poison 0x7FE5A5A5).
    expected = np.ones((4, 3), np.float32)
    actual = expected.copy()
    actual[2:] = _bits(0x7FE5A5A5, np.float32, (2, 3))
    actual[2, 0] = 1.5
    assert _report(actual, expected, rtol=0.01, atol=0.01, name="out") == (
        "output 'out': 6 / 12 elements mismatch (50%); float32, rtol=0.01, atol=0.01\n"
        "  greatest absolute difference among finite elements: 0.5 at index [2, 0] "
        "(allowed 0.02)\n"
        "  greatest relative difference among finite elements: 0.5 at index [2, 0] "
        "(allowed 0.02)\n"
        "  not finite in the actual output: 5 NaN of the 6 mismatching elements\n"
        "  never written: 5 elements hold the simulator's poison pattern (memory no store "
        "reached, or values computed from it)\n"
        "  help: a store is missing or its offsets do not cover the tensor (first "
        "never-written element at index [2, 1])\n"
        "  mismatching elements (index: actual, expected, diff):\n"
        "    [2, 0]: 1.5, 1, 0.5\n"
        "    [2, 1]: nan, 1, nan\n"
        "    [2, 2]: nan, 1, nan\n"
        "    [3, 0]: nan, 1, nan\n"
        "    [3, 1]: nan, 1, nan\n"
        "    [3, 2]: nan, 1, nan"
    )


def test_a_computed_nan_is_not_called_never_written() -> None:
    """0/0 on the host gives the negative quiet NaN (0xFFC00000), not the poison."""
    expected = np.ones(8, np.float32)
    actual = expected.copy()
    actual[:3] = _bits(0xFFC00000, np.float32, (3,))
    actual[3] = np.inf
    m = find_mismatch(actual, expected)
    assert (m.mismatched, m.nan, m.inf, m.poisoned) == (4, 3, 1, 0)
    text = "\n".join(m.lines())
    assert "not finite in the actual output: 3 NaN and 1 inf of the 4 mismatching elements" in text
    assert "never written" not in text and "help:" not in text


@pytest.mark.parametrize(
    ("dtype", "pattern"),
    [
        (np.float16, 0x7EA5),
        (ml_dtypes.bfloat16, 0x7FE5),
        (np.int32, 0xA5A5A5A5),
        (np.uint8, 0xA5),
        (np.int64, 0xA5A5A5A5A5A5A5A5),
    ],
)
def test_poison_of_every_storage_width_is_recognised(dtype, pattern) -> None:
    expected = np.zeros(10, dtype)
    actual = expected.copy()
    actual[4:] = _bits(pattern, dtype, (6,))
    m = find_mismatch(actual, expected)
    assert (m.mismatched, m.poisoned, m.first_poisoned) == (6, 6, (4,))
    assert m.nan == (6 if np.dtype(dtype).kind == "f" or dtype is ml_dtypes.bfloat16 else 0)
    assert "never written: 6 elements" in "\n".join(m.lines())


def test_wrong_ints_that_are_not_the_pattern_are_plain_mismatches() -> None:
    expected = np.arange(6, dtype=np.int32)
    m = find_mismatch(expected + 7, expected)
    assert (m.mismatched, m.poisoned, m.nan) == (6, 0, 0)
    assert "never written" not in "\n".join(m.lines())


def test_bool_poison_is_indistinguishable_and_never_reported() -> None:
    m = find_mismatch(np.ones(4, bool), np.zeros(4, bool))
    assert (m.mismatched, m.poisoned) == (4, 0)


def test_all_nan_says_there_is_no_finite_difference() -> None:
    actual = _bits(0x7FC00000, np.float32, (2, 2))
    text = _report(actual, np.zeros((2, 2), np.float32))
    lines = text.splitlines()
    assert lines[1] == "  greatest difference: none to measure (no element is finite in both)"
    assert lines[2] == "  not finite in the actual output: 4 NaN of the 4 mismatching elements"
    assert "greatest absolute" not in text


def test_an_expected_nan_that_matches_is_not_counted() -> None:
    expected = np.array([np.nan, 1.0, 2.0], np.float32)
    actual = np.array([np.nan, 1.0, 5.0], np.float32)
    m = find_mismatch(actual, expected)
    assert (m.mismatched, m.nan, m.poisoned) == (1, 0, 0)
    assert m.lines()[1] == "  greatest absolute difference: 3 at index [2] (allowed 3e-05)"


def test_add_context_appends_only_missing_lines_in_place() -> None:
    with pytest.raises(MismatchError) as info:
        assert_close(np.ones(2), np.zeros(2), context=["platform: a5sim"])
    err = info.value
    err.add_context(["platform: a5sim", "seed: 4", "reproduce: pytest t.py"])
    assert err.context == ("platform: a5sim", "seed: 4", "reproduce: pytest t.py")
    assert str(err).splitlines()[-3:] == ["platform: a5sim", "seed: 4", "reproduce: pytest t.py"]
    err.add_context(["seed: 4"])
    assert str(err).count("seed: 4") == 1
