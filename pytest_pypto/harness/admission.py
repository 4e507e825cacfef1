"""One large case at a time on a machine: admission for cases whose tensors are a large
share of its memory (docs/design/runtime.md §4).

A case's declared tensors are only part of what it needs: its golden (torch copies, FP32
widenings) and the run come on top, typically twice as much again.  Two such cases side
by side (two xdist workers, two pytest processes) can exhaust the machine, and then the
OOM killer takes a worker instead of anything failing cleanly.  So a case whose declared
tensors need at least `LARGE_SHARE` of the machine's memory holds this user's machine-wide
"large case" lock (an ``fcntl.flock``, released if the process dies) from drawing its
inputs to its last comparison; smaller cases never touch it.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
from collections.abc import Iterable, Iterator
from typing import Any

from pytest_pypto.harness.settings import machine_memory
from pytest_pypto.runtime.devices import DeviceLockError, user_lock_file

LARGE_SHARE = 1 / 16  # of the machine's memory: a case at least this large runs alone
LOCK_NAME = "large-case.lock"

__all__ = ["LARGE_SHARE", "LOCK_NAME", "declared_bytes", "is_large", "large_case"]


def declared_bytes(specs: Iterable[Any]) -> int:
    """Bytes of the tensors ``specs`` declare (objects with ``shape`` and ``np_dtype``;
    anything else counts nothing)."""
    total = 0
    for spec in specs:
        shape, dtype = getattr(spec, "shape", None), getattr(spec, "np_dtype", None)
        if shape is None or dtype is None:
            continue
        count = 1
        for d in shape:
            count *= int(d)
        total += count * dtype.itemsize
    return total


def is_large(nbytes: int, total: int | None = None) -> bool:
    """Whether a case declaring ``nbytes`` of tensors is large on a machine of ``total``
    bytes (default: this one; unknown memory: never)."""
    total = machine_memory() if total is None else total
    return total is not None and nbytes >= total * LARGE_SHARE


@contextlib.contextmanager
def large_case(nbytes: int) -> Iterator[bool]:
    """Hold the machine-wide large-case lock while a case of ``nbytes`` runs, if it is
    large (yields whether it held it); a lock that cannot be used is skipped, since the
    lock only protects against running out of memory."""
    if not is_large(nbytes):
        yield False
        return
    try:
        fd = user_lock_file(LOCK_NAME)
    except DeviceLockError:
        yield False
        return
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield True
    finally:
        os.close(fd)  # releases the lock
