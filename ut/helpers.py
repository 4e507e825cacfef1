# SPDX-License-Identifier: Apache-2.0
"""Helpers shared by the test suites (`ut/` and `st/`): `from ut.helpers import ...`.

`line_of` finds the line a diagnostic should point at.  Tests mark that line of their
kernel source with a trailing comment (``x = pl.load(...)  # tail-load``) and ask for
its number, so the expected ``file:line`` follows the file when lines move.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path


def line_of(source: str | Path, marker: str, *, contains: bool = False) -> int:
    """The 1-based number of the one line of ``source`` carrying ``marker``.

    ``source`` is a file (a `Path`) or source text (a `str`).  A line carries the
    marker when it ends with the comment ``# <marker>`` (a marker given with its
    ``#`` is matched as given); with ``contains=True``, when the marker appears
    anywhere in it, lines that call ``line_of`` themselves not counted.  Exactly one
    line must carry it, so a marker pasted twice fails here, not in a confusing
    assertion later.
    """
    text = source.read_text(encoding="utf-8") if isinstance(source, Path) else source
    if contains:
        hits = [i for i, line in enumerate(text.splitlines(), 1)
                if marker in line and "line_of(" not in line]
    else:
        ending = marker if marker.startswith("#") else f"# {marker}"
        hits = [i for i, line in enumerate(text.splitlines(), 1)
                if line.rstrip().endswith(ending)]
    assert len(hits) == 1, f"marker {marker!r} is on {len(hits)} lines {hits}, expected one"
    return hits[0]


def line_finder(path: str | Path, *, contains: bool = False) -> Callable[[str], int]:
    """`line_of` bound to one file, read once: ``line_of = line_finder(__file__)``."""
    text = Path(path).read_text(encoding="utf-8")

    def find(marker: str) -> int:
        return line_of(text, marker, contains=contains)

    return find
