# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""A program class is parsed from its own lines, not its whole file, with the file's
lines and columns; whatever that cannot read is parsed from the whole file, as before."""

from __future__ import annotations

import ast
import copy
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_pypto.ir.errors import InvalidOperationError
from pytest_pypto.language import class_source
from ut.helpers import line_of

ROOT = Path(__file__).resolve().parents[2]


def _decorated_at(node: ast.ClassDef) -> int:
    """The line `sys._getframe(1).f_lineno` reports while the class is decorated."""
    if sys.version_info >= (3, 11) and node.decorator_list:
        return min(d.lineno for d in node.decorator_list)
    return node.lineno


def _program_classes(tree: ast.Module) -> list[ast.ClassDef]:
    return [
        n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)
        and any(ast.unparse(d).endswith("program") for d in n.decorator_list)
    ]


_POSITIONS = ("lineno", "col_offset", "end_lineno", "end_col_offset")


def _same_tree(a: object, b: object) -> bool:
    """``ast.dump(a, include_attributes=True) == ast.dump(b, ...)`` without rendering the
    two strings: same node types, fields and positions, all the way down."""
    if isinstance(a, ast.AST):
        if type(a) is not type(b):
            return False
        for pos in _POSITIONS:
            if getattr(a, pos, None) != getattr(b, pos, None):
                return False
        return all(_same_tree(getattr(a, f, None), getattr(b, f, None)) for f in a._fields)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(map(_same_tree, a, b))
    return type(a) is type(b) and a == b


def test_same_tree_tells_a_moved_node_and_a_changed_value() -> None:
    base = ast.parse("x = f(1, y)\n")
    assert _same_tree(base, ast.parse("x = f(1, y)\n"))
    assert not _same_tree(base, ast.parse("x = f(1,  y)\n"))  # a column moved
    assert not _same_tree(base, ast.parse("x = f(2, y)\n"))
    assert not _same_tree(base, ast.parse("x = f(1, y, z)\n"))


def test_every_program_class_of_our_suites_parses_alone_as_in_its_file() -> None:
    files = sorted((ROOT / "ut").rglob("*.py")) + sorted((ROOT / "st").rglob("*.py"))
    compared = fallbacks = 0
    for path in files:
        text = path.read_text(encoding="utf-8")
        if "pl.program" not in text:
            continue
        lines = text.splitlines(keepends=True)
        for whole in _program_classes(ast.parse(text)):
            alone = class_source.parse_class_at(lines, _decorated_at(whole), whole.name)
            if alone is None:
                fallbacks += 1
                continue
            expected = copy.copy(whole)
            expected.decorator_list = []  # decorators are not part of the class's range
            assert _same_tree(alone, expected), f"{path}:{whole.lineno}"
            compared += 1
    assert compared > 300
    assert fallbacks <= compared // 50  # the fast path is the common one


MODULE = '''\
import pytest_pypto.language as pl


def factory(n):
    @pl.program
    class Nested:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
# a comment at column 0 inside the class
            t = pl.load(x, [0, 0], [n, 16])
            u = pl.exp(t, 3)  # nested-bad
    return Nested


def with_docstring():
    @pl.program
    class Doc:
        """A docstring whose second line
starts at column 0 (the class's range cannot be told from indentation)."""

        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            t = pl.load(x, [0, 0], [16, 16])
            u = pl.exp(t, 3)  # doc-bad
    return Doc


def spread_decorators():
    @(
        pl.program
    )
    class Spread:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            t = pl.load(x, [0, 0], [16, 16])
            u = pl.exp(t, 3)  # spread-bad
    return Spread


@pl.program
class Top:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32]): t = pl.load(x, [0, 0], [16, 16]); u = pl.exp(t, 3)  # top-bad
'''


def _import(path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """Import ``path``; it stays in sys.modules for the test (inspect finds a class's
    file through its module)."""
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def _line(marker: str) -> int:
    return line_of(MODULE, marker)


def _col(marker: str, text: str) -> int:
    return MODULE.splitlines()[_line(marker) - 1].index(text) + 1


@pytest.mark.parametrize(
    ("build", "marker", "whole_file"),
    [
        ("factory", "nested-bad", False),
        ("with_docstring", "doc-bad", True),
        ("spread_decorators", "spread-bad", True),
    ],
)
def test_errors_point_at_the_files_line_and_column_on_both_paths(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, build: str, marker: str, whole_file: bool
) -> None:
    path = tmp_path / f"ranges_{build}.py"
    path.write_text(MODULE, encoding="utf-8")
    module = _import(path, f"ranges_{build}", monkeypatch)
    make = getattr(module, build)
    with pytest.raises(InvalidOperationError, match="pl.exp takes at most 1 positional") as info:
        make(16) if build == "factory" else make()
    assert info.value.span.file == str(path)
    assert info.value.span.line == _line(marker)
    assert info.value.span.col == _col(marker, "pl.exp")
    assert f"{path}:{_line(marker)}" in str(info.value)
    # the class lines that hide their extent are read from the whole file
    assert (class_source._FILES[str(path)].classes is not None) == whole_file


def test_a_one_line_class_body_at_module_level(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ranges_top.py"
    path.write_text(MODULE, encoding="utf-8")
    module = _import(path, "ranges_top", monkeypatch)
    deferred = module.Top  # a module-level parse error is deferred to use
    with pytest.raises(InvalidOperationError, match="pl.exp takes at most 1 positional") as info:
        deferred.functions  # noqa: B018
    assert (info.value.span.line, info.value.span.col) == (_line("top-bad"), _col("top-bad", "pl.exp"))


@pytest.mark.parametrize(
    ("source", "line"),
    [
        ("@pl.program\nclass A:\n    x = 1\n", 1),  # decorator line (3.11+)
        ("@pl.program\nclass A:\n    x = 1\n", 2),  # class line (3.10)
        ("def f():\n    @pl.program\n    # note\n    class A(object):\n        x = 1\n    return A\n", 2),
    ],
)
def test_the_class_is_found_from_either_line(source: str, line: int) -> None:
    node = class_source.parse_class_at(source.splitlines(keepends=True), line, "A")
    assert isinstance(node, ast.ClassDef) and node.name == "A"
    whole = next(n for n in ast.walk(ast.parse(source)) if isinstance(n, ast.ClassDef))
    assert (node.lineno, node.col_offset, node.end_lineno) == (
        whole.lineno, whole.col_offset, whole.end_lineno
    )


@pytest.mark.parametrize(
    ("source", "line", "name"),
    [
        ("@pl.program\nclass AB:\n    x = 1\n", 1, "A"),  # another class's name
        ("x = 1\n@pl.program\nclass A:\n    x = 1\n", 1, "A"),  # not a decorator line
        ("@pl.program\n@other(\n    1)\nclass A:\n    x = 1\n", 1, "A"),  # spread decorator
        ("@pl.program\nclass A:\n    s = '''\nx'''\n", 1, "A"),  # cut through a string
        ("@pl.program\nclass A:\n    x = 1\n", 9, "A"),  # past the end
    ],
)
def test_what_cannot_be_read_alone_is_left_to_the_whole_file(
    source: str, line: int, name: str
) -> None:
    assert class_source.parse_class_at(source.splitlines(keepends=True), line, name) is None
