"""Per-test seeds: the same numbers on every run, in every xdist worker, in any order,
and from whatever directory pytest is started.

A test's seed is a stable hash (SHA-256, never Python's salted ``hash()``) of the
base seed and the test's *seed key* (`seed_key`): its node id when an ini file fixed
the rootdir and the file is inside it (the rootdir, hence the node id, is then the
same from any invocation directory), else the file's path relative to its project
root (the nearest ancestor holding a project marker, `PROJECT_MARKERS`; the file's
name when there is none) followed by the node's name.  Without an ini file pytest's rootdir is the common
ancestor of the invocation directory and the arguments, so node ids (``tests/t.py::x``
from the project, ``t.py::x`` from its tests directory) would change the data.
The key includes the cell (``[a5sim]``), so each cell of a test draws its own data.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

DEFAULT_BASE_SEED = 0
# What makes a directory a project root (the nearest ancestor of a test file wins).
PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "setup.py", "tox.ini", "pytest.ini", ".git")

__all__ = [
    "DEFAULT_BASE_SEED",
    "PROJECT_MARKERS",
    "make_rng",
    "project_root",
    "seed_key",
    "test_seed",
]


def test_seed(base: int | None, key: str) -> int:
    """The 63-bit seed of one test: a stable hash of (base seed, seed key)."""
    import hashlib  # lazy: plugin import cost (the plugin imports this module on every run)

    base = DEFAULT_BASE_SEED if base is None else base
    digest = hashlib.sha256(f"{base}\0{key}".encode()).digest()
    return int.from_bytes(digest[:8], "big") >> 1


test_seed.__test__ = False  # type: ignore[attr-defined]  # not a test, despite its name


@functools.lru_cache(maxsize=256)
def project_root(directory: Path) -> Path | None:
    """The nearest of ``directory`` and its ancestors holding a `PROJECT_MARKERS` entry."""
    for candidate in (directory, *directory.parents):
        if any((candidate / marker).exists() for marker in PROJECT_MARKERS):
            return candidate
    return None


def seed_key(nodeid: str, path: Path | None, rootpath: Path, *, has_inifile: bool) -> str:
    """The invocation-independent name of a test that its seed hashes (module docstring).

    ``path``: the test's file (None: the node id is used as is).
    """
    if path is None:
        return nodeid
    path = Path(path).absolute()
    if has_inifile and path.is_relative_to(rootpath):
        return nodeid  # the rootdir is the ini file's directory: stable already
    _, sep, name = nodeid.partition("::")
    root = project_root(path.parent)
    where = path.relative_to(root).as_posix() if root is not None else path.name
    return f"{where}{sep}{name}"


def make_rng(seed: int) -> Any:
    """A ``numpy.random.Generator`` for ``seed`` (numpy is imported only here)."""
    import numpy  # lazy: plugin import cost

    return numpy.random.default_rng(seed)
