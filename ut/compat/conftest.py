"""Shared set-up of the compat tests: a clean environment and preloaded modules."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
import torch  # noqa: F401  (the compat harness needs it; re-importing torch breaks)

# Load these in this process before any in-process pytester run: a run drops the
# modules it imported, and a second run re-importing half of the toolchain would see
# two copies of the IR classes (and of the compat modules the alias hands out).
import pytest_pypto.compat.alias  # noqa: F401
import pytest_pypto.compat.pypto  # noqa: F401
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.cases  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.worker  # noqa: F401

_ENV = ("ASCEND_RT_VISIBLE_DEVICES", "PYPTO_DEV_ROOT", "PYPTO_LOCK_DIR")


@pytest.fixture(autouse=True)
def _clean_pypto_env(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Inner runs see only what a test sets: no PYPTO_* or NPU variables leak in."""
    for name in list(os.environ):
        if name.startswith("PYPTO_") or name in _ENV:
            monkeypatch.delenv(name)
    empty = tmp_path / "no-dev"
    empty.mkdir()
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(empty))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(tmp_path / "locks"))
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        monkeypatch.setenv("PYTEST_ADDOPTS", "-p no:hypothesispytest")
