# SPDX-License-Identifier: Apache-2.0
"""Shared pieces of the gather/scatter families: index checks at run time, mask patterns.

An index outside its target is a run-time `OpIndexError`; the simulator turns it
into a `SimulationError` at the kernel line that made the call (the device would
read or write memory it does not own).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import np
from pytest_pypto.ir.registry import CallInfo, OpRuleError, OpTypeError

# Data dtypes of the index-form gather and of scatter (tile and tensor forms alike).
GATHER_DTYPES = ("FP16", "FP32", "INT16", "INT32")
SCATTER_DTYPES = ("INT8", "INT16", "INT32", "FP16", "FP32", "BF16")

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


def require_mask_pattern(info: CallInfo) -> int:
    """The call's ``mask_pattern`` as 1..7; anything else is a type error listing the names."""
    pattern = mask_pattern(info.values.get("mask_pattern"))
    if pattern not in MASK_PATTERNS:
        raise OpTypeError(
            f"The operator {info.op} requires mask_pattern in range [1, 7], but got "
            f"{info.values.get('mask_pattern')!r}",
            ", ".join(f"{k}={v}" for k, v in MASK_NAMES.items()),
        )
    return pattern


def require_gather_index(info: CallInfo, data: Any, index: Any, data_name: str,
                         index_name: str) -> None:
    """A gather's index dtype (``data``/``index`` are DataTypes): INT32 for any data, or
    INT16 with 16-bit data."""
    if index.name == "INT32" or (index.name == "INT16" and data.bits == 16):
        return
    raise OpTypeError(
        f"The operator {info.op} requires {index_name} dtype INT32 (any {data_name}), or INT16 "
        f"with a 16-bit {data_name}, but got {index.name} with {data_name} {data.name}",
        f"pl.cast the {index_name} to pl.INT32",
    )


def require_scatter_index(info: CallInfo, data: Any, index: Any, data_name: str,
                          index_name: str) -> None:
    """A scatter's index width follows the data's: 4 bytes for 4-byte data, else 2 (the
    device's index element is never narrower than 16 bits)."""
    need = 2 if data.itemsize == 1 else data.itemsize
    if index.itemsize == need:
        return
    raise OpTypeError(
        f"The operator {info.op} with {data_name} dtype {data.name} ({data.itemsize} "
        f"bytes) requires {index_name} dtype of {need} bytes, but got {index.name} "
        f"({index.itemsize} bytes)",
        f"pl.cast the {index_name} to pl.{'INT32' if need == 4 else 'INT16'}",
    )


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
