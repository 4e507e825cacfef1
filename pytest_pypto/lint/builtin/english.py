# SPDX-License-Identifier: Apache-2.0
"""english-only: text files use only the allowed character ranges (English plus typography).

`ranges` lists code points or inclusive ranges, as strings (`"0x20-0x7E"`, `"0xA7"`,
`"U+2013"`) or integer pairs (`[32, 126]`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from pytest_pypto.lint.framework import FileContext, Option, Violation, check

Range = str | tuple[int, int]
_MAX_CP = 0x10FFFF

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


def parse_ranges(specs: Sequence[Range]) -> list[tuple[int, int]]:
    """'0x20-0x7E' / '0xA7' / 'U+2013' / [32, 126] -> inclusive (lo, hi) code point pairs.

    Raises ValueError saying which entry is wrong and why (the manifest reader
    reports it as the check's error item).
    """
    return sorted(_parse_range(spec) for spec in specs)


def _parse_range(spec: Range) -> tuple[int, int]:
    if isinstance(spec, str):
        lo, sep, hi = spec.replace("U+", "0x").replace("u+", "0x").partition("-")
        try:
            a = int(lo.strip(), 0)
            b = int(hi.strip(), 0) if sep else a
        except ValueError:
            raise ValueError(
                f"{spec!r} is not a code point or range "
                "(write '0x20-0x7E', '0xA7', 'U+2013' or [32, 126])"
            ) from None
    else:
        a, b = spec
    shown = repr(spec) if isinstance(spec, str) else f"[{a}, {b}]"
    if not (0 <= a <= _MAX_CP and 0 <= b <= _MAX_CP):
        raise ValueError(f"{shown} is outside the Unicode code points 0x0-0x10FFFF")
    if a > b:
        raise ValueError(f"{shown} is an empty range ({a:#x} > {b:#x}); write the low end first")
    return a, b


def _allowed(cp: int, ranges: list[tuple[int, int]]) -> bool:
    return any(a <= cp <= b for a, b in ranges)


@check(
    "english-only",
    files=TEXT_FILES,
    markers=["hygiene"],
    hint="write comments, docstrings and messages in English; "
    "allow more characters with `ranges` or skip files with `exclude` in the manifest",
    options={
        "ranges": Option(
            DEFAULT_RANGES,
            list[Range],
            validate=parse_ranges,
            doc="allowed code points: '0x20-0x7E', '0xA7', 'U+2013' or [32, 126]",
        )
    },
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
