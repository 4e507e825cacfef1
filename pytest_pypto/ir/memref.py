# SPDX-License-Identifier: Apache-2.0
"""A tile's declared allocation (`pl.MemRef`): the IR record and its run-time slot check.

PyPTO lets an author bind a tile to an allocation of their own, optionally split
into N equal slots selected by an index (`pl.Tile[[64, 64], pl.FP32, buf[i % 2],
pl.Mem.Vec]`).  On device that fixes the tile's address; in the functional
simulator every tile is its own array, so the binding is a storage hint: it is
type-checked, checked against the memory planner's rules (compiler/memref_slots.py),
printed, and a run-time slot index is bounds-checked when the kernel runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.registry import OpRuleError


@dataclass(frozen=True, eq=False)
class MemRefBinding:
    """One annotation's binding: allocation ``name`` of ``slots`` slots, slot ``index``.

    ``index`` is None when the annotation binds the allocation without selecting a
    slot, an int when the slot is known at parse time, else a Scalar `Expr`.
    """

    name: str
    slots: int
    index: Any = None  # None | int | nodes.Expr
    span: Span | None = None

    @property
    def selects_slot(self) -> bool:
        return self.index is not None

    @property
    def static_index(self) -> int | None:
        return self.index if isinstance(self.index, int) else None

    @property
    def declaration(self) -> str:
        """How PyPTO spells the declaration in diagnostics: ``pl.MemRef("ub", slots=2)``."""
        slots = f", slots={self.slots}" if self.slots != 1 else ""
        return f'pl.MemRef("{self.name}"{slots})'


def check_slot(index: Any, slots: int, name: str) -> int:
    """The run-time check of a dynamic slot index (called by generated kernels)."""
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < slots:
        raise OpRuleError(
            f"slot index {index!r} is out of range for '{name}', declared with {slots} slot(s)",
            hint=f"select a slot within [0, {slots}), e.g. {name}[i % {slots}]",
        )
    return index
