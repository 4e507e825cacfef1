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
    h = hashlib.blake2b(digest_size=20)
    for p in parts:
        h.update(p.encode("utf-8", "surrogateescape"))
        h.update(b"\0")
    return h.hexdigest()


class LintCache:
    """Entries under `<pytest cache>/d/pypto-lint/<check>/<key[:2]>/<key>.json`."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory

    def _path(self, check_id: str, key: str) -> Path:
        assert self.directory is not None
        return self.directory / check_id / key[:2] / f"{key}.json"

    def get(self, check_id: str, key: str) -> list[Violation] | None:
        """Cached violations, or None on a miss (a missing or unreadable entry)."""
        if self.directory is None:
            return None
        try:
            raw = json.loads(self._path(check_id, key).read_bytes())
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
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except BaseException:
                Path(tmp).unlink(missing_ok=True)
                raise
        except OSError:
            pass
