"""The mismatch heatmap: pixels say where the errors are (docs/design/plugin.md §19)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

# the plot extra (part of [dev]): the picture is what these tests read back
from matplotlib import image as mpimg

from pytest_pypto.harness.heatmap import write_heatmap
from pytest_pypto.ir.dtypes import ALL_DTYPES
from pytest_pypto.ir.values import poison_value

FP32 = next(d for d in ALL_DTYPES if d.storage == "float32")
PURPLE = np.array([0.267, 0.005, 0.329])  # viridis at 0: an exact element


def _pixels(path: Path) -> np.ndarray:
    return mpimg.imread(str(path))[..., :3]


def _mask(img: np.ndarray, rgb, tol: float = 0.08) -> np.ndarray:
    return np.all(np.abs(img - np.asarray(rgb)) < tol, axis=-1)


def _cell_grid(img: np.ndarray, rows: int, cols: int):
    """The data area: the bounding box of the exact (purple) pixels; its cell size."""
    ys, xs = np.nonzero(_mask(img, PURPLE))
    y0, y1, x0, x1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    return y0, x0, (y1 - y0) / rows, (x1 - x0) / cols


def _cell_of(y: float, x: float, grid) -> tuple[int, int]:
    y0, x0, h, w = grid
    return int((y - y0) // h), int((x - x0) // w)


def test_the_circle_and_the_hot_pixel_sit_on_the_worst_element(tmp_path: Path) -> None:
    expected = np.zeros((8, 16), np.float32)
    actual = expected.copy()
    actual[5, 11] = 10.0  # the worst: 1000x the allowed 0.01
    actual[2, 3] = 0.05   # a lesser error
    path = write_heatmap(tmp_path / "mismatch.png", "out", actual, expected, 0.0, 0.01)
    assert path is not None and path.is_file()
    img = _pixels(path)
    grid = _cell_grid(img, 8, 16)
    ys, xs = np.nonzero(_mask(img, (0.0, 1.0, 0.0), tol=0.25))  # the green circle
    assert len(ys) > 20
    assert _cell_of(ys.mean(), xs.mean(), grid) == (5, 11)
    # the hottest (yellow) pixels are that element's, and the lesser error is not purple
    y0, x0, h, w = grid
    centre = img[int(y0 + 5.5 * h), int(x0 + 11.5 * w)]
    assert centre[0] > 0.8 and centre[1] > 0.8 and centre[2] < 0.3  # viridis' top: yellow
    lesser = img[int(y0 + 2.5 * h), int(x0 + 3.5 * w)]
    assert not np.allclose(lesser, PURPLE, atol=0.05)


def test_never_written_and_nan_elements_are_marked(tmp_path: Path) -> None:
    expected = np.zeros((6, 6), np.float32)
    actual = expected.copy()
    actual[4, 1] = 3.0
    actual[0, 5] = np.float32(poison_value(FP32))  # never written
    actual[3, 3] = np.nan
    path = write_heatmap(tmp_path / "m.png", "out", actual, expected, 0.0, 0.01)
    img = _pixels(path)
    y0, x0, h, w = _cell_grid(img, 6, 6)

    def at(r: int, c: int) -> np.ndarray:
        return img[int(y0 + (r + 0.5) * h), int(x0 + (c + 0.5) * w)]

    assert np.allclose(at(0, 5), (0.55, 0.55, 0.55), atol=0.03)  # grey: never written
    assert np.allclose(at(3, 3), (0.0, 0.0, 1.0), atol=0.03)  # blue: NaN
    assert np.allclose(at(1, 1), PURPLE, atol=0.03)


def test_an_nd_tensor_is_a_grid_of_slices_with_the_worst_one_circled(tmp_path: Path) -> None:
    expected = np.zeros((3, 4, 5), np.float32)
    actual = expected.copy()
    actual[0, 0, 0] = 0.5
    actual[2, 1, 3] = 9.0  # the worst, in the third slice
    path = write_heatmap(tmp_path / "m.png", "out", actual, expected, 0.0, 0.01)
    img = _pixels(path)
    ys, xs = np.nonzero(_mask(img, (0.0, 1.0, 0.0), tol=0.25))
    assert len(ys) > 20
    # three slices side by side: the circle is in the right-most third of the picture
    purple_x = np.nonzero(_mask(img, PURPLE))[1]
    left, right = purple_x.min(), purple_x.max()
    assert xs.mean() > left + 2 * (right - left) / 3


def test_a_failing_check_keeps_mismatch_png_and_names_it(cases) -> None:
    cases.makepyfile(
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(pypto_runner):
            pypto_runner.check(WrongAdd())
        """
    )
    result = cases.runpytest("--pypto-arch=a5")
    result.assert_outcomes(failed=1)
    kept = next((cases.path / "build_output").iterdir())
    result.stdout.fnmatch_lines([f"*mismatch heatmap: {kept / 'mismatch.png'}*"])
    # WrongAdd's golden is off at [0, 3] (by 1.0) and [2, 0] (by 1.0): both circled
    # candidates are equal, the first in row-major order is the worst reported
    img = _pixels(kept / "mismatch.png")
    assert img.shape[0] > 100 and _mask(img, (0.0, 1.0, 0.0), tol=0.25).sum() > 20


def test_a_failing_assert_close_in_a_kernel_test_keeps_its_heatmap_too(cases) -> None:
    cases.makepyfile(
        test_readme="""
        import numpy as np
        import pytest_pypto
        from kcases import Add

        def test_add(pypto_runner):
            x = np.full((16, 64), 1.0, np.float32)
            out = np.empty((16, 64), np.float32)
            pypto_runner.run(Add, x, x, out)
            want = x + x
            want[9, 40] = 7.0
            pytest_pypto.assert_close(out, want, name="out")
        """
    )
    result = cases.runpytest()
    result.assert_outcomes(failed=1)
    kept = next((cases.path / "build_output").iterdir())
    result.stdout.fnmatch_lines([f"*mismatch heatmap: {kept / 'mismatch.png'}*"])
    img = _pixels(kept / "mismatch.png")
    grid = _cell_grid(img, 16, 64)
    ys, xs = np.nonzero(_mask(img, (0.0, 1.0, 0.0), tol=0.25))
    assert _cell_of(ys.mean(), xs.mean(), grid) == (9, 40)
