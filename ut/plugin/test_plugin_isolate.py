# SPDX-License-Identifier: Apache-2.0
"""--pypto-isolate, @pytest.mark.pypto_isolate and --pypto-timeout in a real session.

A kernel cannot call ``os._exit``, so the crashing tests run a real compiled artifact
whose generated kernel source (a plain Python file on disk) was edited to crash
first; the hanging test is a real DSL kernel whose ``while`` loop never ends.  No
test hook exists in the runtime.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from ut.helpers import line_of

SUITE = '''
import shutil

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

M, N = 32, 64


@pl.program
class Add:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
            out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.add(pl.load(x, [0, 0], [M, N]), pl.load(y, [0, 0], [M, N]))
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.add(x, y, out)
        return out


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


def crashing(tmp_path, config, action):
    """Add's artifact, copied and edited so its kernel first runs ``action``."""
    art = tmp_path / "art"
    shutil.copytree(pytest_pypto.compile(Add, RunConfig(platform=config.platform)).artifact_dir(),
                    art)
    src = art / "kernels" / "add.py"
    src.write_text(src.read_text() + (
        "\\n_made = make\\n"
        "def make(bind):\\n"
        "    kernel = _made(bind)\\n"
        "    def crash(*args):\\n"
        f"        {action}\\n"
        "        return kernel(*args)\\n"
        "    return crash\\n"
    ))
    return art


def data(rng):
    x, y = rng.standard_normal((2, M, N), dtype=np.float32)
    return x, y, np.empty((M, N), np.float32)


def test_normal_before(pypto_runner, pypto_rng):
    x, y, out = data(pypto_rng)
    pypto_runner.run(Add, x, y, out)
    pytest_pypto.assert_close(out, x + y)


def test_exit(pypto_config, pypto_rng, tmp_path):
    pytest_pypto.run(crashing(tmp_path, pypto_config, "import os; os._exit(3)"),
                     *data(pypto_rng), config=pypto_config)


def test_abort(pypto_config, pypto_rng, tmp_path):
    pytest_pypto.run(crashing(tmp_path, pypto_config, "import os; os.abort()"),
                     *data(pypto_rng), config=pypto_config)


def test_hang(pypto_runner):
    a = np.ones((M, N), np.float32)
    pypto_runner.run(Spin, a, 1, np.empty((M, N), np.float32))


@pytest.mark.parametrize("k", range(3))
def test_normal_after(pypto_runner, pypto_rng, k):
    x, y, out = data(pypto_rng)
    pypto_runner.run(Add, x, y, out)
    pytest_pypto.assert_close(out, x + y)


@pytest.mark.pypto_isolate
def test_marked_exit(pypto_config, pypto_rng, tmp_path):
    assert pypto_config.runtime == "isolated"
    pytest_pypto.run(crashing(tmp_path, pypto_config, "import os; os._exit(5)"),
                     *data(pypto_rng), config=pypto_config)
'''


def _failures(xml_path) -> dict[str, tuple[str, str]]:
    """test name -> (failure class property, failure message) of each failed test case."""
    failed = {}
    for case in ET.parse(xml_path).getroot().iter("testcase"):
        failure = case.find("failure")
        if failure is None:
            continue
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        failed[case.get("name")] = (props.get("pypto_failure_class"), failure.get("message"))
    return failed


def test_isolate_turns_exit_abort_and_hang_into_one_failed_test_each_under_xdist(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_crashes=SUITE)
    result = pytester.runpytest(
        # 4 s: a normal test's child (its first imports) stays well inside it on a loaded box
        "--pypto-isolate", "--pypto-timeout", "4", "--pypto-arch=all",
        "-n", "2", "-p", "xdist", "--junitxml=out.xml",
    )
    out = result.stdout.str()
    result.assert_outcomes(passed=8, failed=8)
    assert "crashed while running" not in out and "replacing crashed worker" not in out
    failed = _failures(pytester.path / "out.xml")
    expected = {
        "test_exit": "exited with code 3",
        "test_abort": "killed by signal SIGABRT",
        "test_hang": "timed out",
        "test_marked_exit": "exited with code 5",
    }
    assert sorted(failed) == sorted(f"{name}[{cell}]" for name in expected
                                    for cell in ("a2a3sim", "a5sim"))
    for name, (cls, message) in failed.items():
        assert cls == "runtime-error", (name, cls)
        assert expected[name.split("[")[0]] in message, (name, message)
    # the crashes name the kernel that was running and where it is in the user's file
    assert re.search(r"while running kernel 'add' \(\S*test_crashes.py:\d+\)", out)
    loop = line_of(SUITE, "while i < n:", contains=True) - 1
    hang = re.search(r"'Spin' on a5sim: timed out.*\n.*test_crashes.py:(\d+):", out)
    assert hang and loop <= int(hang.group(1)) <= loop + 2  # a line of Spin's loop
    result.stdout.fnmatch_lines(["a2a3sim: 4 failed: runtime-error",
                                 "a5sim: 4 failed: runtime-error"])


def test_timeout_without_isolation_fails_the_hanging_test_in_process(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_crashes=SUITE)
    result = pytester.runpytest(
        "--pypto-timeout", "0.5", "--pypto-arch=a5", "-k", "hang or normal or marked",
        "--junitxml=out.xml",
    )
    result.assert_outcomes(passed=4, failed=2)
    failed = _failures(pytester.path / "out.xml")
    assert sorted(failed) == ["test_hang[a5sim]", "test_marked_exit[a5sim]"]
    cls, message = failed["test_hang[a5sim]"]
    assert cls == "runtime-error"
    assert "'Spin' on a5sim: timed out, still running after 0.5 s" in message
    assert failed["test_marked_exit[a5sim]"][0] == "runtime-error"
    assert "exited with code 5" in failed["test_marked_exit[a5sim]"][1]
