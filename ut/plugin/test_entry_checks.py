# SPDX-License-Identifier: Apache-2.0
"""Session inputs that were accepted silently and then misbehaved are errors where they
enter (issue 26, item 13): PyPTO's ``--platform`` empty or disagreeing with
``--pypto-arch``/``--pypto-mode``, a marker given arguments it does not take, and a
``--pypto-runtime`` that serves none of the requested cells."""

from __future__ import annotations

import pytest

COMPAT = 'pytest_plugins = ["pytest_pypto.compat"]\n'
CELL_TEST = "def test_cell(pypto_platform):\n    print('CELL', pypto_platform)\n"


def _usage_error(result: pytest.RunResult) -> str:
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = " ".join(result.stderr.str().split())
    assert "Traceback" not in err + result.stdout.str()
    return err


@pytest.mark.parametrize(("args", "words"), [
    (["--platform", "a5sim", "--pypto-arch", "a2a3"],
     ["--platform a5sim", "--pypto-arch a2a3", "architectures a5", "give one of them"]),
    (["--platform", "a5sim,a2a3sim", "--pypto-arch", "a5"],
     ["--platform a5sim,a2a3sim", "--pypto-arch a5", "architectures a2a3, a5"]),
    (["--platform", "a5sim", "--pypto-mode", "onboard"],
     ["--platform a5sim", "--pypto-mode onboard", "modes sim", "give one of them"]),
])
def test_platform_that_disagrees_with_our_options_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], words: list[str]
) -> None:
    pytester.makeconftest(COMPAT)
    pytester.makepyfile(test_c=CELL_TEST)
    err = _usage_error(pytester.runpytest(*args))
    for word in words:
        assert word in err, (word, err)


def test_platform_that_agrees_with_our_options_runs(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(COMPAT)
    pytester.makepyfile(test_c=CELL_TEST)
    result = pytester.runpytest("--platform", "a5sim", "--pypto-arch", "a5", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_cell[[]a5sim[]] PASSED*"])


@pytest.mark.parametrize("value", ["", " ", "a5sim,", ","])
def test_empty_platform_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makeconftest(COMPAT)
    pytester.makepyfile(test_c=CELL_TEST)
    err = _usage_error(pytester.runpytest(f"--platform={value}"))
    assert f"--platform: invalid value {value!r}" in err
    assert "empty" in err and "a2a3sim" in err


@pytest.mark.parametrize("marker", [
    "pypto_onboard('yes')", "pypto_sim(1)", "pypto_isolate(True)", "pypto_onboard(strict=True)",
])
def test_marker_given_arguments_it_does_not_take_is_a_collection_error(
    pytester: pytest.Pytester, marker: str
) -> None:
    name = marker.split("(")[0]
    pytester.makepyfile(test_m=f"import pytest\n\n@pytest.mark.{marker}\n{CELL_TEST}")
    result = pytester.runpytest("--pypto-mode=sim,onboard")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    result.assert_outcomes(errors=1)
    out = result.stdout.str()
    assert f"@pytest.mark.{name} takes no arguments, but got {marker[len(name):]}" in out
    assert "Traceback" not in out


def test_runtime_that_serves_no_requested_cell_is_a_usage_error(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_c=CELL_TEST)
    err = _usage_error(pytester.runpytest("--pypto-runtime=isolated", "--pypto-mode=onboard",
                                          "--pypto-arch=all"))
    assert ("--pypto-runtime: runtime 'isolated' serves a2a3sim, a5sim, none of the "
            "requested cells a2a3, a5") in err


def test_unavailable_runtime_is_a_usage_error_naming_why(pytester: pytest.Pytester) -> None:
    """The bundled 'pypto' runtime serves nothing without a real PyPTO installed."""
    pytester.makepyfile(test_c=CELL_TEST)
    err = _usage_error(pytester.runpytest("--pypto-runtime=pypto"))
    assert "--pypto-runtime: runtime 'pypto' serves no cell" in err
    assert "the real 'pypto' package is not importable" in err
    assert "requested cells a2a3sim" in err


@pytest.mark.parametrize("args", [
    ["--pypto-runtime=isolated", "--pypto-arch=all"],  # serves every requested cell
    ["--pypto-runtime=isolated", "--pypto-mode=sim,onboard"],  # serves some of them
    ["--pypto-runtime=pypto", "--pypto-isolate"],  # sim cells run isolated anyway
    ["--pypto-runtime=pypto", "--pypto-codegen-only"],  # nothing is dispatched
])
def test_runtime_serving_some_cell_or_not_needed_is_accepted(
    pytester: pytest.Pytester, args: list[str]
) -> None:
    pytester.makepyfile(test_c="def test_x():\n    pass\n")
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
