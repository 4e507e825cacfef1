# SPDX-License-Identifier: Apache-2.0
"""Lint cache entries are keyed and verified like the compile cache (issue 26 item 2).

Each entry records its check, its own key and a digest of its content: an entry
filed under another key (two entry files swapped), edited, truncated, of the wrong
shape or not a regular file is a miss, and the rerun rewrites it.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from pathlib import Path

import pytest

from pytest_pypto.lint.cache import LintCache
from pytest_pypto.lint.framework import Violation

BAD = 'import pytest\n\n\ndef test_it():\n    with pytest.raises(Exception):\n        int("x")\n'
GOOD = BAD.replace("Exception", "ValueError")
KEY_A, KEY_B = "aa" + "1" * 38, "bb" + "2" * 38
FOUND = [Violation("a.py", 5, "pytest.raises(Exception) is too broad")]


def _project(pytester: pytest.Pytester, files: dict[str, str]) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\naddopts = '--strict-markers'\n")
    (pytester.path / "lint").mkdir(exist_ok=True)
    (pytester.path / "lint" / "lint.toml").write_text("[checks.no-broad-raises]\n")
    for name, text in files.items():
        (pytester.path / name).write_text(textwrap.dedent(text))


def _counts(result: pytest.RunResult) -> tuple[int, int]:
    m = re.search(r"pypto lint cache: (\d+) hits, (\d+) misses", result.stdout.str())
    assert m is not None, result.stdout.str()
    return int(m.group(1)), int(m.group(2))


def _entries(root: Path) -> dict[Path, bytes]:
    base = root / ".pytest_cache" / "d" / "pypto-lint" / "no-broad-raises"
    return {p: p.read_bytes() for p in base.rglob("*.json")}


def test_swapped_entries_do_not_turn_a_failing_check_into_a_pass(
    pytester: pytest.Pytester,
) -> None:
    _project(pytester, {"a.py": BAD, "b.py": GOOD})
    pytester.runpytest("lint").assert_outcomes(failed=1)
    entries = _entries(pytester.path)
    clean = [data for data in entries.values() if b"too broad" not in data and b"Exception" not in data]
    dirty = [p for p, data in entries.items() if p not in {q for q, d in entries.items() if d in clean}]
    assert clean and dirty
    for path in dirty:  # every entry holding the violation now holds a clean one's file
        path.write_bytes(clean[0])
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["a.py:5: *no-broad-raises*"])
    assert _counts(result) == (1, 1)  # b.py's own entry; a.py reruns
    again = pytester.runpytest("lint")  # the rerun rewrote a.py's entry
    again.assert_outcomes(failed=1)
    assert _counts(again) == (2, 0)


def _entry_path(cache: LintCache, key: str) -> Path:
    return Path(cache._path("no-broad-raises", key))


def test_an_entry_under_another_key_is_a_miss(tmp_path: Path) -> None:
    cache = LintCache(tmp_path)
    cache.put("no-broad-raises", KEY_A, FOUND)
    cache.put("no-broad-raises", KEY_B, [])
    assert cache.get("no-broad-raises", KEY_A) == FOUND
    a, b = _entry_path(cache, KEY_A), _entry_path(cache, KEY_B)
    a.write_bytes(b.read_bytes())
    assert cache.get("no-broad-raises", KEY_A) is None
    assert cache.get("no-broad-raises", KEY_B) == []
    cache.put("no-broad-raises", KEY_A, FOUND)  # the miss's rerun rewrites the entry
    assert cache.get("no-broad-raises", KEY_A) == FOUND


def test_an_entry_of_another_check_is_a_miss(tmp_path: Path) -> None:
    cache = LintCache(tmp_path)
    cache.put("no-broad-raises", KEY_A, [])
    other = Path(cache._path("other-check", KEY_A))
    other.parent.mkdir(parents=True)
    other.write_bytes(_entry_path(cache, KEY_A).read_bytes())
    assert cache.get("other-check", KEY_A) is None


def _edit(path: Path, edit) -> None:
    record = json.loads(path.read_bytes())
    edit(record)
    path.write_text(json.dumps(record))


DAMAGES = {
    "violations edited, digest kept": lambda p: _edit(p, lambda r: r.__setitem__("violations", [])),
    "digest removed": lambda p: _edit(p, lambda r: r.pop("digest")),
    "key removed": lambda p: _edit(p, lambda r: r.pop("key")),
    "truncated": lambda p: p.write_bytes(p.read_bytes()[:20]),
    "a list": lambda p: p.write_text("[1, 2]"),
    "old format without key": lambda p: p.write_text(
        json.dumps({"violations": []})),
    "line a string": lambda p: _edit(p, lambda r: r["violations"][0].__setitem__(1, "5")),
    "line a bool": lambda p: _edit(p, lambda r: r["violations"][0].__setitem__(1, True)),
    "a directory": lambda p: (p.unlink(), p.mkdir()),
}


@pytest.mark.parametrize("name", DAMAGES)
def test_a_damaged_entry_is_a_miss(tmp_path: Path, name: str) -> None:
    cache = LintCache(tmp_path)
    cache.put("no-broad-raises", KEY_A, FOUND)
    DAMAGES[name](_entry_path(cache, KEY_A))
    assert cache.get("no-broad-raises", KEY_A) is None
    if name != "a directory":
        cache.put("no-broad-raises", KEY_A, FOUND)
        assert cache.get("no-broad-raises", KEY_A) == FOUND


def test_an_entry_that_is_a_fifo_is_a_miss_without_blocking(tmp_path: Path) -> None:
    cache = LintCache(tmp_path)
    cache.put("no-broad-raises", KEY_A, FOUND)
    path = _entry_path(cache, KEY_A)
    path.unlink()
    os.mkfifo(path)
    assert cache.get("no-broad-raises", KEY_A) is None  # opening it must not wait for a writer
    cache.put("no-broad-raises", KEY_A, FOUND)
    assert cache.get("no-broad-raises", KEY_A) == FOUND
