"""Tolerances: the one place that decides which (rtol, atol) a comparison uses.

An element passes when ``|actual - expected| <= atol + rtol * |expected|`` (numpy's
``isclose`` rule, evaluated in float64).  Without an explicit pair the tolerance of
the output's dtype applies (the looser of the actual and expected dtypes, so a bf16
output checked against an fp32 golden gets bf16 tolerance):

=====================  ========  ========  ==========================================
dtype                  rtol      atol      why
=====================  ========  ========  ==========================================
float64                1e-7      1e-7      host goldens; not a kernel storage type
float32                1e-5      1e-5      PyPTO's harness default
float16                1e-3      1e-3      10 mantissa bits (eps 9.8e-4)
bfloat16               1e-2      1e-2      7 mantissa bits (eps 7.8e-3)
float8_e4m3fn          1.25e-1   1.25e-1   3 mantissa bits (eps 0.125)
float8_e5m2            2.5e-1    2.5e-1    2 mantissa bits (eps 0.25)
float8_e8m0fnu         1.0       0         powers of two only
float4_e2m1fn          5e-1      5e-1      1 mantissa bit
ints, uint, bool       0         0         exact
=====================  ========  ========  ==========================================

Where a pair comes from, per public path:

* ``assert_close`` / ``assert_all_close`` / ``find_mismatch``: the ``rtol``/``atol``
  arguments, a pair or neither (one alone is a ``ValueError``); neither: the dtype's.
* ``pypto_runner.check(case)`` / ``run(case)`` (`case_tolerance`): the case's class
  attributes ``rtol``/``atol`` (both or neither, else ``ValueError``), else the case's
  own ``case.config`` (PyPTO's cases tune ``self.config.rtol``; PyPTO's flavour gives
  every case a config of 1e-5, pytest_pypto/compat/cases.py), else the cell's RunConfig,
  else the dtype's.  A config may hold only one of the two (``RunConfig`` refuses that
  at construction, but a case may assign one later): the other then comes from the
  dtype, per output (`complete`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["DEFAULT_TOLERANCES", "EXACT", "case_tolerance", "complete", "default_tolerance",
           "explicit"]

# numpy dtype name -> (rtol, atol); the table of the module docstring.
DEFAULT_TOLERANCES: dict[str, tuple[float, float]] = {
    "float64": (1e-7, 1e-7),
    "float32": (1e-5, 1e-5),
    "float16": (1e-3, 1e-3),
    "bfloat16": (1e-2, 1e-2),
    "float8_e4m3fn": (1.25e-1, 1.25e-1),
    "float8_e5m2": (2.5e-1, 2.5e-1),
    "float8_e8m0fnu": (1.0, 0.0),
    "float4_e2m1fn": (5e-1, 5e-1),
}
EXACT = (0.0, 0.0)


def default_tolerance(*dtypes: Any) -> tuple[float, float]:
    """(rtol, atol) for comparing values stored in ``dtypes``: the loosest of them.

    Integer and bool dtypes are exact; a float dtype missing from the table gets
    the float32 tolerance.
    """
    rtol, atol = EXACT
    for dtype in dtypes:
        dt = np.dtype(dtype)
        if dt.kind in "biu":
            tol = EXACT
        else:
            tol = DEFAULT_TOLERANCES.get(dt.name, DEFAULT_TOLERANCES["float32"])
        rtol, atol = max(rtol, tol[0]), max(atol, tol[1])
    return rtol, atol


def explicit(
    rtol: float | None, atol: float | None, actual: Any, expected: Any
) -> tuple[float, float]:
    """The pair ``assert_close`` compares ``actual`` with ``expected`` by: both given,
    else the dtypes' (one alone is a ``ValueError``)."""
    if (rtol is None) != (atol is None):
        raise ValueError(
            f"assert_close(rtol={rtol!r}, atol={atol!r}): give both rtol and atol, or neither "
            f"(None = the per-dtype defaults)"
        )
    if rtol is None:
        return default_tolerance(actual.dtype, expected.dtype)
    return checked(rtol, atol, "assert_close")


def checked(rtol: Any, atol: Any, where: str) -> tuple[float, float]:
    """``(rtol, atol)`` as floats, refusing what no comparison can mean: a value that is
    not a number, a negative one or NaN (``inf`` is allowed: everything finite passes)."""
    out = []
    for name, value in (("rtol", rtol), ("atol", atol)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(
            value, "__float__"
        ):
            raise TypeError(f"{where}: {name}={value!r} is not a number")
        number = float(value)
        if not number >= 0:  # negative or NaN
            raise ValueError(f"{where}: {name}={value!r}: a tolerance is a number >= 0")
        out.append(number)
    return out[0], out[1]


def case_tolerance(case: Any, config: Any) -> tuple[float | None, float | None]:
    """A case's pair (module docstring): its class attributes, else its own
    ``case.config``'s, else the cell's ``config``'s, else (None, None).  Either may
    be None alone (a config tuned one); `complete` fills it in per output."""
    if (case.rtol is None) != (case.atol is None):
        raise ValueError(
            f"{case.get_name()}: rtol={case.rtol!r}, atol={case.atol!r}: give both or neither"
        )
    if case.rtol is not None:
        return checked(case.rtol, case.atol, case.get_name())
    own = getattr(case, "config", None)
    for source in (own, config):
        pair = (getattr(source, "rtol", None), getattr(source, "atol", None))
        if pair != (None, None):
            return pair
    return None, None


def complete(
    pair: tuple[float | None, float | None], actual: Any, expected: Any
) -> tuple[float | None, float | None]:
    """``pair`` with a missing half taken from the dtypes' default (both missing: as
    given, so the comparison applies the dtype's pair itself)."""
    rtol, atol = pair
    if (rtol is None) != (atol is None):
        default_rtol, default_atol = default_tolerance(actual.dtype, expected.dtype)
        rtol = default_rtol if rtol is None else rtol
        atol = default_atol if atol is None else atol
    return rtol, atol
