"""Shared helpers of the plugin's pytester tests."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest


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


FAKE_RUNTIME_MODULE = """
class Runtime:
    name = "fakenpu"
    version = "1.0"
    platforms = ("a2a3", "a5")

    def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
        raise RuntimeError("fakenpu executes nothing")

    def close(self):
        pass
"""


@pytest.fixture
def fake_runtime(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """An installed onboard runtime serving a2a3 and a5 (executing nothing): a dist-info
    with an entry point in pytest_pypto.runtimes, and its module."""
    site = tmp_path / "site"
    info = site / "fake_npu_runtime-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "fake_npu_runtime.py").write_text(FAKE_RUNTIME_MODULE)
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
