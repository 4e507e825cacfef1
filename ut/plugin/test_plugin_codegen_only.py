"""--pypto-codegen-only as a CI gate: every kernel compiles for its cell (onboard cells
included, with no NPU), nothing is dispatched, a test skips at its first dispatch with
the program and cell named, a compile error fails it, the ledger counts what compiled."""

from __future__ import annotations

import re
import shutil
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch  # noqa: F401  (the compat case needs it; re-importing torch breaks)
from readme_kit import README_EXAMPLE

# Loaded here, before the in-process runs: a run drops the modules it imported, and the
# next run re-importing half of the toolchain would see two copies of its classes.
import pytest_pypto.compat.harness  # noqa: F401
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.cases  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.worker  # noqa: F401
from pytest_pypto.harness.ledger import Ledger
from ut.helpers import line_of

CELLS = ("a2a3sim", "a2a3", "a5sim", "a5")
ARCH = {"a2a3sim": "a2a3", "a2a3": "a2a3", "a5sim": "a5", "a5": "a5"}
GATE = ("--pypto-codegen-only", "--pypto-arch=all", "--pypto-mode=sim,onboard")

# The README's own example ("Writing and testing a kernel"), verbatim: README_EXAMPLE.

# Nothing may execute a kernel under the gate: the simulator's worker and the runtime
# lookup raise if reached.
NO_DISPATCH_CONFTEST = '''
import pytest

def _boom(*args, **kwargs):
    raise AssertionError("dispatched under --pypto-codegen-only")

@pytest.fixture(autouse=True)
def _nothing_runs(monkeypatch):
    from pytest_pypto.runtime.worker import Worker
    monkeypatch.setattr(Worker, "run", _boom)
    try:
        import pytest_pypto.runtime.registry as registry
    except ImportError:
        return
    monkeypatch.setattr(registry, "runtime_for", _boom, raising=False)
'''


def _reasons(reprec: pytest.HookRecorder) -> dict[str, str]:
    """test id's cell -> skip reason of an in-process run's call-phase skips."""
    out = {}
    for rep in reprec.getreports("pytest_runtest_logreport"):
        if rep.skipped:
            out[rep.nodeid] = rep.longrepr[2].removeprefix("Skipped: ")
    return out


def _compiled_line(cell: str, kernels: int, programs: int) -> str:
    k = "kernel" if kernels == 1 else "kernels"
    p = "program" if programs == 1 else "programs"
    return f"{cell}: {kernels} {k} compiled ({programs} {p}), 0 run (--pypto-codegen-only)"


def test_readme_example_compiles_every_cell_without_an_npu(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_DISPATCH_CONFTEST)
    pytester.makepyfile(test_readme=README_EXAMPLE)
    result = pytester.runpytest(*GATE, "--pypto-require=a5,a2a3")
    result.assert_outcomes(passed=0, skipped=4, failed=0)
    assert result.ret == pytest.ExitCode.OK  # a cell whose kernels compiled meets the gate
    assert _reasons(result.reprec) == {
        f"test_readme.py::test_add[{cell}]":
            f"codegen-only: compiled Add for {ARCH[cell]} ({cell}), not run"
        for cell in CELLS
    }
    result.stdout.fnmatch_lines(
        [
            "*cells a2a3sim, a2a3, a5sim, a5; devices none needed (--pypto-codegen-only: "
            "every kernel compiles, none runs)*",
            "*= pypto coverage ledger =*",
            *(_compiled_line(c, 1, 1) for c in CELLS),
        ]
    )


def test_require_fails_for_a_cell_that_compiled_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_DISPATCH_CONFTEST)
    pytester.makepyfile(
        test_readme=README_EXAMPLE.replace(
            "def test_add(", "import pytest\n@pytest.mark.pypto_arch('a2a3')\ndef test_add("
        )
    )
    result = pytester.runpytest(*GATE, "--pypto-require=a2a3,a5")
    result.assert_outcomes(skipped=4)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED --pypto-require: cell a5 executed no test"])
    assert "cell a2a3 executed" not in result.stdout.str()


def test_readme_example_runs_without_the_switch(pytester: pytest.Pytester) -> None:
    # The same file really runs (and passes) when the gate is off: the skip is the gate's.
    pytester.makepyfile(test_readme=README_EXAMPLE)
    result = pytester.runpytest("--pypto-arch=all")
    result.assert_outcomes(passed=2)
    assert "kernels compiled" not in result.stdout.str()


def test_readme_example_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_DISPATCH_CONFTEST)
    pytester.makepyfile(test_readme=README_EXAMPLE)
    result = pytester.runpytest(*GATE, "-n", "2", "-p", "xdist", "-rs")
    result.assert_outcomes(skipped=4)
    out = result.stdout.str()
    for cell in CELLS:
        assert f"codegen-only: compiled Add for {ARCH[cell]} ({cell}), not run" in out
    # The workers' counts reach the controller's ledger (each cell's kernel once).
    result.stdout.fnmatch_lines([_compiled_line(c, 1, 1) for c in CELLS], consecutive=True)


A5_REJECTS = '''
import numpy as np
import pytest_pypto.language as pl

@pl.program
class AtomicBf16:
    @pl.function(type=pl.FunctionType.InCore)
    def acc(self, x: pl.Tensor[[16, 16], pl.BF16],
            out: pl.InOut[pl.Tensor[[16, 16], pl.BF16]]) -> pl.Tensor[[16, 16], pl.BF16]:
        t = pl.load(x, [0, 0], [16, 16])
        out = pl.store(t, [0, 0], out, atomic=pl.AtomicType.Add)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.BF16],
             out: pl.InOut[pl.Tensor[[16, 16], pl.BF16]]) -> pl.Tensor[[16, 16], pl.BF16]:
        out = self.acc(x, out)
        return out

def test_acc(pypto_runner):
    x = np.zeros((16, 16), np.float32)
    pypto_runner.run(AtomicBf16, x, x.copy())
'''


def test_an_a5_only_compile_error_fails_both_a5_cells(pytester: pytest.Pytester) -> None:
    pytester.makeconftest(NO_DISPATCH_CONFTEST)
    path = pytester.makepyfile(test_gate=A5_REJECTS)
    store_line = line_of(path, "atomic=", contains=True)
    result = pytester.runpytest(*GATE, "-rfs", "-p", "no:randomly")
    result.assert_outcomes(failed=2, skipped=2)
    out = result.stdout.str()
    for cell in ("a2a3sim", "a2a3"):  # a2a3 atomically adds BF16: compiled, not run
        assert f"codegen-only: compiled AtomicBf16 for a2a3 ({cell}), not run" in out
    for cell in ("a5sim", "a5"):
        assert f"FAILED test_gate.py::test_acc[{cell}]" in out
        assert f"{cell}: 1 failed: compile-error" in out
    assert "atomically adds into a BF16 tensor, which the 'a5' backend cannot do" in out
    assert re.search(rf"test_gate\.py:{store_line}\b", out), out
    result.stdout.fnmatch_lines(
        [_compiled_line("a2a3sim", 1, 1), _compiled_line("a2a3", 1, 1),
         _compiled_line("a5sim", 0, 0), _compiled_line("a5", 0, 0)],
        consecutive=True,
    )


EVERY_DISPATCH = '''
import os
from pathlib import Path

import numpy as np
import pytest
import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.harness import PTOTestCase, TensorSpec, DataType
from pytest_pypto.ir.artifact import CompiledProgram

@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 16])
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.k(x, out)
        return out

@pl.jit
def jit_twice(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.load(x, [0, 0], [16, 16])
        pl.store(pl.add(t, t), [0, 0], out)

class TwiceCase(PTOTestCase):
    def get_name(self):
        return "twice"
    def define_tensors(self):
        return [TensorSpec("x", [16, 16], DataType.FP32, init_value=1.0),
                TensorSpec("out", [16, 16], DataType.FP32, is_output=True)]
    def get_program(self):
        return Twice
    def compute_expected(self, tensors, params=None):
        tensors["out"][:] = 2 * tensors["x"]

X = np.ones((16, 16), np.float32)

# At collection (a codegen-only session, no test running): compiled, nothing runs.
AT_IMPORT = pytest_pypto.run(Twice, X, np.zeros_like(X), config=RunConfig(platform="a5sim"))

def test_at_import_returned_the_artifact():
    assert isinstance(AT_IMPORT, CompiledProgram)

def test_compile_only(pypto_runner, pypto_platform):
    compiled = pypto_runner.compile(Twice)
    assert compiled.platform == pypto_platform
    assert (compiled.artifact_dir() / "kernel_config.json").is_file()

def test_runner_run(pypto_runner):
    out = np.zeros_like(X)
    pypto_runner.run(Twice, X, out)
    raise AssertionError("not reached: the dispatch skips")

def test_check(pypto_runner):
    pypto_runner.check(TwiceCase())
    raise AssertionError("not reached")

def test_run_case_passes(pypto_runner):
    result = pypto_runner.run(TwiceCase())
    assert result.passed and result.outputs == {}

def test_package_run(pypto_config):
    pytest_pypto.run(Twice, X, np.zeros_like(X), config=pypto_config)
    raise AssertionError("not reached")

def test_package_run_any_config(pypto_platform):
    # Not the cell's config: the session's switch still holds the dispatch back.
    pytest_pypto.run(Twice, X, np.zeros_like(X), config=RunConfig(platform=pypto_platform))
    raise AssertionError("not reached")

def test_jit_call(pypto_platform):
    jit_twice(X, np.zeros_like(X), config=RunConfig(platform=pypto_platform))
    raise AssertionError("not reached")

def test_compiled_program_call(pypto_runner):
    compiled = pypto_runner.compile(Twice)
    compiled(X, np.zeros_like(X))
    raise AssertionError("not reached")

def test_device(pypto_device, pypto_platform):
    assert pypto_device is None
    locks = Path(os.environ["PYPTO_LOCK_DIR"])
    assert not (locks.exists() and any(locks.iterdir())), "a device was leased"
'''


def test_every_dispatch_kind_skips_and_compiles_pass(
    pytester: pytest.Pytester, fake_npus: object
) -> None:
    pytester.makeconftest(NO_DISPATCH_CONFTEST)
    pytester.makepyfile(test_kinds=EVERY_DISPATCH)
    reprec = pytester.inline_run(
        "--pypto-codegen-only", "--pypto-arch=a5", "--pypto-mode=sim,onboard", "-p", "no:randomly"
    )
    passed, skipped, failed = reprec.listoutcomes()
    assert not failed, [r.longrepr for r in failed]
    assert sorted(r.nodeid.split("::")[1] for r in passed) == sorted(
        ["test_at_import_returned_the_artifact"]
        + [f"{name}[{cell}]" for name in ("test_compile_only", "test_run_case_passes",
                                          "test_device") for cell in ("a5sim", "a5")]
    )
    reasons = _reasons(reprec)
    for name in ("test_runner_run", "test_check", "test_package_run", "test_compiled_program_call",
                 "test_package_run_any_config", "test_jit_call"):
        for cell in ("a5sim", "a5"):
            program = "jit_twice" if name == "test_jit_call" else "Twice"
            assert reasons[f"test_kinds.py::{name}[{cell}]"] == (
                f"codegen-only: compiled {program} for a5 ({cell}), not run"
            ), name
    assert len(skipped) == 12


def test_onboard_markers_still_apply(pytester: pytest.Pytester, skip_reasons) -> None:
    pytester.makepyfile(
        """
        import pytest

        @pytest.mark.pypto_sim
        def test_sim_only(pypto_platform):
            assert pypto_platform == "a5sim"

        @pytest.mark.pypto_onboard
        def test_npu_only(pypto_platform):
            assert pypto_platform == "a5"
        """
    )
    reprec = pytester.inline_run(*GATE, "--pypto-arch=a5")
    reprec.assertoutcome(passed=2, skipped=2)
    reasons = skip_reasons(reprec)
    assert reasons["test_onboard_markers_still_apply.py::test_sim_only[a5]"].startswith(
        "simulator only (pypto_sim)"
    )
    assert reasons["test_onboard_markers_still_apply.py::test_npu_only[a5sim]"].startswith(
        "needs an NPU"
    )


def test_without_the_switch_an_onboard_cell_still_needs_an_npu(
    pytester: pytest.Pytester, skip_reasons
) -> None:
    pytester.makepyfile("def test_x(pypto_platform):\n    pass\n")
    reprec = pytester.inline_run("--pypto-arch=a5", "--pypto-mode=onboard")
    reprec.assertoutcome(skipped=1)
    assert "onboard cell a5:" in next(iter(skip_reasons(reprec).values()))


def test_compat_case_returns_a_passing_result(pytester: pytest.Pytester) -> None:
    # PyPTO's harness returns a passing RunResult after compiling under --codegen-only.
    pytester.makeconftest(NO_DISPATCH_CONFTEST + '\npytest_plugins = ["pytest_pypto.compat"]\n')
    shutil.copy(Path(__file__).parents[1] / "compat" / "pypto_kit.py", pytester.path)
    pytester.syspathinsert()
    pytester.makepyfile(
        test_pp="""
        import pytest
        from pytest_pypto.compat.harness import PLATFORMS
        from pypto_kit import TorchAdd

        @pytest.mark.parametrize("platform", PLATFORMS)
        def test_add(test_runner, platform):
            result = test_runner.run(TorchAdd(platform=platform))
            assert result.passed, result.error
            assert result.platform == platform
        """
    )
    result = pytester.runpytest(*GATE, "--codegen-only")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([_compiled_line(c, 1, 1) for c in CELLS], consecutive=True)


def test_ledger_counts_each_program_once_per_cell() -> None:
    ledger = Ledger()
    assert ledger.compiled_lines(["a5sim"]) == []  # not counting: no lines
    ledger.add_compiled([["a5sim", "Add", "d1", 1], ["a5sim", "Mm", "d2", 3]])
    ledger.add_compiled([["a5sim", "Add", "d1", 1], ["a5", "Add", "d1", 1]])  # another worker
    ledger.record(SimpleNamespace(
        nodeid="t.py::x[a2a3]", when="call", outcome="skipped", skipped=True, failed=False,
        longrepr=("t.py", 1, "Skipped: why"), user_properties=[("pypto_platform", "a2a3")],
    ))
    assert ledger.compiled_lines(["a5sim", "a5"]) == [
        _compiled_line("a5sim", 4, 2),
        _compiled_line("a5", 1, 1),
        _compiled_line("a2a3", 0, 0),
    ]
    assert ledger.table(["a5sim", "a5"])[-3:] == ledger.compiled_lines(["a5sim", "a5"])
