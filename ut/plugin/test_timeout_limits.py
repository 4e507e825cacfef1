# SPDX-License-Identifier: Apache-2.0
"""--pypto-timeout's range is checked at start-up, and an isolated run has a default
limit (--pypto-isolate-timeout), so under --pypto-isolate a kernel that loops forever
fails only its test even without --pypto-timeout."""

from __future__ import annotations

import multiprocessing
import signal
import xml.etree.ElementTree as ET

import pytest

from pytest_pypto import RunConfig
from pytest_pypto.config import ISOLATED_TIMEOUT, MAX_TIMEOUT
from pytest_pypto.harness.context import run_config
from pytest_pypto.harness.settings import Settings, option_named, parse_timeout
from pytest_pypto.runtime import isolated

SPIN = '''
import numpy as np
import pytest
import pytest_pypto.language as pl

M, N = 32, 64


@pl.program
class Spin:
    @pl.function(type=pl.FunctionType.InCore)
    def spin(self, a: pl.Tensor[[M, N], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(a, [0, 0], [M, N])
        i = 0
        while i < n:
            t = pl.add(t, t)
            i = i + 0
        c = pl.store(t, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.spin(a, n, c)
        return c


def test_hang(pypto_runner):
    pypto_runner.run(Spin, np.ones((M, N), np.float32), 1, np.empty((M, N), np.float32))


def test_finishes(pypto_runner):
    out = np.empty((M, N), np.float32)
    pypto_runner.run(Spin, np.ones((M, N), np.float32), 0, out)
    assert (out == 1).all()
'''


def _failure_messages(xml_path) -> dict[str, str]:
    return {
        case.get("name"): case.find("failure").get("message")
        for case in ET.parse(xml_path).getroot().iter("testcase")
        if case.find("failure") is not None
    }


@pytest.mark.parametrize("how", ["cli", "env", "ini"])
def test_isolate_has_a_default_limit_that_ini_and_env_set(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    """No --pypto-timeout: the isolated run still stops, after --pypto-isolate-timeout."""
    pytester.makepyfile(test_spin=SPIN)
    args = ["--pypto-isolate", "--junitxml=out.xml", "-p", "no:randomly"]
    if how == "cli":
        args += ["--pypto-isolate-timeout", "1"]
    elif how == "env":
        monkeypatch.setenv("PYPTO_ISOLATE_TIMEOUT", "1")
    else:
        pytester.makeini("[pytest]\npypto_isolate_timeout = 1\n")
    result = pytester.runpytest_subprocess(*args, timeout=120)
    result.assert_outcomes(passed=1, failed=1)
    (message,) = _failure_messages(pytester.path / "out.xml").values()
    assert "'Spin' on a2a3sim: timed out" in message


def test_isolated_run_config_gets_the_default_limit_in_process_runs_do_not() -> None:
    settings = Settings(isolate=True)
    assert settings.isolate_timeout == ISOLATED_TIMEOUT == 600
    assert run_config(settings, "a2a3sim").timeout == 600
    assert run_config(Settings(), "a2a3sim", isolate=True).timeout == 600
    assert run_config(Settings(runtime="isolated"), "a2a3sim").timeout == 600
    assert run_config(Settings(isolate_timeout=5.0), "a2a3sim", isolate=True).timeout == 5
    # an explicit --pypto-timeout wins; in-process runs have no default limit
    assert run_config(Settings(isolate=True, timeout=2.0), "a2a3sim").timeout == 2
    assert run_config(Settings(), "a2a3sim").timeout is None


def test_isolated_runtime_bounds_a_config_without_timeout() -> None:
    """RunConfig(runtime="isolated") used directly: the runtime applies the default."""
    bounded = isolated.bounded(RunConfig(platform="a5sim", runtime="isolated"))
    assert bounded.timeout == ISOLATED_TIMEOUT and bounded.platform == "a5sim"
    given = RunConfig(platform="a5sim", timeout=3.0)
    assert isolated.bounded(given) is given


def test_help_says_what_holds_without_a_timeout(pytester: pytest.Pytester) -> None:
    out = " ".join(pytester.runpytest("--help").stdout.str().split())
    assert "--pypto-isolate-timeout=SECONDS" in out
    assert "PYPTO_ISOLATE_TIMEOUT" in out and "pypto_isolate_timeout" in out
    assert "(default: 600)" in out
    assert "without it, an in-process run has no limit" in out


@pytest.mark.parametrize("value", ["inf", "1e10", "nan", "-1", "0", "1000001"])
@pytest.mark.parametrize("name", ["timeout", "isolate-timeout"])
def test_out_of_range_timeout_is_a_usage_error(
    pytester: pytest.Pytester, name: str, value: str
) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest(f"--pypto-{name}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = " ".join(result.stderr.str().split())
    assert f"--pypto-{name}: invalid value {value!r} (from the command line)" in err
    assert "a number of seconds > 0 and at most 1000000" in err
    assert "Traceback" not in err + result.stdout.str()


def test_env_timeout_inf_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_TIMEOUT", "inf")
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "invalid value 'inf' (from environment variable PYPTO_TIMEOUT)" in result.stderr.str()


def test_largest_timeout_fits_every_limit_the_timeout_machinery_has() -> None:
    """MAX_TIMEOUT is accepted by the in-process alarm (setitimer) and by the isolated
    runtime's wait on its child (a pipe poll, in whole ms that must fit a C int) with
    its grace period on top; twice as much would overflow the poll."""
    assert parse_timeout(str(MAX_TIMEOUT)) == MAX_TIMEOUT
    wait = MAX_TIMEOUT + isolated._grace(MAX_TIMEOUT)
    here, there = multiprocessing.Pipe()
    try:
        there.send(1)
        assert here.poll(wait)
        with pytest.raises(OverflowError):
            here.poll(2 * wait)  # the limit the check keeps the user away from
    finally:
        here.close()
        there.close()
    assert signal.setitimer(signal.ITIMER_REAL, 0) == (0.0, 0.0)
    signal.setitimer(signal.ITIMER_REAL, MAX_TIMEOUT)
    assert signal.setitimer(signal.ITIMER_REAL, 0)[0] > 0
    assert option_named("timeout").choices == "a number of seconds > 0 and at most 1000000"


@pytest.mark.parametrize("value", [float("inf"), 1e10, float("nan"), 0, -1])
def test_run_config_refuses_an_out_of_range_timeout(value: float) -> None:
    accepted = "must be a number of seconds > 0 and at most 1000000"
    with pytest.raises(ValueError, match=rf"RunConfig\(timeout=.*\): {accepted}"):
        RunConfig(timeout=value)
