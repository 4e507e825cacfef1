"""A PyPTO script-style kernel with its own golden harness (st/scripts/axpb_script.py)
runs unedited on both simulators, from a fresh directory (issue 24 items 1, 2 and 6)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "st" / "scripts" / "axpb_script.py"
CHECKS = ["isinstance", "execute_compiled", "jit", "jit output_dir"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_ALIAS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_script_runs_with_python_m_pytest_pypto_run(tmp_path: Path, platform: str) -> None:
    script = shutil.copy(SCRIPT, tmp_path / "kernel.py")
    done = subprocess.run(
        [sys.executable, "-m", "pytest_pypto", "run", str(script), "-p", platform,
         "--alpha", "-0.75"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.splitlines() == [f"{name}: PASS" for name in CHECKS]


def test_script_fails_its_own_golden_when_the_result_is_wrong(tmp_path: Path) -> None:
    """The harness compares for real: a kernel that computes a - b + 1 fails 'jit'."""
    text = SCRIPT.read_text().replace(
        "t = pl.sub(pl.load(a, [0, 0], [rows, cols]), pl.load(b, [0, 0], [rows, cols]))",
        "t = pl.adds(pl.sub(pl.load(a, [0, 0], [rows, cols]), "
        "pl.load(b, [0, 0], [rows, cols])), 1.0)",
    )
    assert "pl.adds" in text
    (tmp_path / "kernel.py").write_text(text)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_pypto", "run", "kernel.py"],
        cwd=tmp_path, env=_env(), capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "jit: FAIL" in done.stdout.splitlines()
