"""Per-test seeds: the same numbers on every run, in every xdist worker, in any order.

A test's seed is a stable hash (SHA-256, never Python's salted ``hash()``) of the
base seed and the test's node id.  The node id includes the cell (``[a5sim]``), so
each cell of a test draws its own data, and reordering or distributing tests
changes nothing.
"""

from __future__ import annotations

from typing import Any

DEFAULT_BASE_SEED = 0

__all__ = ["DEFAULT_BASE_SEED", "make_rng", "test_seed"]


def test_seed(base: int | None, nodeid: str) -> int:
    """The 63-bit seed of one test: a stable hash of (base seed, node id)."""
    import hashlib  # lazily: the report header imports this module on every run

    base = DEFAULT_BASE_SEED if base is None else base
    digest = hashlib.sha256(f"{base}\0{nodeid}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


test_seed.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


def make_rng(seed: int) -> Any:
    """A ``numpy.random.Generator`` for ``seed`` (numpy is imported only here)."""
    import numpy

    return numpy.random.default_rng(seed)
