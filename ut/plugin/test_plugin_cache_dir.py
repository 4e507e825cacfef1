"""A compile-cache directory other users can write is bypassed with a loud warning
(issue 26 item 7; the check: plugin/paths.py `insecure_dir`, applied by plugin/cache.py).

Before: a cache dir of mode 0777 was used without a word, so an entry another user
planted there ran as the victim.  Like pip with a cache dir it does not own, the session
runs on without the cache (every kernel compiles afresh) and says why.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import numpy  # noqa: F401  (loaded before in-process pytester runs, which cannot reload it)
import pytest
from readme_kit import TWICE_TESTS

import pytest_pypto.compiler.api  # noqa: F401  (in-process runs must not import it afresh)
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
from pytest_pypto.plugin import paths

CACHE_LINE = re.compile(r"^pypto compile cache: (\d+) hits, (\d+) misses.*$", re.M)


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_k=TWICE_TESTS)
    return pytester


def _entries(cache: Path) -> list[str]:
    return sorted(p.name for p in cache.iterdir() if not p.name.startswith("."))


def _run(project: pytest.Pytester, *args: str) -> tuple[str, tuple[int, int]]:
    result = project.runpytest("-W", "default", *args)
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out, out
    (line,) = CACHE_LINE.finditer(out)
    return out, (int(line.group(1)), int(line.group(2)))


def test_a_private_cache_dir_is_used(project: pytest.Pytester) -> None:
    cache = project.path / "cc"
    cache.mkdir(mode=0o755)
    cache.chmod(0o755)
    out, counts = _run(project, f"--pypto-cache-dir={cache}")
    assert counts == (1, 1) and "writable by other users" not in out, out  # one kernel
    assert _entries(cache)
    out, counts = _run(project, f"--pypto-cache-dir={cache}")
    assert counts == (2, 0), out


@pytest.mark.parametrize("mode", [0o777, 0o757, 0o1777])
def test_a_cache_dir_others_can_write_is_bypassed_loudly(
    project: pytest.Pytester, mode: int
) -> None:
    cache = project.path / "cc"
    cache.mkdir()
    cache.chmod(mode)
    for _ in range(2):  # nothing written, so nothing ever read back either
        out, counts = _run(project, f"--pypto-cache-dir={cache}")
        assert counts == (0, 2), out  # not even the second test's hit of the first's
        assert not _entries(cache)
        warning = f"pypto compile cache turned off: {cache} is writable by other users"
        assert out.count(warning) == 1, out
        assert f"(mode {mode:04o}" in out, out
        assert "every kernel compiles afresh" in out
    assert f"(off: {cache} is writable by other users)" in out, out  # the summary line


def test_the_default_cache_location_is_checked_too(project: pytest.Pytester) -> None:
    shared = project.path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    out, counts = _run(project, "-o", f"cache_dir={shared / 'pc'}")
    assert counts == (0, 2), out
    root = shared / "pc" / "d" / "pypto-compile"
    assert f"turned off: {root} is writable by other users (the directory {shared} above " \
        "it has mode 0777 and no sticky bit" in out, out


def test_insecure_dir_reasons(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    private = tmp_path / "private"
    private.mkdir()
    private.chmod(0o700)
    assert paths.insecure_dir(private) is None
    private.chmod(0o755)
    assert paths.insecure_dir(private) is None
    private.chmod(0o777)
    assert paths.insecure_dir(private) == f"{private} is writable by other users (mode 0777)"
    # A parent others can write (no sticky bit) lets them swap the whole directory.
    private.chmod(0o700)
    inner = private / "inner"
    inner.mkdir(mode=0o700)
    private.chmod(0o733)
    why = paths.insecure_dir(inner)
    assert why == (
        f"{inner} is writable by other users (the directory {private} above it has mode "
        f"0733 and no sticky bit, so they can replace it)"
    )
    private.chmod(0o1733)  # sticky: others cannot rename what they do not own
    assert paths.insecure_dir(inner) is None
    private.chmod(0o700)
    # Owned by someone else (neither this user nor root): they can write it at will.
    owner = os.geteuid()
    if owner == 0:  # root's directories are trusted: give this one to another user
        owner = 12345
        os.chown(private, owner, -1)
    monkeypatch.setattr(paths, "_uid", lambda: owner + 1)
    assert paths.insecure_dir(private) == (
        f"{private} is writable by other users (owned by uid {owner}, not by uid {owner + 1})"
    )
