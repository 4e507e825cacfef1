"""Cast legalization and cast numerics (ARCH.md §5, DSL.md §5.3).

A cast the arch cannot do in one instruction runs as the shortest chain of native
hops; the simulator rounds once per hop, so double-rounding matches the device.
The chain search is plain Python over `ArchSpec.native_casts` (compile time, no
numpy); the hop numerics load numpy on first use.
"""

from __future__ import annotations

import warnings
from typing import Any

from pytest_pypto.ir.dtypes import DataType, dtype_by_name

CAST_MODES = ("none", "rint", "round", "floor", "ceil", "trunc", "odd")


def mode_name(mode: Any) -> str:
    """Normalize a cast mode (name or 0-6); ValueError lists the valid ones."""
    if isinstance(mode, bool):
        raise ValueError(f"unknown cast mode {mode!r}")
    if isinstance(mode, int) and 0 <= mode < len(CAST_MODES):
        return CAST_MODES[mode]
    if isinstance(mode, str) and mode in CAST_MODES:
        return mode
    name = getattr(mode, "name", None)
    if name in CAST_MODES:
        return name
    raise ValueError(
        f"unknown cast mode {mode!r}; valid: {', '.join(CAST_MODES)} (or 0-{len(CAST_MODES) - 1})"
    )


def _bits(name: str) -> int:
    try:
        return dtype_by_name(name).bits
    except KeyError:
        return 0


def _is_float(name: str) -> bool:
    try:
        return dtype_by_name(name).is_float
    except KeyError:
        return False


def _hop_rank(prev: str, mid: str) -> int:
    """Tie-break of one intermediate: same-width float first, then a width change."""
    if _is_float(mid) and _bits(mid) == _bits(prev):
        return 0
    if _bits(mid) != _bits(prev):
        return 1
    return 2


def cast_chain(arch: Any, src: str, dst: str) -> list[str] | None:
    """Shortest chain of native casts from ``src`` to ``dst`` on ``arch`` (names, both ends
    included), or None when unreachable.  ``[src, dst]`` for a native pair; ``[src]`` for
    src == dst.  Ties prefer a same-width float intermediate, then a width change, then
    names in alphabetical order, so the choice is deterministic."""
    if src == dst:
        return [src]
    graph = arch.native_casts
    # BFS layer by layer, keeping every shortest path, then pick the best by rank.
    paths: list[list[str]] = [[src]]
    seen = {src}
    while paths:
        done = [p + [dst] for p in paths if dst in graph.get(p[-1], ())]
        if done:
            return min(done, key=_chain_key)
        layer: list[list[str]] = []
        reached: set[str] = set()
        for p in paths:
            for nxt in graph.get(p[-1], ()):
                if nxt not in seen:
                    layer.append(p + [nxt])
                    reached.add(nxt)
        seen |= reached
        paths = layer
    return None


def _chain_key(chain: list[str]) -> tuple[Any, ...]:
    ranks = tuple(_hop_rank(a, b) for a, b in zip(chain[:-2], chain[1:-1]))
    return ranks, tuple(chain)


# -------------------------------------------------------------------- numerics


def _np() -> Any:
    import numpy

    return numpy


def round_float_to_int(x: Any, mode: str) -> Any:
    """Apply a rounding mode to float values (float64 result, integers or NaN/inf)."""
    np = _np()
    x = np.asarray(x, dtype=np.float64)
    if mode == "rint":
        return np.rint(x)
    if mode == "round":  # half away from zero
        return np.trunc(x + np.copysign(0.5, x))
    if mode == "floor":
        return np.floor(x)
    if mode == "ceil":
        return np.ceil(x)
    if mode in ("trunc", "none"):
        return np.trunc(x)
    if mode == "odd":  # nearest, ties to the odd neighbour
        lo = np.floor(x)
        tie = (x - lo) == 0.5
        near = np.rint(x)
        odd_pick = np.where(np.fmod(lo, 2) != 0, lo, lo + 1)
        return np.where(tie, odd_pick, near)
    raise ValueError(f"unknown cast mode {mode!r}")


def convert_hop(data: Any, src: DataType, dst: DataType, mode: str = "round") -> Any:
    """One native conversion: ``data`` stored as ``src`` -> an array stored as ``dst``.

    float->float and int->float round to nearest even (overflow to inf); int->int
    wraps; float->int applies ``mode``, maps NaN to 0 and clamps to the range of
    ``dst`` with a PyptoWarning (the device result would be undefined).
    """
    np = _np()
    arr = np.asarray(data)
    with np.errstate(over="ignore", invalid="ignore"):
        if dst.is_int and src.is_float:
            r = round_float_to_int(arr.astype(np.float32), mode)
            info = np.iinfo(dst.np)
            nan = np.isnan(r)
            out_of_range = (r < info.min) | (r > info.max)
            if nan.any() or out_of_range.any():
                from pytest_pypto.ir.errors import PyptoWarning

                warnings.warn(
                    f"cast {src.name}->{dst.name}: {int(nan.sum())} NaN and "
                    f"{int(out_of_range.sum())} out-of-range value(s) were clamped (undefined "
                    "on the device)", PyptoWarning, stacklevel=3,
                )
                r = np.clip(np.where(nan, 0.0, r), info.min, info.max)
            return r.astype(dst.np)
        if dst.is_float and src.is_float:
            wide = arr if arr.dtype.itemsize >= 4 else arr.astype(np.float32)
            return wide.astype(dst.np)
        if dst.is_float:  # int -> float: exact in float64 for |x| < 2**53, then RNE once
            if dst.np.itemsize >= 4 or dst.name == "FP16":
                return arr.astype(np.float64).astype(dst.np)
            return arr.astype(np.float64).astype(np.float32).astype(dst.np)
        if dst.name == "BOOL":
            return arr != 0
        return arr.astype(np.int64).astype(dst.np)  # int -> int wraps


def run_chain(data: Any, chain: list[str] | tuple[str, ...], mode: str = "round") -> Any:
    """Convert along ``chain`` (dtype names), one rounding per hop; the mode applies to
    the float->int hop."""
    arr = data
    for a, b in zip(chain[:-1], chain[1:]):
        arr = convert_hop(arr, dtype_by_name(a), dtype_by_name(b), mode)
    return arr
