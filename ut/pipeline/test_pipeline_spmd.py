# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.spmd(n)` launches end to end on both sims: n tasks of one launch, each reading its
block index and count, independent of each other and all awaited by later readers.

References are plain numpy written here; the tasks are read from the run record
(deps.json), under a seeded schedule so that a missing or extra dependency shows.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
BLOCKS, ROWS, N = 4, 16, 32
M = BLOCKS * ROWS


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1729)


def _run(program, platform, *arrays):
    compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    return pytest_pypto.run(compiled, *arrays,
                            config=RunConfig(platform=platform, schedule_seed=11))


def _blocks(run, kernel):
    return [(t["block"]["index"], t["block"]["count"]) for t in run.tasks if t["kernel"] == kernel]


@pl.program
class Dispatch:
    """A written kernel reading its block index, launched by `with pl.spmd(n):`, then a
    plain task reading the whole result."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale_rows(self, a: pl.Tensor[[M, N], pl.FP32],
                   out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        i = pl.tile.get_block_idx()
        n = pl.tile.get_block_num()
        t = pl.load(a, [i * ROWS, 0], [ROWS, N])
        w = pl.cast(i + n * 10, pl.FP32)  # block 2 of 4 scales by 42
        out = pl.store(pl.mul(t, w), [i * ROWS, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def negate(self, a: pl.Tensor[[M, N], pl.FP32],
               out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = pl.store(pl.neg(pl.load(a, [0, 0], [M, N])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        mid = pl.create_tensor([M, N], dtype=pl.FP32)
        with pl.spmd(BLOCKS):
            mid = self.scale_rows(a, mid)
        out = self.negate(mid, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dispatch_form_runs_one_task_per_block(platform, rng):
    a = rng.integers(-4, 4, (M, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    run = _run(Dispatch, platform, a, out)
    weight = np.repeat(np.arange(BLOCKS) + BLOCKS * 10, ROWS)[:, None].astype(np.float32)
    np.testing.assert_array_equal(out, -(a * weight))
    assert sorted(_blocks(run, "scale_rows")) == [(i, BLOCKS) for i in range(BLOCKS)]
    launch = [t for t in run.tasks if t["kernel"] == "scale_rows"]
    assert all(t["deps"] == [] for t in launch)  # the blocks of one launch are independent
    (consumer,) = [t for t in run.tasks if t["kernel"] == "negate"]
    assert sorted(d["task"] for d in consumer["deps"]) == sorted(t["id"] for t in launch)
    assert "block" not in consumer  # a plain call is no launch
    assert len({t["slots"][0] for t in launch}) == BLOCKS  # blocks ran side by side


@pl.program
class LoopForm:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, N], pl.FP32], b: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for i in pl.spmd(BLOCKS, name_hint="add_rows"):
            off = i * ROWS
            t = pl.add(pl.load(a, [off, 0], [ROWS, N]), pl.load(b, [off, 0], [ROWS, N]))
            out = pl.store(t, [off, 0], out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_loop_form_outlines_the_body_per_block(platform, rng):
    a = rng.standard_normal((M, N)).astype(np.float32)
    b = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    run = _run(LoopForm, platform, a, b, out)
    np.testing.assert_array_equal(out, a + b)  # one FP32 add: exact
    assert sorted(_blocks(run, "add_rows")) == [(i, BLOCKS) for i in range(BLOCKS)]


@pl.program
class InlineWith:
    """An inline `with pl.spmd` body, and one whose region is a lone pl.at; the count
    comes from a tensor's run-time extent."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        halves = pl.tensor.dim(a, 0) // (M // 2)
        with pl.spmd(halves, name_hint="first"):
            i = pl.get_block_idx()
            out = pl.store(pl.load(a, [i * (M // 2), 0], [M // 2, N]), [i * (M // 2), 0], out)
        with pl.spmd(BLOCKS):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="second"):
                j = pl.get_block_idx()
                k = pl.get_block_num()
                t = pl.load(out, [j * ROWS, 0], [ROWS, N])
                out = pl.store(pl.adds(t, pl.cast(k, pl.FP32)), [j * ROWS, 0], out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_inline_and_carrier_forms_with_a_run_time_block_count(platform, rng):
    a = rng.integers(-100, 100, (M, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    run = _run(InlineWith, platform, a, out)
    np.testing.assert_array_equal(out, a + BLOCKS)
    assert sorted(_blocks(run, "first")) == [(0, 2), (1, 2)]
    assert sorted(_blocks(run, "second")) == [(i, BLOCKS) for i in range(BLOCKS)]
    first = {t["id"] for t in run.tasks if t["kernel"] == "first"}
    for t in run.tasks:
        if t["kernel"] == "second":  # out is InOut in "second": RAW on both blocks of "first"
            assert {d["task"] for d in t["deps"]} == first


def test_a_block_index_kernel_called_plainly_is_block_zero_of_one(rng):
    @pl.program
    class Plain:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[ROWS, N], pl.FP32],
              out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
            w = pl.cast(pl.tensor.get_block_idx() + pl.tensor.get_block_num() * 3, pl.FP32)
            out = pl.store(pl.muls(pl.load(a, [0, 0], [ROWS, N]), w), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[ROWS, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[ROWS, N], pl.FP32]]) -> pl.Tensor[[ROWS, N], pl.FP32]:
            out = self.k(a, out)
            return out

    a = rng.integers(-4, 4, (ROWS, N)).astype(np.float32)
    for platform in PLATFORMS:
        out = np.zeros((ROWS, N), np.float32)
        run = _run(Plain, platform, a, out)
        np.testing.assert_array_equal(out, a * 3)
        assert "block" not in run.tasks[0]
