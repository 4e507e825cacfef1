# SPDX-License-Identifier: Apache-2.0
"""The project's file set and glob matching.

Lint sees what the project owns: git-tracked files plus untracked files git does
not ignore, so build outputs and virtualenvs never leak in.  Outside a git
checkout it falls back to a plain walk that skips hidden and cache directories.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import subprocess
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

_WALK_SKIP_DIRS = {"__pycache__", "node_modules"}


def project_files(root: Path) -> list[str]:
    """Sorted posix paths, relative to `root`, of the files lint may look at."""
    files = _git_files(root)
    if files is None:
        files = _walk(root)
    prefix = os.path.join(str(root), "")
    return sorted(f for f in files if os.path.isfile(prefix + f))


def _git_files(root: Path) -> list[str] | None:
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return sorted({p for p in out.decode("utf-8", "surrogateescape").split("\0") if p})


def _walk(root: Path) -> list[str]:
    found: list[str] = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = [
            d
            for d in dirnames
            if not d.startswith(".") and d not in _WALK_SKIP_DIRS and not d.endswith(".egg-info")
        ]
        rel = os.path.relpath(dirpath, root)
        for name in filenames:
            found.append(name if rel == "." else f"{rel}/{name}".replace(os.sep, "/"))
    return found


class GlobError(ValueError):
    """A pattern that is not a usable glob; the message names it and says why."""


def glob_problem(pattern: object) -> str | None:
    """Why `pattern` is not a usable glob (for a person), or None when it is.

    Checked where globs are declared (a check's defaults, a manifest's `files` and
    `exclude`), so a typo is reported there rather than as a regex traceback, or as
    a glob that silently matches nothing.
    """
    if not isinstance(pattern, str):
        return f"a glob must be a string, not {type(pattern).__name__}"
    if not pattern.strip("/"):
        return "an empty pattern matches no file"
    i = pattern.find("[")
    while i != -1:
        j = pattern.find("]", i + 1)
        if j == -1:
            return (
                f"'[' at column {i + 1} is never closed by ']' "
                "(a character class looks like [abc] or [!abc]; [[] matches a literal '[')"
            )
        if pattern[i + 1 : j] in ("", "!", "^"):
            return f"empty character class {pattern[i : j + 1]!r} at column {i + 1}"
        i = pattern.find("[", j + 1)
    try:
        re.compile(_glob_pattern(pattern))
    except re.error as e:
        return str(e.msg)
    return None


def _compile(source: str, patterns: Sequence[str]) -> re.Pattern[str]:
    try:
        return re.compile(source)
    except re.error:
        bad = [(p, glob_problem(p)) for p in patterns]
        why = "; ".join(f"{p!r}: {w}" for p, w in bad if w) or "a regex error"
        raise GlobError(f"bad glob pattern(s): {why}") from None


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    return _compile(_glob_pattern(pattern), [pattern])


def _glob_pattern(pattern: str) -> str:
    """Translate a glob to regex source: `**` spans directories, `*` and `?` stay within one."""
    anchored = "/" in pattern.rstrip("/")
    pat = pattern.lstrip("/")
    out = []
    i = 0
    while i < len(pat):
        c = pat[i]
        if pat.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif pat.startswith("**", i):
            out.append(".*")
            i += 2
        elif c == "*":
            out.append("[^/]*")
            i += 1
        elif c == "?":
            out.append("[^/]")
            i += 1
        elif c == "[":
            j = pat.find("]", i + 1)
            if j == -1:
                out.append(re.escape(c))
                i += 1
            else:
                raw = pat[i + 1 : j]
                negate = raw[:1] in ("!", "^")
                # Escape all but ranges, so `[` or `&&` inside a class stays literal.
                body = "".join(c if c == "-" else re.escape(c) for c in raw[negate:])
                out.append(f"[{'^' if negate else ''}{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    body = "".join(out)
    return body + r"\Z" if anchored else r"(?:.*/)?" + body + r"\Z"


_WILD = re.compile(r"[*?\[]")


def _simple_shape(pattern: str) -> tuple[str, str, str] | None:
    """Classify the common glob shapes, which string tests match exactly like their regex:
    ("eq", path, "") a plain anchored path; ("name", name, "") a plain name anywhere;
    ("suffix", ".py", "") `*.py`; ("under", "dir/", ".py") `dir/**` and `dir/**/*.py`.
    None for any other shape (the regex handles it)."""
    anchored = "/" in pattern.rstrip("/")
    pat = pattern.lstrip("/")
    if not _WILD.search(pat):
        return ("eq", pat, "") if anchored else ("name", pat, "")
    if not anchored:
        if pat.startswith("*") and not _WILD.search(pat, 1) and "/" not in pat:
            return ("suffix", pat[1:], "")
        return None
    head, sep, rest = pat.partition("/**")
    if not sep or not head or _WILD.search(head):
        return None
    if rest == "":
        return ("under", head + "/", "")
    if rest.startswith("/*") and "/" not in rest[2:] and not _WILD.search(rest, 2):
        return ("under", head + "/", rest[2:])
    return None


@functools.lru_cache(maxsize=128)
def _matcher(patterns: tuple[str, ...]) -> Callable[[str], bool]:
    """One predicate for a set of globs: a set lookup, one `endswith(tuple)`, prefix
    tests, and one regex alternation for the remaining shapes.  Compiling a regex
    per glob used to dominate a warm lint run."""
    exact: set[str] = set()
    tails: list[str] = []
    under: list[tuple[str, str]] = []
    rest: list[str] = []
    for p in patterns:
        shape = _simple_shape(p)
        if shape is None:
            rest.append(p)
            continue
        kind, a, b = shape
        if kind == "eq":
            exact.add(a)
        elif kind == "name":
            exact.add(a)
            tails.append("/" + a)
        elif kind == "suffix":
            tails.append(a)
        else:
            under.append((a, b))
    ends = tuple(tails)
    rx = _compile("|".join(f"(?:{_glob_pattern(p)})" for p in rest), rest) if rest else None

    def test(path: str) -> bool:
        if path in exact or (ends and path.endswith(ends)):
            return True
        for prefix, suffix in under:
            if path.startswith(prefix) and path.endswith(suffix):
                return True
        return rx is not None and rx.match(path) is not None

    return test


def match(path: str, patterns: Iterable[str]) -> bool:
    """Whether posix `path` matches any glob (a pattern without `/` matches the name anywhere)."""
    return bool(_matcher(tuple(patterns))(path))


def match_regex(path: str, patterns: Iterable[str]) -> bool:
    """`match` through the regex translation only (the reference for the string fast path)."""
    return any(_glob_regex(p).match(path) for p in patterns)


def select(files: Sequence[str], include: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """The files matching `include` and none of `exclude`, order kept."""
    inc = _matcher(tuple(include))
    if not exclude:
        return [f for f in files if inc(f)]
    exc = _matcher(tuple(exclude))
    return [f for f in files if inc(f) and not exc(f)]


class FileSet:
    """The session's file list, computed once, with per-file content digests (each file
    is read and hashed at most once per process, however many checks look at it).

    The bytes a digest was taken of are kept, so every check of the session reads
    the very content its cache key names; ``parsed`` is where the check contexts keep
    each Python file's parse (framework.FileContext), shared by every check that asks
    for a tree and dropped by ``release_parses`` once the session's lint items are done.
    """

    def __init__(self, root: Path) -> None:
        self.root = root
        self._prefix = os.path.join(str(root), "")
        self.files = project_files(root)
        self._digests: dict[str, str] = {}
        self._data: dict[str, bytes] = {}
        self.parsed: dict[str, Any] = {}

    def data(self, path: str) -> bytes:
        """The file's bytes, read once per process."""
        data = self._data.get(path)
        if data is None:
            with open(self._prefix + path, "rb") as f:
                data = self._data[path] = f.read()
        return data

    def digest(self, path: str) -> str:
        d = self._digests.get(path)
        if d is None:
            d = self._digests[path] = hashlib.blake2b(self.data(path), digest_size=16).hexdigest()
        return d

    def release_parses(self) -> None:
        """Drop the shared trees (they are large; the bytes and digests stay)."""
        self.parsed.clear()
