# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Loops and control flow through the whole pipeline on both sims, against numpy:
values carried out of plain loops, break / continue, Python `while` and `pl.while_`,
in InCore kernels and in the orchestration.  References are written here, by hand."""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from ut.pipeline.pipeline_kit import PLATFORMS

R, C, TR = 256, 64, 64  # four row blocks of 64


@functools.cache
def _compiled(program, platform):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def _run(program, platform, *arrays):
    pytest_pypto.run(_compiled(program, platform), *arrays, config=RunConfig(platform=platform))


def _blocks(a, b, keep):
    """c = a + b on the row blocks ``keep`` (indices of 64-row blocks), 0 elsewhere."""
    c = np.zeros((R, C), np.float32)
    for k in keep:
        c[k * TR:(k + 1) * TR] = a[k * TR:(k + 1) * TR] + b[k * TR:(k + 1) * TR]
    return c


@pl.program
class Escape:  # `out` is first bound inside the loop and returned after it
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for i in pl.range(4):
            ta = pl.load(a, [i * TR, 0], [TR, C])
            out = pl.store(pl.add(ta, pl.load(b, [i * TR, 0], [TR, C])), [i * TR, 0], c)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pl.program
class BreakContinue:  # i = 0 and 2 only: odd blocks skipped, loop left at i == 3
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for i in pl.range(4):
            if i >= 3:
                break
            if i % 2 != 0:
                continue
            t = pl.add(pl.load(a, [i * TR, 0], [TR, C]), pl.load(b, [i * TR, 0], [TR, C]))
            out = pl.store(t, [i * TR, 0], c)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pl.program
class PythonWhile:  # a natural while with a carried counter and a continue
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        i: pl.Scalar[pl.INDEX] = 0
        while i < 4:
            row = i * TR
            i = i + 1
            if i == 2:
                continue  # skips block 1
            out = pl.store(pl.add(pl.load(a, [row, 0], [TR, C]), pl.load(b, [row, 0], [TR, C])),
                           [row, 0], c)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pl.program
class WhileUnderscore:  # pl.while_ carrying the counter and the tensor, with a break
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for (j, acc) in pl.while_(init_values=(0, c)):
            pl.cond(j < 100)
            if j == 3:
                break  # blocks 0..2
            t = pl.add(pl.load(a, [j * TR, 0], [TR, C]), pl.load(b, [j * TR, 0], [TR, C]))
            acc2 = pl.store(t, [j * TR, 0], acc)
            j_next, out = pl.yield_(j + 1, acc2)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        c = self.k(a, b, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(
    ("program", "keep"),
    [(Escape, [0, 1, 2, 3]), (BreakContinue, [0, 2]), (PythonWhile, [0, 2, 3]),
     (WhileUnderscore, [0, 1, 2])],
    ids=["escape", "break-continue", "python-while", "while_"],
)
def test_kernel_loops_write_the_blocks_numpy_says(program, keep, platform):
    rng = np.random.default_rng(7)
    a = rng.standard_normal((R, C)).astype(np.float32)
    b = rng.standard_normal((R, C)).astype(np.float32)
    c = np.zeros((R, C), np.float32)
    _run(program, platform, a, b, c)
    np.testing.assert_array_equal(c, _blocks(a, b, keep))


@pl.program
class TileEscape:  # the last loaded tile and a Scalar leave the loop; no tile exists before
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          c: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
        for i in pl.range(4):
            t = pl.load(a, [i * TR, 0], [TR, C])
            s = i * 2
            if s > 100:
                break
        c = pl.store(pl.add(t, pl.cast(s, pl.FP32)), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             c: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
        c = self.k(a, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tile_and_scalar_escape_a_loop(platform):
    a = np.arange(R * C, dtype=np.float32).reshape(R, C) / 7
    c = np.zeros((TR, C), np.float32)
    _run(TileEscape, platform, a, c)
    np.testing.assert_array_equal(c, a[3 * TR:] + np.float32(6))


@pl.program
class AccumulateWhile:  # a tile accumulated in a while loop whose bound is a Scalar param
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
          c: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
        acc = pl.load(a, [0, 0], [TR, C])
        i = 1
        while i < n:
            acc = pl.add(acc, pl.load(a, [i * TR, 0], [TR, C]))
            i = i + 1
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
        c = self.k(a, n, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [1, 3, 4])
def test_while_with_a_runtime_bound_accumulates_n_blocks(platform, n):
    a = np.random.default_rng(n).integers(-8, 8, (R, C)).astype(np.float32)
    c = np.zeros((TR, C), np.float32)
    _run(AccumulateWhile, platform, a, n, c)
    want = a.reshape(4, TR, C)[:n].sum(axis=0)  # small ints: every FP32 sum is exact
    np.testing.assert_array_equal(c, want)


@pl.program
class OrchLoops:  # orchestration: a rebinding carry, an escaping task result, a break
    @pl.function(type=pl.FunctionType.InCore)
    def add_one(self, src: pl.Tensor[[16, 64], pl.FP32],
                dst: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        dst = pl.store(pl.add(pl.load(src, [0, 0], [16, 64]), 1.0), [0, 0], dst)
        return dst

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 64], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        cur = a
        for i in pl.range(10):
            if i >= n:
                break
            nxt = pl.create_tensor([16, 64], dtype=pl.FP32)
            nxt = self.add_one(cur, nxt)
            cur = nxt
        c = self.add_one(cur, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2, 5])
def test_orchestration_loop_with_break_chains_tasks(platform, n):
    a = np.random.default_rng(1).standard_normal((16, 64)).astype(np.float32)
    c = np.zeros((16, 64), np.float32)
    _run(OrchLoops, platform, a, n, c)
    want = a.copy()
    for _ in range(n + 1):
        want = want + np.float32(1)
    np.testing.assert_array_equal(c, want)


@pl.program
class ZeroTrip:  # escapes of a loop that may not run: the tensor is `c`, the Scalar 0
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
          c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        for i in pl.range(n):
            last = i + 1
            out = pl.store(pl.load(a, [i * TR, 0], [TR, C]), [0, 0], c)
        t = pl.load(out, [0, 0], [TR, C])
        done = pl.store(pl.add(t, pl.cast(last, pl.FP32)), [TR, 0], out)
        return done

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], n: pl.Scalar[pl.INDEX],
             c: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        c = self.k(a, n, c)
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("n", [0, 2])
def test_escapes_of_a_loop_that_may_not_run(platform, n):
    rng = np.random.default_rng(11)
    a = rng.integers(-50, 50, (R, C)).astype(np.float32)
    c0 = rng.integers(-50, 50, (R, C)).astype(np.float32)
    c = c0.copy()
    _run(ZeroTrip, platform, a, n, c)
    want = c0.copy()
    if n:
        want[:TR] = a[(n - 1) * TR:n * TR]
    want[TR:2 * TR] = want[:TR] + n  # `last` is n after n trips, 0 after none
    np.testing.assert_array_equal(c, want)
