"""Isolation shared by every unit test: the host's PyPTO/NPU environment never leaks in."""

from __future__ import annotations

import itertools
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

try:  # matplotlib (the plot extra, part of [dev]) whole, before any in-process pytester
    # run: a run drops the modules it imported, and a matplotlib half dropped and
    # re-imported holds two copies of its classes (heatmaps and swimlanes then fail).
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.image
    import matplotlib.pyplot  # noqa: F401
except ImportError:  # without it, the swimlane/heatmap paths say what to install
    pass

_ENV = ("ASCEND_RT_VISIBLE_DEVICES", "PYPTO_DEV_ROOT", "PYPTO_LOCK_DIR")
_TEST_IDS = itertools.count()


@pytest.fixture(scope="session")
def _pypto_env_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One directory per session (per xdist worker) for the isolation below: an empty
    ``no-dev`` and a lock directory per test.  Not ``tmp_path``: giving every one of the
    suite's thousands of tests its own numbered directory cost pytest a scan of all the
    earlier ones per test (a few ms each, seconds per worker)."""
    root = tmp_path_factory.mktemp("pypto-env", numbered=False)
    (root / "no-dev").mkdir()
    return root


@pytest.fixture(autouse=True)
def _clean_pypto_env(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, _pypto_env_root: Path
) -> Iterator[None]:
    """Tests (and their inner pytest runs) see only what they set: no PYPTO_* or NPU
    variables, no host device node (an empty dev root that no test may fill), and
    device leases private to the test (a lock directory of its own, made when used)."""
    for name in list(os.environ):
        if name.startswith("PYPTO_") or name in _ENV:
            monkeypatch.delenv(name)
    empty = _pypto_env_root / "no-dev"
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(empty))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(_pypto_env_root / f"locks-{next(_TEST_IDS)}"))
    if "pytester" in request.fixturenames:
        # Pytester clears PYTEST_ADDOPTS when it starts, so set it afterwards.  Inner runs
        # do not need hypothesis' plugin, whose summary re-imports hypothesis on every
        # in-process run (about a second each), nor the unraisable-exception plugin, whose
        # unconfigure runs two full garbage collections over the whole (outer) process
        # (0.2-0.4 s per in-process run).
        request.getfixturevalue("pytester")
        monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest -p no:unraisableexception")
    yield
    # The dev root is shared by the session's tests: one that made a node there fails
    # (and the root is emptied, so the tests after it do not).
    written = sorted(p.name for p in empty.iterdir())
    if written:
        shutil.rmtree(empty)
        empty.mkdir()
        pytest.fail(f"the test wrote {written} into the shared empty dev root {empty}")
