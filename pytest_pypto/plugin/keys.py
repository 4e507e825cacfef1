"""Every stash key, report property and xdist payload key of the plugin, in one place.

Stash keys hold per-session (``config.stash``) or per-test (``item.stash``) state, so
sessions that pytester runs in one process never share any.  Properties are what a
test carries in ``user_properties`` (reports, junitxml, the coverage ledger).  Payload
keys name what an xdist worker ships to the controller (plugin/workers.py).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_pypto.harness.cells import CELL_PROPERTY, EMULATED_PROPERTY
from pytest_pypto.harness.ledger import FAILURE_PROPERTY
from pytest_pypto.harness.settings import Settings

__all__ = [
    "CACHE_KEY",
    "CACHE_OUTPUT",
    "CACHE_REMOTE_KEY",
    "CELL_NAMING_KEY",
    "CELL_PROPERTY",
    "COMPILED_OUTPUT",
    "CONTEXT_KEY",
    "EMULATED_KEY",
    "EMULATED_PROPERTY",
    "FAILURE_PROPERTY",
    "KEEP_OFF_KEY",
    "KEPT_INPUT",
    "KEPT_KEY",
    "KEPT_OUTPUT",
    "LEDGER_KEY",
    "ONBOARD_KEY",
    "RUNNER_KEY",
    "SEED_PROPERTY",
    "SETTINGS_KEY",
    "SHIPMENTS_KEY",
    "TOLERATED_KEY",
]

# config.stash: per session (per xdist worker)
SETTINGS_KEY = pytest.StashKey[Settings]()  # the resolved options (plugin/options.py)
CONTEXT_KEY = pytest.StashKey[Any]()  # the harness's SessionContext (plugin/context.py)
CACHE_KEY = pytest.StashKey[Any]()  # this process's CompileCache (plugin/cache.py)
CACHE_REMOTE_KEY = pytest.StashKey[dict]()  # controller: the workers' cache counts, places
CELL_NAMING_KEY = pytest.StashKey[set]()  # other plugins' kernel fixtures (plugin/cells.py)
ONBOARD_KEY = pytest.StashKey[Any]()  # NPUs and onboard runtimes found (plugin/devices.py)
EMULATED_KEY = pytest.StashKey[frozenset]()  # onboard cells run on the simulator (devices)
KEEP_OFF_KEY = pytest.StashKey[str]()  # why failing tests keep no artifacts (plugin/paths.py)
KEPT_KEY = pytest.StashKey[list]()  # directories tests kept artifacts in (plugin/remote.py)
SHIPMENTS_KEY = pytest.StashKey[list]()  # controller: what workers shipped (plugin/remote.py)
LEDGER_KEY = pytest.StashKey[Any]()  # the controller's coverage ledger (plugin/ledger.py)
TOLERATED_KEY = pytest.StashKey[int]()  # our diagnostics among collection errors (failures)

# item.stash: per test
RUNNER_KEY = pytest.StashKey[Any]()  # the test's Runner (a failure keeps its artifact)

# user_properties of a test (CELL_PROPERTY, FAILURE_PROPERTY: defined where the
# harness reads them, the cells and the ledger)
SEED_PROPERTY = "pypto_seed"

# xdist: controller -> worker (workerinput) and worker -> controller (workeroutput)
KEPT_INPUT = "pypto_kernels_dir"  # the controller's kernels dir
CACHE_OUTPUT = "pypto_compile_cache"  # {"counts": [hits, misses, damaged], "where": ...}
COMPILED_OUTPUT = "pypto_codegen_compiled"  # codegen-only compiled entries
KEPT_OUTPUT = "pypto_kept_artifacts"  # kept artifacts (plugin/remote.py `ship`)
