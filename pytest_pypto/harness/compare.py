"""`pytest_pypto.assert_close`: compare kernel outputs against goldens, report for people.

An element passes when ``|actual - expected| <= atol + rtol * |expected|`` (numpy's
``isclose`` rule, evaluated in float64).  ``rtol`` and ``atol`` come as a pair or not
at all; without them the tolerance of the output's dtype applies (the table and every
path's rules are in harness/tolerance.py).  Two integer (or bool) arrays compare in
exact integer arithmetic, tolerance included, so int64/uint64 values past 2**53 that
differ never pass; complex arrays compare both parts (``|actual - expected|`` is the
modulus of the complex difference).  Anything that is not numbers (strings, bytes,
object arrays) is a ``TypeError`` naming the argument.

NaN and infinities: a NaN where a NaN is expected matches, and an infinity matches
the same infinity.  With ``equal_nan=True`` a NaN in the expected value is a
don't-care: any actual value passes there.

A failure raises `MismatchError` (an ``AssertionError``) whose text names the output,
the mismatched count and percent, the greatest absolute and relative differences
with their index and the difference allowed there, the first mismatching elements,
and the caller's context lines (platform, seed, a command that reproduces it).  NaN
and infinities in the actual output are counted apart (the greatest differences then
measure the finite elements), and elements that still hold the simulator's poison
pattern for never-written memory are counted as never written, with a hint.  Inside
a pytest-pypto test the plugin appends the test's platform, seed and repro command.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NamedTuple

import numpy as np

from pytest_pypto.harness.tensors import to_numpy
from pytest_pypto.harness.tolerance import DEFAULT_TOLERANCES, default_tolerance, explicit
from pytest_pypto.ir.dtypes import ALL_DTYPES
from pytest_pypto.ir.values import poison_is_distinct, poison_value

__all__ = [
    "DEFAULT_TOLERANCES",
    "FIRST_MISMATCHES",
    "MismatchError",
    "OutputMismatch",
    "assert_all_close",
    "assert_close",
    "default_tolerance",
    "find_mismatch",
]

# How many mismatching elements a report lists.
FIRST_MISMATCHES = 10


class Extreme(NamedTuple):
    """The greatest difference of one kind: value, where, and the same kind of
    difference the tolerance allows there (absolute, or relative to the expected)."""

    value: float
    index: tuple[int, ...]
    allowed: float


class OutputMismatch(NamedTuple):
    """What is wrong with one output (the structured form of its report block)."""

    name: str
    mismatched: int
    total: int
    rtol: float
    atol: float
    dtype: str
    max_abs: Extreme | None
    max_rel: Extreme | None
    first: tuple[tuple[tuple[int, ...], Any, Any, float], ...]  # index, actual, expected, diff
    shape_error: str | None = None
    nan: int = 0  # mismatching elements whose actual value is NaN
    inf: int = 0  # ... is an infinity
    poisoned: int = 0  # ... still holds the simulator's never-written pattern
    first_poisoned: tuple[int, ...] | None = None  # index of the first of those

    @property
    def percent(self) -> float:
        return 100.0 * self.mismatched / self.total if self.total else 100.0

    def lines(self) -> list[str]:
        """The report block of this output."""
        if self.shape_error is not None:
            return [f"output {self.name!r}: {self.shape_error}"]
        out = [
            f"output {self.name!r}: {self.mismatched} / {self.total} elements mismatch "
            f"({_pct(self.percent)}); {self.dtype}, rtol={_num(self.rtol)}, "
            f"atol={_num(self.atol)}"
        ]
        among = " among finite elements" if self.nan or self.inf else ""
        for label, ext in (("absolute", self.max_abs), ("relative", self.max_rel)):
            if ext is not None:
                out.append(
                    f"  greatest {label} difference{among}: {_num(ext.value)} at index "
                    f"{_idx(ext.index)} (allowed {_num(ext.allowed)})"
                )
        if self.max_abs is None and among:
            out.append("  greatest difference: none to measure (no element is finite in both)")
        out.extend(self._poison_lines())
        shown = len(self.first)
        which = f"first {shown} of {self.mismatched} " if shown < self.mismatched else ""
        out.append(f"  {which}mismatching elements (index: actual, expected, diff):")
        for index, actual, expected, diff in self.first:
            out.append(f"    {_idx(index)}: {_num(actual)}, {_num(expected)}, {_num(diff)}")
        return out

    def _poison_lines(self) -> list[str]:
        """NaN / inf counts of the mismatches, and how many were never written."""
        out = []
        if self.nan or self.inf:
            kinds = [f"{n} {what}" for n, what in ((self.nan, "NaN"), (self.inf, "inf")) if n]
            out.append(
                f"  not finite in the actual output: {' and '.join(kinds)} of the "
                f"{self.mismatched} mismatching elements"
            )
        if self.poisoned:
            out.append(
                f"  never written: {self.poisoned} elements hold the simulator's poison "
                f"pattern (memory no store reached, or values computed from it)"
            )
            where = ""
            if self.first_poisoned is not None:
                where = f" (first never-written element at index {_idx(self.first_poisoned)})"
            out.append(f"  help: a store is missing or its offsets do not cover the tensor{where}")
        return out


class MismatchError(AssertionError):
    """Outputs differ from their goldens; ``outputs`` holds one `OutputMismatch` each."""

    failure_class = "mismatch"

    def __init__(
        self,
        outputs: Sequence[OutputMismatch],
        context: Sequence[str] = (),
        arrays: Mapping[str, tuple[Any, Any]] | None = None,
    ) -> None:
        self.outputs = tuple(outputs)
        self.context = tuple(context)
        # name -> (actual, expected) as compared: a test that fails with this error gets
        # its mismatch heatmap drawn from them (plugin/remote.py, harness/heatmap.py)
        self.arrays = dict(arrays or {})
        super().__init__(self.report())

    def report(self) -> str:
        lines: list[str] = []
        for mismatch in self.outputs:
            lines.extend(mismatch.lines())
        lines.extend(self.context)
        return "\n".join(lines)

    def with_context(self, context: Iterable[str]) -> MismatchError:
        """The same mismatches with more context lines appended."""
        return MismatchError(self.outputs, (*self.context, *context), self.arrays)

    def add_context(self, context: Iterable[str]) -> None:
        """Append the context lines this error lacks, in place (the plugin adds the
        test's platform, seed and repro command to an error already raised)."""
        new = tuple(line for line in context if line not in self.context)
        if new:
            self.context = (*self.context, *new)
            self.args = (self.report(),)


def _num(value: Any) -> str:
    """Compact, stable number text (6 significant digits; ints as ints)."""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (complex, np.complexfloating)):
        z = complex(value)
        sign = "-" if z.imag < 0 or (z.imag == 0 and math.copysign(1, z.imag) < 0) else "+"
        return f"{_num(z.real)}{sign}{_num(abs(z.imag))}j"
    v = float(value)
    if v.is_integer() and abs(v) < 1e16:
        return str(int(v))
    return f"{v:.6g}"


def _pct(p: float) -> str:
    text = f"{p:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


def _idx(index: tuple[int, ...]) -> str:
    return "[" + ", ".join(str(int(i)) for i in index) + "]"


def _to_numpy(value: Any) -> np.ndarray:
    """An ndarray view of ``value`` (torch tensors convert at this boundary)."""
    return to_numpy(value)


def find_mismatch(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    *,
    name: str = "output",
    equal_nan: bool = False,
    first: int = FIRST_MISMATCHES,
) -> OutputMismatch | None:
    """Compare one output; None when it is close enough, else what is wrong."""
    a = _operand(actual, "actual")
    e = _operand(expected, "expected")
    rt, at = explicit(rtol, atol, _part(a), _part(e))
    dtype = a.dtype.name
    if a.shape != e.shape:
        return OutputMismatch(
            name,
            a.size,
            a.size,
            rt,
            at,
            dtype,
            None,
            None,
            (),
            shape_error=f"shape {a.shape} differs from the expected shape {e.shape}",
        )
    exact = a.dtype.kind in "biu" and e.dtype.kind in "biu"
    wide = np.complex128 if "c" in (a.dtype.kind, e.dtype.kind) else np.float64
    a64, e64 = a.astype(wide), e.astype(wide)
    exact_diff = None
    if exact:  # integers: exact integer arithmetic, whatever the magnitude
        ok, exact_diff = _ints_close(a, e, rt, at)
    else:
        with np.errstate(invalid="ignore", over="ignore"):
            ok = (np.abs(a64 - e64) <= at + rt * np.abs(e64)) & np.isfinite(e64)
            ok |= a64 == e64  # an infinity matches only the same infinity
        e_nan = np.isnan(e64)
        ok |= e_nan & (equal_nan | np.isnan(a64))
    bad = ~ok
    mismatched = int(bad.sum())
    if mismatched == 0:
        return None
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        diff = np.abs(a64 - e64) if exact_diff is None else exact_diff.astype(np.float64)
        allowed = at + rt * np.abs(e64)
        rel = diff / np.abs(e64)
        allowed_rel = np.where(allowed == 0, 0.0, allowed / np.abs(e64))
        # NaN / inf in the actual output are counted apart; the greatest differences
        # measure the finite part (a NaN difference would hide them).
        a_finite = np.isfinite(a64)
        diff_finite = np.where(a_finite, diff, np.nan)
        rel_finite = np.where(a_finite, rel, np.nan)
    max_abs = _extreme(diff_finite, allowed, exact_diff)
    max_rel = _extreme(rel_finite, allowed_rel)
    flat = np.flatnonzero(bad)[:first]
    rows = []
    for f in flat:
        index = tuple(int(i) for i in np.unravel_index(f, a.shape)) if a.ndim else ()
        d = int(exact_diff[index]) if exact_diff is not None else float(diff[index])
        rows.append((index, a[index].item(), e[index].item(), d))
    nan = int((bad & np.isnan(a64)).sum())
    inf = int((bad & np.isinf(a64)).sum())
    poisoned_at = bad & _poisoned(a)
    poisoned = int(poisoned_at.sum())
    first_poisoned = None
    if poisoned:
        f = int(np.flatnonzero(poisoned_at)[0])
        first_poisoned = tuple(int(i) for i in np.unravel_index(f, a.shape)) if a.ndim else ()
    return OutputMismatch(
        name, mismatched, a.size, rt, at, dtype, max_abs, max_rel, tuple(rows),
        nan=nan, inf=inf, poisoned=poisoned, first_poisoned=first_poisoned,
    )


_ACCEPTED = "numbers: a numpy array, a torch tensor, a number or a nested list of numbers"


def _operand(value: Any, which: str) -> np.ndarray:
    """``value`` as a numeric ndarray; a TypeError naming the argument (``which``)
    for strings, bytes, objects and ragged lists."""
    try:
        array = _to_numpy(value)
    except (TypeError, ValueError) as exc:
        raise TypeError(
            f"assert_close(): {which} is {_describe(value)}, which is not an array of "
            f"numbers ({exc}); pass {_ACCEPTED}"
        ) from None
    dt = array.dtype
    if dt.kind not in "biufc" and not dt.type.__module__.startswith("ml_dtypes"):
        raise TypeError(
            f"assert_close(): {which} is {_describe(value)} (dtype {dt}); pass {_ACCEPTED}"
        )
    return array


def _describe(value: Any) -> str:
    text = repr(value)
    if len(text) > 40:
        text = text[:37] + "..."
    return f"{type(value).__name__} {text}"


def _part(a: np.ndarray) -> np.ndarray:
    """What picks the default tolerance: a complex array's real part (complex64 gets
    float32's), any other array itself."""
    return a.real if a.dtype.kind == "c" else a


def _ints_close(
    a: np.ndarray, e: np.ndarray, rtol: float, atol: float
) -> tuple[np.ndarray, np.ndarray]:
    """(ok, |a - e|) for integer arrays, in exact integer arithmetic: int64 when every
    value is within +-2**62, else Python ints.  A tolerance is applied exactly too:
    a float is a ratio of integers, so ``|a - e| <= atol + rtol * |e|`` is decided
    on integers (no float64 rounding, which would pass int64 values past 2**53 that
    differ)."""
    if _fits(a) and _fits(e):
        wa, we = a.astype(np.int64), e.astype(np.int64)
    else:
        wa, we = a.astype(object), e.astype(object)
    diff = np.abs(wa - we)
    ok = np.asarray(diff == 0, dtype=bool)
    if (rtol == 0 and atol == 0) or ok.all():
        return ok, diff
    if not (math.isfinite(rtol) and math.isfinite(atol)):  # inf passes all, NaN none
        with np.errstate(invalid="ignore"):
            ok |= diff.astype(np.float64) <= atol + rtol * np.abs(we).astype(np.float64)
        return ok, diff
    rn, rd = float(rtol).as_integer_ratio()
    an, ad = float(atol).as_integer_ratio()
    where = np.flatnonzero(~ok)
    d = diff.reshape(-1)[where].astype(object)
    m = np.abs(we.reshape(-1)[where]).astype(object)
    flat = ok.reshape(-1)
    flat[where] = np.asarray(d * (ad * rd) <= an * rd + m * (rn * ad), dtype=bool)
    return flat.reshape(ok.shape), diff


def _fits(x: np.ndarray) -> bool:
    """Whether int64 holds ``x`` and the difference of two such values exactly."""
    if x.dtype.itemsize < 8 or x.size == 0:
        return True
    return -(2**62) <= int(x.min()) and int(x.max()) <= 2**62


def _poisoned(a: np.ndarray) -> np.ndarray:
    """Where ``a`` holds, bit for bit, the simulator's value for never-written memory
    (`pytest_pypto.ir.values.poison_value`: a NaN of its own payload for floats, so an
    ordinary NaN is not counted; 0xA5.. bytes for ints).

    BOOL poison is ``True``, indistinguishable from data, and FP8E4M3FN / FP8E8M0 have
    a single NaN encoding: never reported (`poison_is_distinct`).  A dtype the DSL does
    not store (float64 goldens) has no pattern.
    """
    dt = next(
        (d for d in ALL_DTYPES if d.storage == a.dtype.name and poison_is_distinct(d)), None
    )
    if dt is None or a.dtype.itemsize not in (1, 2, 4, 8):
        return np.zeros(a.shape, dtype=bool)
    bits = np.dtype(f"u{a.dtype.itemsize}")
    pattern = np.asarray(poison_value(dt), dtype=a.dtype).reshape(1).view(bits)[0]
    return np.ascontiguousarray(a).view(bits) == pattern


def _extreme(
    values: np.ndarray, allowed: np.ndarray, exact: np.ndarray | None = None
) -> Extreme | None:
    """The greatest non-NaN entry of ``values`` (first on ties), or None when all are NaN;
    its value taken from ``exact`` (integer differences) when given."""
    if values.size == 0:
        return None
    masked = np.where(np.isnan(values), -np.inf, values)
    flat = int(np.argmax(masked))
    if np.isnan(values.flat[flat]):
        return None
    index = tuple(int(i) for i in np.unravel_index(flat, values.shape)) if values.ndim else ()
    value = int(exact.flat[flat]) if exact is not None else float(values.flat[flat])
    return Extreme(value, index, float(allowed.flat[flat]))


def assert_close(
    actual: Any,
    expected: Any,
    rtol: float | None = None,
    atol: float | None = None,
    *,
    name: str = "output",
    equal_nan: bool = False,
    context: Sequence[str] | Mapping[str, Any] | None = None,
) -> None:
    """Raise `MismatchError` when ``actual`` is not close to ``expected``.

    ``context``: extra report lines (a sequence of strings, or a mapping rendered
    as ``key: value``), e.g. the platform, the seed and a reproducing command.
    """
    mismatch = find_mismatch(actual, expected, rtol, atol, name=name, equal_nan=equal_nan)
    if mismatch is not None:
        raise MismatchError([mismatch], _context_lines(context), {name: (actual, expected)})


def assert_all_close(
    outputs: Mapping[str, tuple[Any, Any]],
    rtol: float | None = None,
    atol: float | None = None,
    *,
    equal_nan: bool = False,
    context: Sequence[str] | Mapping[str, Any] | None = None,
) -> None:
    """Compare every ``name -> (actual, expected)`` pair; one error lists every failing output."""
    found = [
        m
        for name, (actual, expected) in outputs.items()
        if (m := find_mismatch(actual, expected, rtol, atol, name=name, equal_nan=equal_nan))
        is not None
    ]
    if found:
        arrays = {m.name: outputs[m.name] for m in found}
        raise MismatchError(found, _context_lines(context), arrays)


def _context_lines(context: Sequence[str] | Mapping[str, Any] | None) -> list[str]:
    if context is None:
        return []
    if isinstance(context, Mapping):
        return [f"{key}: {value}" for key, value in context.items()]
    return [str(line) for line in context]
