# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the gather/scatter families: index checks at run time, mask patterns.

An index outside its target is a run-time `OpIndexError`; the simulator turns it
into a `SimulationError` at the kernel line that made the call (the device would
read or write memory it does not own).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import np
from pytest_pypto.ir.registry import OpRuleError

# MaskPattern (PyPTO's pl.tile.MaskPattern, 1..7): (first marked column, stride).
MASK_PATTERNS = {1: (0, 2), 2: (1, 2), 3: (0, 4), 4: (1, 4), 5: (2, 4), 6: (3, 4), 7: (0, 1)}
MASK_NAMES = {1: "P0101", 2: "P1010", 3: "P0001", 4: "P0010", 5: "P0100", 6: "P1000", 7: "P1111"}


class OpIndexError(OpRuleError):
    """An index of a gather/scatter falls outside its source or destination (run time)."""


def mask_pattern(value: Any) -> int | None:
    """The int of a MaskPattern member, int or name (None when it is none of those)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    name = getattr(value, "name", value)
    for k, v in MASK_NAMES.items():
        if v == name:
            return k
    raw = getattr(value, "value", None)
    return raw if isinstance(raw, int) else None


def check_indices(op: str, indices: Any, limit: int, what: str) -> Any:
    """``indices`` as int64, every one in [0, limit); otherwise an OpIndexError naming the
    first bad index and where it sits."""
    idx = np.asarray(indices).astype(np.int64)
    bad = (idx < 0) | (idx >= limit)
    if bad.any():
        pos = tuple(int(i) for i in np.argwhere(bad)[0])
        value = int(idx[pos])
        raise OpIndexError(
            f"{op}: index {value} at position {list(pos)} is out of range for {what} "
            f"(valid indices are 0..{limit - 1})",
            "check the index tile's values",
        )
    return idx
