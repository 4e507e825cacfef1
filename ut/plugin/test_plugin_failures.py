"""Failures people can read (plugin/failures.py): what a failing pypto test shows.

Each test runs a small suite with pytester and asserts the visible text: the user's
line and the diagnostic, none of our frames, the context of a mismatch, the NaN and
never-written counts, and that a module failing at import does not stop the run.
"""

from __future__ import annotations

import re

import numpy  # noqa: F401
import pytest
from readme_kit import ADD_PROGRAM

# Load the toolchain here before any in-process pytester run: a run drops the modules it
# imported, and the next run re-importing half of the toolchain (or numpy) would break.
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.compare  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.worker  # noqa: F401
from ut.helpers import line_of

KERNELS = ADD_PROGRAM.replace("M, N, TM = 128, 64, 32", "M, N, TM = 64, 32, 16") + '''

@pl.program
class FirstRowsOnly:
    """Stores rows [0, TM) only: the rest of `out` is never written."""

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(x, [0, 0], [TM, N])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.copy(x, out)
        return out


@pl.program
class TooBig:
    """One [M, 8192] FP32 tile is 2 MiB: over every arch's Vec capacity."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 8192], pl.FP32],
          out: pl.Out[pl.Tensor[[M, 8192], pl.FP32]]) -> pl.Tensor[[M, 8192], pl.FP32]:
        t = pl.load(x, [0, 0], [M, 8192])  # too-big
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 8192], pl.FP32],
             out: pl.Out[pl.Tensor[[M, 8192], pl.FP32]]) -> pl.Tensor[[M, 8192], pl.FP32]:
        out = self.k(x, out)
        return out
'''

# Frames of ours that a user must never see for a diagnostic.
INTERNALS = (
    "parser.py", "statements.py", "expressions.py", "api.py", "passes.py", "capacity.py",
    "runner.py", "cache.py", "compare.py", "def assert_close(", "find_mismatch(",
    "Program(name=", "PassContext(", "pytest_pypto/",
)


def _esc(pattern: str) -> str:
    """``pattern`` for fnmatch with its brackets literal (``*`` and ``?`` stay wild)."""
    return re.sub(r"[\[\]]", lambda m: f"[{m.group()}]", pattern)


def _match(result: pytest.RunResult, patterns: list[str], **kwargs: object) -> None:
    """``fnmatch_lines`` in order, with brackets in the patterns meant literally."""
    result.stdout.fnmatch_lines([_esc(p) for p in patterns], **kwargs)


def _failure_text(result: pytest.RunResult) -> str:
    """The FAILURES/ERRORS sections (the header names the plugin's own paths), without the
    short summary (under CI=true pytest prints whole messages there, not one line)."""
    out = result.stdout.str().split("short test summary info")[0]
    start = min(i for i in (out.find("= ERRORS ="), out.find("= FAILURES =")) if i >= 0)
    return out[start:]


def _assert_no_internals(text: str) -> None:
    shown = [name for name in INTERNALS if name in text]
    assert not shown, f"our internals leak into the failure: {shown}\n{text}"


def test_parse_error_at_import_is_one_collection_error_and_the_run_goes_on(
    pytester: pytest.Pytester,
) -> None:
    bad = """
import pytest_pypto.language as pl


def build():
    @pl.program  # decorator
    class Broken:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            t = pl.load(x, [0, 0], [16, 16])
            u = pl.no_such_op(t)  # bad-op
    return Broken


Broken = build()  # import-time


def test_never_collected():
    pass
"""
    pytester.makepyfile(test_bad=bad, test_good="def test_ok():\n    assert 1 + 1 == 2\n")
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    out = result.stdout.str()
    assert "Interrupted" not in out
    path = pytester.path / "test_bad.py"
    line = line_of(path, "bad-op")
    text = _failure_text(result)
    _match(
            result,
        [
            "*ERROR collecting test_bad.py*",
            f"test_bad.py:{line_of(path, 'import-time')}: in <module>",
            "    Broken = build()  # import-time",
            "*",
            f"test_bad.py:{line_of(path, 'decorator')}: in build",
            "    @pl.program  # decorator",
            "*",
            "E   pytest_pypto.ir.errors.InvalidOperationError: Error: module "
            "'pytest_pypto.language' has no attribute 'no_such_op'*",
            f"E     --> */test_bad.py:{line}:17",
            "E      |",
            f"E   {line} |             u = pl.no_such_op(t)  # bad-op",
            "E      |                 ^",
        ]
    )
    _assert_no_internals(text)
    _match(result, ["*test_good.py . *"])


def test_fulltrace_shows_our_frames(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_bad="""
import pytest_pypto.language as pl

def build():
    @pl.program
    class Broken:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            u = pl.no_such_op(x)
    return Broken

Broken = build()
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "--fulltrace")
    result.assert_outcomes(errors=1)
    assert "pytest_pypto/language/parser.py" in result.stdout.str()


def test_compile_error_shows_the_users_line_without_our_frames_or_reprs(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(failure_kernels=KERNELS)
    test = """
import numpy as np
from failure_kernels import M, TooBig

def test_big(pypto_runner):
    x = np.ones((M, 8192), np.float32)
    out = np.empty((M, 8192), np.float32)
    pypto_runner.run(TooBig, x, out)  # call
"""
    pytester.makepyfile(test_big=test)
    result = pytester.runpytest("-p", "no:randomly", "--pypto-arch=a2a3")
    result.assert_outcomes(failed=1)
    line = line_of(pytester.path / "failure_kernels.py", "too-big")
    _match(
            result,
        [
            ">       pypto_runner.run(TooBig, x, out)  # call",
            "E       pytest_pypto.ir.errors.CapacityError: Error: Function 'k': Vec peak usage is "
            "2097152 bytes, over the *-byte limit of the 'a2a3' backend",
            f"E         --> */failure_kernels.py:{line}:13",
            "E          |",
            f"E       {line} |         t = pl.load(x, [0, 0], [M, 8192])  # too-big",
            "E          |             ^",
            "E          = note: live at the peak: t (Vec [64, 8192] FP32, 2097152 bytes, *)",
            "E          = help: *",
            "",
            f"test_big.py:{line_of(pytester.path / 'test_big.py', 'call')}: CapacityError",
        ],

    )
    _assert_no_internals(_failure_text(result))


def test_fulltrace_prints_short_reprs_of_programs_and_pass_contexts(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(failure_kernels=KERNELS)
    pytester.makepyfile(
        test_big="""
import numpy as np
from failure_kernels import M, TooBig

def test_big(pypto_runner):
    pypto_runner.run(TooBig, np.ones((M, 8192), np.float32), np.empty((M, 8192), np.float32))
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "--pypto-arch=a5", "--fulltrace")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "pytest_pypto/compiler/capacity.py" in out  # everything is shown...
    assert "program = <Program TooBig: 2 functions (k, main)>" in out  # ...in short
    assert "ctx = <PassContext a5: " in out
    assert "Program(name=" not in out and "PassContext(arch=" not in out


def test_deferred_parse_error_fails_its_test_at_the_users_line(
    pytester: pytest.Pytester,
) -> None:
    module = """
import numpy as np
import pytest_pypto.language as pl

@pl.program
class Typo:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[16, 16, pl.FP32]):  # typo
        t = pl.load(x, [0, 0], [16, 16])

def test_typo(pypto_runner):
    pypto_runner.compile(Typo)  # use

def test_other_test_of_the_file():
    assert True
"""
    pytester.makepyfile(test_typo=module)
    result = pytester.runpytest("-p", "no:randomly", "--pypto-arch=a5")
    result.assert_outcomes(failed=1, passed=1)
    line = line_of(pytester.path / "test_typo.py", "typo")
    _match(
            result,
        [
            ">       pypto_runner.compile(Typo)  # use",
            "E       pytest_pypto.ir.errors.ParserTypeError: Error: pl.Tensor[16, 16, pl.FP32]: "
            "the shape must be a list; written like this, every dimension is a separate "
            "argument",
            f"E         --> */test_typo.py:{line}:20",
            "E         |",
            f"E       {line} |     def k(self, x: pl.Tensor[16, 16, pl.FP32]):  # typo",
            "E         |                    ^",
            "E         = help: write pl.Tensor[[16, 16], pl.FP32]",
        ],

    )
    text = _failure_text(result)
    _assert_no_internals(text)
    assert "pypto_onboard" not in text and "PyPTO installation" not in text


README_TEST = """
import numpy as np
import pytest_pypto
from failure_kernels import M, N, Add

def test_add(pypto_runner, pypto_rng, request):
    x, y = pypto_rng.standard_normal((2, M, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    pypto_runner.run(Add, x, y, out)
    (request.config.rootpath / (pypto_runner.platform + ".seed")).write_text(
        str(pypto_runner.config.seed))
    pytest_pypto.assert_close(out, x + y + 1)  # wrong
"""


def test_assert_close_in_a_readme_style_test_names_platform_seed_and_repro(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(failure_kernels=KERNELS, test_readme=README_TEST)
    result = pytester.runpytest("-p", "no:randomly", "--pypto-arch=all", "--pypto-seed=3")
    result.assert_outcomes(failed=2)
    for platform, arch in (("a2a3sim", "a2a3"), ("a5sim", "a5")):
        seed = (pytester.path / f"{platform}.seed").read_text()
        nodeid = f"test_readme.py::test_add[{platform}]"
        _match(
            result,
            [
                ">       pytest_pypto.assert_close(out, x + y + 1)  # wrong",
                "E       pytest_pypto.harness.compare.MismatchError: output 'output': "
                "2048 / 2048 elements mismatch (100%); float32, rtol=1e-05, atol=1e-05",
                "E         greatest absolute difference: * at index * (allowed *)",
                "*",
                f"E       platform: {platform}",
                f"E       seed: {seed} (base seed 3)",
                f"E       reproduce: pytest '{nodeid}' --pypto-arch {arch} --pypto-mode sim "
                "--pypto-seed 3",
                "",
                f"test_readme.py:{line_of(pytester.path / 'test_readme.py', 'wrong')}: "
                "MismatchError",
            ]
        )
    text = _failure_text(result)
    _assert_no_internals(text)
    assert text.count("reproduce: pytest") == 2  # once per failing cell


def test_assert_close_outside_pypto_tests_stays_as_it_was(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_plain="""
import numpy as np
import pytest_pypto

def test_plain():
    pytest_pypto.assert_close(np.ones(3, np.float32), np.zeros(3, np.float32))

def test_seeded(pypto_rng):
    pytest_pypto.assert_close(np.ones(3, np.float32), np.zeros(3, np.float32))
"""
    )
    result = pytester.runpytest("-p", "no:randomly", "--pypto-seed=9", "--junitxml=out.xml")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    plain, seeded = out.split("test_seeded", 1)[0], out.split("test_seeded", 1)[1]
    assert "platform:" not in out and "reproduce:" not in out  # no cell: nothing to claim
    assert "seed:" not in plain.split("= FAILURES =")[1]
    assert re.search(r"E\s+seed: \d+ \(base seed 9\)", seeded)
    _assert_no_internals(_failure_text(result))


def test_nan_of_never_written_memory_is_named_and_counted(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        failure_kernels=KERNELS,
        test_rows="""
import numpy as np
import pytest_pypto
from failure_kernels import M, N, FirstRowsOnly

def test_copy(pypto_runner, pypto_rng):
    x = pypto_rng.standard_normal((M, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    pypto_runner.run(FirstRowsOnly, x, out)
    pytest_pypto.assert_close(out, x)
""",
    )
    result = pytester.runpytest("-p", "no:randomly", "--pypto-arch=all")
    result.assert_outcomes(failed=2)
    m, n, tm = 64, 32, 16
    unwritten = (m - tm) * n  # rows [TM, M) of every column: 1536 of 2048
    for platform in ("a2a3sim", "a5sim"):
        _match(
            result,
            [
                f"*test_copy[{platform}]*",
                "E       pytest_pypto.harness.compare.MismatchError: output 'output': "
                f"{unwritten} / {m * n} elements mismatch (75%); float32, rtol=1e-05, "
                "atol=1e-05",
                "E         greatest absolute difference among finite elements: 0 at index "
                "[0, 0] (allowed *)",
                "E         greatest relative difference among finite elements: 0 at index "
                "[0, 0] (allowed *)",
                f"E         not finite in the actual output: {unwritten} NaN of the "
                f"{unwritten} mismatching elements",
                f"E         never written: {unwritten} elements hold the simulator's poison "
                "pattern (memory no store reached, or values computed from it)",
                "E         help: a store is missing or its offsets do not cover the tensor "
                f"(first never-written element at index [{tm}, 0])",
                f"E         first 10 of {unwritten} mismatching elements (index: actual, "
                "expected, diff):",
                f"E           [{tm}, 0]: nan, *, nan",
            ],
            consecutive=False,
        )
        _match(result, [f"E       platform: {platform}"])
