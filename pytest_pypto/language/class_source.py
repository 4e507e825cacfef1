# SPDX-License-Identifier: Apache-2.0
"""Finding a `@pl.program` class in its file: each file is indexed once (its lines, its
classes by the line that decorated them, the names each class binds), so a program
defined in a loop or beside a same-named class is read from the right place.
`language/parser.py` parses what this finds.
"""

from __future__ import annotations

import ast
import inspect
from collections.abc import Iterator

from pytest_pypto.language.context import SourceMap
from pytest_pypto.language.sources import current_lines, source_of

__all__ = ["FileIndex", "class_from_inspect", "locate_class", "parse_class_at"]


class FileIndex:
    """One source file analysed once: its lines and its classes by name.

    ``lines`` is the linecache list the index was built from; a new list (the file
    changed and linecache re-read it) makes a new index, so an edited file is
    parsed again.  ``bound`` memoises the names each function binds, keyed by the
    FunctionDef node, so a program decorated many times (a factory, hypothesis
    examples) walks each body once.  ``at`` holds the classes parsed on their own
    (`_class_at`), by the line that decorated them; ``classes`` is filled only when
    one could not be, from the whole file.
    """

    __slots__ = ("lines", "file_lines", "classes", "bound", "at")

    def __init__(
        self, lines: list[str], classes: dict[str, list[tuple[int, ast.ClassDef]]] | None
    ) -> None:
        self.lines = lines
        self.file_lines = tuple(line.rstrip("\n") for line in lines)
        self.classes = classes
        self.bound: dict[int, frozenset[str]] = {}
        self.at: dict[tuple[int, str], ast.ClassDef | None] = {}


# Per file, indexed once, so decorating many programs in one long test module stays
# linear in the file's size.  A file that does not parse is left to inspect's path.
_FILES: dict[str, FileIndex] = {}
_FAILED: dict[str, list[str]] = {}  # file -> the lines that did not parse


def _file_lines(file: str) -> FileIndex | None:
    """The file's index, its classes not yet parsed (None: linecache has no lines)."""
    lines = current_lines(file)
    if not lines:
        return None
    cached = _FILES.get(file)
    if cached is not None and cached.lines is lines:
        return cached
    index = _FILES[file] = FileIndex(lines, None)
    return index


def _file_index(file: str) -> FileIndex | None:
    """The file's index with every class of the whole file (None: it does not parse)."""
    index = _file_lines(file)
    if index is None:
        return None
    if index.classes is not None:
        return index
    lines = index.lines
    if _FAILED.get(file) is lines:
        return None
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        _FAILED[file] = lines
        return None
    classes: dict[str, list[tuple[int, ast.ClassDef]]] = {}
    for node in _statements(tree.body):
        if isinstance(node, ast.ClassDef):
            start = min([d.lineno for d in node.decorator_list] + [node.lineno])
            classes.setdefault(node.name, []).append((start, node))
    index.classes = classes
    return index


def _class_at(index: FileIndex, lineno: int, name: str) -> ast.ClassDef | None:
    """The class ``name`` decorated at ``lineno``, parsed from its own lines only.

    ``lineno`` is the decorator's line (Python 3.11+) or the ``class`` line (3.10).
    The class ends before the first later line, neither blank nor a comment, that is
    indented no deeper than ``class``; the lines before it are blanked, and a nested
    class is put under ``if 1:``, so lines and columns are the file's own.  Anything
    unusual (a decorator spread over lines, a cut through a string) gives None and
    the caller parses the whole file, as it always could.
    """
    key = (lineno, name)
    if key in index.at:
        return index.at[key]
    found = index.at[key] = parse_class_at(index.lines, lineno, name)
    return found


def _indent_of(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))


def parse_class_at(lines: list[str], lineno: int, name: str) -> ast.ClassDef | None:
    if not 0 < lineno <= len(lines):
        return None
    first = lines[lineno - 1]
    indent = _indent_of(first)
    header = ("class " + name, "class\t" + name)
    line = lineno
    if first.lstrip().startswith("@"):  # decorators, one per line, down to `class`
        while True:
            line += 1
            if line > len(lines):
                return None
            text = lines[line - 1]
            stripped = text.strip()
            if not stripped or stripped.startswith("#"):
                continue
            if _indent_of(text) != indent:
                return None
            if stripped.startswith("@"):
                continue
            break
    text = lines[line - 1].lstrip()
    if not text.startswith(header) or text[6 + len(name):7 + len(name)] not in ("(", ":", " ", "\t"):
        return None
    end = line
    for k in range(line, len(lines)):  # k: the 0-based index of the line after `end`
        text = lines[k]
        stripped = text.strip()
        if not stripped or stripped.startswith("#"):
            continue
        if _indent_of(text) <= indent:
            break
        end = k + 1
    body = "".join(lines[line - 1:end])
    source = ("\n" * (line - 2) + "if 1:\n" if indent else "\n" * (line - 1)) + body
    try:
        tree = ast.parse(source)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    block = tree.body
    if indent and len(block) == 1 and isinstance(block[0], ast.If):
        block = block[0].body
    if len(block) != 1:
        return None
    node = block[0]
    if not isinstance(node, ast.ClassDef) or node.name != name or node.lineno != line:
        return None
    return node


def _statements(block: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Every statement of a block, nested blocks included; expressions are not
    visited (a class statement cannot occur in one)."""
    stack = list(reversed(block))
    while stack:
        node = stack.pop()
        yield node
        for name in ("body", "orelse", "finalbody", "handlers", "cases"):
            inner = getattr(node, name, None)
            if type(inner) is list:
                stack.extend(reversed(inner))  # type: ignore[arg-type]


def locate_class(cls: type, where: tuple[str, int] | None) -> tuple[str, ast.ClassDef, FileIndex] | None:
    """The ClassDef being decorated, found in its whole file by name and line."""
    try:
        file = inspect.getsourcefile(cls)
    except TypeError:
        return None
    if not file or where is None or where[0] != file:
        return None
    lineno = where[1]
    index = _file_lines(file)
    if index is None:
        return None
    found = _class_at(index, lineno, cls.__name__)
    if found is not None:
        return file, found, index
    index = _file_index(file)
    if index is None or index.classes is None:
        return None
    best: ast.ClassDef | None = None
    best_start = 0
    for start, node in index.classes.get(cls.__name__, ()):
        if best_start < start <= lineno:
            best, best_start = node, start
    if best is None:
        return None
    return file, best, index


def class_from_inspect(cls: type) -> tuple[str, ast.ClassDef, SourceMap]:
    return source_of(cls, ast.ClassDef, "@pl.program", "class", "program")
