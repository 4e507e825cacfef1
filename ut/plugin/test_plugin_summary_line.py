"""The short test summary line of our failures starts with the message (issue 26, item 15).

pytest prints ``FAILED <nodeid> - <first line of the crash message>``, cut to the
terminal width; with the class path first (``pytest_pypto.harness.compare.MismatchError:
...``) an 80-column line showed only the class path.  The crash message of a toolchain
diagnostic is its message; junitxml's failure message follows.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET

import pytest
from readme_kit import ADD_PROGRAM

# Load the toolchain here before any in-process pytester run (see test_plugin_failures.py).
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.compare  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.worker  # noqa: F401

KERNELS = ADD_PROGRAM.replace("M, N, TM = 128, 64, 32", "M, N, TM = 64, 32, 16")

TESTS = '''
import numpy as np
import pytest_pypto
import pytest_pypto.language as pl
from summary_line_kernels import M, N, Add


def test_wrong(pypto_runner, pypto_rng):
    x, y = pypto_rng.standard_normal((2, M, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    pypto_runner.run(Add, x, y, out)
    pytest_pypto.assert_close(out, x + y + 1, name="sum")


def test_typo(pypto_runner):
    @pl.program
    class Typo:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4, 4], pl.FP32]):
            y = pl.no_such_op(x)
    pypto_runner.run(Typo, np.ones((4, 4), np.float32))


def test_plain():
    assert 1 == 2
'''


@pytest.fixture
def summary(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.RunResult:
    for name in ("CI", "BUILD_NUMBER"):  # pytest prints whole messages on CI
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "80")
    pytester.makepyfile(summary_line_kernels=KERNELS, test_summary=TESTS)
    result = pytester.runpytest("-p", "no:randomly", "--pypto-arch=a5", "-rA",
                                "--junitxml=out.xml")
    result.assert_outcomes(failed=3)
    return result


def _summary_lines(result: pytest.RunResult) -> dict[str, str]:
    text = result.stdout.str().split("short test summary info", 1)[1]
    return {line.split(" - ", 1)[0].split("::")[-1]: line
            for line in text.splitlines() if line.startswith("FAILED ")}


def test_the_summary_line_shows_the_message_not_the_class_path(summary) -> None:
    lines = _summary_lines(summary)
    wrong = lines["test_wrong[a5sim]"]
    assert wrong.startswith(
        "FAILED test_summary.py::test_wrong[a5sim] - output 'sum': 2048 / 2048 elem"
    ), wrong
    typo = lines["test_typo[a5sim]"]
    assert typo.startswith("FAILED test_summary.py::test_typo[a5sim] - Error: "), typo
    assert not any(path in line for line in lines.values()
                   for path in ("pytest_pypto.harness.", "pytest_pypto.ir.errors.")), lines
    # other failures keep pytest's own line
    assert lines["test_plain"].startswith("FAILED test_summary.py::test_plain - assert 1 == 2")


def test_the_failure_section_and_junitxml_keep_their_text(summary, pytester) -> None:
    out = summary.stdout.str()
    assert "E       pytest_pypto.harness.compare.MismatchError: output 'sum': 2048 / 2048" in out
    messages = {
        case.get("name"): case.find("failure").get("message")
        for case in ET.parse(pytester.path / "out.xml").getroot().iter("testcase")
    }
    assert messages["test_wrong[a5sim]"].startswith("output 'sum': 2048 / 2048 elements")
