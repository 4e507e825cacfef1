"""The mismatch heatmap: where in a tensor a failed comparison went wrong, as a picture
(docs/design/plugin.md §19).

Each pixel is one element's ``|actual - expected| / allowed`` (``allowed = atol + rtol *
|expected|``, the rule of harness/compare.py) on viridis: dark purple is exact, within
tolerance stays in the lower third, errors past it climb to yellow on a log scale.  Elements the kernel never wrote (the simulator's poison) are grey, NaN in
the actual output blue; the worst measurable element is circled in green.  A 1-D
tensor is one row, an N-D one a grid of its 2-D slices over the last two axes (the
slices holding mismatches first, at most `MAX_SLICES`); a slice larger than
`MAX_PIXELS` a side shows the maximum of each block.  Needs matplotlib (the ``plot``
extra), imported only when a picture is drawn.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

__all__ = [
    "HEATMAP_HINT", "MAX_PIXELS", "MAX_SLICES", "error_ratio", "heatmap_names", "write_heatmap",
]

HEATMAP_HINT = "mismatch.png needs matplotlib: pip install pytest-pypto[plot]"
MAX_SLICES = 16
MAX_PIXELS = 512
NEVER_WRITTEN_RGB = (0.55, 0.55, 0.55)
NAN_RGB = (0.0, 0.0, 1.0)
WORST_RGB = (0.0, 1.0, 0.0)


def error_ratio(
    actual: np.ndarray, expected: np.ndarray, rtol: float, atol: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(ratio, never_written, nan)`` per element: the error over what is allowed (inf
    where nothing is allowed but something differs; NaN where not measurable), and the
    masks of poisoned and NaN actual elements."""
    from pytest_pypto.harness.compare import _poisoned  # lazy: compare imports this module

    a = np.asarray(actual).astype(np.float64)
    e = np.asarray(expected).astype(np.float64)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a - e)
        allowed = atol + rtol * np.abs(e)
        ratio = np.where(allowed > 0, diff / np.where(allowed > 0, allowed, 1.0), np.inf)
        ratio = np.where(diff == 0, 0.0, ratio)
    never = _poisoned(np.asarray(actual)).reshape(a.shape)
    nan = np.isnan(a) & ~never & ~np.isnan(e)
    ratio = np.where(never | nan | np.isnan(e), np.nan, ratio)
    return ratio, never, nan


def _as_slices(array: np.ndarray) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """``array`` as a stack of 2-D slices and each slice's leading index."""
    if array.ndim == 0:
        return array.reshape(1, 1, 1), [()]
    if array.ndim == 1:
        return array.reshape(1, 1, -1), [()]
    lead = array.shape[:-2]
    stack = array.reshape(-1, *array.shape[-2:])
    return stack, [tuple(int(i) for i in np.unravel_index(k, lead)) for k in range(len(stack))]


def _block(plane: np.ndarray, how: str) -> tuple[np.ndarray, int, int]:
    """``plane`` reduced to at most `MAX_PIXELS` a side (block max / any); the factors."""
    fy = max(1, math.ceil(plane.shape[0] / MAX_PIXELS))
    fx = max(1, math.ceil(plane.shape[1] / MAX_PIXELS))
    if fy == fx == 1:
        return plane, 1, 1
    h, w = math.ceil(plane.shape[0] / fy) * fy, math.ceil(plane.shape[1] / fx) * fx
    fill = False if how == "any" else np.nan
    padded = np.full((h, w), fill, dtype=plane.dtype)
    padded[: plane.shape[0], : plane.shape[1]] = plane
    blocks = padded.reshape(h // fy, fy, w // fx, fx)
    if how == "any":
        return blocks.any(axis=(1, 3)), fy, fx
    with np.errstate(invalid="ignore"):
        return np.nanmax(np.where(np.isnan(blocks), -np.inf, blocks), axis=(1, 3)), fy, fx


def _shade(ratio: np.ndarray, top: float) -> np.ndarray:
    """Colormap position of each ratio: within tolerance (<= 1) the lower third,
    linearly; past it the upper half, on a log scale up to ``top`` (so a 5x error
    still shows next to a 1000x one)."""
    r = np.clip(ratio, 0.0, top)
    with np.errstate(divide="ignore", invalid="ignore"):
        past = 0.5 + 0.5 * np.log(np.maximum(r, 1.0)) / math.log(max(top, math.e))
    return np.where(r <= 1.0, r / 3.0, np.minimum(past, 1.0))


def write_heatmap(
    path: str | Path,
    name: str,
    actual: Any,
    expected: Any,
    rtol: float,
    atol: float,
) -> Path | None:
    """Draw output ``name``'s mismatch heatmap into ``path`` (a PNG); None when
    matplotlib is not installed (`HEATMAP_HINT` says what to install)."""
    if importlib.util.find_spec("matplotlib") is None:
        return None
    import matplotlib  # lazy: optional dependency (the plot extra)

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # lazy: optional dependency (the plot extra)

    ratio, never, nan = error_ratio(np.asarray(actual), np.asarray(expected), rtol, atol)
    stack, leads = _as_slices(ratio)
    never_stack, _ = _as_slices(never)
    nan_stack, _ = _as_slices(nan)
    finite = np.where(np.isfinite(ratio), ratio, -1.0)
    worst_flat = int(np.argmax(finite)) if ratio.size and finite.max() >= 0 else None
    worst = np.unravel_index(worst_flat, ratio.shape) if worst_flat is not None else None
    bad = np.isnan(stack) | ~(np.nan_to_num(stack, nan=0.0, posinf=2.0) <= 1.0)
    order = sorted(range(len(stack)), key=lambda k: (not bad[k].any(), k))[:MAX_SLICES]
    order.sort()
    top = max(1.0, float(np.nanmax(np.where(np.isinf(stack), np.nan, stack))) if np.isfinite(stack).any() else 1.0)
    cols = min(len(order), 4)
    rows = math.ceil(len(order) / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.6 * rows), squeeze=False)
    cmap = plt.get_cmap("viridis")
    for ax in axes.flat[len(order):]:
        ax.axis("off")
    for ax, k in zip(axes.flat, order):
        plane, fy, fx = _block(stack[k], "max")
        plane = np.where(np.isneginf(plane), np.nan, plane)
        rgb = cmap(_shade(np.nan_to_num(plane, nan=0.0, posinf=top), top))[..., :3]
        rgb[_block(never_stack[k], "any")[0]] = NEVER_WRITTEN_RGB
        rgb[_block(nan_stack[k], "any")[0]] = NAN_RGB
        ax.imshow(rgb, interpolation="nearest", aspect="auto")
        lead = leads[k]
        ax.set_title(f"{name}[{', '.join([*map(str, lead), ':', ':'][: max(ratio.ndim, 1)])}]"
                     if lead else name, fontsize=9)
        if worst is not None and tuple(worst[: len(lead)]) == lead:
            y, x = (worst[-2], worst[-1]) if ratio.ndim >= 2 else (0, worst[-1] if ratio.ndim else 0)
            ax.plot([x // fx], [y // fy], "o", markersize=16, markerfacecolor="none",
                    markeredgecolor=WORST_RGB, markeredgewidth=2.5)
    where = f" worst {ratio[worst]:.3g}x allowed at {list(map(int, worst))}" if worst else ""
    fig.suptitle(
        f"|actual - expected| / allowed (purple 0, teal 1, yellow {top:.3g}, log); grey never "
        f"written, blue NaN;{where}",
        fontsize=9,
    )
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=80)
    plt.close(fig)
    return out


def heatmap_names(names: Sequence[str]) -> dict[str, str]:
    """File name per output: ``mismatch.png`` for the first, ``mismatch-<name>.png``
    for any other."""
    return {n: "mismatch.png" if i == 0 else f"mismatch-{n}.png" for i, n in enumerate(names)}
