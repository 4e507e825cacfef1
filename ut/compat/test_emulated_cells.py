"""--pypto-emulate-onboard with PyPTO-style tests: ONBOARD_PLATFORMS variants and
``platforms`` markers run emulated; device-only options skip, naming what emulation
lacks (docs/design/plugin.md §18)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

KIT = Path(__file__).with_name("pypto_kit.py")


@pytest.fixture
def compat_suite(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest('pytest_plugins = ["pytest_pypto.compat"]\n')
    shutil.copy(KIT, pytester.path / "pypto_kit.py")
    pytester.syspathinsert()
    return pytester


PYPTO_STYLE = """
import pytest
from pytest_pypto.compat.harness import ONBOARD_PLATFORMS
from pypto_kit import TorchAdd

@pytest.mark.parametrize("platform", ONBOARD_PLATFORMS)
def test_board(test_runner, platform):
    result = test_runner.run(TorchAdd(platform=platform))
    assert result.passed, result.error

@pytest.mark.platforms("a2a3")
def test_marked(test_runner):
    result = test_runner.run(TorchAdd())
    assert result.passed, result.error
"""


def test_pypto_style_onboard_tests_run_emulated(compat_suite: pytest.Pytester) -> None:
    compat_suite.makepyfile(test_p=PYPTO_STYLE)
    result = compat_suite.runpytest("--pypto-arch=all", "--pypto-emulate-onboard", "-v", "-rs")
    result.stdout.fnmatch_lines_random(
        [
            "*test_board[[]a2a3-emulated[]] PASSED*",
            "*test_board[[]a5-emulated[]] PASSED*",
            "*test_marked[[]a2a3-emulated[]] PASSED*",
        ]
    )
    result.assert_outcomes(passed=3, skipped=3)


def test_device_only_options_skip_emulated_cells(compat_suite: pytest.Pytester) -> None:
    compat_suite.makepyfile(test_p=PYPTO_STYLE)
    result = compat_suite.runpytest(
        "--pypto-arch=a5", "--pypto-emulate-onboard", "--enable-pmu", "-v", "-rs"
    )
    result.stdout.fnmatch_lines(
        ["a5 (emulated): 1 skipped: cell a5 is emulated on the simulator, which has no "
         "PMU counters (--enable-pmu)"]
    )
    result.assert_outcomes(skipped=3)
