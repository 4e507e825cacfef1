"""The compile cache seen from pytest: compiles counted per run, xdist, corruption,
an unwritable directory, --pypto-no-cache and the terminal summary."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

# Counts real compiles: every call of the compiler appends "<program> <platform>" to
# the file named by COMPILE_LOG (one short O_APPEND write per line: safe across workers).
CONFTEST = """
import os
import pytest_pypto.compiler.api as api

_real = api.compile

def _counting(program, config, **kw):
    with open(os.environ["COMPILE_LOG"], "a") as fh:
        fh.write(f"{program.name} {config.platform}\\n")
    return _real(program, config, **kw)

def pytest_configure(config):
    api.compile = _counting

def pytest_unconfigure(config):  # in-process runs share the module: put it back
    api.compile = _real
"""

# Two distinct kernels (same source, different shapes), three tests each.
TESTS = """
import numpy as np
from kcases import AddCase, R, C
from kshapes import add_program


class Wide(AddCase):
    def get_program(self):
        return add_program(R, 2 * C)

    def define_tensors(self):
        from pytest_pypto.harness import DataType, TensorSpec
        return [
            TensorSpec("x", [R, 2 * C], DataType.FP32, init_value=1.0),
            TensorSpec("y", [R, 2 * C], DataType.FP32, init_value=2.0),
            TensorSpec("out", [R, 2 * C], DataType.FP32, is_output=True),
        ]


def test_a1(pypto_runner): pypto_runner.check(AddCase())
def test_a2(pypto_runner): pypto_runner.check(AddCase())
def test_a3(pypto_runner): pypto_runner.check(AddCase())
def test_w1(pypto_runner): assert (pypto_runner.check(Wide()).outputs["out"] == 3).all()
def test_w2(pypto_runner): pypto_runner.check(Wide())
def test_w3(pypto_runner): pypto_runner.check(Wide())
"""

SHAPES = """
import pytest_pypto.language as pl


def add_program(R, C):
    @pl.program
    class AddRC:
        @pl.function(type=pl.FunctionType.InCore)
        def add(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C])
            out = pl.store(pl.add(a, b), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.add(x, y, out)
            return out
    return AddRC
"""

SUMMARY = re.compile(r"pypto compile cache: (\d+) hits, (\d+) misses")


@pytest.fixture
def suite(cases: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    cases.makeconftest(CONFTEST)
    cases.makepyfile(kshapes=SHAPES, test_k=TESTS)
    monkeypatch.setenv("COMPILE_LOG", str(cases.path / "compiles.log"))
    return cases


def _compiles(p: pytest.Pytester) -> list[str]:
    log = p.path / "compiles.log"
    lines = log.read_text().splitlines() if log.exists() else []
    log.unlink(missing_ok=True)
    return sorted(lines)


def _counts(result: pytest.RunResult) -> tuple[int, int]:
    (found,) = SUMMARY.findall(result.stdout.str())
    return int(found[0]), int(found[1])


def _entries(cache: Path) -> list[Path]:
    return sorted(p for p in cache.iterdir() if not p.name.startswith("."))


def test_each_kernel_compiled_once_under_xdist(suite: pytest.Pytester) -> None:
    args = ("--pypto-arch=all", "--pypto-cache-dir=cc", "-n", "2", "-p", "xdist")
    cold = suite.runpytest(*args)
    cold.assert_outcomes(passed=12)
    # 2 kernels x 2 cells, each compiled exactly once although 2 workers ran 12 tests.
    assert _compiles(suite) == ["Add a2a3sim", "Add a5sim", "AddRC a2a3sim", "AddRC a5sim"]
    assert len(_entries(suite.path / "cc")) == 4
    assert _counts(cold) == (8, 4)
    warm = suite.runpytest(*args)
    warm.assert_outcomes(passed=12)
    assert _compiles(suite) == []
    assert _counts(warm) == (12, 0)


def test_compile_log_names_each_kernel_once(suite: pytest.Pytester) -> None:
    suite.runpytest("--pypto-arch=all", "--pypto-cache-dir=cc").assert_outcomes(passed=12)
    assert _compiles(suite) == ["Add a2a3sim", "Add a5sim", "AddRC a2a3sim", "AddRC a5sim"]


CORRUPTIONS = {
    "garbage manifest": lambda e: (e / "artifact" / "kernel_config.json").write_text("{nope"),
    "manifest gone": lambda e: (e / "artifact" / "kernel_config.json").unlink(),
    "kernel gone": lambda e: (e / "artifact" / "kernels" / "add.py").unlink(),
    "kernel edited": lambda e: (e / "artifact" / "kernels" / "add.py").write_text(
        (e / "artifact" / "kernels" / "add.py").read_text() + "\nraise SystemExit\n"
    ),
    "checksums garbled": lambda e: (e / "entry.json").write_text(
        json.dumps({**json.loads((e / "entry.json").read_text()), "checksums": {"x": "0"}})
    ),
}


@pytest.mark.parametrize("corrupt", CORRUPTIONS.values(), ids=CORRUPTIONS.keys())
def test_corrupt_entry_is_rebuilt(suite: pytest.Pytester, corrupt) -> None:
    args = ("test_k.py::test_a1", "--pypto-cache-dir=cc")
    suite.runpytest(*args).assert_outcomes(passed=1)
    assert _compiles(suite) == ["Add a2a3sim"]
    (entry,) = _entries(suite.path / "cc")
    corrupt(entry)
    again = suite.runpytest(*args)
    again.assert_outcomes(passed=1)
    assert _counts(again) == (0, 1)
    assert _compiles(suite) == ["Add a2a3sim"]  # rebuilt
    third = suite.runpytest(*args)
    assert _counts(third) == (1, 0)  # and the rebuilt entry is whole
    assert _compiles(suite) == []


def test_unwritable_cache_dir_warns_once_and_tests_pass(suite: pytest.Pytester) -> None:
    # The default location (in pytest's cache dir) cannot be written: a warning, no cache.
    # An explicit --pypto-cache-dir that cannot be written is a usage error
    # (ut/plugin/test_plugin_paths.py).
    (suite.path / "afile").write_text("a regular file: nothing can be created under it\n")
    result = suite.runpytest(
        "--pypto-arch=all", "-o", "cache_dir=afile/sub", "-n", "2", "-p", "xdist"
    )
    result.assert_outcomes(passed=12)
    out = result.stdout.str()
    assert out.count("pypto compile cache turned off") == 1, out
    assert "afile/sub/d/pypto-compile is not writable" in out
    assert _counts(result) == (0, 12)
    assert len(_compiles(suite)) == 12  # no cache: every test compiles


def test_no_cache_writes_no_entries(suite: pytest.Pytester) -> None:
    result = suite.runpytest("--pypto-no-cache", "--pypto-cache-dir=cc")
    result.assert_outcomes(passed=6)
    assert not (suite.path / "cc").exists() or _entries(suite.path / "cc") == []
    assert _counts(result) == (0, 6)
    assert "off (--pypto-no-cache)" in result.stdout.str()
    assert "pytest-pypto compile cache: off" in result.stdout.str()  # the header


def test_default_cache_lives_in_pytests_cache_dir(suite: pytest.Pytester) -> None:
    first = suite.runpytest("test_k.py::test_a1")
    assert _counts(first) == (0, 1)
    root = suite.path / ".pytest_cache" / "d" / "pypto-compile"
    assert len(_entries(root)) == 1
    assert f"pytest-pypto compile cache: {root}" in first.stdout.str()
    assert _counts(suite.runpytest("test_k.py::test_a1")) == (1, 0)


def test_env_mirror_of_no_cache(suite: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_NO_CACHE", "1")
    result = suite.runpytest("test_k.py::test_a1", "--pypto-cache-dir=cc")
    assert _counts(result) == (0, 1)
    assert not (suite.path / "cc").exists() or _entries(suite.path / "cc") == []
