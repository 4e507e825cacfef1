# SPDX-License-Identifier: Apache-2.0
"""english-only: text files use only the allowed character ranges (English plus typography)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pytest_pypto.lint.framework import FileContext, Violation, check

# ASCII text, plus punctuation and symbols English technical prose uses: Latin-1
# symbols, general punctuation, arrows, math operators, box drawing, Greek letters.
DEFAULT_RANGES = [
    "0x09-0x0D",
    "0x20-0x7E",
    "0xA0-0xBF",
    "0xD7",
    "0xF7",
    "0x0391-0x03C9",
    "0x2000-0x206F",
    "0x2190-0x21FF",
    "0x2200-0x22FF",
    "0x2500-0x257F",
]
TEXT_FILES = [
    "*.py",
    "*.md",
    "*.rst",
    "*.txt",
    "*.toml",
    "*.cfg",
    "*.ini",
    "*.yaml",
    "*.yml",
    "*.sh",
    "*.json",
]


def parse_ranges(specs: Sequence[str]) -> list[tuple[int, int]]:
    """'0x20-0x7E' / '0xA7' / 'U+2013' -> inclusive (lo, hi) code point pairs."""
    out = []
    for spec in specs:
        lo, _, hi = spec.replace("U+", "0x").replace("u+", "0x").partition("-")
        a = int(lo.strip(), 0)
        b = int(hi.strip(), 0) if hi else a
        if a > b:
            raise ValueError(f"english-only: empty range {spec!r}")
        out.append((a, b))
    return sorted(out)


def _allowed(cp: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= cp <= b for a, b in ranges)


@check(
    "english-only",
    files=TEXT_FILES,
    markers=["hygiene"],
    hint="write comments, docstrings and messages in English; "
    "allow more characters with `ranges` or skip files with `exclude` in the manifest",
    options={"ranges": DEFAULT_RANGES},
)
def english_only(ctx: FileContext) -> Iterator[Violation]:
    try:
        text = ctx.data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = ctx.data[: e.start].count(b"\n") + 1
        yield ctx.violation(line, "not valid UTF-8 text")
        return
    ranges = parse_ranges(ctx.options["ranges"])
    if all(_allowed(ord(c), ranges) for c in set(text) - {"\n", "\r"}):
        return
    for n, line in enumerate(text.splitlines(), 1):
        for col, ch in enumerate(line, 1):
            if not _allowed(ord(ch), ranges):
                yield ctx.violation(
                    n, f"non-English character {ch!r} (U+{ord(ch):04X}) at column {col}"
                )
                break
