"""The C heap's thresholds, tuned once for a process that runs the simulator.

A batched kernel call (`runtime.task_batches`, `ir.batch`) works on temporaries of a
few to tens of MiB: the stacked task windows, their float32 widenings, the products.
glibc serves a block above its mmap threshold (128 KiB, rising to at most 32 MiB as such
blocks are freed) with a fresh mapping and unmaps it on free, and trims free memory
above twice that threshold off the heap's top; the next call's temporaries then
fault their pages in again.  In the paged-attention bench that page faulting was 40%
of the time inside the kernels (docs/design/runtime.md §4, "Heap").

`tune` raises the mmap threshold to `MMAP_THRESHOLD` and the trim threshold to
`TRIM_THRESHOLD` (glibc's ``mallopt``), so those temporaries come from the heap and
their pages are reused.  Blocks above the threshold (entry tensors, a golden's GiB
arrays) are still mapped and returned at once, and at most `TRIM_THRESHOLD` of free
heap stays resident.  It does nothing off glibc, and nothing when ``PYPTO_HEAP_TUNE``
is 0/false/off/no.
"""

from __future__ import annotations

import ctypes
import os

ENV_VAR = "PYPTO_HEAP_TUNE"
MMAP_THRESHOLD = 64 << 20  # bytes: a batched loop's tiles are bounded by ir.batch.MAX_LOOP_BYTES
TRIM_THRESHOLD = 256 << 20  # bytes of free heap kept resident
_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # mallopt parameters (malloc.h)

_state: dict[str, bool] = {}


def tune() -> bool:
    """Set the thresholds (once per process); whether they are set."""
    done = _state.get("tuned")
    if done is not None:
        return done
    _state["tuned"] = done = _apply()
    return done


def _apply() -> bool:
    if os.environ.get(ENV_VAR, "1").strip().lower() in ("0", "false", "off", "no"):
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # not glibc (musl, macOS, Windows): their own heaps
        return False
    mallopt.argtypes, mallopt.restype = (ctypes.c_int, ctypes.c_int), ctypes.c_int
    # (the trim threshold first: setting either one ends glibc's own adjusting of both)
    return bool(mallopt(_M_TRIM_THRESHOLD, TRIM_THRESHOLD)) \
        and bool(mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD))
