"""Kept artifacts: --pypto-save-kernels, --pypto-kernels-dir, --pypto-dump-passes, and the
directory a failing test keeps (artifact + inputs, expected, actual as .npy)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest

from pytest_pypto.plugin.paths import kept_name

OK = """
from kcases import AddCase

def test_ok(pypto_runner, pypto_config):
    pypto_runner.check(AddCase())
    print("CONFIG", pypto_config.save_kernels, pypto_config.save_kernels_dir,
          pypto_config.dump_passes)
"""


def _config_line(result: pytest.RunResult) -> str:
    (line,) = [ln[ln.index("CONFIG") :] for ln in result.outlines if "CONFIG " in ln]
    return line


def test_save_kernels_keeps_one_directory_per_test_and_cell(cases: pytest.Pytester) -> None:
    cases.makepyfile(test_ok=OK)
    args = ("-s", "--pypto-arch=all", "--pypto-save-kernels", "--pypto-cache-dir=cc")
    result = cases.runpytest(*args)
    result.assert_outcomes(passed=2)
    kept = cases.path / "build_output"
    assert sorted(p.name for p in kept.iterdir()) == [
        kept_name("test_ok.py::test_ok[a2a3sim]"),
        kept_name("test_ok.py::test_ok[a5sim]"),
    ]
    for cell in ("a2a3sim", "a5sim"):
        entry = kept / kept_name(f"test_ok.py::test_ok[{cell}]")
        manifest = json.loads((entry / "kernel_config.json").read_text())
        assert manifest["platform"] == cell and manifest["program"] == "Add"
    a2a3 = kept / kept_name("test_ok.py::test_ok[a2a3sim]")
    assert f"CONFIG True {a2a3} False" in result.stdout.str()
    # A hit re-applies the output option: the directories come back from the cache.
    for p in sorted(kept.rglob("*"), reverse=True):
        p.rmdir() if p.is_dir() else p.unlink()
    again = cases.runpytest(*args)
    assert "2 hits, 0 misses" in again.stdout.str()
    assert (kept / kept_name("test_ok.py::test_ok[a5sim]") / "kernels" / "add.py").is_file()


def test_kernels_dir_from_ini_and_nothing_kept_by_default(cases: pytest.Pytester) -> None:
    cases.makepyfile(test_ok=OK)
    result = cases.runpytest("-s")
    result.assert_outcomes(passed=1)
    assert not (cases.path / "build_output").exists()  # passing tests keep nothing
    assert "CONFIG False None False" in result.stdout.str()
    cases.makeini("[pytest]\npypto_kernels_dir = out/k\npypto_save_kernels = 1\n")
    cases.runpytest().assert_outcomes(passed=1)
    kept = cases.path / "out" / "k" / kept_name("test_ok.py::test_ok[a2a3sim]")
    assert (kept / "orchestration.py").is_file()


def test_dump_passes_writes_each_pass(cases: pytest.Pytester) -> None:
    cases.makepyfile(test_ok=OK)
    result = cases.runpytest("-s", "--pypto-dump-passes", "--pypto-cache-dir=cc")
    result.assert_outcomes(passed=1)
    kept = cases.path / "build_output" / kept_name("test_ok.py::test_ok[a2a3sim]")
    assert _config_line(result) == f"CONFIG False {kept} True"
    passes = kept / "passes"
    names = sorted(p.name for p in passes.iterdir())
    assert len(names) >= 5
    assert all(re.fullmatch(r"\d\d_\w+\.txt", n) for n in names), names
    assert any(n.endswith("_select_entry.txt") for n in names)
    assert "program Add" in (passes / names[-1]).read_text()
    # Dumping changes the artifact, so it is its own cache entry: a plain run misses.
    plain = cases.runpytest("--pypto-cache-dir=cc")
    assert "0 hits, 1 misses" in plain.stdout.str()


def test_failing_check_keeps_inputs_expected_actual(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_bad="""
        from kcases import WrongAdd

        def test_wrong(pypto_runner):
            pypto_runner.check(WrongAdd())
        """
    )
    result = cases.runpytest("--pypto-arch=a5")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    (path,) = set(re.findall(r"artifacts kept in: (\S+)", out))
    kept = Path(path)
    assert kept == cases.path / "build_output" / kept_name("test_bad.py::test_wrong[a5sim]")
    assert json.loads((kept / "kernel_config.json").read_text())["platform"] == "a5sim"
    assert (kept / "kernels" / "add.txt").is_file()
    # Hand-computed: x = 1.5, y = 2, out = 3.5; WrongAdd's golden is off at [0, 3] and [2, 0].
    assert (np.load(kept / "inputs" / "x.npy") == 1.5).all()
    assert (np.load(kept / "inputs" / "y.npy") == 2.0).all()
    assert (np.load(kept / "actual" / "out.npy") == 3.5).all()
    expected = np.load(kept / "expected" / "out.npy")
    assert (expected[0, 3], expected[2, 0], expected[1, 1]) == (4.5, 2.5, 3.5)


def test_failing_plain_test_keeps_the_artifact_and_its_arguments(cases: pytest.Pytester) -> None:
    cases.makepyfile(
        test_plain="""
        import numpy as np
        from kcases import Add

        def test_after_run(pypto_runner):
            x = np.full((16, 64), 1.0, np.float32)
            out = np.zeros((16, 64), np.float32)
            pypto_runner.run(Add, x, x, out)
            assert (out == 3).all()   # wrong on purpose: it is 2

        def test_no_kernel(pypto_runner):
            assert False
        """
    )
    result = cases.runpytest("--pypto-kernels-dir=kept")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    kept = cases.path / "kept" / kept_name("test_plain.py::test_after_run[a2a3sim]")
    assert f"artifacts kept in: {kept}" in out
    assert "pypto artifacts" in out  # the report section
    assert (np.load(kept / "arguments" / "out.npy") == 2).all()
    assert (kept / "kernel_config.json").is_file()
    assert not (kept.parent / kept_name("test_plain.py::test_no_kernel[a2a3sim]")).exists()
