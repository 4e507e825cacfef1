# SPDX-License-Identifier: Apache-2.0
"""Where a decorated class or function is written: its file's current lines and, when
the file cannot be indexed whole, its own source through `inspect`.

The parser (`@pl.program` classes) and the templates (functions defined outside a
class) both read source this way; spans then map back to the user's file
(`context.SourceMap`).
"""

from __future__ import annotations

import ast
import inspect
import linecache
import textwrap
from typing import Any

from pytest_pypto.ir.errors import ParserSyntaxError
from pytest_pypto.language.context import SourceMap

__all__ = ["current_lines", "source_of", "statement_lines"]


def current_lines(file: str) -> list[str]:
    """The file's lines as linecache holds them, re-read when the file changed (one stat).
    The list object stays the same while the file does, so callers key caches on it."""
    linecache.checkcache(file)
    return linecache.getlines(file)


def statement_lines(node: ast.ClassDef | ast.FunctionDef) -> tuple[int, int]:
    """(first, last) line of a class or function statement, its decorators included:
    the lines that execute it again."""
    first = min([d.lineno for d in node.decorator_list] + [node.lineno])
    return first, node.end_lineno or node.lineno


def source_of(obj: Any, node_type: type[ast.AST], what: str, noun: str, owner: str,
              file: str | None = None) -> tuple[str, Any, SourceMap]:
    """``(file, node, SourceMap)`` of the class or function ``obj`` from `inspect`.

    ``node_type``: the AST node it must start with (ClassDef, FunctionDef); ``what``,
    ``noun`` and ``owner`` word the error (e.g. "@pl.program", "class", "program");
    ``file``: the file the spans name (default: the one `inspect` finds)."""
    try:
        lines, first = inspect.getsourcelines(obj)
        if file is None:
            file = inspect.getsourcefile(obj) or inspect.getfile(obj)
    except (OSError, TypeError) as exc:
        raise ParserSyntaxError(
            f"{what} could not read the source of {noun} {obj.__name__}: {exc}",
            hint=f"define the {owner} in a .py file (not in an interactive session or exec)",
        ) from None
    text = textwrap.dedent("".join(lines))
    indent = len(lines[0]) - len(lines[0].lstrip()) if lines else 0
    node = next(n for n in ast.parse(text).body if isinstance(n, node_type))
    file_lines = tuple(line.rstrip("\n") for line in linecache.getlines(file)) or tuple(
        line.rstrip("\n") for line in lines
    )
    return file, node, SourceMap(file, first, indent, file_lines)
