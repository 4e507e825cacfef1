"""A damaged compile cache is never worse than no cache (issue 26 item 10).

An entry.json (or lock file) that is a FIFO does not hang the session; an entry
directory that turns unreadable mid-session does not fail a test whose artifact is
already in memory; an entry that cannot be moved aside is reported once, clearly,
and only its key bypasses the cache; stale ``.tmp-*``/``.trash-*`` directories are
cleaned up.  Running as root, unreadable and unmovable entries are emulated by
making the OS calls on that one path fail as they would for an ordinary user.
"""

from __future__ import annotations

import builtins
import errno
import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_pypto.harness.cache import CompileCache, cache_key
from pytest_pypto.harness.runner import Runner
from pytest_pypto.runtime import loader
from ut.harness.test_cache_faults import A2, ADD, SUB, WANT, C, R, X, Y


def _result(cache: CompileCache, program: Any) -> np.ndarray:
    out = np.zeros((R, C), np.float32)
    Runner(A2, rng_factory=lambda: None, cache=cache).run(program, X, Y, out)
    return out


def _counts(cache: CompileCache) -> tuple[int, int, int]:
    return cache.hits, cache.misses, cache.damaged


def _in_thread(fn: Any, seconds: float = 20.0) -> Any:
    """``fn()`` in a daemon thread; fails (instead of hanging the suite) after ``seconds``."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001  (re-raised below)
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still blocked after {seconds} s"
    if "error" in box:
        raise box["error"]
    return box["value"]


def test_an_entry_json_that_is_a_fifo_is_rebuilt_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    np.testing.assert_array_equal(_result(CompileCache(root), ADD), WANT["add"])
    entry = root / cache_key(ADD, A2)
    (entry / "entry.json").unlink()
    os.mkfifo(entry / "entry.json")
    loader.clear_cache()
    cache = CompileCache(root)
    np.testing.assert_array_equal(_in_thread(lambda: _result(cache, ADD)), WANT["add"])
    assert _counts(cache) == (0, 1, 1) and "regular file" in cache.rebuilt[0][1]
    assert (entry / "entry.json").is_file()


def test_an_artifact_file_that_is_a_fifo_is_rebuilt_without_blocking(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    CompileCache(root).compile(ADD, A2)
    kernel = root / cache_key(ADD, A2) / "artifact" / "kernels" / "k.py"
    kernel.unlink()
    os.mkfifo(kernel)
    cache = CompileCache(root)
    np.testing.assert_array_equal(_in_thread(lambda: _result(cache, ADD)), WANT["add"])
    assert _counts(cache) == (0, 1, 1)


def test_a_lock_file_that_is_a_fifo_does_not_block(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    (root / ".locks").mkdir(parents=True)
    os.mkfifo(root / ".locks" / cache_key(ADD, A2))
    cache = CompileCache(root)
    np.testing.assert_array_equal(_in_thread(lambda: _result(cache, ADD)), WANT["add"])
    assert cache.enabled and _counts(cache) == (0, 1, 0)


def _deny(monkeypatch: pytest.MonkeyPatch, under: Path, calls: tuple[str, ...]) -> None:
    """The os calls named in ``calls`` (and ``open``) fail with EACCES on ``under`` and
    every path inside it, as for a user without permissions there."""
    prefix = os.fspath(under)

    def inside(path: Any) -> bool:
        if isinstance(path, int):
            return False
        p = os.fspath(path)
        p = p.decode() if isinstance(p, bytes) else p
        return p == prefix or p.startswith(prefix + os.sep)

    def denied(real: Any) -> Any:
        def call(path: Any, *args: Any, **kwargs: Any) -> Any:
            if inside(path):
                raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
            return real(path, *args, **kwargs)

        return call

    for name in calls:
        monkeypatch.setattr(os, name, denied(getattr(os, name)))
    if "open" in calls:
        monkeypatch.setattr(builtins, "open", denied(builtins.open))


def test_an_entry_unreadable_mid_session_is_served_from_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    cache = CompileCache(root)
    np.testing.assert_array_equal(_result(cache, ADD), WANT["add"])
    entry = root / cache_key(ADD, A2)
    # chmod 000 on the entry: its own stat still works, nothing inside it does
    _deny(monkeypatch, entry / "artifact", ("stat", "lstat", "scandir", "open", "listdir"))
    _deny(monkeypatch, entry / "entry.json", ("stat", "lstat", "open"))
    np.testing.assert_array_equal(_result(cache, ADD), WANT["add"])
    assert _counts(cache) == (1, 1, 0)


def test_an_unmovable_damaged_entry_is_reported_once_and_bypassed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = tmp_path / "cache"
    CompileCache(root).compile(ADD, A2)
    entry = root / cache_key(ADD, A2)
    (entry / "entry.json").write_text("{")  # damaged
    real_rename = os.rename

    def rename(src: Any, dst: Any, *args: Any, **kwargs: Any) -> Any:
        if os.fspath(src) == os.fspath(entry) or os.fspath(dst) == os.fspath(entry):
            raise OSError(errno.EBUSY, os.strerror(errno.EBUSY), os.fspath(src))
        return real_rename(src, dst, *args, **kwargs)

    monkeypatch.setattr(os, "rename", rename)
    loader.clear_cache()
    cache = CompileCache(root)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for _ in range(3):
            np.testing.assert_array_equal(_result(cache, ADD), WANT["add"])
        np.testing.assert_array_equal(_result(cache, SUB), WANT["sub"])
    assert cache.enabled, cache.disabled_reason  # the other keys keep their cache
    assert _counts(cache) == (2, 2, 1)  # damage counted once; the bypassed key's memo hits
    ours = [str(w.message) for w in caught if "pypto compile cache" in str(w.message)]
    assert len(ours) == 1, ours
    assert str(entry) in ours[0] and "Device or resource busy" in ours[0]
    assert "Directory not empty" not in ours[0]
    assert (root / cache_key(SUB, A2) / "entry.json").is_file()  # SUB was cached


def _aged(path: Path, seconds: float) -> None:
    then = time.time() - seconds
    os.utime(path, (then, then))


def test_stale_tmp_and_trash_dirs_are_cleaned_up(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    CompileCache(root).compile(ADD, A2)
    stale = [root / ".tmp-old1", root / f".trash-{cache_key(SUB, A2)}-x"]
    fresh = root / ".tmp-new1"
    for d in (*stale, fresh):
        (d / "artifact").mkdir(parents=True)
        (d / "artifact" / "f.py").write_text("x = 1\n")
    for d in stale:
        _aged(d, 3600)
    cache = CompileCache(root)
    cache.compile(SUB, A2)
    assert [d for d in stale if d.exists()] == []
    assert fresh.exists()  # maybe another process's compile in progress: left alone
    assert _counts(cache) == (0, 1, 0)


def test_a_stale_tmp_dir_of_a_key_being_compiled_is_left_alone(tmp_path: Path) -> None:
    fcntl = pytest.importorskip("fcntl")
    root = tmp_path / "cache"
    CompileCache(root).compile(ADD, A2)
    busy = root / f".tmp-{cache_key(SUB, A2)}-abc"
    busy.mkdir()
    _aged(busy, 3600)
    with open(root / ".locks" / cache_key(SUB, A2), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)  # another process compiles SUB right now
        CompileCache(root).compile(ADD, A2)
        assert busy.exists()
    CompileCache(root).compile(ADD, A2)
    assert not busy.exists()
