"""--pypto-emulate-onboard: onboard cells with no onboard runtime run on the simulator
with their arch's rules, labelled "<cell> (emulated)" everywhere; --pypto-require is
not met by emulated runs unless --pypto-require-emulated (docs/design/plugin.md §18)."""

from __future__ import annotations

from pathlib import Path

import pytest

SUITE = """
import pytest

def test_cfg(pypto_platform, pypto_config, pypto_device, request):
    print("RAN", request.node.name, pypto_platform, pypto_config.platform,
          pypto_config.backend_type.name, pypto_device)

@pytest.mark.platforms("a2a3")
def test_only_a2a3(pypto_platform):
    pass

@pytest.mark.pypto_onboard
def test_npu(pypto_platform):
    pass
"""


def test_emulation_runs_onboard_cells_on_the_simulator(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_e=SUITE)
    result = pytester.runpytest("--pypto-arch=all", "--pypto-emulate-onboard", "-v", "-s", "-rs")
    result.stdout.fnmatch_lines_random(
        [
            # the id says emulated; the config is the simulator's with the cell's arch
            "*RAN test_cfg[[]a2a3-emulated[]] a2a3 a2a3sim Ascend910B None",
            "*RAN test_cfg[[]a5-emulated[]] a5 a5sim Ascend950 None",
            "*RAN test_cfg[[]a5sim[]] a5sim a5sim Ascend950 None",
            "*test_only_a2a3[[]a2a3-emulated[]] PASSED*",
            "*test_only_a2a3[[]a5-emulated[]] SKIPPED*",
            # real hardware is what emulation lacks
            "SKIPPED [[]1[]] test_e.py:*: needs an NPU: cell a5 is emulated on the simulator*",
            "pytest-pypto *: cells a2a3sim, a2a3 (emulated), a5sim, a5 (emulated); *",
        ]
    )
    result.assert_outcomes(passed=5, skipped=7)


def test_without_the_switch_onboard_cells_are_not_requested(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_e=SUITE)
    result = pytester.runpytest("--pypto-arch=all", "-v")
    assert "(emulated)" not in result.stdout.str() and "-emulated]" not in result.stdout.str()
    result.assert_outcomes(passed=2, skipped=4)


@pytest.mark.parametrize("where", ["env", "ini"])
def test_env_and_ini_turn_emulation_on(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    pytester.makepyfile(test_e="def test_x(pypto_platform): pass\n")
    if where == "env":
        monkeypatch.setenv("PYPTO_EMULATE_ONBOARD", "1")
    else:
        pytester.makeini("[pytest]\npypto_emulate_onboard = yes\n")
    result = pytester.runpytest("-v")
    result.stdout.fnmatch_lines_random(["*test_x[[]a2a3sim[]] PASSED*", "*test_x[[]a2a3-emulated[]] PASSED*"])


def test_ledger_and_junit_label_emulated_cells(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_e=SUITE)
    result = pytester.runpytest("--pypto-arch=a5", "--pypto-emulate-onboard", "--junitxml=out.xml")
    result.stdout.fnmatch_lines(
        [
            "*= pypto coverage ledger =*",
            "cell           passed  failed  xfailed  skipped",
            "a5sim               1       0        0        2",
            "a5 (emulated)       1       0        0        2",
        ]
    )
    xml = (pytester.path / "out.xml").read_text()
    assert 'name="pypto_emulated" value="a5 (emulated)"' in xml
    assert xml.count('name="pypto_emulated"') == 3  # the a5 cell's three tests, not a5sim's


def test_require_is_not_met_by_emulation_unless_asked(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_e="def test_x(pypto_platform): pass\n")
    strict = pytester.runpytest("--pypto-arch=a5", "--pypto-emulate-onboard", "--pypto-require=a5")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(
        ["FAILED --pypto-require: cell a5 executed no test (1 ran emulated; "
         "--pypto-require-emulated counts them)"]
    )
    lenient = pytester.runpytest(
        "--pypto-arch=a5", "--pypto-emulate-onboard", "--pypto-require=a5,a5sim",
        "--pypto-require-emulated",
    )
    assert lenient.ret == pytest.ExitCode.OK


def test_a_served_onboard_cell_is_not_emulated(
    pytester: pytest.Pytester, fake_npus: Path, fake_runtime: str
) -> None:
    pytester.makepyfile(test_e="def test_x(pypto_platform): pass\n")
    result = pytester.runpytest("--pypto-arch=a5", "--pypto-emulate-onboard", "-v")
    result.stdout.fnmatch_lines_random(["*test_x[[]a5[]] PASSED*", "*cells a5sim, a5; *"])
    assert "(emulated)" not in result.stdout.str() and "-emulated]" not in result.stdout.str()
