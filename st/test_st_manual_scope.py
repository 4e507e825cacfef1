"""System test: a manual-scope pipeline ordered only by its declared dependencies.

A layer-by-layer stencil over row stripes of one tensor: layer l+1's stripe r reads
the stripes r-1, r, r+1 of layer l (a halo), so each task must wait for three tasks of
the previous layer.  The TaskIds of a layer are carried in an Array[TASK_ID] through a
`pl.range` loop; a scratch buffer made with `manual_dep=True` holds a normalisation
factor computed by a `pl.spmd` launch and read after a `pl.system.task_dummy` barrier.
Correct under 30 shuffled orders; dropping one halo edge is a RaceError even though
submission order still computes the right numbers.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.ir.errors import RaceError

S, W, LAYERS = 4, 16, 3  # stripes, stripe height = width
R = S * W


def _reference(x: np.ndarray) -> np.ndarray:
    cur = x.astype(np.float32)
    for _ in range(LAYERS):
        up = np.concatenate([cur[:W], cur[:-W]])  # stripe r-1 (the first stripe: itself)
        down = np.concatenate([cur[W:], cur[-W:]])  # stripe r+1 (the last stripe: itself)
        cur = ((up + cur) + down) * np.float32(0.25)
    return cur + np.float32(1.0)


def _build(halo_edges: bool):
    """The pipeline; without ``halo_edges`` layer 2 waits only for its own stripe of layer 1."""

    @pl.program
    class Stencil:
        @pl.function(type=pl.FunctionType.InCore)
        def smooth(self, src: pl.Tensor[[R, W], pl.FP32], dst: pl.Out[pl.Tensor[[R, W], pl.FP32]],
                   up: pl.Scalar[pl.INDEX], mid: pl.Scalar[pl.INDEX],
                   down: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, W], pl.FP32]:
            a = pl.load(src, [up, 0], [W, W])
            b = pl.load(src, [mid, 0], [W, W])
            c = pl.load(src, [down, 0], [W, W])
            return pl.store(pl.mul(pl.add(pl.add(a, b), c), 0.25), [mid, 0], dst)

        @pl.function(type=pl.FunctionType.InCore)
        def bump(self, src: pl.Tensor[[R, W], pl.FP32], dst: pl.Out[pl.Tensor[[R, W], pl.FP32]],
                 row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, W], pl.FP32]:
            return pl.store(pl.add(pl.load(src, [row, 0], [W, W]), 1.0), [row, 0], dst)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, W], pl.FP32], a: pl.Out[pl.Tensor[[R, W], pl.FP32]],
                 b: pl.Out[pl.Tensor[[R, W], pl.FP32]],
                 out: pl.Out[pl.Tensor[[R, W], pl.FP32]]) -> pl.Tensor[[R, W], pl.FP32]:
            with pl.manual_scope():
                t0 = pl.array.create(S, pl.TASK_ID)
                for r in pl.parallel(S):  # layer 0: x -> a
                    a, t = pl.submit(self.smooth, x, a, pl.max(r - 1, 0) * W, r * W,
                                     pl.min(r + 1, S - 1) * W)
                    t0[r] = t
                t1 = pl.array.create(S, pl.TASK_ID)
                for r in pl.parallel(S):  # layer 1: a -> b, after the three stripes it reads
                    up, down = pl.max(r - 1, 0), pl.min(r + 1, S - 1)
                    b, t = pl.submit(self.smooth, a, b, up * W, r * W, down * W,
                                     deps=[t0[up], t0[r], t0[down]])
                    t1[r] = t
                t2 = pl.array.create(S, pl.TASK_ID)
                for r in pl.parallel(S):  # layer 2: b -> a (a's readers are layer 1 too)
                    up, down = pl.max(r - 1, 0), pl.min(r + 1, S - 1)
                    if halo_edges:
                        a, t = pl.submit(self.smooth, b, a, up * W, r * W, down * W,
                                         deps=[t1[up], t1[r], t1[down]])
                    else:
                        a, t = pl.submit(self.smooth, b, a, up * W, r * W, down * W,
                                         deps=[t1[r]])  # the halo edges forgotten
                    t2[r] = t
                barrier = pl.system.task_dummy(deps=[t2])
                for r in pl.parallel(S):
                    with pl.spmd(1, deps=[barrier]) as _:
                        out = self.bump(a, out, r * W)
            return out

    return Stencil


def _inputs(rng):
    x = rng.standard_normal((R, W)).astype(np.float32)
    return x, *(np.zeros((R, W), np.float32) for _ in range(3))


def test_the_pipeline_matches_numpy_under_shuffled_orders(pypto_runner, pypto_config,
                                                          pypto_rng):
    compiled = pypto_runner.compile(_build(True))
    x, a, b, out = _inputs(pypto_rng)
    want = _reference(x)
    for seed in (None, *range(30)):
        out[...] = 0
        config = dataclasses.replace(pypto_config, schedule_seed=seed)
        run = pytest_pypto.run(compiled, x, a, b, out, config=config)
        np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    kinds = {e["kind"] for e in run.deps()["edges"]}
    assert kinds == {"explicit"}  # a manual scope: nothing inferred


def test_a_forgotten_halo_edge_is_a_race_though_the_numbers_come_out_right(
        pypto_runner, pypto_config, pypto_rng):
    compiled = pypto_runner.compile(_build(False))
    x, a, b, out = _inputs(pypto_rng)
    off = dataclasses.replace(pypto_config, race_check=False)
    pytest_pypto.run(compiled, x, a, b, out, config=off)
    np.testing.assert_allclose(out, _reference(x), rtol=1e-5, atol=1e-6)
    with pytest.raises(RaceError) as ei:
        pytest_pypto.run(compiled, x, a, b, out, config=pypto_config)
    # tasks: layer 0 is 0..3, layer 1 is 4..7, layer 2 is 8..11.  Layer-2 stripe r reads
    # b's stripes r-1 and r+1, written by the layer-1 neighbours it no longer waits for
    # (each pair is reported once, by the first conflict met: RAW on b)
    found = {(r["first"], r["second"], r["kind"], r["tensor_name"]) for r in ei.value.races}
    want = {(4 + n, 8 + r, "RAW", "b") for r in range(S) for n in (r - 1, r + 1) if 0 <= n < S}
    assert found == want
