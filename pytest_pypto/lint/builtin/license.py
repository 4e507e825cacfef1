# SPDX-License-Identifier: Apache-2.0
"""license-header: every matching file starts with the manifest's template text."""

from __future__ import annotations

import re
from collections.abc import Iterator

from pytest_pypto.lint.framework import FileContext, Option, Violation, check

_PREAMBLE = re.compile(r"^(#!|#.*coding[:=])")


def _template_regexes(template: str) -> list[re.Pattern[str]]:
    """One regex per template line; `{year}` matches a year or a year range."""
    out = []
    for line in template.strip("\n").splitlines():
        parts = [re.escape(p) for p in line.rstrip().split("{year}")]
        out.append(re.compile(r"\d{4}(?:\s*-\s*\d{4})?".join(parts) + r"\s*\Z"))
    return out


@check(
    "license-header",
    files=["*.py"],
    markers=["hygiene"],
    hint="start the file with the header in the manifest's license template "
    "(after a shebang or encoding line, if any)",
    options={
        "template": Option("", str, doc="the header file, relative to the manifest"),
        "allow_empty": Option(True, bool, doc="an empty file needs no header"),
    },
    file_options=["template"],
)
def license_header(ctx: FileContext) -> Iterator[Violation]:
    if ctx.options["allow_empty"] and not ctx.text.strip():
        return
    expected = _template_regexes(ctx.option_text("template"))
    lines = ctx.lines
    start = 0
    while start < len(lines) and start < 2 and _PREAMBLE.match(lines[start]):
        start += 1
    for i, rx in enumerate(expected):
        n = start + i
        got = lines[n].rstrip() if n < len(lines) else ""
        if not rx.match(got):
            want = ctx.option_text("template").strip("\n").splitlines()[i].rstrip()
            yield ctx.violation(n + 1, f"license header: expected {want!r}, found {got!r}")
            return
