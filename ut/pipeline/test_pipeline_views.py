# ruff: noqa: F841  (kernel bodies are parsed, never run)
"""Views and element access through the whole pipeline on both sims, against numpy:
tile slices feeding matmuls, transpose_view, reshape/transpose/set_validshape,
read/write, subscripts on tiles and tensors, tensor views inside InCore, tile
assemble (a5 only), a rank-2 tile stored into a rank-3 tensor, and bounds errors."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import BoundsError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")


line_of = line_finder(__file__)


def run(program, platform, *arrays):
    compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    pytest_pypto.run(compiled, *arrays, config=RunConfig(platform=platform))


def fp16(rng, shape):
    return (rng.standard_normal(shape) * 2).astype(np.float16)


@pl.program
class MatSliceKSplit:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[64, 32], pl.FP16],
          c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        a_mat = pl.load(a, [0, 0], [16, 64], target_memory=pl.Mem.Mat)
        b_mat = pl.load(b, [0, 0], [64, 32], target_memory=pl.Mem.Mat)
        a0 = pl.move(pl.slice(a_mat, [16, 32], [0, 0]), target_memory=pl.Mem.Left)
        a1 = pl.move(a_mat[:, 32:64], target_memory=pl.Mem.Left)
        b0 = pl.move(b_mat[0:32, :], target_memory=pl.Mem.Right)
        b1 = pl.move(pl.tile.slice(b_mat, [32, 32], [32, 0]), target_memory=pl.Mem.Right)
        acc = pl.matmul(a0, b0)
        acc = pl.matmul_acc(acc, a1, b1)
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP16], b: pl.Tensor[[64, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mat_slices_feed_a_k_split_matmul(platform):
    rng = np.random.default_rng(1)
    a, b = fp16(rng, (16, 64)), fp16(rng, (64, 32))
    c = np.zeros((16, 32), np.float32)
    run(MatSliceKSplit, platform, a, b, c)
    want = a[:, :32].astype(np.float32) @ b[:32].astype(np.float32) \
        + a[:, 32:].astype(np.float32) @ b[32:].astype(np.float32)
    np.testing.assert_allclose(c, want, rtol=1e-5, atol=1e-4)


@pl.program
class TransposeViewMatmul:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[16, 32], pl.FP16],
          c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        a_l = pl.move(pl.load(a, [0, 0], [16, 32], target_memory=pl.Mem.Mat),
                      target_memory=pl.Mem.Left)
        b_mat = pl.load(b, [0, 0], [16, 32], target_memory=pl.Mem.Mat)
        b_t = pl.move(pl.tile.transpose_view(b_mat), target_memory=pl.Mem.Right)
        c = pl.store(pl.matmul(a_l, b_t), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP16], b: pl.Tensor[[16, 32], pl.FP16],
             c: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transpose_view_feeds_a_b_transposed_matmul(platform):
    rng = np.random.default_rng(2)
    a, b = fp16(rng, (16, 32)), fp16(rng, (16, 32))
    c = np.zeros((16, 16), np.float32)
    run(TransposeViewMatmul, platform, a, b, c)
    np.testing.assert_allclose(c, a.astype(np.float32) @ b.astype(np.float32).T,
                               rtol=1e-5, atol=1e-4)


@pl.program
class VecViews:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 16], pl.FP32],
          out: pl.InOut[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [8, 16])
        tt = pl.transpose(t, 0, 1)                 # [16, 8] copy
        r = pl.reshape(tt, [8, 16])                # same cells, new shape
        s = pl.read(r, [1, 3])
        pl.write(r, [0, 0], s * 2.0)
        v = pl.set_validshape(r, 3, 10)
        out = pl.store(v, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.FP32],
             out: pl.InOut[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        out = self.k(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transpose_reshape_read_write_set_validshape(platform):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((8, 16)).astype(np.float32)
    out = np.full((8, 16), -7.25, np.float32)
    run(VecViews, platform, x, out)
    r = x.T.reshape(8, 16).copy()
    r[0, 0] = np.float32(r[1, 3] * 2)
    want = np.full((8, 16), -7.25, np.float32)
    want[:3, :10] = r[:3, :10]  # only the valid region is stored
    np.testing.assert_array_equal(out, want)


@pl.program
class Subscripts:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[2, 4, 16], pl.FP32], y: pl.Tensor[[8, 16], pl.FP32],
          out: pl.InOut[pl.Tensor[[2, 4, 16], pl.FP32]],
          col: pl.Out[pl.Tensor[[4, 16], pl.FP32]]):
        t3 = pl.load(x, [0, 0, 0], [2, 4, 16])
        plane = t3[1]                              # rank-dropping: [4, 16]
        half = t3[0, 1:3, :]                       # [2, 16]
        e = t3[1, 2, 5]                            # element read
        s = pl.add(plane, pl.adds(plane, e))
        out = pl.store(s, [0, 0, 0], out)          # rank-2 tile into a rank-3 tensor
        out = pl.store(half, [1, 2, 0], out)
        col[0:4, :] = y[2:6, :]                    # tensor window -> tensor window
        return out, col

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[2, 4, 16], pl.FP32], y: pl.Tensor[[8, 16], pl.FP32],
             out: pl.InOut[pl.Tensor[[2, 4, 16], pl.FP32]],
             col: pl.Out[pl.Tensor[[4, 16], pl.FP32]]):
        out, col = self.k(x, y, out, col)
        return out, col


@pytest.mark.parametrize("platform", PLATFORMS)
def test_subscripts_rank_dropping_and_nd_stores(platform):
    rng = np.random.default_rng(4)
    x = rng.standard_normal((2, 4, 16)).astype(np.float32)
    y = rng.standard_normal((8, 16)).astype(np.float32)
    out = np.zeros((2, 4, 16), np.float32)
    col = np.zeros((4, 16), np.float32)
    run(Subscripts, platform, x, y, out, col)
    want = np.zeros((2, 4, 16), np.float32)
    plane = x[1]
    want[0] = plane + (plane + x[1, 2, 5])
    want[1, 2:4] = x[0, 1:3]
    np.testing.assert_array_equal(out, want)
    np.testing.assert_array_equal(col, y[2:6])


@pl.program
class TensorViewsInCore:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 16], pl.FP32],
          out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[16, 4], pl.FP32]:
        w = pl.tensor.slice(x, [4, 16], [2, 0])
        wt = pl.tensor.transpose(w, 0, 1)          # [16, 4] strided view
        t = pl.load(wt, [0, 0], [16, 4])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[16, 4], pl.FP32]:
        out = self.k(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_slice_and_transpose_views_inside_incore(platform):
    x = np.arange(128, dtype=np.float32).reshape(8, 16)
    out = np.zeros((16, 4), np.float32)
    run(TensorViewsInCore, platform, x, out)
    np.testing.assert_array_equal(out, x[2:6].T)


@pl.program
class TileAssemble:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32], s: pl.Tensor[[16, 8], pl.FP32],
          y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 16])
        u = pl.load(s, [0, 0], [16, 8])
        t[:, 8:16] = u  # tile-assemble
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], s: pl.Tensor[[16, 8], pl.FP32],
             y: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        y = self.k(x, s, y)
        return y


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_tile_assemble_runs_on_both_archs(platform):
    # PyPTO registers tile.assemble for both backends (only the MX matmuls are A5-only).
    rng = np.random.default_rng(5)
    x = rng.standard_normal((16, 16)).astype(np.float32)
    s = rng.standard_normal((16, 8)).astype(np.float32)
    y = np.zeros((16, 16), np.float32)
    run(TileAssemble, platform, x, s, y)
    want = x.copy()
    want[:, 8:] = s
    np.testing.assert_array_equal(y, want)


@pl.program
class SliceOverrun:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 16], pl.FP32],
          y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]) -> pl.Tensor[[8, 8], pl.FP32]:
        t = pl.load(x, [0, 0], [8, 16])
        for i in pl.range(3):
            w = pl.tile.slice(t, [8, 8], [0, i * 8])  # overrun
            y = pl.store(w, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.FP32],
             y: pl.Out[pl.Tensor[[8, 8], pl.FP32]]) -> pl.Tensor[[8, 8], pl.FP32]:
        y = self.k(x, y)
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_loop_offset_overrunning_a_tile_is_a_compile_bounds_error(platform):
    with pytest.raises(BoundsError, match="offset 16 \\+ extent 8 > source tile extent 16") as ei:
        pytest_pypto.compile(SliceOverrun, RunConfig(platform=platform))
    assert ei.value.line == line_of("# overrun") and ei.value.file == __file__
