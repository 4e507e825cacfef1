"""Root conftest of this repository's own suites (no product logic lives here).

Bytecode caching is switched back on for our own runs.  Nothing in this repository sets
``PYTHONDONTWRITEBYTECODE``; some machines export it globally, and then every Python
process of the suite (xdist workers, the inner pytest runs of the plugin tests) recompiles
every module and pytest re-rewrites the asserts of every test module, hypothesis and xdist
(about half of a collection's time).  Clearing it here, before any test module is
imported and before xdist starts its workers, lets the second run reuse the caches; the
files land in ``__pycache__`` directories, which git ignores.
"""

from __future__ import annotations

import os
import sys

sys.dont_write_bytecode = False
os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
