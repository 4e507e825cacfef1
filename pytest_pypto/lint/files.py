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
from collections.abc import Iterable, Sequence
from pathlib import Path

_WALK_SKIP_DIRS = {"__pycache__", "node_modules"}


def project_files(root: Path) -> list[str]:
    """Sorted posix paths, relative to `root`, of the files lint may look at."""
    files = _git_files(root)
    if files is None:
        files = _walk(root)
    return sorted(f for f in files if (root / f).is_file())


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


@functools.lru_cache(maxsize=512)
def _glob_regex(pattern: str) -> re.Pattern[str]:
    """Translate a glob: `**` spans directories, `*` and `?` stay within one."""
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
                body = pat[i + 1 : j].replace("\\", "\\\\")
                if body.startswith("!"):
                    body = "^" + body[1:]
                out.append(f"[{body}]")
                i = j + 1
        else:
            out.append(re.escape(c))
            i += 1
    body = "".join(out)
    return re.compile(body + r"\Z" if anchored else r"(?:.*/)?" + body + r"\Z")


def match(path: str, patterns: Iterable[str]) -> bool:
    """Whether posix `path` matches any glob (a pattern without `/` matches the name anywhere)."""
    return any(_glob_regex(p).match(path) for p in patterns)


def select(files: Sequence[str], include: Sequence[str], exclude: Sequence[str]) -> list[str]:
    """The files matching `include` and none of `exclude`, order kept."""
    return [f for f in files if match(f, include) and not match(f, exclude)]


class FileSet:
    """The session's file list, computed once, with per-file content digests."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.files = project_files(root)
        self._digests: dict[str, str] = {}

    def digest(self, path: str) -> str:
        d = self._digests.get(path)
        if d is None:
            d = hashlib.blake2b((self.root / path).read_bytes(), digest_size=16).hexdigest()
            self._digests[path] = d
        return d
