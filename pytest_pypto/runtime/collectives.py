# SPDX-License-Identifier: Apache-2.0
"""Collectives over the ranks' window slices, in numpy (docs/design/distributed.md §3).

Each function takes, per operand, the list of every rank's array (index = rank) and
updates the result window in place, as PyPTO's collectives leave it once every rank
has returned.  Signals are not touched: PyPTO's collectives clear their credit
counters before they return, so a signal is all zero again afterwards.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

__all__ = ["COLLECTIVES", "all_to_all", "all_to_all_v", "allgather", "allreduce", "broadcast",
           "reduce_scatter"]

_REDUCERS = {0: np.add, 1: np.maximum, 2: np.minimum, 3: np.multiply}
_NAMES = {"sum": 0, "max": 1, "min": 2, "prod": 3}


def reducer(op: object) -> np.ufunc:
    """The numpy combine of a ReduceOp (enum, its int value, or its name)."""
    key = _NAMES.get(str(getattr(op, "name", op)).lower(), op)
    try:
        return _REDUCERS[int(key)]  # type: ignore[call-overload]
    except (KeyError, TypeError, ValueError):
        raise ValueError(f"unknown reduce op {op!r}; expected pld.ReduceOp.Sum, Max, Min "
                         "or Prod") from None


def _reduce(slices: Sequence[np.ndarray], op: object) -> np.ndarray:
    combine = reducer(op)
    total = np.array(slices[0], copy=True)
    for part in slices[1:]:
        combine(total, part, out=total, casting="unsafe")
    return total


def allreduce(target: Sequence[np.ndarray], op: object = 0) -> None:
    """Every rank's slice becomes the combine of all slices (in rank order)."""
    total = _reduce(target, op)
    for t in target:
        t[...] = total


def allgather(local: Sequence[np.ndarray], target: Sequence[np.ndarray]) -> None:
    """Row ``src`` of every rank's ``target`` is rank ``src``'s ``local`` chunk."""
    for src, chunk in enumerate(local):
        flat = np.asarray(chunk).reshape(-1)
        for t in target:
            t[src].reshape(-1)[...] = flat


def reduce_scatter(target: Sequence[np.ndarray], op: object = 0) -> None:
    """Row ``r`` of rank ``r``'s ``target`` is the combine of every rank's row ``r``."""
    rows = [_reduce([t[r] for t in target], op) for r in range(len(target))]
    for r, t in enumerate(target):
        t[r] = rows[r]


def broadcast(target: Sequence[np.ndarray], root: int) -> None:
    """Every rank's slice is a copy of rank ``root``'s."""
    data = np.array(target[root], copy=True)
    for t in target:
        t[...] = data


def all_to_all(inputs: Sequence[np.ndarray], target: Sequence[np.ndarray]) -> None:
    """Row ``src`` of rank ``dst``'s ``target`` is row ``dst`` of rank ``src``'s input."""
    n = len(target)
    blocks = [[np.array(_block(i, d, n), copy=True) for d in range(n)] for i in inputs]
    for dst, t in enumerate(target):
        for src in range(n):
            _block(t, src, n)[...] = blocks[src][dst]


def all_to_all_v(inputs: Sequence[np.ndarray], target: Sequence[np.ndarray],
                 send_counts: Sequence[np.ndarray], recv_counts: Sequence[np.ndarray]) -> None:
    """`all_to_all` in blocks of ``target.shape[0] // nranks`` rows; rank ``dst``'s
    ``recv_counts[src]`` is rank ``src``'s ``send_counts[dst]`` cut at the block size."""
    all_to_all(inputs, target)
    n = len(target)
    cap = target[0].shape[0] // n
    for dst in range(n):
        cells = recv_counts[dst].reshape(n, -1)
        for src in range(n):
            cells[src, 0] = min(max(int(send_counts[src].reshape(-1)[dst]), 0), cap)


def _block(array: np.ndarray, index: int, n: int) -> np.ndarray:
    rows = array.shape[0] // n
    return array[index * rows:(index + 1) * rows]


COLLECTIVES = ("allreduce", "allgather", "reduce_scatter", "broadcast", "all_to_all",
               "all_to_all_v", "barrier")
