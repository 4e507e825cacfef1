"""Batched loops that update a tensor in place through their own windows, with reshapes
(compiler/batching.py): the online-softmax update of a paged attention, one row block per
iteration.  Batched and per-iteration runs must agree byte for byte, and with numpy."""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile

CFG = RunConfig(platform="a2a3sim")
B, R, C = 6, 16, 32  # row blocks, rows per block, columns


def online_update_program():
    @pl.program
    class OnlineUpdate:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, mij: pl.Tensor[[B * R, 1], pl.FP32], oij: pl.Tensor[[B * R, C], pl.FP32],
              mi: pl.InOut[pl.Tensor[[B * R, 1], pl.FP32]],
              oi: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
              ) -> tuple[pl.Tensor[[B * R, 1], pl.FP32], pl.Tensor[[B * R, C], pl.FP32]]:
            for b in pl.range(0, B, 1):
                new_m = pl.load(mij, [b * R, 0], [R, 1])
                new_o = pl.load(oij, [b * R, 0], [R, C])
                old_m = pl.load(mi, [b * R, 0], [R, 1])
                old_o = pl.load(oi, [b * R, 0], [R, C])
                old_row = pl.reshape(old_m, [1, R])
                new_row = pl.reshape(new_m, [1, R])
                top = pl.maximum(old_row, new_row)
                alpha = pl.exp(pl.sub(old_row, top))
                beta = pl.exp(pl.sub(new_row, top))
                mi = pl.store(pl.reshape(top, [R, 1]), [b * R, 0], mi)
                scaled = pl.add(pl.row_expand_mul(old_o, pl.reshape(alpha, [R, 1])),
                                pl.row_expand_mul(new_o, pl.reshape(beta, [R, 1])))
                oi = pl.store(scaled, [b * R, 0], oi)
            return mi, oi

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, mij: pl.Tensor[[B * R, 1], pl.FP32], oij: pl.Tensor[[B * R, C], pl.FP32],
                 mi: pl.InOut[pl.Tensor[[B * R, 1], pl.FP32]],
                 oi: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
                 ) -> tuple[pl.Tensor[[B * R, 1], pl.FP32], pl.Tensor[[B * R, C], pl.FP32]]:
            mi, oi = self.k(mij, oij, mi, oi)
            return mi, oi

    return OnlineUpdate


def shifted_read_program():
    """Each iteration reads the NEXT block of the tensor it writes: iterations depend on
    each other, so the loop must not be batched."""

    @pl.program
    class Shifted:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, acc: pl.InOut[pl.Tensor[[(B + 1) * R, C], pl.FP32]],
              ) -> pl.Tensor[[(B + 1) * R, C], pl.FP32]:
            for b in pl.range(0, B, 1):
                t = pl.load(acc, [b * R + R, 0], [R, C])
                acc = pl.store(pl.add(t, t), [b * R, 0], acc)
            return acc

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, acc: pl.InOut[pl.Tensor[[(B + 1) * R, C], pl.FP32]],
                 ) -> pl.Tensor[[(B + 1) * R, C], pl.FP32]:
            acc = self.k(acc)
            return acc

    return Shifted


def read_then_overwrite_program():
    """Each iteration keeps using what it loaded after storing over it: the batched loads
    of the tensor must be copies, and the squared tile may not be computed from the
    tensor's (rewritten) windows."""

    @pl.program
    class Overwrite:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, acc: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
              out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]],
              ) -> tuple[pl.Tensor[[B * R, C], pl.FP32], pl.Tensor[[B * R, C], pl.FP32]]:
            for b in pl.range(0, B, 1):
                t = pl.load(acc, [b * R, 0], [R, C])
                acc = pl.store(pl.add(t, t), [b * R, 0], acc)
                out = pl.store(pl.mul(t, t), [b * R, 0], out)
            return acc, out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, acc: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
                 out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]],
                 ) -> tuple[pl.Tensor[[B * R, C], pl.FP32], pl.Tensor[[B * R, C], pl.FP32]]:
            acc, out = self.k(acc, out)
            return acc, out

    return Overwrite


def _listing(compiled):
    return (compiled.artifact_dir() / compiled.manifest.kernels[0].listing).read_text()


def _runs(program, arrays, tmp_path):
    """(outputs batched, outputs per iteration, listing of the batched compile)."""
    outs, listing = [], ""
    for flag in (True, False):
        compiled = compile(program, CFG, output_dir=tmp_path / str(flag), batch_loops=flag)
        copies = [a.copy() for a in arrays]
        run(compiled, *copies, config=CFG)
        outs.append(copies)
        if flag:
            listing = _listing(compiled)
    return outs[0], outs[1], listing


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.tobytes() == b.tobytes()


def test_an_in_place_update_through_its_own_windows_runs_batched_and_exact(tmp_path):
    rng = np.random.default_rng(3)
    mij = rng.standard_normal((B * R, 1)).astype(np.float32)
    oij = rng.standard_normal((B * R, C)).astype(np.float32)
    mi = rng.standard_normal((B * R, 1)).astype(np.float32)
    oi = rng.standard_normal((B * R, C)).astype(np.float32)
    on, off, listing = _runs(online_update_program(), [mij, oij, mi, oi], tmp_path)
    assert "for b in pl.range(0, 6, 1): batched" in listing, listing
    for a, b in zip(on, off):
        _same_bits(a, b)
    top = np.maximum(mi, mij)
    _same_bits(on[2], top)
    want = oi * np.exp(mi - top) + oij * np.exp(mij - top)
    np.testing.assert_allclose(on[3], want, rtol=1e-6, atol=1e-6)
    assert not np.array_equal(on[3], oi)  # it did update the tensor


def test_a_read_of_another_iterations_window_is_not_batched(tmp_path):
    acc = np.random.default_rng(4).standard_normal(((B + 1) * R, C)).astype(np.float32)
    on, off, listing = _runs(shifted_read_program(), [acc], tmp_path)
    assert "not batched: it reads tensor 'acc', which it also writes, through another " \
           "window than its stores" in listing, listing
    _same_bits(on[0], off[0])
    want = acc.copy()
    for b in range(B):  # in order: block b reads block b + 1 before it is rewritten
        want[b * R:(b + 1) * R] = want[(b + 1) * R:(b + 2) * R] * 2
    _same_bits(on[0], want)


def test_a_tile_loaded_before_its_window_is_overwritten_keeps_the_old_values(tmp_path):
    acc = np.random.default_rng(5).standard_normal((B * R, C)).astype(np.float32)
    on, off, listing = _runs(read_then_overwrite_program(), [acc, np.zeros_like(acc)],
                             tmp_path)
    assert "for b in pl.range(0, 6, 1): batched" in listing, listing
    for a, b in zip(on, off):
        _same_bits(a, b)
    _same_bits(on[0], acc + acc)
    _same_bits(on[1], acc * acc)
