"""pypto_runner: compile/run/check on the cell, the failure report, repro, failure classes."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from pytest_pypto.harness.seeding import test_seed


def test_check_passes_and_inputs_stay_unchanged(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_ok="""
        import numpy as np
        from kcases import Add, AddCase, RandomAdd

        def test_case(pypto_runner):
            r = pypto_runner.check(AddCase())
            assert r.passed and r.platform == pypto_runner.platform
            assert (r.outputs["out"] == 3.5).all()
            assert (r.inputs["x"] == 1.5).all() and (r.inputs["y"] == 2.0).all()

        def test_seeded_defaults(pypto_runner, pypto_config):
            r = pypto_runner.check(RandomAdd())
            g = np.random.default_rng(pypto_config.seed)
            x = g.standard_normal((16, 64)).astype(np.float32)
            y = g.random((16, 64)).astype(np.float32)
            assert (r.inputs["x"] == x).all() and (r.inputs["y"] == y).all()
            assert (r.outputs["out"] == x + y).all()

        def test_run_program(pypto_runner):
            x = np.full((16, 64), 1.5, np.float32)
            y = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
            x0, y0 = x.copy(), y.copy()
            out = np.zeros((16, 64), np.float32)
            res = pypto_runner.run(Add, x, y, out)
            assert res.platform == pypto_runner.platform
            assert (out == x0 + y0).all() and (res["out"] == out).all()
            assert (x == x0).all() and (y == y0).all()
        """
    )
    result = cases.runpytest("--pypto-arch=all")
    result.assert_outcomes(passed=6)


def test_exact_report_of_a_wrong_case(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(pypto_runner):
            pypto_runner.check(WrongAdd())
        """
    )
    result = cases.runpytest("--pypto-arch=a5", "--pypto-seed=3")
    result.assert_outcomes(failed=1)
    nodeid = "test_bad.py::test_wrong[a5sim]"
    seed = test_seed(3, nodeid)
    # Hand-computed: out = 1.5 + 2 = 3.5 everywhere; the golden says 4.5 at [0, 3] and
    # 2.5 at [2, 0]; fp32 tolerance 1e-5 + 1e-5 * 4.5 = 5.5e-05 (at [0, 3]); 2 / 1024.
    want = [
        "output 'out': 2 / 1024 elements mismatch (0.2%); float32, rtol=1e-05, atol=1e-05",
        "  greatest absolute difference: 1 at index [0, 3] (allowed 5.5e-05)",
        "  greatest relative difference: 0.4 at index [2, 0] (allowed 1.4e-05)",
        "  mismatching elements (index: actual, expected, diff):",
        "    [0, 3]: 3.5, 4.5, 1",
        "    [2, 0]: 3.5, 2.5, 1",
        "case: WrongAdd",
        "platform: a5sim",
        f"seed: {seed} (base seed 3)",
        f"reproduce: pytest '{nodeid}' --pypto-arch a5 --pypto-mode sim --pypto-seed 3",
    ]
    lines = result.stdout.lines
    head = "pytest_pypto.harness.compare.MismatchError: "
    first = next(i for i, line in enumerate(lines) if head + want[0] in line)
    indent = lines[first].index(head)
    got = [lines[first][indent + len(head) :]]
    got += [line[indent:] for line in lines[first + 1 : first + len(want)]]
    assert got == want


def test_repro_command_reproduces(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_bad="""
        from kcases import RandomAdd

        class OffWhenNegative(RandomAdd):
            def compute_expected(self, tensors, params=None):
                super().compute_expected(tensors, params)
                tensors["out"][tensors["x"] < 0] += 1   # depends on the seeded data

        def test_wrong(pypto_runner):
            pypto_runner.check(OffWhenNegative())
        """
    )
    # The first run is in this process; the reproduction is a fresh interpreter, as when
    # the command is pasted into a shell.
    first = cases.runpytest("--pypto-arch=all", "--pypto-seed=11")
    first.assert_outcomes(failed=2)
    out = first.stdout.str()
    lines = re.findall(r"E\s+reproduce: (pytest .*)", out)
    assert len(lines) == 2
    command = next(c for c in lines if "a5sim" in c)
    block = [
        line for line in out.split("_ test_wrong[a5sim] _")[1].splitlines() if line.startswith("E ")
    ]
    assert len(block) > 10 and any("mismatching elements" in line for line in block)
    args = command.split()[1:]
    assert args[0].strip("'") == "test_bad.py::test_wrong[a5sim]"
    again = cases.runpytest_subprocess(args[0].strip("'"), *args[1:])
    again.assert_outcomes(failed=1)
    assert "\n".join(block) in again.stdout.str()  # the same failure, element for element
    assert command in again.stdout.str()


def test_codegen_only_never_dispatches(
    cases: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cases.makepyfile(
        test_cg="""
        import numpy as np
        import pytest_pypto.harness.dispatch as dispatch
        from pytest_pypto.ir.artifact import CompiledProgram
        from kcases import Add, WrongAdd

        def test_cg(pypto_runner, pypto_config, monkeypatch):
            def boom(*a, **k):
                raise AssertionError("dispatched")
            monkeypatch.setattr(dispatch, "run", boom)
            monkeypatch.setattr(dispatch, "worker_for", boom)
            assert pypto_config.codegen_only
            r = pypto_runner.run(WrongAdd())  # a case: a passing RunResult once compiled
            assert r.passed and r.outputs == {}
            compiled = pypto_runner.compile(Add)
            assert isinstance(compiled, CompiledProgram)
            assert (compiled.artifact_dir() / "kernel_config.json").is_file()
            out = np.zeros((16, 64), np.float32)
            try:  # a dispatch ends the test as a skip (harness/codegen_only.py)
                pypto_runner.run(Add, np.ones_like(out), np.ones_like(out), out)
            finally:
                assert (out == 0).all()
        """
    )
    result = cases.runpytest("--pypto-codegen-only", "--pypto-arch=all")
    result.assert_outcomes(skipped=2)
    off = cases.runpytest()  # without the switch the kernel is dispatched
    off.assert_outcomes(failed=1)
    monkeypatch.setenv("PYPTO_CODEGEN_ONLY", "1")  # the environment mirror
    cases.runpytest().assert_outcomes(skipped=1)


def test_failure_classes_in_junitxml(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_cls="""
        import pytest_pypto.language as pl
        from pytest_pypto.ir.errors import SimulationError
        from kcases import WrongAdd, AddCase

        class BadKernel(AddCase):
            def get_program(self):
                @pl.program
                class Over:
                    @pl.function(type=pl.FunctionType.InCore)
                    def k(self, x: pl.Tensor[[16, 64], pl.FP32],
                          out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
                        t = pl.load(x, [8, 0], [16, 64])
                        out = pl.store(t, [0, 0], out)
                        return out

                    @pl.function(type=pl.FunctionType.Orchestration)
                    def main(self, x: pl.Tensor[[16, 64], pl.FP32],
                             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
                        out = self.k(x, out)
                        return out
                return Over

            def define_tensors(self):
                return super().define_tensors()[::2]

            def compute_expected(self, tensors, params=None):
                tensors["out"][:] = tensors["x"]

        def test_mismatch(pypto_runner):
            pypto_runner.check(WrongAdd())

        def test_compile(pypto_runner):
            pypto_runner.check(BadKernel())

        def test_runtime(pypto_runner):
            raise SimulationError("boom")

        def test_plain(pypto_runner):
            assert False
        """
    )
    result = cases.runpytest("--junitxml=out.xml")
    result.assert_outcomes(failed=4)
    assert "test_cls.py:12:21" in result.stdout.str()  # the compile error points at the load
    root = ET.parse(cases.path / "out.xml").getroot()
    props = {
        tc.get("name"): {p.get("name"): p.get("value") for p in tc.iter("property")}
        for tc in root.iter("testcase")
    }
    assert props["test_mismatch[a2a3sim]"]["pypto_failure_class"] == "mismatch"
    assert props["test_compile[a2a3sim]"]["pypto_failure_class"] == "compile-error"
    assert props["test_runtime[a2a3sim]"]["pypto_failure_class"] == "runtime-error"
    assert "pypto_failure_class" not in props["test_plain[a2a3sim]"]
    for p in props.values():
        assert p["pypto_platform"] == "a2a3sim" and int(p["pypto_seed"]) >= 0


def test_repro_command_keeps_the_switches_that_change_the_run(cases: pytest.Pytester) -> None:
    """A failure under --pypto-shuffle/--pypto-precise/... reproduces only with them."""
    cases.makepyfile(
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(pypto_runner):
            pypto_runner.check(WrongAdd())
        """
    )
    result = cases.runpytest(
        "--pypto-arch=a2a3", "--pypto-seed=3", "--pypto-shuffle=7", "--pypto-precise",
        "--pypto-strict-war", "--pypto-timeout=2.5",
    )
    result.assert_outcomes(failed=1)
    failures = result.stdout.str().split("short test summary info")[0]  # CI=true repeats it
    (line,) = re.findall(r"reproduce: (pytest .*)", failures)
    assert line == (
        "pytest 'test_bad.py::test_wrong[a2a3sim]' --pypto-arch a2a3 --pypto-mode sim "
        "--pypto-seed 3 --pypto-shuffle 7 --pypto-strict-war --pypto-precise --pypto-timeout 2.5"
    )
