# SPDX-License-Identifier: Apache-2.0
"""PyPTO's op tail on both sims: pl.arange / pl.tensor.ci, pl.tensor.reinterpret_view,
pl.tensor.view, and pl.tile.max / pl.tile.min (the Scalar max/min).

References are numpy written here (np.arange, ndarray.view, reshape, Python max/min).
"""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_kit import PLATFORMS, run

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import InvalidOperationError, ParserTypeError
from ut.helpers import line_finder

line_of = line_finder(__file__)


def _arange_program(dt, n, start, descending):
    @pl.program
    class Arange:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, o: pl.Out[pl.Tensor[[1, n], dt]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                r = pl.arange(start, [1, n], dtype=dt, descending=descending)
                o = pl.assemble(o, r, [0, 0])
            return o

    return Arange


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("dt", "np_dt", "n", "start", "descending"), [
    (pl.INT32, np.int32, 64, 7, False),
    (pl.INT32, np.int32, 16, 5, True),
    (pl.INT16, np.int16, 32, 32760, False),  # wraps past INT16_MAX
])
def test_arange_is_numpy_arange(platform, dt, np_dt, n, start, descending):
    out = np.zeros((1, n), np_dt)
    run(_arange_program, (dt, n, start, descending), platform, out)
    k = np.arange(n, dtype=np.int64)
    want = ((start - k) if descending else (start + k)).astype(np_dt)  # two's-complement wrap
    np.testing.assert_array_equal(out[0], want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_ci_spelling_matches_arange(platform):
    @pl.program
    class Ci:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, o: pl.Out[pl.Tensor[[1, 32], pl.INT32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                r = pl.tensor.ci(-3, [1, 32])
                o = pl.assemble(o, r, [0, 0])
            return o

    out = np.zeros((1, 32), np.int32)
    run(lambda: Ci, (), platform, out)
    np.testing.assert_array_equal(out[0], np.arange(-3, 29, dtype=np.int32))


def test_arange_needs_a_single_row():
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, o: pl.Out[pl.Tensor[[4, 32], pl.INT32]]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    r = pl.arange(0, [4, 32])  # ci-rows
                    o = pl.assemble(o, r, [0, 0])
                return o
    assert "tensor.ci fills only the first row" in info.value.message
    assert info.value.line == line_of("ci-rows")


def _views_program():
    @pl.program
    class Views:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[4, 8], pl.INT32], a: pl.Out[pl.Tensor[[4, 16], pl.INT16]],
                 b: pl.Out[pl.Tensor[[8, 4], pl.INT32]], c: pl.Out[pl.Tensor[[2, 8], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                halves = pl.tensor.reinterpret_view(x, pl.INT16)
                a = pl.assemble(a, halves, [0, 0])
                tall = pl.tensor.view(x, [8, 4])
                b = pl.assemble(b, tall, [0, 0])
                floats = pl.tensor.reinterpret_view(x, pl.FP32, shape=[2, 16])
                part = pl.slice(floats, [2, 8], [0, 8])
                c = pl.assemble(c, pl.add(part, part), [0, 0])
            return a, b, c

    return Views


@pytest.mark.parametrize("platform", PLATFORMS)
def test_reinterpret_view_and_view_read_the_same_bytes(platform):
    rng = np.random.default_rng(5)
    x = rng.integers(-2**31, 2**31 - 1, size=(4, 8), dtype=np.int64).astype(np.int32)
    x[:, :] = np.float32(rng.standard_normal((4, 8))).view(np.int32)  # finite floats as bits
    a = np.zeros((4, 16), np.int16)
    b = np.zeros((8, 4), np.int32)
    c = np.zeros((2, 8), np.float32)
    run(_views_program, (), platform, x, a, b, c)
    np.testing.assert_array_equal(a, x.view(np.int16))
    np.testing.assert_array_equal(b, x.reshape(8, 4))
    f = x.reshape(2, 16).view(np.float32)[:, 8:]
    np.testing.assert_array_equal(c, f + f)


def test_reinterpret_view_shape_must_keep_the_bytes():
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, x: pl.Tensor[[4, 8], pl.INT32], o: pl.Out[pl.Tensor[[4, 8], pl.INT16]]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    h = pl.tensor.reinterpret_view(x, pl.INT16, shape=[4, 8])  # rv-bytes
                    o = pl.assemble(o, h, [0, 0])
                return o
    assert "requires shape of the source's byte size 128" in info.value.message
    assert info.value.line == line_of("rv-bytes")


def test_view_must_keep_the_element_count_and_layout():
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, x: pl.Tensor[[4, 8], pl.INT32], o: pl.Out[pl.Tensor[[8, 8], pl.INT32]]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    v = pl.tensor.view(x, [8, 8])  # view-count
                    o = pl.assemble(o, v, [0, 0])
                return o
    assert "requires the same element count" in info.value.message
    assert info.value.line == line_of("view-count")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_max_min_are_scalar_max_min(platform):
    @pl.program
    class MaxMin:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, x: pl.Tensor[[1, 8], pl.INT32],
                   o: pl.InOut[pl.Tensor[[1, 8], pl.INT32]]) -> pl.Tensor[[1, 8], pl.INT32]:
            t: pl.Tile[[1, 8], pl.INT32] = pl.load(x, [0, 0], [1, 8])
            a: pl.Scalar[pl.INT32] = pl.tile.read(t, [0, 0])
            b: pl.Scalar[pl.INT32] = pl.tile.read(t, [0, 1])
            t = pl.tile.write(t, [0, 2], pl.tile.max(a, b))
            t = pl.tile.write(t, [0, 3], pl.tile.min(a, b))
            return pl.store(t, [0, 0], o)

        @pl.function(type=pl.FunctionType.Orchestration)
        def orchestrator(self, x: pl.Tensor[[1, 8], pl.INT32],
                         o: pl.InOut[pl.Tensor[[1, 8], pl.INT32]]) -> pl.Tensor[[1, 8], pl.INT32]:
            o = self.kernel(x, o)
            return o

    for a, b in ((5, -3), (-9, 4)):
        x = np.array([[a, b, 0, 0, 11, 12, 13, 14]], np.int32)
        out = np.zeros((1, 8), np.int32)
        run(lambda: MaxMin, (), platform, x, out)
        np.testing.assert_array_equal(out[0], [a, b, max(a, b), min(a, b), 11, 12, 13, 14])


def test_tile_max_rejects_tiles():
    with pytest.raises(InvalidOperationError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
                t: pl.Tile[[1, 8], pl.INT32] = pl.load(x, [0, 0], [1, 8])
                m = pl.tile.max(t, t)  # max-tile
                return x
    assert "pl.max is the Scalar maximum, not a tile op" in info.value.message
    assert info.value.line == line_of("max-tile")
