"""Options: values, precedence (cli > env > ini > default), and bad values as usage errors."""

from __future__ import annotations

import pytest

PROBE = """
from pytest_pypto.plugin.keys import SETTINGS_KEY

def test_probe(request):
    s = request.config.stash[SETTINGS_KEY]
    print("SETTINGS", s.archs, s.modes, s.devices, s.seed, s.require, s.cells)
"""


def settings_line(pytester: pytest.Pytester, *args: str) -> str:
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", *args)
    # The probe is not a per-cell test, so a --pypto-require verdict fails the run (exit 1).
    assert result.ret in (0, 1), result.stdout.str()
    result.assert_outcomes(passed=1)
    return _probe_line(result)


def _probe_line(result: pytest.RunResult) -> str:
    (line,) = [ln[ln.index("SETTINGS") :] for ln in result.outlines if "SETTINGS " in ln]
    return line


def test_defaults(pytester: pytest.Pytester) -> None:
    line = settings_line(pytester)
    assert line == "SETTINGS ('a2a3',) ('sim',) None None () ('a2a3sim',)"


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--pypto-arch", "a5"], "('a5',) ('sim',) None None () ('a5sim',)"),
        (["--pypto-arch", "all"], "('a2a3', 'a5') ('sim',) None None () ('a2a3sim', 'a5sim')"),
        (["--pypto-arch", "a5, a2a3"], "('a2a3', 'a5') ('sim',) None None () ('a2a3sim', 'a5sim')"),
        (["--pypto-mode", "onboard"], "('a2a3',) ('onboard',) None None () ('a2a3',)"),
        (
            ["--pypto-mode", "onboard,sim", "--pypto-arch=all"],
            "('a2a3', 'a5') ('sim', 'onboard') None None () ('a2a3sim', 'a2a3', 'a5sim', 'a5')",
        ),
        (["--pypto-device", "3"], "('a2a3',) ('sim',) (3,) None () ('a2a3sim',)"),
        (["--pypto-device", "0-3"], "('a2a3',) ('sim',) (0, 1, 2, 3) None () ('a2a3sim',)"),
        (["--pypto-device", "5,0,2"], "('a2a3',) ('sim',) (0, 2, 5) None () ('a2a3sim',)"),
        (["--pypto-device", "6,0-2"], "('a2a3',) ('sim',) (0, 1, 2, 6) None () ('a2a3sim',)"),
        (["--pypto-seed", "1234"], "('a2a3',) ('sim',) None 1234 () ('a2a3sim',)"),
        (["--pypto-require", "a2a3sim"], "('a2a3',) ('sim',) None None ('a2a3sim',) ('a2a3sim',)"),
    ],
)
def test_option_values(pytester: pytest.Pytester, args: list[str], expected: str) -> None:
    assert settings_line(pytester, *args) == f"SETTINGS {expected}"


# (option name, cli value, env value, ini value, rendering of cli/env/ini/default in SETTINGS)
PRECEDENCE = [
    ("arch", "all", "a5", "a2a3", ["('a2a3', 'a5')", "('a5',)", "('a2a3',)", "('a2a3',)"]),
    ("arch", "a2a3", "all", "a5", ["('a2a3',)", "('a2a3', 'a5')", "('a5',)", "('a2a3',)"]),
    (
        "mode",
        "sim",
        "onboard",
        "sim,onboard",
        ["('sim',)", "('onboard',)", "('sim', 'onboard')", "('sim',)"],
    ),
    ("device", "1", "2-3", "4", ["(1,)", "(2, 3)", "(4,)", "None"]),
    ("seed", "1", "2", "3", ["1", "2", "3", "None"]),
    ("require", "a2a3sim", "a5sim", "a5", ["('a2a3sim',)", "('a5sim',)", "('a5',)", "()"]),
]
FIELD = {"arch": 0, "mode": 1, "device": 2, "seed": 3, "require": 4}


def _field(line: str, name: str) -> str:
    # SETTINGS <archs> <modes> <devices> <seed> <require> <cells>; tuples contain ", "
    import re

    parts = re.findall(r"\([^)]*\)|\S+", line.removeprefix("SETTINGS "))
    return parts[FIELD[name]]


@pytest.mark.parametrize(("name", "cli", "env", "ini", "shown"), PRECEDENCE)
@pytest.mark.parametrize("winner", ["cli", "env", "ini", "default"])
def test_precedence(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    cli: str,
    env: str,
    ini: str,
    shown: list[str],
    winner: str,
) -> None:
    """Each source beats every source below it, and only those."""
    level = ["cli", "env", "ini", "default"].index(winner)
    args: list[str] = []
    if level <= 0:
        args.append(f"--pypto-{name}={cli}")
    if level <= 1:
        monkeypatch.setenv(f"PYPTO_{name.upper()}", env)
    if level <= 2:
        pytester.makeini(f"[pytest]\npypto_{name} = {ini}\n")
    assert _field(settings_line(pytester, *args), name) == shown[level]


def test_ini_in_pyproject(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\npypto_arch = "a5"\npypto_seed = "7"\n')
    assert settings_line(pytester) == "SETTINGS ('a5',) ('sim',) None 7 () ('a5sim',)"


def test_empty_env_does_not_override_ini(pytester: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_ARCH", "")
    pytester.makeini("[pytest]\npypto_arch = a5\n")
    assert settings_line(pytester).startswith("SETTINGS ('a5',)")


BAD = [
    ("arch", "x86", "unknown architecture 'x86'", ["a2a3", "a5", "all"]),
    ("arch", "", "empty entry", ["a2a3", "a5"]),
    ("arch", "a5,", "empty entry", ["a2a3", "a5"]),
    ("arch", "all,a5", "unknown architecture 'all'", ["a2a3", "a5"]),
    ("mode", "hw", "unknown execution mode 'hw'", ["sim", "onboard"]),
    ("mode", "a5sim", "unknown execution mode 'a5sim'", ["sim", "onboard"]),
    ("device", "x", "'x' is not a device id or range", ["0-7", "0,2,5"]),
    ("device", "3-1", "range '3-1' is empty", ["0-7"]),
    ("device", "-1", "'-1' is not a device id or range", ["0-7"]),
    ("device", "0,,1", "'' is not a device id or range", ["0-7"]),
    ("seed", "abc", "not an integer", ["non-negative integer"]),
    ("seed", "-3", "must be >= 0", ["non-negative integer"]),
    ("seed", "1.5", "not an integer", ["non-negative integer"]),
    ("require", "a6sim", "unknown platform 'a6sim'", ["a2a3sim", "a2a3", "a5sim", "a5"]),
    ("require", "a5sim,", "empty entry", ["a5sim"]),
]


@pytest.mark.parametrize(("name", "value", "detail", "choices"), BAD)
def test_bad_value_cli(
    pytester: pytest.Pytester, name: str, value: str, detail: str, choices: list[str]
) -> None:
    result = pytester.runpytest(f"--pypto-{name}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"--pypto-{name}: invalid value {value!r} (from the command line): {detail}" in err
    for choice in choices:
        assert choice in err
    assert "Traceback" not in err + result.stdout.str()


@pytest.mark.parametrize(("name", "value", "detail", "choices"), BAD[::3])
def test_bad_value_env(
    pytester: pytest.Pytester, monkeypatch, name: str, value: str, detail: str, choices
) -> None:
    if not value:
        pytest.fail("an empty env value means unset; pick another row")
    monkeypatch.setenv(f"PYPTO_{name.upper()}", value)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"invalid value {value!r} (from environment variable PYPTO_{name.upper()})" in err
    assert detail in err


@pytest.mark.parametrize(("name", "value", "detail", "choices"), BAD[1::3])
def test_bad_value_ini(
    pytester: pytest.Pytester, name: str, value: str, detail: str, choices
) -> None:
    if not value:
        value, detail = "bogus", "bogus"
    pytester.makeini(f"[pytest]\npypto_{name} = {value}\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"invalid value {value!r} (from ini key pypto_{name})" in err
    assert detail in err


def test_bad_arch_is_one_paragraph_in_a_subprocess(pytester: pytest.Pytester) -> None:
    """The issue's acceptance check: `pytest --pypto-arch x86` -> exit 4, a2a3 and a5 named."""
    result = pytester.runpytest_subprocess("--pypto-arch", "x86")
    assert result.ret == 4
    lines = [ln for ln in result.stderr.lines if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("ERROR: --pypto-arch")
    assert "'x86'" in lines[0] and "a2a3" in lines[0] and "a5" in lines[0]
    assert "Traceback" not in result.stdout.str()


def test_help_lists_options_even_with_a_bad_env(pytester: pytest.Pytester, monkeypatch) -> None:
    monkeypatch.setenv("PYPTO_ARCH", "x86")
    result = pytester.runpytest("--help")
    assert result.ret == 0
    out = result.stdout.str()
    for name in ("arch", "mode", "device", "seed", "require"):
        assert f"--pypto-{name}" in out
        assert f"pypto_{name}" in out  # ini key listed


def test_only_built_options_are_registered(pytester: pytest.Pytester) -> None:
    """Every option of docs/design/plugin.md §3 with machinery behind it is offered, with its ini
    key."""
    result = pytester.runpytest("--help")
    out = result.stdout.str()
    built = (
        "codegen-only",
        "save-kernels",
        "kernels-dir",
        "dump-passes",
        "cache-dir",
        "no-cache",
        "alias",
    )
    for name in built:
        assert f"--pypto-{name}" in out
        assert f"pypto_{name.replace('-', '_')}" in out
        assert f"PYPTO_{name.upper().replace('-', '_')}" in out
