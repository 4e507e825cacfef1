"""Cast legalization and cast numerics (docs/design/arch.md §6, docs/design/numerics.md §4).

A cast the arch cannot do in one instruction runs as the shortest chain of native
hops; the simulator rounds once per hop, so double-rounding matches the device.
The chain search is plain Python over `ArchSpec.native_casts` (compile time, no
numpy); the hop numerics load numpy on first use.
"""

from __future__ import annotations

import warnings
from typing import Any

from pytest_pypto.ir.dtypes import DataType, dtype_by_name
from pytest_pypto.ir.errors import PyptoWarning

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


def _dtype(name: str) -> DataType | None:
    try:
        return dtype_by_name(name)
    except KeyError:
        return None


# Significand and exponent bits of the float formats an intermediate may be judged by.
_FLOAT_FORMAT = {"FP32": (24, 8), "FP16": (11, 5), "BF16": (8, 8)}


def _value_bits(dt: DataType) -> int:
    return dt.bits if dt.kind == "uint" else dt.bits - 1


def _narrows(mid: str, dst: str) -> bool:
    """Whether ``mid`` as an intermediate could lose values the destination can hold.

    PyPTO's cast legalization refuses such hops even when a chain through them exists
    (a2a3 INT16 -> INT32 would have to pass FP16 or FP32, whose significands are shorter
    than INT32's value bits), so the pair is unreachable rather than silently lossy.
    """
    m, d = _dtype(mid), _dtype(dst)
    if m is None or d is None or mid == dst:
        return False
    if m.is_int and d.is_float:
        return True
    if m.is_float and d.is_float:
        fm, fd = _FLOAT_FORMAT.get(mid), _FLOAT_FORMAT.get(dst)
        return bool(fm and fd) and (fm[0] < fd[0] or fm[1] < fd[1])
    if m.is_float and d.is_int:
        fm = _FLOAT_FORMAT.get(mid)
        return fm is not None and fm[0] < _value_bits(d)
    if m.is_int and d.is_int:
        return (m.kind == "uint" and d.kind != "uint") or _value_bits(m) < _value_bits(d)
    return False


def _hop_cost(a: str, b: str) -> int:
    """Tie-break of one hop: int -> same-width float 0, float -> float 1, anything else 2."""
    da, db = _dtype(a), _dtype(b)
    if da is None or db is None:
        return 2
    if not da.is_float and db.is_float and da.bits == db.bits:
        return 0
    return 1 if da.is_float and db.is_float else 2


def _same_width_float(name: str) -> str | None:
    dt = _dtype(name)
    if dt is None or dt.is_float:
        return None
    return {32: "FP32", 16: "FP16"}.get(dt.bits)


def cast_chain(arch: Any, src: str, dst: str) -> list[str] | None:
    """Shortest chain of native casts from ``src`` to ``dst`` on ``arch`` (names, both ends
    included), or None when unreachable; ``[src, dst]`` for a native pair, ``[src]`` for
    src == dst.  This is PyPTO's legalization (docs/design/arch.md §6): a breadth-first search over
    the native table that never passes an intermediate narrower than the destination
    (`_narrows`); among equally short chains the lowest summed `_hop_cost` wins, then
    the first found, visiting an integer's same-width float first, then table order."""
    if src == dst:
        return [src]
    graph = arch.native_casts
    if dst in graph.get(src, ()):
        return [src, dst]
    best: dict[str, tuple[int, int, str | None]] = {src: (0, 0, None)}  # dist, cost, parent
    queue = [src]
    for cur in queue:  # the list grows while it is walked: a FIFO queue
        dist, cost, _ = best[cur]
        nexts = list(graph.get(cur, ()))
        first = _same_width_float(cur)
        if first in nexts:
            nexts.remove(first)
            nexts.insert(0, first)
        for nxt in nexts:
            if nxt != dst and _narrows(nxt, dst):
                continue
            entry = (dist + 1, cost + _hop_cost(cur, nxt), cur)
            seen = best.get(nxt)
            if seen is None:
                best[nxt] = entry
                queue.append(nxt)
            elif seen[0] == entry[0] and entry[1] < seen[1]:
                best[nxt] = entry
    if dst not in best:
        return None
    chain = [dst]
    while chain[-1] != src:
        parent = best[chain[-1]][2]
        assert parent is not None
        chain.append(parent)
    return chain[::-1]


# -------------------------------------------------------------------- numerics


def _np() -> Any:
    import numpy  # lazy: numpy-free registry

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
