"""What the compile cache knows of the toolchain that made an artifact
(docs/design/plugin.md §9).

The package version alone is not enough: an editable install, or a build of a newer commit
that kept the version string, changes the compiler without changing the version, and a
cache keyed by the version would go on serving artifacts the older compiler made (with its
older generated code, which also names the op implementations it calls).  So the key
also carries `toolchain_digest`: a sha256 over the sources of what makes and what runs
the generated code (`TOOLCHAIN`), read once per process.
"""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

__all__ = ["TOOLCHAIN", "digest_of", "toolchain_digest"]

# Under pytest_pypto/: the language, the IR with the op registry (generated code calls
# it), the compiler, the arch table and the run configuration.
TOOLCHAIN = ("_version.py", "arch.py", "config.py", "language", "ir", "compiler")


def digest_of(package: Path, names: tuple[str, ...] = TOOLCHAIN) -> str:
    """sha256 (hex) over the path and bytes of every ``.py`` file of ``names`` (files or
    folders, searched recursively) under ``package``; a missing name counts as absent."""
    h = hashlib.sha256()
    for name in names:
        path = package / name
        files = sorted(path.rglob("*.py")) if path.is_dir() else [path] if path.is_file() else []
        for f in files:
            h.update(f.relative_to(package).as_posix().encode())
            h.update(b"\0")
            h.update(f.read_bytes())
            h.update(b"\0")
    return h.hexdigest()


@functools.lru_cache(maxsize=1)
def toolchain_digest() -> str:
    """`digest_of` this installed package (computed once per process)."""
    return digest_of(Path(__file__).resolve().parent.parent)
