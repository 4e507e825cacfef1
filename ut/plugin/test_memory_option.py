"""--pypto-max-memory: sizes, auto and off from the command line, ini and env; a bad value
is a usage error naming the valid values; a test whose kernel goes over fails with the
tensor, its size and the line, and the next test of the worker still runs."""

from __future__ import annotations

import pytest

GREEDY = '''
import numpy as np
import pytest_pypto.language as pl

R, C = 256, 1024


@pl.program
class Greedy:
    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, a: pl.Tensor[[R, C], pl.FP32],
            o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for r in pl.range(0, R, 16):
            o = pl.store(pl.add(pl.load(a, [r, 0], [16, C]), 1.0), [r, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        big = pl.create_tensor([R, C], dtype=pl.FP32)
        big = self.inc(x, big)
        out = self.inc(big, out)
        return out


def test_greedy(pypto_runner):
    out = np.empty((R, C), np.float32)
    pypto_runner.run(Greedy, np.zeros((R, C), np.float32), out)
    assert (out == 2).all()


def test_config(pypto_config):
    print("LIMIT", pypto_config.max_memory)
'''


@pytest.mark.parametrize("how", ["cli", "ini", "env"])
def test_a_run_over_the_limit_fails_naming_tensor_size_and_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    pytester.makepyfile(test_greedy=GREEDY)
    args = ["-s"]
    if how == "cli":
        args.append("--pypto-max-memory=2.5MiB")
    elif how == "ini":
        pytester.makeini("[pytest]\npypto_max_memory = 2.5MiB\n")
    else:
        monkeypatch.setenv("PYPTO_MAX_MEMORY", "2.5MiB")
    result = pytester.runpytest_subprocess(*args, timeout=120)
    result.assert_outcomes(passed=1, failed=1)
    out = " ".join(result.stdout.str().split())
    assert "pl.create_tensor 'big' [256, 1024] FP32 needs 1.00 MiB" in out
    assert "2.50 MiB memory limit (--pypto-max-memory)" in out
    assert "test_greedy.py:27" in out  # the create_tensor line of the user's file
    assert f"LIMIT {5 * (1 << 19)}" in out


def test_off_and_a_large_size_let_it_pass(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greedy=GREEDY)
    for value, shown in (("off", "None"), ("1G", str(1 << 30))):
        result = pytester.runpytest_subprocess("-s", f"--pypto-max-memory={value}", timeout=120)
        result.assert_outcomes(passed=2)
        assert f"LIMIT {shown}" in result.stdout.str()


def test_the_default_is_a_share_of_the_machine(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_greedy=GREEDY)
    result = pytester.runpytest_subprocess("-s", "-k", "config", timeout=120)
    result.assert_outcomes(passed=1)
    limit = int(result.stdout.str().split("LIMIT ")[1].split()[0])
    assert 64 << 20 < limit  # some real share, not zero or a token amount


def test_a_bad_size_is_a_usage_error_naming_the_valid_values(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_x(): pass\n")
    result = pytester.runpytest("--pypto-max-memory=lots")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = " ".join(result.stderr.str().split())
    assert "--pypto-max-memory: invalid value 'lots'" in err
    assert "auto, off, or a size such as 8GiB" in err
    assert "Traceback" not in err + result.stdout.str()
