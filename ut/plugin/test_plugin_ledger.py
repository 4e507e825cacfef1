"""Report header, the coverage ledger (failures by class, skips by reason; also under
xdist) and --pypto-require."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from pytest_pypto import __version__
from pytest_pypto.harness import ledger as ledger_module
from pytest_pypto.harness.ledger import Ledger
from pytest_pypto.plugin.keys import FAILURE_PROPERTY

SUITE = """
import pytest

def test_pass(pypto_platform): pass

def test_fail(pypto_platform):
    assert pypto_platform != "a5sim"

@pytest.mark.pypto_arch("a5")
def test_a5(pypto_platform): pass

@pytest.mark.pypto_onboard
def test_npu(pypto_platform): pass

@pytest.mark.xfail(reason="known", strict=True)
def test_xfail(pypto_platform):
    assert False

@pytest.fixture
def broken_teardown():
    yield
    raise RuntimeError("teardown")

def test_teardown(pypto_platform, broken_teardown): pass

def test_plain(): pass

# Errors that carry a failure class, as the toolchain's do (the plugin reads the
# attribute and records it in user_properties, which the ledger counts).
class Mismatch(AssertionError):
    failure_class = "mismatch"

class CompileError(Exception):
    failure_class = "compile-error"

def test_mismatch(pypto_platform):
    raise Mismatch("outputs differ")

@pytest.mark.pypto_arch("a5")
def test_compile(pypto_platform):
    raise CompileError("kernel.py:3: bad tile")
"""

LEDGER = [
    "*= pypto coverage ledger =*",
    "cell     passed  failed  xfailed  skipped",
    "a2a3sim       2       2        1        3",
    "a5sim         2       4        1        1",
    "a2a3sim: 1 failed: mismatch",
    "a2a3sim: 1 failed: unclassified",
    "a2a3sim: 2 skipped: runs only on a5 (pypto_arch marker), not on a2a3 (cell a2a3sim)",
    "a2a3sim: 1 skipped: needs an NPU: runs only with --pypto-mode onboard",
    "a5sim: 2 failed: unclassified",
    "a5sim: 1 failed: compile-error",
    "a5sim: 1 failed: mismatch",
    "a5sim: 1 skipped: needs an NPU: runs only with --pypto-mode onboard",
]


def test_header(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("--pypto-arch=all", "--pypto-seed=77")
    result.stdout.fnmatch_lines(
        [
            f"pytest-pypto {__version__}: cells a2a3sim, a5sim; devices none needed (sim only); "
            "base seed 77"
        ]
    )
    default = pytester.runpytest()
    default.stdout.fnmatch_lines(["*cells a2a3sim;*base seed 0 (default; set with --pypto-seed)"])


def test_header_onboard_without_npus(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("--pypto-mode=onboard")
    result.stdout.fnmatch_lines(
        ["*cells a2a3; devices none visible (onboard runtime: none available);*"]
    )


def test_ledger(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--pypto-arch=all")
    result.stdout.fnmatch_lines(LEDGER, consecutive=True)


def test_ledger_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_suite=SUITE)
    result = pytester.runpytest("--pypto-arch=all", "-n", "2", "-p", "xdist")
    result.stdout.fnmatch_lines(["*2 workers*"])
    result.stdout.fnmatch_lines(LEDGER, consecutive=True)


def test_no_ledger_without_cell_tests(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest()
    assert "pypto coverage ledger" not in result.stdout.str()


def test_junit_properties(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(pypto_config): pass\n")
    pytester.runpytest("--junitxml=out.xml", "--pypto-arch=a5").assert_outcomes(passed=1)
    xml = (pytester.path / "out.xml").read_text()
    assert '<property name="pypto_platform" value="a5sim"' in xml
    assert '<property name="pypto_seed" value="' in xml


REQUIRE_SUITE = """
import pytest

def test_pass(pypto_platform): pass

@pytest.mark.pypto_arch("a2a3")
def test_a2a3(pypto_platform): pass

@pytest.mark.pypto_arch("a5")
def test_fails_on_a5(pypto_platform):
    assert False
"""


def _run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """The session's controller runs in this process (its xdist workers are processes)."""
    return pytester.runpytest(*args)


@pytest.mark.parametrize("xdist", [[], ["-n", "2", "-p", "xdist"]], ids=["serial", "xdist"])
def test_require_met(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makepyfile("def test_x(pypto_platform): pass\n")
    result = _run(pytester, "--pypto-arch=all", "--pypto-require=a5sim,a2a3sim", *xdist)
    assert result.ret == 0, result.stdout.str()
    assert "--pypto-require" not in result.stdout.str()


@pytest.mark.parametrize("xdist", [[], ["-n", "2", "-p", "xdist"]], ids=["serial", "xdist"])
def test_require_unmet_fails_the_session(pytester: pytest.Pytester, xdist: list[str]) -> None:
    pytester.makepyfile(
        "import pytest\n@pytest.mark.pypto_arch('a2a3')\ndef test_x(pypto_platform): pass\n"
    )
    result = _run(pytester, "--pypto-arch=all", "--pypto-require=a5sim", *xdist)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED --pypto-require: cell a5sim executed no test"])
    result.assert_outcomes(passed=1, skipped=1)  # skipped does not count as executed


def test_require_unrequested_cell_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(pypto_platform): pass\n")
    result = pytester.runpytest("--pypto-require=a5")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "FAILED --pypto-require: cell a5 executed no test (not requested by --pypto-arch/--pypto-mode)"
        ]
    )


def test_require_failed_counts_as_executed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(REQUIRE_SUITE)
    result = pytester.runpytest("--pypto-arch=all", "--pypto-require=a5sim,a2a3sim")
    result.assert_outcomes(passed=3, failed=1, skipped=2)
    assert "--pypto-require: cell" not in result.stdout.str()


def test_require_from_env_and_without_terminal(pytester: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_REQUIRE", "a5sim")
    pytester.makepyfile("def test_x(pypto_platform): pass\n")
    result = pytester.runpytest("-p", "no:terminal")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "--pypto-require: cell a5sim executed no test" in result.stderr.str()


def _report(
    nodeid: str,
    when: str,
    outcome: str,
    cell: str | None = "a5sim",
    failure: str | None = None,
    **extra,
):
    props = [("pypto_platform", cell)] if cell else []
    if failure:
        props.append((FAILURE_PROPERTY, failure))
    return SimpleNamespace(
        nodeid=nodeid,
        when=when,
        outcome=outcome,
        passed=outcome == "passed",
        failed=outcome == "failed",
        skipped=outcome == "skipped",
        user_properties=props,
        **extra,
    )


def test_ledger_folds_phases_into_one_outcome_per_test() -> None:
    ledger = Ledger()
    for rep in [
        _report("a", "setup", "passed"),
        _report("a", "call", "passed"),
        _report("a", "teardown", "passed"),
        _report("b", "setup", "passed"),
        _report("b", "call", "passed"),
        _report("b", "teardown", "failed"),
        _report("c", "setup", "skipped", longrepr=("f", 1, "Skipped: why")),
        _report("c", "teardown", "passed"),
        _report("d", "setup", "failed"),
        _report("d", "teardown", "passed"),
        _report("e", "call", "skipped", wasxfail="r"),
        _report("f", "call", "passed", cell=None),
        _report("g", "call", "failed", failure="mismatch"),
        _report("g", "teardown", "failed"),  # the call's class stands
        _report("h", "setup", "failed", failure="compile-error"),
        _report("i", "call", "passed"),
        _report("i", "teardown", "failed", failure="device-error"),
    ]:
        ledger.record(rep)
    assert dict(ledger.counts("a5sim")) == {"passed": 1, "failed": 5, "skipped": 1, "xfailed": 1}
    assert dict(ledger.skip_reasons("a5sim")) == {"why": 1}
    assert dict(ledger.failure_classes("a5sim")) == {
        "unclassified": 2,
        "mismatch": 1,
        "compile-error": 1,
        "device-error": 1,
    }
    assert ledger.executed("a5sim") == 7
    assert ledger.unmet(["a5sim", "a5"]) == ["a5"]
    assert ledger.cells(["a2a3sim"]) == ["a2a3sim", "a5sim"]


def test_ledger_reads_the_property_the_plugin_records() -> None:
    # The plugin's keys name the property the ledger folds (one spelling, two readers).
    assert ledger_module.FAILURE_PROPERTY == FAILURE_PROPERTY
