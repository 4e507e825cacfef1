"""Large cases share a machine by phases: admission for cases whose tensors are a large
share of its memory (docs/design/runtime.md §4).

A case's declared tensors are only part of what it needs: building its inputs and running
its golden (torch copies, FP32 widenings) peak at about three times the declared bytes,
while compiling, running and comparing afterwards add little (the simulator's window is
bounded).  Two such peaks side by side (two xdist workers, two pytest processes) can
exhaust the machine, and then the OOM killer takes a worker instead of anything failing
cleanly.  So a case whose declared tensors need at least `LARGE_SHARE` of the machine's
memory (a "large" case) is admitted in phases:

- its peak (inputs and golden) holds this user's machine-wide lock `LOCK_NAME` (an
  ``fcntl.flock``, released if the process dies): never two peaks at once;
- before its peak it waits (polling) until the machine has the memory for it,
  `PEAK_FACTOR` times its declared bytes plus a margin, or no other large case is resident;
- from its inputs to its last comparison it is "resident": it holds one of the
  `RESIDENT_SLOTS` slot locks, which other processes count by trying them; a dead
  process's slot is freed by the kernel.  After its golden it gives the peak lock up, so
  the next large case's peak overlaps its compile, run and compare when memory allows.

Smaller cases never touch any of it; nor does anything when the machine's memory is
unknown.  A lock that cannot be used is skipped, since the locks only protect memory.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterable, Iterator
from typing import Any

from pytest_pypto.harness.settings import machine_memory
from pytest_pypto.runtime.devices import DeviceLockError, user_lock_file

LARGE_SHARE = 1 / 16  # of the machine's memory: a case at least this large is admitted
LOCK_NAME = "large-case.lock"  # held during a large case's peak (inputs and golden)
# A large case's peak, in declared bytes: its inputs (~1.05x) plus its golden's transient
# (~2x), measured on PyPTO's paged-attention cases (docs/design/runtime.md §4).
PEAK_FACTOR = 3
# Kept free on top of a peak, as a share of the machine's memory: the growth of the cases
# already resident (their run adds ~0.2x their declared bytes) and the reading's noise.
MARGIN_SHARE = 1 / 16
POLL_SECONDS = 0.25  # how often a case waiting for memory looks again
RESIDENT_SLOTS = 32  # at most this many large cases resident at once are seen
RESIDENT_NAME = "large-case.resident.{}"  # a slot's lock file

__all__ = [
    "CGROUP_FILES", "LARGE_SHARE", "LOCK_NAME", "PEAK_FACTOR", "Admission", "admitted", "declared_bytes",
    "is_large", "large_case", "mem_available", "residents",
]


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


# A container's memory cgroup (v2, v1): its limit and its current use.
CGROUP_FILES = (
    ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
    ("/sys/fs/cgroup/memory/memory.limit_in_bytes", "/sys/fs/cgroup/memory/memory.usage_in_bytes"),
)


def mem_available(
    meminfo: str = "/proc/meminfo", cgroups: Iterable[tuple[str, str]] = CGROUP_FILES
) -> int | None:
    """Bytes the machine can still give without swapping: ``MemAvailable`` of
    ``meminfo``, or less when a memory cgroup (a container) has less room left under its
    limit; None when ``MemAvailable`` cannot be read."""
    available = None
    try:
        with open(meminfo) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    available = int(line.split()[1]) * 1024  # given in kB
                    break
    except (OSError, ValueError, IndexError):
        return None
    if available is None:
        return None
    for limit, used in cgroups:
        try:
            with open(limit) as f, open(used) as g:
                cap, now = f.read().strip(), g.read().strip()
        except OSError:
            continue
        if cap.isdigit() and now.isdigit():  # "max": no limit
            available = min(available, max(0, int(cap) - int(now)))
    return available


def residents() -> int:
    """How many large cases of this user are resident on the machine now (this process's
    own included)."""
    count = 0
    for fd in _slot_fds():
        count += not _try_lock(fd, fcntl.LOCK_SH)
        os.close(fd)  # also drops the probe's own shared lock
    return count


class Admission:
    """A case's admission: ``large`` whether it is a large case (and holds anything);
    `peak_over` ends its peak, once its golden is computed."""

    def __init__(self, large: bool, peak_fd: int | None = None, slot_fd: int | None = None):
        self.large = large
        self._peak_fd = peak_fd
        self._slot_fd = slot_fd

    def peak_over(self) -> None:
        """Give the peak lock up and stay resident (no-op for a small case, and for one
        without a resident slot: it then keeps the lock to its end, as one block)."""
        if self._peak_fd is not None and self._slot_fd is not None:
            os.close(self._peak_fd)  # releases the lock
            self._peak_fd = None

    def _close(self) -> None:
        for fd in (self._slot_fd, self._peak_fd):
            if fd is not None:
                os.close(fd)
        self._slot_fd = self._peak_fd = None


@contextlib.contextmanager
def admitted(nbytes: int) -> Iterator[Admission]:
    """Admit a case of ``nbytes`` declared tensors for its whole run: a large one enters
    its peak (holding the lock) once the machine has the memory for it, and is resident
    until the block ends; call ``peak_over()`` on what it yields after its golden."""
    if not is_large(nbytes):
        yield Admission(False)
        return
    try:
        peak_fd = user_lock_file(LOCK_NAME)
    except DeviceLockError:
        yield Admission(False)
        return
    admission = Admission(True, peak_fd)
    try:
        fcntl.flock(peak_fd, fcntl.LOCK_EX)
        while not _room_for(nbytes):
            time.sleep(POLL_SECONDS)
        admission._slot_fd = _take_slot()
        yield admission
    finally:
        admission._close()


@contextlib.contextmanager
def large_case(nbytes: int) -> Iterator[bool]:
    """`admitted` as one block: a large case holds the peak lock to its end (yields
    whether it held it)."""
    with admitted(nbytes) as admission:
        yield admission.large


def _room_for(nbytes: int) -> bool:
    """Whether a large case of ``nbytes`` may start its peak now: no other large case is
    resident, or the machine has the memory for its peak plus the margin."""
    if residents() == 0:
        return True
    available, total = mem_available(), machine_memory()
    if available is None or total is None:
        return False  # unknown: one large case at a time
    return available >= PEAK_FACTOR * nbytes + total * MARGIN_SHARE


def _take_slot() -> int | None:
    """An fd holding a free resident slot (None when none is free or usable).  Called
    under the peak lock, so two cases never race for a slot."""
    for fd in _slot_fds():
        if _try_lock(fd, fcntl.LOCK_EX):
            return fd
        os.close(fd)
    return None


def _slot_fds() -> Iterator[int]:
    """An open fd of each resident slot's lock file (those that can be opened), one at a
    time: the caller closes each it does not keep."""
    for slot in range(RESIDENT_SLOTS):
        fd = _open(RESIDENT_NAME.format(slot))
        if fd is not None:
            yield fd


def _try_lock(fd: int, kind: int) -> bool:
    """Whether the ``kind`` (shared or exclusive) flock on ``fd`` was taken at once."""
    try:
        fcntl.flock(fd, kind | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _open(name: str) -> int | None:
    try:
        return user_lock_file(name)
    except DeviceLockError:
        return None
