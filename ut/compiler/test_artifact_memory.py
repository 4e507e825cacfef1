# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Artifacts in memory (issue #13 item 1): a compile writes no file until asked.

A compile without ``output_dir`` keeps the manifest, generated sources (compiled
once) and listings (rendered on first use) in memory; runs build kernels from the
code objects; ``artifact_dir()``, save-kernels, pass dumps and the disk cache write
the same bytes the files always had.  Expected values are numpy references here.
"""

from __future__ import annotations

import builtins
import io
import json
import linecache
import pickle
import traceback
from dataclasses import asdict
from pathlib import Path

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler import api
from pytest_pypto.harness.cache import CompileCache
from pytest_pypto.harness.runner import Runner, copy_artifact
from pytest_pypto.ir.artifact import CompiledProgram, read_manifest
from pytest_pypto.ir.errors import SimulationError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
R, C, TR = 32, 64, 16
W = pl.dynamic("W")


line_of = line_finder(__file__)


@pl.program
class AddScale:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for r in pl.range(0, R, TR):
            t = pl.add(pl.load(x, [r, 0], [TR, C]), pl.load(y, [r, 0], [TR, C]))
            out = pl.store(pl.muls(t, 0.5), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(x, y, out)
        return out


@pl.program
class StorePastEdge:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[16, W], pl.FP32]]) -> pl.Tensor[[16, W], pl.FP32]:
        for c in pl.range(0, 2):
            t = pl.load(x, [0, c * 64], [16, 64])
            out = pl.store(t, [0, c * 64], out)  # memory-edge-store
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[16, W], pl.FP32]]) -> pl.Tensor[[16, W], pl.FP32]:
        out = self.k(x, out)
        return out


def inputs(seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((R, C)).astype(np.float32),
            rng.standard_normal((R, C)).astype(np.float32))


def reference(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """FP32 add then multiply by 0.5, each rounded to FP32 (docs/design/numerics.md)."""
    return ((x.astype(np.float64) + y).astype(np.float32).astype(np.float64) * 0.5).astype(
        np.float32)


def run_add(compiled, platform: str, seed: int = 0, **config) -> np.ndarray:
    x, y = inputs(seed)
    out = np.zeros((R, C), np.float32)
    pytest_pypto.run(compiled, x, y, out, config=RunConfig(platform=platform, **config))
    return out


def tree(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path (empty when it does not exist)."""
    if not root.exists():
        return {}
    return {p.relative_to(root).as_posix(): p.read_bytes()
            for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every file opened for reading (builtins/io open, Path.read_text/read_bytes)."""
    seen: list[str] = []
    real_open = builtins.open

    def counting_open(file, mode="r", *args, **kwargs):
        if isinstance(file, (str, Path)) and "r" in mode and "+" not in mode:
            seen.append(str(file))
        return real_open(file, mode, *args, **kwargs)

    real_text, real_bytes = Path.read_text, Path.read_bytes
    monkeypatch.setattr(builtins, "open", counting_open)
    monkeypatch.setattr(io, "open", counting_open)
    monkeypatch.setattr(Path, "read_text", lambda self, *a, **k: (seen.append(str(self)),
                                                                  real_text(self, *a, **k))[1])
    monkeypatch.setattr(Path, "read_bytes", lambda self: (seen.append(str(self)),
                                                          real_bytes(self))[1])
    return seen


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compile_and_run_write_no_file_until_artifact_dir_is_read(platform: str) -> None:
    compiled = pytest_pypto.compile(AddScale, RunConfig(platform=platform))
    home = compiled.memory.home
    root = home.parent
    before = tree(root)
    assert not home.exists() and not compiled.memory.on_disk
    x, y = inputs()
    np.testing.assert_array_equal(run_add(compiled, platform), reference(x, y))
    np.testing.assert_array_equal(run_add(compiled, platform, precise=True), reference(x, y))
    assert not home.exists()
    assert tree(root) == before  # no kernel_config.json (or anything) appeared
    assert compiled.artifact_dir() == home  # reading it writes the files, once
    assert (home / "kernel_config.json").is_file() and compiled.memory.on_disk
    assert read_manifest(home) == compiled.manifest


@pytest.mark.parametrize("platform", PLATFORMS)
def test_in_memory_and_directory_runs_give_identical_outputs(platform: str) -> None:
    compiled = pytest_pypto.compile(AddScale, RunConfig(platform=platform))
    in_memory = run_add(compiled, platform, seed=3)
    from_disk = run_add(str(compiled.artifact_dir()), platform, seed=3)
    np.testing.assert_array_equal(in_memory, reference(*inputs(3)))
    assert in_memory.tobytes() == from_disk.tobytes()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_run_time_error_of_an_in_memory_artifact_names_the_users_line(platform: str) -> None:
    compiled = pytest_pypto.compile(StorePastEdge, RunConfig(platform=platform))
    x = np.arange(16 * 128, dtype=np.float32).reshape(16, 128)
    with pytest.raises(SimulationError) as info:
        pytest_pypto.run(compiled, x, np.zeros((16, 96), np.float32),
                         config=RunConfig(platform=platform))
    err = info.value
    assert err.file == __file__ and err.line == line_of("# memory-edge-store")
    assert "tile.store writes past the end of dimension 1" in err.message
    assert "at run time, c = 1" in err.message
    # the traceback shows the generated kernel's lines, though no file was written
    kernel = str(compiled.memory.home / "kernels" / "k.py")
    frames = [f for exc in (err, err.__cause__) if exc is not None
              for f in traceback.extract_tb(exc.__traceback__) if f.filename == kernel]
    assert frames and not Path(kernel).exists()
    generated = compiled.memory.text("kernels/k.py").splitlines()
    assert frames[-1].line == generated[frames[-1].lineno - 1].strip() != ""
    assert linecache.getline(kernel, frames[-1].lineno).strip() == frames[-1].line


@pytest.mark.parametrize("platform", PLATFORMS)
def test_artifact_dir_holds_the_bytes_an_eager_compile_writes(
    platform: str, tmp_path: Path
) -> None:
    eager = pytest_pypto.compile(AddScale, RunConfig(platform=platform), output_dir=tmp_path)
    written = tree(tmp_path)  # written during compile: the files as they always were
    assert set(written) == {"kernel_config.json", "kernels/k.py", "kernels/k.txt",
                            "orchestration.py", "orchestration.txt", "debug/run.py"}
    lazy = pytest_pypto.compile(AddScale, RunConfig(platform=platform))
    assert tree(lazy.artifact_dir()) == written
    assert {k: v.encode() for k, v in eager.memory.files().items()} == written
    for listing in ("kernels/k.txt", "orchestration.txt"):  # rendered on first use
        assert lazy.memory.text(listing) == (tmp_path / listing).read_text()
    manifest = json.dumps(asdict(eager.manifest), indent=2, sort_keys=True) + "\n"
    assert written["kernel_config.json"] == manifest.encode()
    assert lazy.ir_text == eager.ir_text and lazy.ir_text.startswith("program AddScale")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_cache_hit_in_process_reads_no_file_and_reuses_the_build(
    platform: str, tmp_path: Path, reads: list[str]
) -> None:
    cache = CompileCache(tmp_path / "cache")
    first = cache.compile(AddScale, RunConfig(platform=platform))
    run_add(first, platform)
    del reads[:]
    again = cache.compile(AddScale, RunConfig(platform=platform))
    np.testing.assert_array_equal(run_add(again, platform), reference(*inputs()))
    assert again is first and (cache.hits, cache.misses) == (1, 1)
    assert reads == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_cache_hit_from_disk_reads_each_file_once(
    platform: str, tmp_path: Path, reads: list[str]
) -> None:
    root = tmp_path / "cache"
    CompileCache(root).compile(AddScale, RunConfig(platform=platform))
    del reads[:]
    fresh = CompileCache(root)  # another process's view: nothing memoized
    compiled = fresh.compile(AddScale, RunConfig(platform=platform))
    np.testing.assert_array_equal(run_add(compiled, platform), reference(*inputs()))
    artifact = [r for r in reads if "/artifact/" in r]
    assert (fresh.hits, fresh.misses) == (1, 0)
    assert sorted(artifact) == sorted(set(artifact)) and len(artifact) == 6


@pytest.mark.parametrize("platform", PLATFORMS)
def test_save_kernels_writes_every_file_straight_from_memory(
    platform: str, tmp_path: Path
) -> None:
    target = tmp_path / "saved"
    config = RunConfig(platform=platform, save_kernels_dir=str(target))
    runner = Runner(config, rng_factory=lambda: None, cache=CompileCache(None))
    compiled = runner.compile(AddScale)
    assert tree(target) == {k: v.encode() for k, v in compiled.memory.files().items()}
    assert not compiled.memory.home.exists()  # not written to a scratch dir first
    copy_artifact(compiled, tmp_path / "again")
    assert tree(tmp_path / "again") == tree(target)


def test_dump_passes_writes_the_artifact_and_the_dumps_at_compile(tmp_path: Path) -> None:
    compiled = pytest_pypto.compile(AddScale, RunConfig(platform="a5sim", dump_passes=True))
    home = compiled.memory.home
    assert compiled.memory.on_disk and (home / "kernel_config.json").is_file()
    dumps = sorted(p.name for p in (home / "passes").iterdir())
    assert len(dumps) == len(api.PASSES)
    compiled.save_to(tmp_path)
    assert sorted(p.name for p in (tmp_path / "passes").iterdir()) == dumps


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_in_memory_artifact_pickles_and_runs_after(platform: str) -> None:
    compiled = pytest_pypto.compile(AddScale, RunConfig(platform=platform))
    run_add(compiled, platform)  # code objects and built kernels exist: not pickled
    copy = pickle.loads(pickle.dumps(compiled))
    assert copy.memory.files() == compiled.memory.files() and not copy.memory.home.exists()
    assert copy.ir_text == compiled.ir_text
    np.testing.assert_array_equal(run_add(copy, platform), reference(*inputs()))


def test_a_compiled_program_needs_a_directory_or_memory() -> None:
    with pytest.raises(TypeError, match="an artifact directory or an in-memory artifact"):
        CompiledProgram()
