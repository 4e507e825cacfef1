# SPDX-License-Identifier: Apache-2.0
"""Content-addressed cache of check results, one small JSON file per entry.

An entry's name is the digest of everything its result depends on, so it never
needs invalidating; writes go to a temp file renamed into place, so concurrent
xdist workers can only ever see a whole entry or none.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path

from pytest_pypto.lint.framework import Violation


def digest(*parts: str) -> str:
    """Stable digest of string parts (separated, so ('ab','c') != ('a','bc'))."""
    joined = "\0".join(parts) + "\0"  # one update: same bytes as part, NUL, part, NUL...
    return hashlib.blake2b(joined.encode("utf-8", "surrogateescape"), digest_size=20).hexdigest()


class LintCache:
    """Entries under `<pytest cache>/d/pypto-lint/<check>/<key[:2]>/<key>.json`."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._prefix = os.path.join(str(directory), "") if directory is not None else ""

    def _path(self, check_id: str, key: str) -> str:
        assert self.directory is not None
        return f"{self._prefix}{check_id}{os.sep}{key[:2]}{os.sep}{key}.json"

    def get(self, check_id: str, key: str) -> list[Violation] | None:
        """Cached violations, or None on a miss (a missing or unreadable entry)."""
        if self.directory is None:
            return None
        try:
            with open(self._path(check_id, key), "rb") as f:
                raw = json.loads(f.read())
            return [Violation(str(p), int(n), str(m)) for p, n, m in raw["violations"]]
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, check_id: str, key: str, violations: Iterable[Violation]) -> None:
        """Store atomically; a failure to write only costs a future miss."""
        if self.directory is None:
            return
        path = self._path(check_id, key)
        data = json.dumps({"violations": [list(v) for v in violations]}).encode()
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
