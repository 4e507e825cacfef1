"""The compile cache in-process: what is in the key, output-only options re-applied on
a hit, compile warnings replayed, lost publication races."""

from __future__ import annotations

import dataclasses
import os
import warnings
from pathlib import Path

import pytest

import pytest_pypto.compiler.api as api
import pytest_pypto.harness.cache as cache_module
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.cache import CompileCache, cache_key
from pytest_pypto.harness.cases import TensorSpec
from pytest_pypto.harness.runner import Runner
from pytest_pypto.harness.toolchain import digest_of
from pytest_pypto.ir.dtypes import FP16, FP32
from st.kernels import add_program as tiled_add_program


def add_program(R: int, C: int):  # noqa: N803  (kernel shape names)
    """The system tests' add kernel as one [R, C] tile (st/kernels.py defines it once)."""
    return tiled_add_program(R, C, R)


ADD = add_program(16, 64)
A2 = RunConfig(platform="a2a3sim")


def _runner(config: RunConfig, cache: CompileCache) -> Runner:
    return Runner(config, rng_factory=lambda: None, cache=cache)


def test_key_changes_with_program_arch_mode_and_dump_passes() -> None:
    base = cache_key(ADD, A2)
    assert cache_key(ADD, A2) == base  # deterministic
    assert cache_key(add_program(16, 64), A2) == base  # same source, same IR, same place
    changed = {
        "shape": cache_key(add_program(16, 128), A2),
        "rows": cache_key(add_program(32, 64), A2),
        "arch": cache_key(ADD, RunConfig(platform="a5sim")),
        "mode": cache_key(ADD, RunConfig(platform="a2a3")),
        "dump_passes": cache_key(ADD, dataclasses.replace(A2, dump_passes=True)),
        "batch_loops": cache_key(ADD, A2, batch_loops=False),
        "specs": cache_key(ADD, A2, specs=[TensorSpec("x", [16, 64], FP32)]),
        "spec dtype": cache_key(ADD, A2, specs=[TensorSpec("x", [16, 64], FP16)]),
    }
    assert base not in changed.values()
    assert len(set(changed.values())) == len(changed)


def test_key_follows_the_toolchains_sources(monkeypatch: pytest.MonkeyPatch) -> None:
    """Same version string, another compiler (an editable install edited, a newer build):
    another key, so the older compiler's artifact is not served."""
    base = cache_key(ADD, A2)
    monkeypatch.setattr(cache_module, "toolchain_digest", lambda: "another compiler")
    assert cache_key(ADD, A2) != base


def _tree(root: Path) -> Path:
    package = root / "pkg"
    for rel in ("_version.py", "arch.py", "config.py", "language/parser.py", "ir/ops/add.py",
                "compiler/codegen.py", "runtime/graph.py", "plugin/options.py"):
        (package / rel).parent.mkdir(parents=True, exist_ok=True)
        (package / rel).write_text(f"# {rel}\n")
    return package


@pytest.mark.parametrize("edited", ["arch.py", "language/parser.py", "ir/ops/add.py",
                                    "compiler/codegen.py", "_version.py"])
def test_the_toolchain_digest_covers_what_makes_and_runs_generated_code(
    tmp_path: Path, edited: str
) -> None:
    package = _tree(tmp_path)
    before = digest_of(package)
    assert digest_of(package) == before  # deterministic
    (package / edited).write_text("# changed\n")
    assert digest_of(package) != before
    (package / edited).write_text(f"# {edited}\n")
    assert digest_of(package) == before
    (package / "compiler" / "new_pass.py").write_text("# a new module\n")
    assert digest_of(package) != before


def test_the_toolchain_digest_ignores_the_runtime_and_the_plugin(tmp_path: Path) -> None:
    package = _tree(tmp_path)
    before = digest_of(package)
    (package / "runtime" / "graph.py").write_text("# changed\n")  # reads artifacts only
    (package / "plugin" / "options.py").write_text("# changed\n")
    assert digest_of(package) == before


def test_key_ignores_output_only_options() -> None:
    base = cache_key(ADD, A2)
    for change in (
        {"save_kernels_dir": "/somewhere"},
        {"save_kernels": True},
        {"seed": 7},
        {"rtol": 0.1, "atol": 0.1},
        {"strict_war": True},
    ):
        assert cache_key(ADD, dataclasses.replace(A2, **change)) == base, change


def test_key_follows_the_batch_loops_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYPTO_BATCH_LOOPS", "0")
    assert cache_key(ADD, A2) == cache_key(ADD, A2, batch_loops=False)
    assert cache_key(ADD, A2) != cache_key(ADD, A2, batch_loops=True)


@pytest.mark.parametrize("value", [None, "", "1", "yes", "0", "false", " OFF ", "No", "2"])
def test_key_reads_the_batch_loops_environment_as_the_compiler_does(
    monkeypatch: pytest.MonkeyPatch, value: str | None
) -> None:
    from pytest_pypto.compiler import batching

    if value is None:
        monkeypatch.delenv(batching.ENV_VAR, raising=False)
    else:
        monkeypatch.setenv(batching.ENV_VAR, value)
    on = batching.enabled_by_env()
    assert on == (value is None or value.strip().lower() not in ("0", "false", "off", "no"))
    assert cache_key(ADD, A2) == cache_key(ADD, A2, batch_loops=on)


HIT_SCRIPT = """
import sys
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.cache import CompileCache


@pl.program
class Copy:
    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[8, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        out = pl.store(pl.load(x, [0, 0], [8, 16]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        out = self.copy(x, out)
        return out


cache = CompileCache(__import__("pathlib").Path(sys.argv[1]))
cache.compile(Copy, RunConfig(platform="a2a3sim"))
print(cache.hits, cache.misses, "pytest_pypto.compiler" in sys.modules)
"""


def test_a_hit_does_not_import_the_compiler(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import runpy
    import subprocess
    import sys

    script = tmp_path / "hit.py"
    script.write_text(HIT_SCRIPT)
    argv = [str(script), str(tmp_path / "cache")]
    # The miss fills the cache and may run here; the hit needs an interpreter that has
    # imported nothing yet.
    with monkeypatch.context() as m:
        m.setattr(sys, "argv", argv)
        runpy.run_path(str(script), run_name="__main__")
    miss = capsys.readouterr().out.split()
    hit = subprocess.run(
        [sys.executable, *argv], capture_output=True, text=True, check=True
    ).stdout.split()
    assert [miss, hit] == [["0", "1", "True"], ["1", "0", "False"]]


def test_two_save_dirs_both_get_the_artifact(tmp_path: Path) -> None:
    cache = CompileCache(tmp_path / "cache")
    first, second = tmp_path / "one", tmp_path / "two"
    a = _runner(dataclasses.replace(A2, save_kernels_dir=str(first)), cache).compile(ADD)
    b = _runner(dataclasses.replace(A2, save_kernels_dir=str(second)), cache).compile(ADD)
    assert (cache.hits, cache.misses) == (1, 1)  # the second compile was a hit
    assert a.artifact_dir() == b.artifact_dir()
    for target in (first, second):
        assert (target / "kernel_config.json").read_bytes() == (
            a.artifact_dir() / "kernel_config.json"
        ).read_bytes()
        assert (target / "kernels" / "add.py").is_file()
        assert (target / "orchestration.txt").is_file()


def test_a_fresh_process_view_hits_the_published_entry(tmp_path: Path) -> None:
    """A second CompileCache on the same root (another worker) reads, never compiles."""
    CompileCache(tmp_path).compile(ADD, A2)
    other = CompileCache(tmp_path)
    compiled = other.compile(ADD, A2)
    assert (other.hits, other.misses) == (1, 0)
    assert compiled.manifest.platform == "a2a3sim" and compiled.ir_text.startswith("program Add")


def test_compile_warnings_are_replayed_on_a_hit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = api.compile

    def warning_compile(program, config, **kw):
        warnings.warn_explicit("combo not validated", UserWarning, "kernel.py", 12)
        return real(program, config, **kw)

    monkeypatch.setattr(api, "compile", warning_compile)
    for cache in (CompileCache(tmp_path), CompileCache(tmp_path), CompileCache(tmp_path)):
        with pytest.warns(UserWarning, match="combo not validated") as record:
            cache.compile(ADD, A2)
            cache.compile(ADD, A2)  # in-process memo hit: replayed too
        assert [(w.filename, w.lineno) for w in record] == [("kernel.py", 12)] * 2


def test_losing_the_publication_race_uses_the_winner(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker publishes the entry while we compile: ours is dropped, theirs used."""
    winner = CompileCache(tmp_path / "w")
    published = winner.compile(ADD, A2).artifact_dir().parent
    real = api.compile
    loser = CompileCache(tmp_path)

    def racing_compile(program, config, *, output_dir, **kw):
        out = real(program, config, output_dir=output_dir, **kw)
        key = cache_key(program, config)
        os.rename(published, tmp_path / key)  # the winner lands first
        return out

    monkeypatch.setattr(api, "compile", racing_compile)
    compiled = loser.compile(ADD, A2)
    assert compiled.artifact_dir() == tmp_path / cache_key(ADD, A2) / "artifact"
    assert (compiled.artifact_dir() / "kernel_config.json").is_file()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".tmp-")] == []


def test_disabled_cache_compiles_every_time(tmp_path: Path) -> None:
    cache = CompileCache(None)
    a, b = cache.compile(ADD, A2), cache.compile(ADD, A2)
    assert a.artifact_dir() != b.artifact_dir() and (cache.hits, cache.misses) == (0, 2)


def test_onboard_lease_is_held_only_while_the_kernel_executes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """docs/design/runtime.md §10: compiling happens outside the device lease, execute inside it."""
    import contextlib

    from pytest_pypto.runtime import registry

    events: list[str] = []
    held = False

    @contextlib.contextmanager
    def lease():
        nonlocal held
        events.append("lease")
        held = True
        yield 5
        held = False
        events.append("release")

    real_compile = api.compile

    def compile_outside(program, config, **kw):
        events.append(f"compile (lease held: {held})")
        return real_compile(program, config, **kw)

    class Npu:  # an onboard runtime recording where it executes
        name, version, platforms = "npu", "1.0", ("a2a3",)

        def execute(self, compiled, arrays, *, config, outputs_in=False, device=None):
            assert device == config.device_id
            events.append(f"dispatch on device {device} (lease held: {held})")

        def close(self):
            pass

    class Entry:
        name, value = "npu", "test:Npu"

        def load(self):
            return Npu

    monkeypatch.setattr(api, "compile", compile_outside)
    monkeypatch.setattr(registry, "_default", registry.Registry([Entry()]))
    onboard = RunConfig(platform="a2a3")
    runner = Runner(onboard, rng_factory=lambda: None, cache=CompileCache(tmp_path), lease=lease)
    runner.run(ADD)
    assert events == [
        "compile (lease held: False)",
        "lease",
        "dispatch on device 5 (lease held: True)",
        "release",
    ]
    events.clear()
    # A test holding pypto_device already has its device: no second lease.
    pinned = Runner(dataclasses.replace(onboard, device_id=2), rng_factory=lambda: None, lease=lease)
    pinned.run(pinned.compile(ADD))
    assert events == ["compile (lease held: False)", "dispatch on device 2 (lease held: False)"]
