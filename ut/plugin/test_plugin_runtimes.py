"""Runtimes in a pytest session: a third-party runtime package, pip-installed for real,
runs the onboard cells it serves (leases, versions, device errors, a broken install);
the header; ``--pypto-runtime``; ``pypto_requires``."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from readme_kit import README_EXAMPLE

FIXTURE_PACKAGE = Path(__file__).parents[1] / "runtime" / "fixture_runtime"

# The README's example, as a user writes it.
README_TEST = "import os\n\nimport pytest\n" + README_EXAMPLE + '''

@pytest.mark.pypto_requires(">=1.0,<2")
def test_requires_a_new_runtime(pypto_runner, pypto_rng):
    x, y = pypto_rng.standard_normal((2, M, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    pypto_runner.run(Add, x, y, out)
    np.testing.assert_allclose(out, x + y)

@pytest.mark.pypto_onboard
def test_driver_fault(pypto_runner, monkeypatch):
    monkeypatch.setenv("FIXTURE_NPU_FAIL", "1")
    x = np.zeros((M, N), np.float32)
    pypto_runner.run(Add, x, x, np.empty_like(x))
'''


@pytest.fixture(scope="module")
def fixture_site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fixture runtime package installed with a real pip into a target directory
    (built from a copy, so the source tree gets no build files)."""
    root = tmp_path_factory.mktemp("fixture-runtime")
    source = root / "src"
    shutil.copytree(FIXTURE_PACKAGE, source, ignore=shutil.ignore_patterns("__pycache__"))
    site = root / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
         "--no-index", "--target", str(site), str(source)],
        check=True, capture_output=True, text=True,
    )
    assert list(site.glob("pypto_fixture_npu-1.3.0.dist-info"))
    return site


@pytest.fixture
def onboard_env(
    fixture_site: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> dict[str, Path]:
    """Fake NPUs, a lock dir, the runtime's log, and the installed package on PYTHONPATH."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for n in range(4):
        (dev / f"davinci{n}").touch()
    paths = {"dev": dev, "locks": tmp_path / "locks", "log": tmp_path / "npu.log"}
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(dev))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(paths["locks"]))
    monkeypatch.setenv("FIXTURE_NPU_LOG", str(paths["log"]))
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    monkeypatch.delenv("FIXTURE_NPU_FAIL", raising=False)
    monkeypatch.delenv("FIXTURE_NPU_BREAK", raising=False)
    old = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(fixture_site) + (os.pathsep + old if old else ""))
    return paths


def _properties(junit: Path) -> dict[str, dict[str, str]]:
    out = {}
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = case.get("name")
        out[name] = {p.get("name"): p.get("value") for p in case.iter("property")}
    return out


def test_installed_runtime_runs_the_onboard_cell_with_a_lease(
    pytester: pytest.Pytester, onboard_env: dict[str, Path]
) -> None:
    pytester.makepyfile(test_readme=README_TEST)
    junit = pytester.path / "junit.xml"
    result = pytester.runpytest_subprocess(
        "--pypto-mode=sim,onboard", "-rs", f"--junitxml={junit}", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=3, failed=1, skipped=2)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "pytest-pypto *: cells a2a3sim, a2a3; devices 0-3 (onboard runtime: fixturenpu); *",
            "pytest-pypto runtimes: fixturenpu 1.3.0 (a2a3); isolated * sim *",
        ]
    )
    # pypto_requires: sim's version is outside >=1.0,<2; the fixture runtime's is inside.
    result.stdout.fnmatch_lines(
        [
            "SKIPPED [[]1[]] test_readme.py:*: cell a2a3sim runs on runtime sim *, which does "
            "not satisfy pypto_requires('>=1.0,<2')",
        ]
    )
    # The runtime's execute raised a plain RuntimeError: a device-error naming it.
    assert "runtime 'fixturenpu' failed on a2a3 (device " in out
    assert "RuntimeError: the fixture NPU fell over" in out
    props = _properties(junit)
    assert props["test_driver_fault[a2a3]"]["pypto_failure_class"] == "device-error"
    # Each execute got a leased device, held while it ran, also in config.device_id.
    records = [json.loads(line) for line in onboard_env["log"].read_text().splitlines()]
    assert len(records) == 3  # test_add, test_requires_a_new_runtime, test_driver_fault
    for record in records:
        assert record["device"] in range(4)
        assert record["config_device"] == record["device"]
        assert record["locked"] is True


def test_broken_runtime_is_one_error_per_session(
    pytester: pytest.Pytester, onboard_env: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FIXTURE_NPU_BREAK", "1")  # its module imports a missing driver
    pytester.makepyfile(test_readme=README_TEST)
    result = pytester.runpytest_subprocess(
        "--pypto-mode=onboard", "-n", "2", "-p", "xdist", "-k", "test_add or driver"
    )
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    reason = (
        "cannot import fixture_npu_runtime:FixtureNpuRuntime: ModuleNotFoundError: "
        "No module named 'fixture_npu_driver'"
    )
    result.stdout.fnmatch_lines([f"pytest-pypto runtimes: fixturenpu broken ({reason}); *"])
    result.stdout.fnmatch_lines([f"pytest-pypto runtime 'fixturenpu' is broken: {reason}"])
    assert out.count(reason) == 2  # the header and the summary, never per test
    one_line = (
        "device-error: no available runtime serves a2a3: runtime 'fixturenpu' is broken "
        "(the report header and summary say why)"
    )
    # each affected test: that line, no traceback (counted before the short summary, which
    # repeats whole messages under CI=true)
    assert out.split("short test summary info")[0].count(one_line) == 2
    assert "Traceback" not in out and "def test_add" not in out


def test_header_names_every_runtime_with_version_and_status(pytester: pytest.Pytester) -> None:
    from pytest_pypto import __version__

    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            f"pytest-pypto runtimes: isolated {__version__} (a2a3sim, a5sim); "
            f"pypto * sim {__version__} (a2a3sim, a5sim)"
        ]
    )


def test_unknown_runtime_option_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("--pypto-runtime=warp")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: --pypto-runtime: no runtime named 'warp' is installed; installed runtimes: "
            "isolated, pypto, sim (entry-point group pytest_pypto.runtimes)"
        ]
    )


def test_named_runtime_runs_sim_cells(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_named=textwrap.dedent(
            """
            def test_x(pypto_config):
                assert pypto_config.runtime == "sim"
            """
        )
    )
    pytester.runpytest("--pypto-runtime=sim", "--pypto-arch=all").assert_outcomes(passed=2)


def test_bad_requires_specifier_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        "import pytest\n@pytest.mark.pypto_requires('>=banana')\n"
        "def test_x(pypto_platform): pass\n"
    )
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "*test_x: @pytest.mark.pypto_requires('>=banana'): not a PEP 440 version "
            "specifier; write e.g. '>=0.4,<0.6' or '==1.2.*'"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_requires_skips_naming_runtime_version_and_specifier(
    pytester: pytest.Pytester, skip_reasons
) -> None:
    from pytest_pypto import __version__

    pytester.makepyfile(
        test_req="""
        import pytest

        @pytest.mark.pypto_requires(">=99")
        def test_future(pypto_platform): pass

        @pytest.mark.pypto_requires(">=0.1")
        @pytest.mark.pypto_requires("<99")
        def test_now(pypto_platform): pass
        """
    )
    reprec = pytester.inline_run("--pypto-arch=all")
    reprec.assertoutcome(passed=2, skipped=2)
    assert skip_reasons(reprec) == {
        f"test_req.py::test_future[{cell}]": (
            f"cell {cell} runs on runtime sim {__version__}, which does not satisfy "
            f"pypto_requires('>=99')"
        )
        for cell in ("a2a3sim", "a5sim")
    }
