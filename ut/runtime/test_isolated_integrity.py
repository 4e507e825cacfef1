"""The isolated child runs exactly the code the parent verified (issue 26 item 1).

The parent verifies a compile-cache entry (checksums of every file) and hands the
child the artifact's texts: a cache file edited on disk after the verification is
never what runs, nor is a deleted entry a failure.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytest_pypto.compiler.api as api
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.cache import CompileCache, cache_key
from pytest_pypto.harness.runner import Runner
from pytest_pypto.runtime import isolated as isolated_module
from pytest_pypto.runtime import registry
from pytest_pypto.runtime.isolated import IsolatedRuntime
from ut.harness.test_cache_faults import A2, ADD, SUB, C, R, X, Y


@pytest.fixture
def isolated() -> Any:
    rt = IsolatedRuntime()
    yield rt
    rt.close()


def _run_isolated(rt: IsolatedRuntime, compiled: Any) -> np.ndarray:
    out = np.zeros((R, C), np.float32)
    rt.execute(compiled, (X, Y, out), config=A2)
    return out


def _sub_kernel_text() -> str:
    return api.compile(SUB, A2, write=False).memory.text("kernels/k.py")


@pytest.mark.parametrize("served", ["miss", "hit"])
def test_a_cache_file_edited_after_verification_is_not_what_the_child_runs(
    tmp_path: Path, isolated: IsolatedRuntime, served: str
) -> None:
    root = tmp_path / "cache"
    if served == "hit":  # an earlier session wrote the entry; this one verifies it
        CompileCache(root).compile(ADD, A2)
    cache = CompileCache(root)
    compiled = cache.compile(ADD, A2)
    assert (cache.hits, cache.misses) == ((1, 0) if served == "hit" else (0, 1))
    kernel = root / cache_key(ADD, A2) / "artifact" / "kernels" / "k.py"
    assert "'tile.add'" in kernel.read_text()  # sanity: the file is the add kernel
    kernel.write_text(_sub_kernel_text())  # tampered on disk: x - y
    np.testing.assert_array_equal(_run_isolated(isolated, compiled), X + Y)


def test_the_same_child_sees_a_second_edit_neither(
    tmp_path: Path, isolated: IsolatedRuntime
) -> None:
    root = tmp_path / "cache"
    compiled = CompileCache(root).compile(ADD, A2)
    np.testing.assert_array_equal(_run_isolated(isolated, compiled), X + Y)
    kernel = root / cache_key(ADD, A2) / "artifact" / "kernels" / "k.py"
    kernel.write_text(_sub_kernel_text())
    (kernel.parent.parent / "kernel_config.json").touch()  # a new mtime: a reload
    np.testing.assert_array_equal(_run_isolated(isolated, compiled), X + Y)


def test_a_compiled_program_whose_entry_was_deleted_still_runs_isolated(
    tmp_path: Path, isolated: IsolatedRuntime
) -> None:
    root = tmp_path / "cache"
    compiled = CompileCache(root).compile(ADD, A2)
    shutil.rmtree(root / cache_key(ADD, A2))
    np.testing.assert_array_equal(_run_isolated(isolated, compiled), X + Y)


def test_an_entry_deleted_mid_session_still_runs_isolated(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    cache = CompileCache(root)
    runner = Runner(RunConfig(platform="a2a3sim", runtime="isolated"), rng_factory=lambda: None,
                    cache=cache)
    try:
        out = np.zeros((R, C), np.float32)
        runner.run(ADD, X, Y, out)
        np.testing.assert_array_equal(out, X + Y)
        shutil.rmtree(root / cache_key(ADD, A2))
        out = np.zeros((R, C), np.float32)
        runner.run(ADD, X, Y, out)
        np.testing.assert_array_equal(out, X + Y)
    finally:
        registry.close_all()


def test_a_child_forgets_the_oldest_artifacts_and_is_handed_them_again(
    isolated: IsolatedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(isolated_module, "HANDED_MAX", 1)
    add = api.compile(ADD, A2, write=False)
    sub = api.compile(SUB, A2, write=False)
    for compiled, want in ((add, X + Y), (sub, X - Y), (add, X + Y), (add, X + Y), (sub, X - Y)):
        np.testing.assert_array_equal(_run_isolated(isolated, compiled), want)
        assert len(isolated._child.handed) == 1
    assert isolated.children_started == 1
    assert not add.memory.on_disk  # the child was handed texts: nothing was written


SESSION = """
import shutil
from pathlib import Path

import numpy as np
import pytest
import pytest_pypto.language as pl

R, C = 16, 64


@pl.program
class Add:
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


COMPILED = []  # compiled once, run by later tests (as a module-scoped fixture would)


@pytest.mark.parametrize("step", ["run", "delete the cache entries", "run again"])
def test_step(pypto_runner, step):
    if not COMPILED:
        COMPILED.append(pypto_runner.compile(Add))
    if step.startswith("delete"):
        for entry in Path("cc").iterdir():
            if not entry.name.startswith("."):
                shutil.rmtree(entry)
    x = np.full((R, C), 1.5, np.float32)
    y = np.full((R, C), 2.0, np.float32)
    for program in (COMPILED[0], Add):
        out = np.zeros((R, C), np.float32)
        pypto_runner.run(program, x, y, out)
        np.testing.assert_array_equal(out, x + y)
"""


def test_a_session_under_isolate_survives_its_cache_entries_being_deleted(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_steps=SESSION)
    result = pytester.runpytest("--pypto-isolate", "--pypto-cache-dir=cc", "-p", "no:randomly")
    result.assert_outcomes(passed=3)
