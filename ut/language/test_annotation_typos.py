# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Misspelled annotations (`pl.Tensor[M, N, pl.FP32]` & co.): a message that says what is
wrong and how to write it, at the user's line, never the Tier-3 "needs PyPTO" hint."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import ParserTypeError, UnsupportedFeatureError

M, N = 64, 32
D = pl.dynamic("D")


def _check(ei: pytest.ExceptionInfo[ParserTypeError], message: str, hint: str, line: int) -> None:
    err = ei.value
    assert err.message == message
    assert err.hint == hint
    assert (err.file, err.line) == (__file__, line)
    assert "PyPTO installation" not in str(err) and "pypto_onboard" not in str(err)


def test_shape_not_in_a_list(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[M, N, pl.FP32]):  # dims
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[M, N, pl.FP32]: the shape must be a list; written like this, every "
        "dimension is a separate argument",
        "write pl.Tensor[[M, N], pl.FP32]",
        line_of("dims"),
    )
    # The caret points at the annotation itself.
    assert ei.value.column == len("            def k(self, x: ") + 1
    assert "            def k(self, x: pl.Tensor[M, N, pl.FP32]):  # dims" in str(ei.value)


def test_shape_not_in_a_list_inside_out_and_with_dynamic_dims(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, N], pl.FP32],
                  out: pl.Out[pl.Tensor[D, 32, pl.FP16]]):  # out
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[D, 32, pl.FP16]: the shape must be a list; written like this, every "
        "dimension is a separate argument",
        "write pl.Tensor[[D, 32], pl.FP16]",
        line_of("out"),
    )
    assert ei.value.column == len("                  out: pl.Out[") + 1


def test_no_list_and_no_dtype(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[M, N]):  # bare
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[M, N]: the shape must be a list, and a dtype follows; written like "
        "this, every dimension is a separate argument",
        "write pl.Tensor[[M, N], pl.FP32] (with the dtype you need)",
        line_of("bare"),
    )


def test_missing_dtype(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, N]]):  # nodtype
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[[M, N]] has no dtype",
        "write pl.Tensor[[M, N], pl.FP32] (with the dtype you need)",
        line_of("nodtype"),
    )


def test_dtype_first(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[pl.BF16, [M, N]]):  # first
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[pl.BF16, [M, N]]: the shape comes first, then the dtype",
        "write pl.Tensor[[M, N], pl.BF16]",
        line_of("first"),
    )
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[pl.FP32, M, N]):  # first-dims
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[pl.FP32, M, N]: the shape comes first, then the dtype",
        "write pl.Tensor[[M, N], pl.FP32]",
        line_of("first-dims"),
    )
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K3:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[pl.FP32]):  # dtype-only
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[pl.FP32] has no shape",
        "write pl.Tensor[[M, N], pl.FP32] with the tensor's dimensions",
        line_of("dtype-only"),
    )


def test_tile_misspellings_keep_the_memory_space(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, N], pl.FP32]):
                t: pl.Tile[M, N, pl.FP32, pl.Mem.Vec] = pl.load(x, [0, 0], [M, N])  # tile
    _check(
        ei,
        "pl.Tile[M, N, pl.FP32, pl.Mem.Vec]: the shape must be a list; written like this, "
        "every dimension is a separate argument",
        "write pl.Tile[[M, N], pl.FP32, pl.Mem.Vec]",
        line_of("tile"),
    )
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, N], pl.FP32]):
                t: pl.Tile[pl.FP32, [M, N], pl.Mem.Vec] = pl.load(x, [0, 0], [M, N])  # tfirst
    _check(
        ei,
        "pl.Tile[pl.FP32, [M, N], pl.Mem.Vec]: the shape comes first, then the dtype",
        "write pl.Tile[[M, N], pl.FP32, pl.Mem.Vec]",
        line_of("tfirst"),
    )


def test_an_alias_is_quoted_as_written(line_of):
    T = pl.Tensor

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: T[M, N, pl.FP32]):  # alias
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "T[M, N, pl.FP32]: the shape must be a list; written like this, every dimension "
        "is a separate argument",
        "write T[[M, N], pl.FP32]",
        line_of("alias"),
    )


def test_an_annotation_built_elsewhere_is_rendered_from_its_values(line_of):
    """An annotation held in a variable has no literal items to quote: the values show."""
    bad = pl.Tensor[M, N, pl.FP32]

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: bad):  # held
                t = pl.load(x, [0, 0], [M, N])
    _check(
        ei,
        "pl.Tensor[64, 32, pl.FP32]: the shape must be a list; written like this, every "
        "dimension is a separate argument",
        "write pl.Tensor[[64, 32], pl.FP32]",
        line_of("held"),
    )


def test_real_layout_markers_still_name_tier_3() -> None:
    """The right spelling with an extra marker stays what it was: a Tier-3 construct."""

    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[M, N], pl.FP32, pl.NZ]):
            t = pl.load(x, [0, 0], [M, N])

    import pytest_pypto

    with pytest.raises(UnsupportedFeatureError, match="tier 3: tensor layout markers"):
        pytest_pypto.compile(K)
