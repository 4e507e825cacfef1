# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, F823  (kernel bodies are parsed, never run: their locals look unused)
"""The parser analyses each source file once per process: an edited file is read and
parsed again, and a program decorated many times gets the same result every time."""

from __future__ import annotations

import ast
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import ParserSyntaxError
from pytest_pypto.ir.types import TensorType
from pytest_pypto.language.sources import statement_lines

KERNEL = """\
import pytest_pypto.language as pl
{padding}
ROWS = {rows}


@pl.program
class P:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[ROWS, 16], pl.{dtype}]):
        t = pl.load(x, [0, 0], [ROWS, 16])
"""


def _import(path: Path, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module


def test_editing_a_file_between_two_decorations_parses_it_again(tmp_path: Path) -> None:
    path = tmp_path / "kernel_edited.py"
    path.write_text(KERNEL.format(padding="", rows=8, dtype="FP32"), encoding="utf-8")
    first = _import(path, "kernel_edited").P
    # The class moves down four lines, the shape and dtype change, the size changes;
    # the mtime is pushed forward so even a coarse clock sees the edit.
    path.write_text(KERNEL.format(padding="\n" * 4, rows=32, dtype="FP16"), encoding="utf-8")
    stat = path.stat()
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 2_000_000_000))
    second = _import(path, "kernel_edited").P

    assert first.functions["k"].params[0].type == TensorType((8, 16), dtypes.FP32)
    assert second.functions["k"].params[0].type == TensorType((32, 16), dtypes.FP16)
    # `class P:` is line 7 of the first version and line 11 of the second.
    assert (first.span.line, second.span.line) == (7, 11)
    assert second.source_lines[10] == "class P:"


def _program(rows: int):
    @pl.program
    class Factory:  # nested-factory
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[rows, 16], pl.FP32]):
            t = pl.load(x, [0, 0], [rows, 16])

    return Factory


def test_a_program_decorated_many_times_folds_each_callers_constants() -> None:
    shapes = [_program(rows).functions["k"].params[0].type.shape for rows in (8, 16, 8)]
    assert shapes == [(8, 16), (16, 16), (8, 16)]


def _shadowing():
    n = 4

    @pl.program
    class Shadow:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            t = pl.load(x, [0, 0], [n, 16])  # use-before-assign
            n = 8

    return Shadow


def test_repeated_decoration_reports_the_same_error_at_the_same_line(line_of) -> None:
    errors = []
    for _ in range(2):
        with pytest.raises(ParserSyntaxError) as info:
            _shadowing()
        errors.append(info.value)
    first, second = errors
    assert "'n' is used before it is assigned in function 'k'" in str(first)
    assert str(first) == str(second)
    assert first.span == second.span
    assert first.span.line == line_of("use-before-assign")


@pl.program
class Factory:  # later-factory
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4, 16], pl.FP32]):
        t = pl.load(x, [0, 0], [4, 16])


def test_classes_of_the_same_name_in_one_file_are_told_apart_by_line(line_of) -> None:
    # `Factory` is both nested in _program() and defined at module level, below it.
    nested = _program(8)
    assert nested.span.line == line_of("nested-factory")
    assert nested.functions["k"].params[0].type == TensorType((8, 16), dtypes.FP32)
    assert Factory.span.line == line_of("later-factory")
    assert Factory.functions["k"].params[0].type == TensorType((4, 16), dtypes.FP32)


def test_statement_lines_span_the_decorators_to_the_last_line() -> None:
    tree = ast.parse(
        "x = 1\n\n@a\n@b(\n    c)\nclass K:\n    y = 2\n\n    def f(self):\n        pass\n"
    )
    cls = tree.body[1]
    assert statement_lines(cls) == (3, 10)
    assert statement_lines(cls.body[1]) == (9, 10)  # undecorated: its own first line
