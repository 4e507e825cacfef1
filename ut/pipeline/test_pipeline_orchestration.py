# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Orchestration reads and dynamic shapes through the whole pipeline on both sims:
`pl.tensor.read` (a sync point: it sees what earlier tasks wrote) driving `if`s, loop
bounds and kernel Scalars, `pl.tensor.write`, `pl.tensor.dim` on `pl.dynamic` dims,
composite dims (`M * 2`) and `pl.create_tensor` with dynamic dims.  numpy references
are written here."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from ut.pipeline.pipeline_kit import PLATFORMS

M = pl.dynamic("M")
N = pl.dynamic("N")
TM = 16


@functools.cache
def _compiled(program, platform):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def _run(program, platform, *arrays):
    pytest_pypto.run(_compiled(program, platform), *arrays, config=RunConfig(platform=platform))


@pl.program
class ReadDriven:
    """A kernel counts rows above a threshold into ``count``; the orchestration reads the
    count back (waiting for that task) and runs the scaling kernel that many times."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[TM, 64], pl.FP32], s: pl.Scalar[pl.FP32],
              y: pl.Out[pl.Tensor[[TM, 64], pl.FP32]]) -> pl.Tensor[[TM, 64], pl.FP32]:
        y = pl.store(pl.mul(pl.load(x, [0, 0], [TM, 64]), s), [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def copy_flag(self, src: pl.Tensor[[1, 64], pl.INT32],
                  dst: pl.Out[pl.Tensor[[1, 64], pl.INT32]]) -> pl.Tensor[[1, 64], pl.INT32]:
        dst = pl.store(pl.load(src, [0, 0], [1, 64]), [0, 0], dst)
        return dst

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[TM, 64], pl.FP32], flags: pl.Tensor[[1, 64], pl.INT32],
             y: pl.Out[pl.Tensor[[TM, 64], pl.FP32]],
             log: pl.Out[pl.Tensor[[4], pl.INT32]]) -> pl.Tensor[[TM, 64], pl.FP32]:
        staged = pl.create_tensor([1, 64], dtype=pl.INT32)
        staged = self.copy_flag(flags, staged)      # a task writes the tensor ...
        reps: pl.Scalar[pl.INT32] = pl.tensor.read(staged, [0, 0])  # ... the read waits for it
        mode = pl.tensor.read(staged, [0, 1])
        if mode == 1:
            factor = 2.0
        else:
            factor = 3.0
        cur = x
        for i in pl.range(reps):
            nxt = pl.create_tensor([TM, 64], dtype=pl.FP32)
            nxt = self.scale(cur, factor, nxt)
            cur = nxt
        y = self.scale(cur, 1.0, y)
        pl.tensor.write(log, [0], reps)
        pl.tensor.write(log, [1], mode)
        pl.tensor.write(log, [2], reps * 10 + mode)
        pl.tensor.write(log, [3], 7)
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("reps", "mode"), [(0, 1), (2, 1), (3, 0)])
def test_read_values_drive_branches_loops_and_writes(platform, reps, mode):
    x = np.random.default_rng(reps).standard_normal((TM, 64)).astype(np.float32)
    flags = np.zeros((1, 64), np.int32)
    flags[0, 0], flags[0, 1] = reps, mode
    y = np.zeros((TM, 64), np.float32)
    log = np.zeros(4, np.int32)
    _run(ReadDriven, platform, x, flags, y, log)
    factor = np.float32(2.0 if mode == 1 else 3.0)
    want = x.copy()
    for _ in range(reps):
        want = want * factor
    np.testing.assert_array_equal(y, want)
    np.testing.assert_array_equal(log, [reps, mode, reps * 10 + mode, 7])


@pl.program
class DynamicDims:
    """Composite dims (rows = M * 2), dims read in kernels and in the orchestration, a
    create_tensor with dynamic dims, and a loop bound computed from a dim."""

    @pl.function(type=pl.FunctionType.InCore)
    def add_rows(self, a: pl.Tensor[[M * 2, N], pl.FP32], s: pl.Scalar[pl.FP32],
                 c: pl.Out[pl.Tensor[[M * 2, N], pl.FP32]]) -> pl.Tensor[[M * 2, N], pl.FP32]:
        rows = pl.tensor.dim(a, 0)
        for r in pl.range(0, rows, TM):
            t = pl.load(a, [r, 0], [TM, 32])
            c = pl.store(pl.add(t, s), [r, 0], c)
        return c

    @pl.function(type=pl.FunctionType.InCore)
    def add_m(self, a: pl.Tensor[[M * 2, N], pl.FP32],
              c: pl.Out[pl.Tensor[[M * 2, N], pl.FP32]]) -> pl.Tensor[[M * 2, N], pl.FP32]:
        for blk in pl.range(M * 2 // TM):  # M itself is read off the composite dim
            t = pl.load(a, [blk * TM, 0], [TM, 32])
            c = pl.store(pl.add(t, pl.cast(M, pl.FP32)), [blk * TM, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M * 2, N], pl.FP32],
             c: pl.Out[pl.Tensor[[M * 2, N], pl.FP32]],
             dims: pl.Out[pl.Tensor[[3], pl.INDEX]]) -> pl.Tensor[[M * 2, N], pl.FP32]:
        rows: pl.Scalar[pl.INT64] = pl.tensor.dim(a, 0)
        cols = pl.tensor.dim(a, -1)
        tmp = pl.create_tensor([M * 2, N], dtype=pl.FP32)
        tmp = self.add_rows(a, 0.5, tmp)
        c = self.add_m(tmp, c)
        pl.tensor.write(dims, [0], rows)
        pl.tensor.write(dims, [1], cols)
        pl.tensor.write(dims, [2], M + 1)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("half_rows", [8, 24])
def test_dynamic_and_composite_dims(platform, half_rows):
    rows = 2 * half_rows
    a = np.random.default_rng(rows).standard_normal((rows, 32)).astype(np.float32)
    c = np.zeros((rows, 32), np.float32)
    dims = np.zeros(3, np.int64)
    _run(DynamicDims, platform, a, c, dims)
    want = (a + np.float32(0.5)) + np.float32(half_rows)  # two FP32 adds, each rounded
    np.testing.assert_array_equal(c, want)
    np.testing.assert_array_equal(dims, [rows, 32, half_rows + 1])
