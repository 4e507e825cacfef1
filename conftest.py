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
"""

from __future__ import annotations

import os
import sys

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
