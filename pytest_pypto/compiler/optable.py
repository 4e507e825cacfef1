# SPDX-License-Identifier: Apache-2.0
"""Per-op parameter facts the passes and codegen read for every call, computed once.

Every call the compiler looks at walks its op's `ParamSpec`s: is this a value operand,
is it required, what is its default, is a given keyword one of them.  Those answers
are fixed per `OpSpec` (a frozen dataclass), so `param_table` derives them once per
spec object and hands the same table back for every later call of that op.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_pypto.ir.registry import VALUE_KINDS, OpSpec


@dataclass(frozen=True)
class ParamRow:
    """One parameter: its name, kind, whether it holds an IR value, its default."""

    name: str
    kind: str
    is_value: bool
    required: bool
    default: Any


@dataclass(frozen=True)
class ParamTable:
    """An op's parameters in order (``rows``) and their names (``names``)."""

    rows: tuple[ParamRow, ...]
    names: frozenset[str]
    value_names: tuple[str, ...]  # the value operands, in order


_TABLES: dict[int, tuple[OpSpec, ParamTable]] = {}


def param_table(spec: OpSpec) -> ParamTable:
    """The parameter table of ``spec`` (built on the first call for that spec object)."""
    got = _TABLES.get(id(spec))
    if got is not None and got[0] is spec:
        return got[1]
    rows = tuple(
        ParamRow(p.name, p.kind, p.kind in VALUE_KINDS, p.required, p.default)
        for p in spec.params
    )
    table = ParamTable(
        rows, frozenset(r.name for r in rows), tuple(r.name for r in rows if r.is_value)
    )
    _TABLES[id(spec)] = (spec, table)  # the spec is kept alive: its id is never reused
    return table
