"""Zero-edit scripts (issue 24 item 1): the PYPTO_ALIAS .pth hook in any Python process,
``python -m pytest_pypto run``, and the build step that installs the hook."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

import pytest_pypto.__main__ as cli

REPO = Path(__file__).resolve().parents[2]
PTH = REPO / "pytest_pypto" / "compat" / "alias.pth"

SCRIPT = """
import sys
import pypto
import pypto.language as pl
from pypto.runtime import ChipWorker, execute_compiled
print("pypto ->", pypto.__name__, pl.FP32 is __import__("pytest_pypto.language").language.FP32)
print("argv", sys.argv[1:], "name", __name__)
"""

# Runs the interpreter the way site-packages would: ``site.addsitedir`` processes the
# .pth files of a directory (here: a copy of the hook), then the script runs as
# ``python script.py ARGS``.
AS_SITE = (
    "import runpy, site, sys; site.addsitedir(sys.argv[1]); "
    "loaded = sorted(m for m in sys.modules if m.startswith('pytest_pypto')); "
    "print('loaded at start-up:', bool(loaded)); "
    "sys.argv = sys.argv[2:]; runpy.run_path(sys.argv[0], run_name='__main__')"
)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYPTO_ALIAS"}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return {**env, **extra}


@pytest.fixture
def site_dir(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    site.mkdir()
    shutil.copy(PTH, site / "pytest_pypto_alias.pth")
    return site


@pytest.fixture
def fresh(tmp_path: Path) -> Path:
    work = tmp_path / "fresh"
    work.mkdir()
    (work / "script.py").write_text(SCRIPT)
    return work


def test_pth_hook_with_pypto_alias_resolves_pypto(site_dir: Path, fresh: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", AS_SITE, str(site_dir), "script.py", "-p", "a5sim"],
        cwd=fresh, env=_env(PYPTO_ALIAS="1"), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "loaded at start-up: True",
        "pypto -> pytest_pypto.compat.pypto True",
        "argv ['-p', 'a5sim'] name __main__",
    ]


@pytest.mark.parametrize("value", [None, "0", "off"])
def test_pth_hook_off_imports_nothing_and_pypto_is_missing(site_dir: Path, fresh: Path,
                                                          value: str | None) -> None:
    env = _env() if value is None else _env(PYPTO_ALIAS=value)
    done = subprocess.run(
        [sys.executable, "-c", AS_SITE, str(site_dir), "script.py"],
        cwd=fresh, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.stdout.splitlines() == ["loaded at start-up: False"]
    assert "ModuleNotFoundError: No module named 'pypto'" in done.stderr


def test_pth_hook_off_costs_under_a_millisecond(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PYPTO_ALIAS", raising=False)
    line = PTH.read_text().strip()
    assert line.startswith("import ") and "\n" not in line  # site runs one import line
    code = compile(line, str(PTH), "exec")
    best = float("inf")
    for _ in range(200):
        start = time.perf_counter()
        exec(code, {})
        best = min(best, time.perf_counter() - start)
    assert best < 1e-3


def test_pth_hook_never_shadows_a_real_pypto(site_dir: Path, fresh: Path,
                                             tmp_path: Path) -> None:
    real = tmp_path / "real" / "pypto"
    real.mkdir(parents=True)
    (real / "__init__.py").write_text("WHO = 'real'\n")
    (fresh / "who.py").write_text("import pypto; print(pypto.WHO)\n")
    env = _env(PYPTO_ALIAS="1")
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "real"), env["PYTHONPATH"]])
    done = subprocess.run(
        [sys.executable, "-c", AS_SITE, str(site_dir), "who.py"],
        cwd=fresh, env=env, capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-1] == "real"


def test_python_m_pytest_pypto_run(fresh: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "pytest_pypto", "run", "script.py", "--x", "1"],
        cwd=fresh, env=_env(), capture_output=True, text=True, timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "pypto -> pytest_pypto.compat.pypto True",
        "argv ['--x', '1'] name __main__",
    ]


def test_run_usage_errors(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert cli.main([]) == 2
    assert cli.main(["go", "x.py"]) == 2
    assert cli.main(["run", str(tmp_path / "missing.py")]) == 2
    err = capsys.readouterr().err
    assert err.count(cli.USAGE) == 3 and "no such script" in err
    assert cli.main(["--help"]) == 0


def test_build_puts_the_hook_at_the_root_of_the_install(tmp_path: Path) -> None:
    """setup.py's build_py copies the hook next to the package in build_lib (what a
    wheel installs into site-packages)."""
    src = tmp_path / "src"
    src.mkdir()
    for name in ("setup.py", "pyproject.toml", "README.md"):
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "pytest_pypto", src / "pytest_pypto",
                    ignore=shutil.ignore_patterns("__pycache__"))
    lib = tmp_path / "lib"
    done = subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=src, capture_output=True, text=True, timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert (lib / "pytest_pypto_alias.pth").read_text() == PTH.read_text()
    assert (lib / "pytest_pypto" / "compat" / "alias.py").is_file()
