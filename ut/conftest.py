"""Isolation shared by every unit test: the host's PyPTO/NPU environment never leaks in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

_ENV = ("ASCEND_RT_VISIBLE_DEVICES", "PYPTO_DEV_ROOT", "PYPTO_LOCK_DIR")


@pytest.fixture(autouse=True)
def _clean_pypto_env(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Tests (and their inner pytest runs) see only what they set: no PYPTO_* or NPU
    variables, no host device node, and device leases private to the test."""
    for name in list(os.environ):
        if name.startswith("PYPTO_") or name in _ENV:
            monkeypatch.delenv(name)
    empty = tmp_path / "no-dev"
    empty.mkdir()
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(empty))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(tmp_path / "locks"))
    if "pytester" in request.fixturenames:
        # Pytester clears PYTEST_ADDOPTS when it starts, so set it afterwards.  Inner runs
        # do not need hypothesis' plugin, whose summary re-imports hypothesis on every
        # in-process run (about a second each).
        request.getfixturevalue("pytester")
        monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
