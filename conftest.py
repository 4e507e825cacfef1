"""Root conftest of this repository's own suites (no product logic lives here).

Bytecode caching is switched back on for our own runs.  Nothing in this repository sets
``PYTHONDONTWRITEBYTECODE``; some machines export it globally, and then every Python
process of the suite (xdist workers, the inner pytest runs of the plugin tests) recompiles
every module and pytest re-rewrites the asserts of every test module, hypothesis and xdist
(about half of a collection's time).  Clearing it here, before any test module is
imported and before xdist starts its workers, lets the second run reuse the caches; the
files land in ``__pycache__`` directories, which git ignores.

Assertion rewriting is kept for test modules and conftests only.  pytest marks the whole
package of every installed plugin for rewriting, which here means all of pytest_pypto
(ours, through its entry point) and all of hypothesis: on a fresh checkout every xdist
worker rewrote some 250 library modules (about 7 s of a cold collection), for asserts that
are internal invariants whose messages no test reads.  Unmarked, they import from their
plain ``.pyc`` (hypothesis' is installed with it).  Only our own runs change: a user's
session, and the inner sessions of our plugin tests, rewrite as pytest always does.

The cyclic garbage collector is told what the suite's heap looks like.  A worker holds
a few hundred thousand objects after collection (test modules, programs, torch) and
close to a million at the end; every full collection walked all of them again (about
15% of a worker's CPU, and four seconds of finalizing collections after the last test,
the controller waiting on it).  So: the young generation collects less often, what
collection built is frozen (`gc.freeze`: never traversed again, never garbage), and so
is everything at interpreter exit, after pytest's last check (the unraisable-exception
plugin's collections) has run.  Collection still frees every cycle a test makes; only
what is alive at those two points is skipped.
"""

from __future__ import annotations

import atexit
import gc
import os
import sys

import pytest

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)

_LIBRARIES = ("pytest_pypto", "hypothesis")


def _rewrite_tests_only() -> None:
    """Unmark the library packages in pytest's rewrite hook (a private attribute: if a
    pytest release renames it, this quietly does nothing and the suite is only slower)."""
    for finder in sys.meta_path:
        marked = getattr(finder, "_must_rewrite", None)
        if type(finder).__name__ != "AssertionRewritingHook" or not isinstance(marked, set):
            continue
        for name in _LIBRARIES:
            marked.discard(name)
        cache = getattr(finder, "_marked_for_rewrite_cache", None)
        if isinstance(cache, dict):
            cache.clear()


_rewrite_tests_only()


# gen0 threshold (CPython's default is 700): fewer young collections, fewer objects
# promoted to the old generation only to die there.
_YOUNG_COLLECTION_THRESHOLD = 10_000
gc.set_threshold(_YOUNG_COLLECTION_THRESHOLD, *gc.get_threshold()[1:])
atexit.register(gc.freeze)  # runs after every exit handler registered later than this


def pytest_collection_finish(session: pytest.Session) -> None:
    """Freeze the collected heap (see the module docstring)."""
    gc.freeze()


# Items that start first (node-id prefixes), in this order, each keeping its own
# order.  Under xdist a worker's first batch is the head of the collection, so these
# land on one worker early instead of at the tail: the lint items share one parse of
# the repository per worker (split over two workers it is parsed twice), and the
# longest tests (seconds each, measured with bench/bench_suite.py) would otherwise be
# the last a worker runs while the other one idles.  Order only: every item still runs.
_FIRST = (
    "lint/",
    "ut/plugin/test_ledger_worker_crash.py",
    "ut/runtime/test_runtime_reliability.py::test_graph_matches_the_list_based_reference",
    "ut/harness/test_cache_faults.py::test_xdist_session_over_a_damaged_cache_dir_passes",
    "ut/fuzz/",
)


@pytest.hookimpl(trylast=True)  # after any plugin that orders items itself
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Move the `_FIRST` items to the front (a stable reordering)."""

    def rank(item: pytest.Item) -> int:
        return next((i for i, p in enumerate(_FIRST) if item.nodeid.startswith(p)), len(_FIRST))

    items.sort(key=rank)
