# SPDX-License-Identifier: Apache-2.0
"""Content-addressed cache of check results, one small JSON file per entry
(docs/design/plugin.md §14).

An entry's name is the digest of everything its result depends on, so it never
needs invalidating; writes go to a temp file renamed into place, so concurrent
xdist workers can only ever see a whole entry or none.  Like the compile cache's
entries, each records its check, its own key and a digest of its content, and a
hit is served only when all three are the ones asked for and every violation has
its types: an entry filed under another key (two files swapped), edited,
truncated or not a regular file is a miss, and the rerun rewrites it.
"""

from __future__ import annotations

import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_pypto.lint.framework import Violation

ENTRY_FORMAT = 2  # 2: check, key and digest recorded (format 1 entries are misses)
_MAX_ENTRY = 64 << 20  # bytes: a larger "entry" is not one of ours


def digest(*parts: str) -> str:
    """Stable digest of string parts (separated, so ('ab','c') != ('a','bc'))."""
    joined = "\0".join(parts) + "\0"  # one update: same bytes as part, NUL, part, NUL...
    return hashlib.blake2b(joined.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


def _content_digest(check_id: str, key: str, violations: list[list[Any]]) -> str:
    """The digest an entry records of what it holds."""
    body = json.dumps([check_id, key, violations], separators=(",", ":"))
    return digest("pypto-lint-entry", str(ENTRY_FORMAT), body)


class LintCache:
    """Entries under `<pytest cache>/d/pypto-lint/<check>/<key[:2]>/<key>.json`."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._prefix = os.path.join(str(directory), "") if directory is not None else ""

    def _path(self, check_id: str, key: str) -> str:
        assert self.directory is not None
        return f"{self._prefix}{check_id}{os.sep}{key[:2]}{os.sep}{key}.json"

    def get(self, check_id: str, key: str) -> list[Violation] | None:
        """Cached violations, or None on a miss (a missing, unreadable, damaged entry,
        or one that is not this check's entry under this key)."""
        if self.directory is None:
            return None
        try:
            raw = json.loads(_read_regular(self._path(check_id, key)))
            return _verified(raw, check_id, key)
        except (OSError, ValueError, KeyError, TypeError, RecursionError):
            return None

    def put(self, check_id: str, key: str, violations: Iterable[Violation]) -> None:
        """Store atomically; a failure to write only costs a future miss."""
        if self.directory is None:
            return
        path = self._path(check_id, key)
        found = [[str(v.path), int(v.line), str(v.message)] for v in violations]
        entry = {
            "format": ENTRY_FORMAT,
            "check": check_id,
            "key": key,
            "violations": found,
            "digest": _content_digest(check_id, key, found),
        }
        data = json.dumps(entry).encode()
        try:
            parent = os.path.dirname(path)
            os.makedirs(parent, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass


def _read_regular(path: str) -> bytes:
    """The bytes of the regular file at ``path``; OSError for anything else (a FIFO is
    opened without waiting for a writer and refused, a device or directory refused)."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0))
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_ENTRY:
            raise OSError(f"{path}: not a lint cache entry file")
        return f.read()


def _verified(raw: Any, check_id: str, key: str) -> list[Violation]:
    """The violations of entry ``raw`` when it is this check's entry under ``key``, whole
    and well-typed; ValueError otherwise."""
    if not isinstance(raw, dict) or raw.get("format") != ENTRY_FORMAT:
        raise ValueError("not a lint cache entry of this format")
    if raw.get("check") != check_id or raw.get("key") != key:
        raise ValueError("filed under another check or key")
    found = raw.get("violations")
    if not isinstance(found, list) or raw.get("digest") != _content_digest(check_id, key, found):
        raise ValueError("content does not match its digest")
    out = []
    for v in found:
        if not (
            isinstance(v, list) and len(v) == 3 and isinstance(v[0], str)
            and type(v[1]) is int and isinstance(v[2], str)
        ):
            raise ValueError("a violation of the wrong shape")
        out.append(Violation(v[0], v[1], v[2]))
    return out
