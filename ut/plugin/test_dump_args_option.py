"""--pypto-dump-args (ini pypto_dump_args, env PYPTO_DUMP_ARGS) and PyPTO's --dump-args:
the level reaches each cell's RunConfig; a bad level is a usage error naming the option."""

from __future__ import annotations

import pytest

PROBE = """
def test_probe(pypto_config):
    print("LEVEL", pypto_config.dump_args)
"""


@pytest.mark.parametrize(("args", "ini", "env", "expected"), [
    ([], None, None, 0),
    (["--pypto-dump-args"], None, None, 1),  # the bare flag
    (["--pypto-dump-args=2"], None, None, 2),
    (["--pypto-dump-args=partial"], None, None, 1),
    ([], "pypto_dump_args = full", None, 2),
    ([], None, "1", 1),
    (["--pypto-dump-args=0"], None, "2", 0),  # the command line wins over the environment
], ids=["default", "bare", "two", "named", "ini", "env", "cli-over-env"])
def test_the_level_reaches_the_run_config(pytester: pytest.Pytester,
                                          monkeypatch: pytest.MonkeyPatch,
                                          args: list[str], ini: str | None, env: str | None,
                                          expected: int) -> None:
    pytester.makepyfile(test_probe=PROBE)
    if ini:
        pytester.makeini(f"[pytest]\n{ini}\n")
    if env:
        monkeypatch.setenv("PYPTO_DUMP_ARGS", env)
    # the file first: a bare flag takes the next word as its level when it can
    result = pytester.runpytest("test_probe.py", "-s", "-p", "no:cacheprovider", *args)
    result.assert_outcomes(passed=1)
    assert f"LEVEL {expected}" in result.stdout.str()


def test_pyptos_spelling_sets_the_same_level(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["pytest_pypto.compat"]\n')
    pytester.makepyfile(test_probe="""
        def test_probe(test_config, pypto_config):
            print("LEVELS", test_config.enable_dump_args, pypto_config.dump_args)
        """)
    result = pytester.runpytest("-s", "-p", "no:cacheprovider", "test_probe.py", "--dump-args")
    result.assert_outcomes(passed=1)
    assert "LEVELS 1 1" in result.stdout.str()


def test_a_bad_level_is_a_usage_error_naming_the_valid_levels(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("--pypto-dump-args=3")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = " ".join(result.stderr.str().split())
    assert "--pypto-dump-args: invalid value '3'" in err
    assert "0 (off), 1 (partial) or 2 (full)" in err
