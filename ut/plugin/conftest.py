"""Shared helpers of the plugin's pytester tests."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

_ENV = ("ASCEND_RT_VISIBLE_DEVICES", "PYPTO_DEV_ROOT", "PYPTO_LOCK_DIR")


@pytest.fixture(autouse=True)
def _clean_pypto_env(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Inner runs must see only what a test sets: no PYPTO_* or NPU variables leak in."""
    for name in list(os.environ):
        if name.startswith("PYPTO_") or name in _ENV:
            monkeypatch.delenv(name)
    # No host device node may leak into a test, and leases stay private to the test.
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


@pytest.fixture
def fake_npus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fake /dev with davinci0..7 (plus nodes that are not NPUs)."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for n in range(8):
        (dev / f"davinci{n}").touch()
    (dev / "davinci_manager").touch()
    (dev / "null").touch()
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(dev))
    return dev


@pytest.fixture
def fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed onboard runtime: a dist-info with an entry point in pytest_pypto.runtimes."""
    site = tmp_path / "site"
    info = site / "fake_npu_runtime-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: fake-npu-runtime\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        textwrap.dedent(
            """\
            [pytest_pypto.runtimes]
            fakenpu = fake_npu_runtime:Runtime
            """
        )
    )
    monkeypatch.syspath_prepend(str(site))
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(site) + (os.pathsep + old if old else ""))
    return "fakenpu"


def _skip_reasons(reprec: pytest.HookRecorder) -> dict[str, str]:
    out = {}
    for rep in reprec.getreports("pytest_runtest_logreport"):
        if rep.skipped:
            out[rep.nodeid] = rep.longrepr[2].removeprefix("Skipped: ")
    return out


@pytest.fixture
def skip_reasons():
    """node id -> skip reason of an inline run (``skip_reasons(reprec)``)."""
    return _skip_reasons
