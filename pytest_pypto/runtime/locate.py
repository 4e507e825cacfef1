"""Point run-time errors at the user's kernel source.

Generated modules may carry a ``SPANS`` table (generated line -> (file, line, col)
of the user's source, see `pytest_pypto.ir.artifact`).  When an op rule fails at
run time (e.g. a dynamic window past a tensor's edge, docs/design/checks.md §6) or the
orchestration misuses a tensor, the failing generated line is found in the
traceback and mapped back, so the `SimulationError` shows the user's file:line.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import TracebackType
from typing import Any

from pytest_pypto.ir.nodes import Span


def spans_of(namespace: Mapping[str, Any]) -> dict[int, Span]:
    """The ``SPANS`` table of a generated module as Spans (empty when absent or malformed)."""
    raw = namespace.get("SPANS")
    if not isinstance(raw, Mapping):
        return {}
    table = {}
    for line, where in raw.items():
        if isinstance(where, Span):
            table[int(line)] = where
        elif isinstance(where, (tuple, list)) and len(where) >= 2:
            col = int(where[2]) if len(where) > 2 else 1
            table[int(line)] = Span(str(where[0]), int(where[1]), col)
    return table


def scalars_of(namespace: Mapping[str, Any]) -> dict[int, tuple[tuple[str, str], ...]]:
    """The ``SCALARS`` table of a generated module (empty when absent or malformed)."""
    raw = namespace.get("SCALARS")
    if not isinstance(raw, Mapping):
        return {}
    table = {}
    for line, pairs in raw.items():
        try:
            table[int(line)] = tuple((str(user), str(local)) for user, local in pairs)
        except (TypeError, ValueError):
            continue
    return table


def _innermost(tb: TracebackType | None, path: str) -> TracebackType | None:
    """The innermost traceback entry executing the generated file ``path``."""
    found = None
    while tb is not None:
        if tb.tb_frame.f_code.co_filename == path:
            found = tb
        tb = tb.tb_next
    return found


def _nearest(table: Mapping[int, Any], line: int) -> Any:
    got = table.get(line)
    if got is None:  # a continuation line: take the nearest mapped line above it
        above = [k for k in table if k <= line]
        got = table[max(above)] if above else None
    return got


def span_at(spans: Mapping[int, Span], line: int) -> Span | None:
    """The user span of generated line ``line`` (the nearest mapped line above it)."""
    return _nearest(spans, line) if spans else None


def span_in(tb: TracebackType | None, path: str, spans: Mapping[int, Span]) -> Span | None:
    """The user span of the innermost traceback frame executing ``path``."""
    if not spans:
        return None
    found = _innermost(tb, path)
    return None if found is None else _nearest(spans, found.tb_lineno)


def scalar_values(
    tb: TracebackType | None, path: str, scalars: Mapping[int, tuple[tuple[str, str], ...]]
) -> str:
    """``"c = 1, M = 96"``: the Scalars the failing generated line reads, with the values
    they had in its frame ("" when unknown)."""
    found = _innermost(tb, path) if scalars else None
    if found is None:
        return ""
    pairs = scalars.get(found.tb_lineno, ())
    values = found.tb_frame.f_locals
    return ", ".join(
        f"{user} = {values[local]!r}" for user, local in pairs
        if local in values and isinstance(values[local], (int, float, bool))
    )
