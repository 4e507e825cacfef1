"""pytest_pypto.compat: PyPTO's ``test_runner``/``test_config`` fixtures, per cell."""

from __future__ import annotations

import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from pytest_pypto.harness.seeding import test_seed

COMPAT = 'pytest_plugins = ["pytest_pypto.compat"]\n'

# A test module written the way PyPTO's st/ suite writes them (test classes, no
# pypto_* fixture in sight).
MIGRATED = """
import pytest
from kcases import AddCase, RandomAdd


class TestElementwise:
    def test_add(self, test_runner):
        result = test_runner.run(AddCase())
        assert result.passed, f"add failed: {result.error}"
        assert (result.outputs["out"] == 3.5).all()

    def test_seeded(self, test_runner, request):
        from pytest_pypto.harness.seeding import test_seed

        result = test_runner.run(RandomAdd())
        assert result.passed, result.error
        assert result.seed == test_seed(0, request.node.nodeid)  # the running test's seed

    def test_config_is_the_cell(self, test_config, test_runner, pypto_config, pypto_platform):
        assert test_config.platform == pypto_platform == pypto_config.platform
        assert str(test_runner.run(AddCase())).startswith("PASS: AddCase")
"""


def test_migrated_suite_runs_once_per_cell(cases: pytest.Pytester) -> None:
    cases.makeconftest(COMPAT)
    cases.makepyfile(test_migrated=MIGRATED)
    result = cases.runpytest("--pypto-arch=all", "-v")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines_random(
        [
            "*test_migrated.py::TestElementwise::test_add[[]a2a3sim[]] PASSED*",
            "*test_migrated.py::TestElementwise::test_add[[]a5sim[]] PASSED*",
            "*test_migrated.py::TestElementwise::test_config_is_the_cell[[]a5sim[]] PASSED*",
        ]
    )


def test_wrong_case_fails_with_the_full_report(cases: pytest.Pytester) -> None:
    cases.makeconftest(COMPAT)
    cases.makepyfile(
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(test_runner):
            result = test_runner.run(WrongAdd())
            assert result.passed, f"WrongAdd failed: {result.error}"
        """
    )
    result = cases.runpytest("--pypto-arch=a2a3", "--pypto-seed=5", "--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    nodeid = "test_bad.py::test_wrong[a2a3sim]"
    # out = 1.5 + 2 everywhere; the golden is off by one at [0, 3] and [2, 0] (kcases).
    result.stdout.fnmatch_lines(
        [
            "E       AssertionError: WrongAdd failed: output 'out': 2 / 1024 elements mismatch"
            " (0.2%); float32, rtol=1e-05, atol=1e-05",
            "E           greatest absolute difference: 1 at index [[]0, 3[]] (allowed 5.5e-05)",
            "E           greatest relative difference: 0.4 at index [[]2, 0[]] (allowed 1.4e-05)",
            "E           mismatching elements (index: actual, expected, diff):",
            "E             [[]0, 3[]]: 3.5, 4.5, 1",
            "E             [[]2, 0[]]: 3.5, 2.5, 1",
            "E         case: WrongAdd",
            "E         platform: a2a3sim",
            f"E         seed: {test_seed(5, nodeid)} (base seed 5)",
            f"E         reproduce: pytest '{nodeid}' --pypto-arch a2a3 --pypto-mode sim"
            " --pypto-seed 5",
        ],
        consecutive=True,
    )
    # The assertion's explanation names the result in one line, not the report again.
    result.stdout.fnmatch_lines(
        ["E        +  where False = <RunResult WrongAdd failed: mismatch on a2a3sim>.passed"]
    )
    case = ET.parse(cases.path / "out.xml").getroot().find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["pypto_failure_class"] == "mismatch"
    assert props["pypto_platform"] == "a2a3sim"


def test_exception_class_wins_over_an_earlier_failed_run(cases: pytest.Pytester) -> None:
    """A failed run(case) followed by an error that carries its own class: that class counts."""
    cases.makeconftest(COMPAT)
    cases.makepyfile(
        test_two="""
        from kcases import WrongAdd

        class DeviceLost(RuntimeError):
            failure_class = "device-error"

        def test_two(test_runner):
            assert not test_runner.run(WrongAdd()).passed
            raise DeviceLost("NPU 3 went away")
        """
    )
    result = cases.runpytest("--junitxml=out.xml")
    result.assert_outcomes(failed=1)
    case = ET.parse(cases.path / "out.xml").getroot().find(".//testcase")
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["pypto_failure_class"] == "device-error"


def test_without_the_plugin_the_names_are_not_ours(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_own="""
        import pytest

        @pytest.fixture
        def test_runner():
            return "mine"

        def test_uses_own(test_runner):
            assert test_runner == "mine"

        def test_wants_config(test_config):
            pass
        """
    )
    result = pytester.runpytest("--pypto-arch=all", "-v")
    result.assert_outcomes(passed=1, errors=1)
    # A suite's own test_runner is not multiplied per cell (no [a2a3sim] in the id).
    result.stdout.fnmatch_lines(["*test_own.py::test_uses_own PASSED*"])
    result.stdout.fnmatch_lines(["*fixture 'test_config' not found*"])


def test_importing_compat_is_cheap() -> None:
    code = (
        "import sys, pytest_pypto.compat\n"
        "heavy = [m for m in ('numpy', 'pytest_pypto.compiler', 'pytest_pypto.harness.cases')"
        " if m in sys.modules]\n"
        "assert not heavy, heavy\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ledger_counts_compat_failures_by_class_under_xdist(cases: pytest.Pytester) -> None:
    cases.makeconftest(COMPAT)
    cases.makepyfile(
        test_migrated=MIGRATED,
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(test_runner):
            result = test_runner.run(WrongAdd())
            assert result.passed, result.error
        """,
    )
    result = cases.runpytest("--pypto-arch=all", "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(
        [
            "cell     passed  failed  xfailed  skipped",
            "a2a3sim       3       1        0        0",
            "a5sim         3       1        0        0",
            "a2a3sim: 1 failed: mismatch",
            "a5sim: 1 failed: mismatch",
        ],
        consecutive=True,
    )


def test_failing_check_shows_no_harness_frames(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(pypto_runner):
            pypto_runner.check(WrongAdd())
        """
    )
    result = cases.runpytest()
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "test_bad.py:4: MismatchError" in out  # the test's own line carries the report
    assert "harness/runner.py" not in out and "_execute" not in out
    result.stdout.fnmatch_lines(["E   *output 'out': 2 / 1024 elements mismatch*"])
