# SPDX-License-Identifier: Apache-2.0
"""Window buffers of simulated devices, as both the runtime and the ops see them
(docs/design/distributed.md §1, §3).

A `WindowBuffer` is ``nbytes`` of memory on every rank of a run: one byte array per
rank, made when a rank first touches it.  Every byte array is registered here, so
code that holds a view of one (staging, an op's operand) can tell that the array is
window memory, whose rank it is, and where the same bytes are on another rank.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["WindowBuffer", "is_window", "live", "window_of"]

# id(byte array) -> (buffer, rank): every live rank slice of every window buffer
_ROOTS: dict[int, tuple[WindowBuffer, int]] = {}


class WindowBuffer:
    """``nbytes`` of window memory on each of ``nranks`` ranks."""

    __slots__ = ("nbytes", "nranks", "index", "_slices")

    def __init__(self, nbytes: int, nranks: int, index: int = 0) -> None:
        if nbytes <= 0:
            raise ValueError(f"a window buffer needs a positive size, got {nbytes} bytes")
        self.nbytes = nbytes
        self.nranks = nranks
        self.index = index
        self._slices: dict[int, np.ndarray] = {}

    def rank_bytes(self, rank: int) -> np.ndarray:
        """Rank ``rank``'s slice (zero-filled when first touched)."""
        data = self._slices.get(rank)
        if data is None:
            if not 0 <= rank < self.nranks:
                raise IndexError(f"rank {rank} is outside 0..{self.nranks - 1}")
            data = self._slices[rank] = np.zeros(self.nbytes, np.uint8)
            _ROOTS[id(data)] = (self, rank)
        return data

    def view(self, rank: int, shape: tuple[int, ...], dtype: Any, offset: int = 0) -> np.ndarray:
        """A typed view of ``shape`` at byte ``offset`` of rank ``rank``'s slice."""
        dtype = np.dtype(dtype)
        count = int(np.prod(shape, dtype=np.int64)) if shape else 1
        need = offset + count * dtype.itemsize
        if need > self.nbytes:
            raise ValueError(
                f"a window of shape {list(shape)} ({dtype}) at byte {offset} needs {need} bytes, "
                f"but the window buffer holds {self.nbytes}"
            )
        return self.rank_bytes(rank)[offset:need].view(dtype).reshape(shape)

    def release(self) -> None:
        """Forget every rank's slice (the run is over)."""
        for data in self._slices.values():
            _ROOTS.pop(id(data), None)
        self._slices.clear()

    def __repr__(self) -> str:
        return f"<window buffer {self.index}: {self.nbytes} bytes x {self.nranks} ranks>"


def _root(array: np.ndarray) -> np.ndarray:
    while isinstance(array.base, np.ndarray):
        array = array.base
    return array


def window_of(array: Any) -> tuple[WindowBuffer, int, int] | None:
    """(buffer, rank, byte offset) of an array viewing window memory, else None."""
    if not _ROOTS or not isinstance(array, np.ndarray):
        return None
    root = _root(array)
    found = _ROOTS.get(id(root))
    if found is None:
        return None
    offset = array.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return found[0], found[1], offset


def live() -> bool:
    """Whether any window buffer has memory now (staging checks arguments only then)."""
    return bool(_ROOTS)


def is_window(array: Any) -> bool:
    """Whether ``array`` views window memory (cheap when no window is live)."""
    return bool(_ROOTS) and window_of(array) is not None
