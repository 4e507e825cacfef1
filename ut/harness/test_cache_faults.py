"""The compile cache under fault injection: an entry filed under another key, or damaged
in a way that still parses, is never served; it is rebuilt, counted as a miss and as a
damaged entry, and the test gets the right result."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytest_pypto.compiler.api as api
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.cache import CompileCache, cache_key
from pytest_pypto.harness.runner import Runner
from pytest_pypto.runtime import loader

R, C = 16, 64
A2 = RunConfig(platform="a2a3sim")


def binary_program(op: Any) -> Any:
    """out = op(x, y): programs of one name, signature and source, differing only in op."""

    @pl.program
    class Binary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C])
            out = pl.store(op(a, b), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    return Binary


ADD = binary_program(pl.add)
SUB = binary_program(pl.sub)
X = (np.arange(R * C, dtype=np.float32).reshape(R, C) / 8).astype(np.float32)
Y = np.full((R, C), 2.5, np.float32)
WANT = {"add": X + Y, "sub": X - Y}


def _result(cache: CompileCache, program: Any) -> np.ndarray:
    out = np.zeros((R, C), np.float32)
    Runner(A2, rng_factory=lambda: None, cache=cache).run(program, X, Y, out)
    return out


def _next_run(root: Path) -> CompileCache:
    """The next session's view of ``root``: a new CompileCache, and a simulator that has
    built no kernel yet (it reuses what it built from the same path and manifest bytes,
    which would hide a wrong entry in one process)."""
    loader.clear_cache()
    return CompileCache(root)


def _counts(cache: CompileCache) -> tuple[int, int, int]:
    return cache.hits, cache.misses, cache.damaged


def _snapshot(entry: Path) -> dict[str, bytes]:
    return {
        p.relative_to(entry).as_posix(): p.read_bytes() for p in entry.rglob("*") if p.is_file()
    }


def _load(path: Path) -> Any:
    return json.loads(path.read_text())


def _edit_entry(entry: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    record = _load(entry / "entry.json")
    edit(record)
    (entry / "entry.json").write_text(json.dumps(record))


def _rewrite(entry: Path, rel: str, data: bytes | None, *, rehash: bool = True) -> None:
    """Replace (None: delete) ``artifact/<rel>``; with ``rehash`` the entry's checksums
    follow, so the damage passes the checksum test and a later check must catch it."""
    import hashlib

    path = entry / "artifact" / rel
    if data is None:
        path.unlink()
    else:
        path.write_bytes(data)
    if rehash:
        def fix(record: dict[str, Any]) -> None:
            if data is None:
                del record["checksums"][rel]
            else:
                record["checksums"][rel] = hashlib.sha256(data).hexdigest()

        _edit_entry(entry, fix)


def _edit_manifest(entry: Path, edit: Callable[[dict[str, Any]], Any]) -> None:
    raw = _load(entry / "artifact" / "kernel_config.json")
    edit(raw)
    _rewrite(entry, "kernel_config.json", json.dumps(raw).encode())


DEEP = b"[" * 100_000 + b"]" * 100_000


def _set(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d.__setitem__(key, value)


def _set_input(key: str, value: Any) -> Callable[[dict[str, Any]], None]:
    return lambda d: d["inputs"].__setitem__(key, value)


def _half(entry: Path, rel: str) -> bytes:
    data = (entry / rel).read_bytes()
    return data[: len(data) // 2]


def _to_file(entry: Path) -> None:
    import shutil

    shutil.rmtree(entry)
    entry.write_text("not an entry directory\n")


GOOD_WARNING = {"category": "builtins.UserWarning", "message": "m", "filename": "k.py", "lineno": 3}
NULL_FILENAME = {**GOOD_WARNING, "filename": None}

# name -> (damage applied to the entry directory, what the rejection must say)
DAMAGES: dict[str, tuple[Callable[[Path], Any], str]] = {
    "deeply nested entry.json": (
        lambda e: (e / "entry.json").write_bytes(DEEP), "nested too deep"),
    "deeply nested manifest": (
        lambda e: _rewrite(e, "kernel_config.json", DEEP), "nested too deep"),
    "manifest nested past the depth limit": (
        lambda e: _edit_manifest(e, _set("extra", {"x": json.loads("[" * 80 + "]" * 80)})),
        "nested deeper than 64"),
    "warning record with filename null": (
        lambda e: _edit_entry(e, _set("warnings", [NULL_FILENAME])), "warnings[0].filename"),
    "warning record with lineno a string": (
        lambda e: _edit_entry(e, _set("warnings", [{**GOOD_WARNING, "lineno": "3"}])),
        "warnings[0].lineno"),
    "warning record not an object": (
        lambda e: _edit_entry(e, _set("warnings", ["boo"])), "warnings[0]"),
    "truncated entry.json": (
        lambda e: (e / "entry.json").write_bytes(_half(e, "entry.json")), "not valid JSON"),
    "truncated manifest": (
        lambda e: _rewrite(e, "kernel_config.json", _half(e, "artifact/kernel_config.json")),
        "not valid JSON"),
    "truncated kernel source": (
        lambda e: _rewrite(e, "kernels/k.py", _half(e, "artifact/kernels/k.py"), rehash=False),
        "artifact files changed"),
    "manifest field of the wrong type": (
        lambda e: _edit_manifest(e, lambda m: m["kernels"][0].update(func_id="0")),
        "kernels[0].func_id"),
    "manifest returns a parameter it lacks": (
        lambda e: _edit_manifest(e, _set("entry_returns", [7])), "position 7"),
    "manifest is a list": (
        lambda e: _rewrite(e, "kernel_config.json", b"[1, 2]"), "not an object"),
    "entry checksums of the wrong type": (
        lambda e: _edit_entry(e, _set("checksums", ["kernels/k.py"])), "'checksums'"),
    "entry ir_text of the wrong type": (
        lambda e: _edit_entry(e, _set("ir_text", 5)), "'ir_text'"),
    "entry format of the wrong type": (
        lambda e: _edit_entry(e, _set("format", "2")), "format"),
    "entry of the previous format": (lambda e: _edit_entry(e, _set("format", 1)), "format 1"),
    "missing generated code": (
        lambda e: _rewrite(e, "kernels/k.py", None), "manifest lists 'kernels/k.py'"),
    "missing generated code, checksums stale": (
        lambda e: _rewrite(e, "kernels/k.py", None, rehash=False), "artifact files changed"),
    "manifest lists a file outside the artifact": (
        lambda e: _edit_manifest(e, lambda m: m["kernels"][0].update(source="../entry.json")),
        "manifest lists '../entry.json'"),
    "garbage bytes in the generated code": (
        lambda e: _rewrite(e, "kernels/k.py", b"\x00\xff\xfe garbage", rehash=False),
        "artifact files changed"),
    "garbage bytes in the generated code, checksums updated": (
        lambda e: _rewrite(e, "kernels/k.py", b"def make(\x00\xff\xfe garbage"), "unreadable"),
    "generated code without make()": (
        lambda e: _rewrite(e, "orchestration.py", b"x = 1\n"), "defines no make()"),
    "recorded platform disagrees": (
        lambda e: _edit_entry(e, _set_input("platform", "a5sim")), "recorded platform"),
    "manifest platform disagrees": (
        lambda e: _edit_manifest(e, _set("platform", "a5sim")), "manifest platform"),
    "stale recorded toolchain version": (
        lambda e: _edit_entry(e, _set_input("version", "0.0.1")), "recorded version"),
    "stale manifest toolchain version": (
        lambda e: _edit_manifest(e, _set("toolchain_version", "0.0.1")), "toolchain version"),
    "recorded IR text disagrees": (
        lambda e: _edit_entry(e, _set_input("ir", "program Other")), "recorded ir"),
    "recorded key disagrees": (lambda e: _edit_entry(e, _set("key", "0" * 64)), "another key"),
    "entry directory is a file": (_to_file, "unreadable"),
}


@pytest.fixture
def populated(tmp_path: Path) -> tuple[Path, Path, dict[str, bytes]]:
    """A cache root holding ADD's entry (right results), the entry and its files."""
    root = tmp_path / "cache"
    cache = _next_run(root)
    np.testing.assert_array_equal(_result(cache, ADD), WANT["add"])
    entry = root / cache_key(ADD, A2)
    return root, entry, _snapshot(entry)


@pytest.mark.parametrize("name", DAMAGES)
def test_a_damaged_entry_is_rebuilt(
    populated: tuple[Path, Path, dict[str, bytes]], name: str
) -> None:
    root, entry, pristine = populated
    damage, why = DAMAGES[name]
    damage(entry)
    assert not entry.is_dir() or _snapshot(entry) != pristine  # the damage landed
    cache = _next_run(root)
    np.testing.assert_array_equal(_result(cache, ADD), WANT["add"])
    assert _counts(cache) == (0, 1, 1)  # a miss, and a damaged entry
    ((key, reason),) = cache.rebuilt
    assert key == entry.name and why in reason, reason
    assert _snapshot(entry) == pristine  # rewritten: exactly what a fresh compile writes
    again = _next_run(root)
    np.testing.assert_array_equal(_result(again, ADD), WANT["add"])
    assert _counts(again) == (1, 0, 0)  # and the rebuilt entry is whole


def _swap(a: Path, b: Path) -> None:
    aside = a.with_name(a.name + ".aside")
    os.rename(a, aside)
    os.rename(b, a)
    os.rename(aside, b)


def test_swapped_entries_are_rebuilt_with_the_right_results(tmp_path: Path) -> None:
    """Two programs differing only in their math: each entry filed under the other's key."""
    root = tmp_path / "cache"
    first = _next_run(root)
    for name, program in (("add", ADD), ("sub", SUB)):
        np.testing.assert_array_equal(_result(first, program), WANT[name])
    add, sub = root / cache_key(ADD, A2), root / cache_key(SUB, A2)
    pristine = {add: _snapshot(add), sub: _snapshot(sub)}
    # the worst case: the manifests are equal bytes, only the kernel code differs
    assert pristine[add]["artifact/kernel_config.json"] == pristine[sub]["artifact/kernel_config.json"]
    _swap(add, sub)
    assert _snapshot(add) == pristine[sub]
    swapped = _next_run(root)
    for name, program in (("add", ADD), ("sub", SUB)):
        np.testing.assert_array_equal(_result(swapped, program), WANT[name])
    assert _counts(swapped) == (0, 2, 2)
    assert sorted(key for key, _ in swapped.rebuilt) == sorted([add.name, sub.name])
    assert all("filed under another key" in why for _, why in swapped.rebuilt)
    assert _snapshot(add) == pristine[add] and _snapshot(sub) == pristine[sub]
    third = _next_run(root)
    for name, program in (("add", ADD), ("sub", SUB)):
        np.testing.assert_array_equal(_result(third, program), WANT[name])
    assert _counts(third) == (2, 0, 0)


def test_an_entry_swapped_under_a_running_session_is_not_served_from_its_memo(
    tmp_path: Path,
) -> None:
    """The process memo of verified entries notices the directory is another one now."""
    cache = CompileCache(tmp_path)
    add = cache.compile(ADD, A2).artifact_dir().parent
    sub = cache.compile(SUB, A2).artifact_dir().parent
    _swap(add, sub)
    loader.clear_cache()
    for name, program in (("add", ADD), ("sub", SUB)):
        np.testing.assert_array_equal(_result(cache, program), WANT[name])
    assert _counts(cache) == (0, 4, 2)
    assert cache.compile(ADD, A2).artifact_dir() == add / "artifact"  # now a memo hit
    assert _counts(cache) == (1, 4, 2)


def test_a_compile_error_while_rebuilding_is_the_users(
    populated: tuple[Path, Path, dict[str, bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Only reading an entry is guarded: the rebuild's compile error reaches the test."""
    root, entry, _ = populated
    (entry / "entry.json").write_bytes(DEEP)

    def failing(program: Any, config: Any, **kw: Any) -> Any:
        raise ZeroDivisionError("the compiler's own error")

    monkeypatch.setattr(api, "compile", failing)
    cache = _next_run(root)
    with pytest.raises(ZeroDivisionError, match="the compiler's own error"):
        cache.compile(ADD, A2)
    assert cache.enabled and _counts(cache) == (0, 1, 1)
    assert not entry.exists()  # the damaged entry is gone; nothing half-built replaced it
    assert [p.name for p in root.iterdir() if p.name.startswith((".tmp-", ".trash-"))] == []


def test_a_damaged_entry_published_during_the_compile_is_replaced(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Losing the publication race to a damaged entry: ours replaces it."""
    root = tmp_path / "cache"
    donor = CompileCache(tmp_path / "donor").compile(SUB, A2).artifact_dir().parent
    real = api.compile

    def racing(program: Any, config: Any, **kw: Any) -> Any:
        out = real(program, config, **kw)
        os.rename(donor, root / cache_key(ADD, A2))  # SUB's entry lands under ADD's key
        return out

    monkeypatch.setattr(api, "compile", racing)
    cache = _next_run(root)
    np.testing.assert_array_equal(_result(cache, ADD), WANT["add"])
    assert _counts(cache) == (0, 1, 1) and "another key" in cache.rebuilt[0][1]
    monkeypatch.setattr(api, "compile", real)
    check = _next_run(root)
    np.testing.assert_array_equal(_result(check, ADD), WANT["add"])
    assert _counts(check) == (1, 0, 0)


# A pytester session: two same-signature programs, three tests each on both cells.
SESSION_TESTS = """
import numpy as np
import pytest
import pytest_pypto.language as pl

R, C = 16, 64


def binary_program(op):
    @pl.program
    class Binary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
              out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            a = pl.load(x, [0, 0], [R, C])
            b = pl.load(y, [0, 0], [R, C])
            out = pl.store(op(a, b), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    return Binary


PROGRAMS = {"add": (binary_program(pl.add), np.add), "sub": (binary_program(pl.sub), np.subtract)}


@pytest.mark.parametrize("n", range(3))
@pytest.mark.parametrize("op", PROGRAMS)
def test_op(pypto_runner, op, n):
    program, want = PROGRAMS[op]
    x = np.arange(R * C, dtype=np.float32).reshape(R, C) + n
    y = np.full((R, C), 2.5, np.float32)
    out = np.zeros_like(x)
    pypto_runner.run(program, x, y, out)
    np.testing.assert_array_equal(out, want(x, y))
"""

SUMMARY = re.compile(r"pypto compile cache: (\d+) hits, (\d+) misses(?:, (\d+) damaged)?")


def _summary(result: pytest.RunResult) -> tuple[int, int, int]:
    (found,) = SUMMARY.findall(result.stdout.str())
    return int(found[0]), int(found[1]), int(found[2] or 0)


def test_xdist_session_over_a_damaged_cache_dir_passes(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_ops=SESSION_TESTS)
    args = ("--pypto-arch=all", "--pypto-cache-dir=cc", "-n", "2", "-p", "xdist")
    cold = pytester.runpytest(*args)
    cold.assert_outcomes(passed=12)
    assert _summary(cold) == (8, 4, 0)
    entries = {}
    for entry in (pytester.path / "cc").iterdir():
        if not entry.name.startswith("."):
            inputs = _load(entry / "entry.json")["inputs"]
            op = "sub" if "tile.sub" in inputs["ir"] else "add"
            entries[op, inputs["platform"]] = entry
    assert len(entries) == 4
    _swap(entries["add", "a2a3sim"], entries["sub", "a2a3sim"])
    _rewrite(entries["add", "a5sim"], "kernel_config.json", DEEP)
    _edit_entry(entries["sub", "a5sim"], _set("warnings", [NULL_FILENAME]))
    damaged = pytester.runpytest(*args)
    damaged.assert_outcomes(passed=12)
    assert _summary(damaged) == (8, 4, 4)  # each entry rebuilt once, by one worker
    assert "4 damaged entries rebuilt or bypassed" in damaged.stdout.str()
    warm = pytester.runpytest(*args)
    warm.assert_outcomes(passed=12)
    assert _summary(warm) == (12, 0, 0)
    assert "damaged entr" not in warm.stdout.str()
