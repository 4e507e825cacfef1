# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.TileView(...)` in pl.Tile annotations: PyPTO's keywords, valid_shape and pad checked."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import ParserTypeError
from pytest_pypto.ir.types import TileType
from pytest_pypto.language.surface import TileView
from ut.helpers import line_finder

line_of = line_finder(__file__)


def k_view(VALID):
    @pl.program
    class View:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
              out: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            t: pl.Tile[[16, 64], pl.FP32, pl.Mem.Vec,  # view-line
                       pl.TileView(valid_shape=VALID, blayout=pl.TileLayout.row_major,
                                   slayout=pl.TileLayout.none_box, fractal=512,
                                   stride=[64, 1], start_offset=0,
                                   compact=pl.CompactMode.null)] = pl.load(
                x, [0, 0], [16, 64], valid_shapes=[8, 64])
            u: pl.Tile[[16, 64], pl.FP32, pl.TileView(valid_shape=[n, 64])] = \
                pl.tile.set_validshape(t, n, 64)
            v = pl.add(u, 1.0)
            out = pl.store(v, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
                 out: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
            out = self.k(x, n, out)
            return out

    return View


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_tileview_annotations_with_every_keyword_compile_and_run(platform):
    x = np.arange(1024, dtype=np.float32).reshape(16, 64)
    out = np.full((16, 64), -3.0, np.float32)
    compiled = pytest_pypto.compile(k_view([8, 64]), RunConfig(platform=platform))
    pytest_pypto.run(compiled, x, 5, out, config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out[:5], x[:5] + 1)
    assert (out[5:] == -3.0).all()  # outside the run-time valid rows: untouched


def test_tileview_valid_shape_disagreeing_with_the_value_is_an_error_at_the_line():
    with pytest.raises(ParserTypeError) as exc:
        k_view([4, 64])
    assert "says valid_shape[0] = 4, but the value's valid region is [8, 64]" in \
        exc.value.message
    assert exc.value.line == line_of("# view-line")


def test_tileview_valid_shape_of_the_wrong_rank_is_an_error():
    with pytest.raises(ParserTypeError) as exc:
        k_view([8])
    assert "valid_shape [8] has 1 dims, but the tile is rank 2" in exc.value.message
    assert exc.value.line == line_of("# view-line")


def k_bad_keyword():
    @pl.program
    class BadKeyword:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
            t: pl.Tile[[16, 64], pl.FP32, pl.TileView(layout=1)] = pl.load(  # kw-line
                x, [0, 0], [16, 64])

    return BadKeyword


def k_bad_pad():
    @pl.program
    class BadPad:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
            t: pl.Tile[[16, 64], pl.FP32, pl.TileView(pad=0)] = pl.load(  # pad-line
                x, [0, 0], [16, 64])

    return BadPad


def test_tileview_unknown_keyword_and_bad_pad_are_errors_naming_valid_values():
    with pytest.raises(ParserTypeError) as exc:
        k_bad_keyword()
    assert "pl.TileView got an unexpected keyword 'layout'" in exc.value.message
    assert "valid_shape, stride, start_offset, blayout" in (exc.value.hint or "")
    assert exc.value.line == line_of("# kw-line")


def test_tileview_pad_must_be_a_padvalue():
    with pytest.raises(ParserTypeError) as exc:
        k_bad_pad()
    assert "pad= must be one of pl.PadValue.null, pl.PadValue.zero" in exc.value.message
    assert exc.value.line == line_of("# pad-line")


def test_tileview_records_every_keyword_and_declares_the_tile_type():
    view = TileView(valid_shape=[4, 8], stride=[8, 1], start_offset=0,
                    blayout=pl.TileLayout.col_major, slayout=pl.TileLayout.row_major,
                    fractal=1024, pad=pl.PadValue.zero, compact=pl.CompactMode.normal)
    assert (view.valid_shape, view.stride, view.fractal) == ((4, 8), (8, 1), 1024)
    assert view.blayout is pl.TileLayout.col_major and view.pad is pl.PadValue.zero

    @pl.program
    class Padded:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 64], pl.FP32]):
            t: pl.Tile[[16, 64], pl.FP32, pl.TileView(valid_shape=[16, 64],
                                                      pad=pl.PadValue.zero)] = pl.load(
                x, [0, 0], [16, 64])

    ann = Padded.functions["k"].body[0].annotation
    assert isinstance(ann, TileType) and ann.pad == "zero" and tuple(ann.valid) == (16, 64)
