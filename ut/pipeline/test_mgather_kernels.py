# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.tile.mgather` inside whole kernels (docs/design/language.md §21): the Vec forms (an
INT32 index tile) and the Mat forms (a GM index tensor; elem mode with a GM scratch), run on
both simulators and checked against numpy.  A Mat result is read back through the cube as
``eye @ gathered``, the way a kernel consumes an L1 tile."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import PyptoError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
line_of = line_finder(__file__)
M, N, ROWS = 16, 32, 40


def _run(program, platform, *arrays):
    config = RunConfig(platform=platform)
    pytest_pypto.run(pytest_pypto.compile(program, config), *arrays, config=config)


def _vec_elem(valid):
    @pl.program
    class VecElem:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, mem: pl.Tensor[[M * N], pl.FP32], idx: pl.Tensor[[M, N], pl.INT32],
                   out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            it: pl.Tile[[M, N], pl.INT32] = pl.load(idx, [0, 0], [M, N], valid_shape=valid)
            got: pl.Tile[[M, N], pl.FP32] = pl.tile.mgather(mem, it, coalesce="elem",
                                                           gather_oob="wrap")
            return pl.store(got, [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, mem: pl.Tensor[[M * N], pl.FP32], idx: pl.Tensor[[M, N], pl.INT32],
                 out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            return self.kernel(mem, idx, out)

    return VecElem


@pytest.mark.parametrize("platform", PLATFORMS)
def test_vec_elem_gather_with_a_narrowed_index_tile(platform):
    rng = np.random.default_rng(3)
    mem = rng.standard_normal(M * N).astype(np.float32)
    idx = rng.integers(-5, 2 * M * N, (M, N)).astype(np.int32)
    out = np.zeros((M, N), np.float32)
    _run(_vec_elem([8, 20]), platform, mem, idx, out)
    want = np.zeros((M, N), np.float32)
    unsigned = idx[:8, :20].astype(np.int64) & 0xFFFFFFFF
    want[:8, :20] = mem[unsigned % (M * N)]
    np.testing.assert_array_equal(out, want)


def _mat(coalesce, valid_rows, oob="undefined"):
    if coalesce == "row":
        @pl.program
        class MatRow:
            @pl.function(type=pl.FunctionType.InCore)
            def kernel(self, mem: pl.Tensor[[ROWS, N], pl.FP16], idx: pl.Tensor[[1, M], pl.INT32],
                       eye: pl.Tensor[[M, M], pl.FP16],
                       out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
                got: pl.Tile[[M, N], pl.FP16] = pl.tile.mgather(
                    mem, idx, coalesce="row", gather_oob=oob,
                    target_memory=pl.MemorySpace.Mat, valid_shape=[valid_rows, N])
                e: pl.Tile[[M, M], pl.FP16] = pl.load(eye, [0, 0], [M, M],
                                                      valid_shape=[M, valid_rows],
                                                      target_memory=pl.MemorySpace.Mat)
                r: pl.Tile[[M, N], pl.FP32] = pl.matmul(e, got)
                return pl.store(r, [0, 0], out)

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, mem: pl.Tensor[[ROWS, N], pl.FP16], idx: pl.Tensor[[1, M], pl.INT32],
                     eye: pl.Tensor[[M, M], pl.FP16],
                     out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
                return self.kernel(mem, idx, eye, out)

        return MatRow

    @pl.program
    class MatElem:
        @pl.function(type=pl.FunctionType.InCore)
        def kernel(self, mem: pl.Tensor[[M * N], pl.FP16], idx: pl.Tensor[[M, N], pl.INT32],
                   scratch: pl.Tensor[[M * N], pl.FP16], eye: pl.Tensor[[M, M], pl.FP16],
                   out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            got: pl.Tile[[M, N], pl.FP16] = pl.tile.mgather(
                mem, idx, coalesce="elem", gather_oob=oob, target_memory=pl.MemorySpace.Mat,
                scratch=scratch, valid_shape=[valid_rows, N])
            e: pl.Tile[[M, M], pl.FP16] = pl.load(eye, [0, 0], [M, M], valid_shape=[M, valid_rows],
                                                  target_memory=pl.MemorySpace.Mat)
            r: pl.Tile[[M, N], pl.FP32] = pl.matmul(e, got)
            return pl.store(r, [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, mem: pl.Tensor[[M * N], pl.FP16], idx: pl.Tensor[[M, N], pl.INT32],
                 scratch: pl.Tensor[[M * N], pl.FP16], eye: pl.Tensor[[M, M], pl.FP16],
                 out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            return self.kernel(mem, idx, scratch, eye, out)

    return MatElem


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("valid_rows", [M, 8])
def test_mat_row_gather_read_through_the_cube(platform, valid_rows):
    mem = (np.arange(ROWS * N) % 53).astype(np.float16).reshape(ROWS, N)
    idx = np.array([[(i * 29 + 7) % ROWS for i in range(M)]], np.int32)
    eye = np.eye(M, dtype=np.float16)
    out = np.zeros((M, N), np.float32)
    _run(_mat("row", valid_rows), platform, mem, idx, eye, out)
    want = np.zeros((M, N), np.float32)
    want[:valid_rows] = mem[idx[0, :valid_rows]].astype(np.float32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_mat_elem_gather_with_scratch_and_zero_oob(platform):
    mem = (np.arange(M * N) % 53).astype(np.float16)
    idx = (np.arange(M * N, dtype=np.int32) * 7 - 4).reshape(M, N)
    idx[0, :3] = [-1, M * N, M * N + 5]
    scratch = np.zeros(M * N, np.float16)
    eye = np.eye(M, dtype=np.float16)
    out = np.zeros((M, N), np.float32)
    _run(_mat("elem", M, "zero"), platform, mem, idx, scratch, eye, out)
    unsigned = idx.astype(np.int64) & 0xFFFFFFFF
    inside = unsigned < M * N
    want = np.where(inside, mem[np.where(inside, unsigned, 0)], 0).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_a_vec_gather_still_needs_an_index_tile():
    with pytest.raises(PyptoError, match="index tile") as info:
        @pl.program
        class VecFromTensor:
            @pl.function(type=pl.FunctionType.InCore)
            def kernel(self, mem: pl.Tensor[[ROWS, N], pl.FP32], idx: pl.Tensor[[1, M], pl.INT32],
                       out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
                got: pl.Tile[[M, N], pl.FP32] = pl.tile.mgather(mem, idx)  # vec-tensor-idx
                return pl.store(got, [0, 0], out)
    assert info.value.span.line == line_of("vec-tensor-idx")
