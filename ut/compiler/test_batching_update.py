"""Batched loops that update a tensor in place through their own windows, with reshapes
(compiler/batching.py): the online-softmax update of a paged attention, one row block per
iteration.  Batched and per-iteration runs must agree byte for byte, and with numpy."""

from __future__ import annotations

import numpy as np
import pytest

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


def strided_update_program():
    """A `pl.spmd` block's loop: every ``step``-th row block from ``first`` (run-time
    scalars), each updated in place; the blocks between stay as they were."""

    @pl.program
    class Strided:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[B * R, C], pl.FP32], first: pl.Scalar[pl.INT32],
              step: pl.Scalar[pl.INT32], acc: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
              ) -> pl.Tensor[[B * R, C], pl.FP32]:
            for b in pl.range(first, B, step):
                t = pl.load(x, [b * R, 0], [R, C])
                a = pl.load(acc, [b * R, 0], [R, C])
                acc = pl.store(pl.add(pl.mul(t, t), a), [b * R, 0], acc)
            return acc

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[B * R, C], pl.FP32], first: pl.Scalar[pl.INT32],
                 step: pl.Scalar[pl.INT32], acc: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]],
                 ) -> pl.Tensor[[B * R, C], pl.FP32]:
            acc = self.k(x, first, step, acc)
            return acc

    return Strided


def every_other_program():
    """A constant step of two row blocks: the odd blocks, a gap between windows."""

    @pl.program
    class EveryOther:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[B * R, C], pl.FP32],
              out: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]]) -> pl.Tensor[[B * R, C], pl.FP32]:
            for b in pl.range(R, B * R, 2 * R):
                out = pl.store(pl.exp(pl.load(x, [b, 0], [R, C])), [b, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[B * R, C], pl.FP32],
                 out: pl.InOut[pl.Tensor[[B * R, C], pl.FP32]]) -> pl.Tensor[[B * R, C], pl.FP32]:
            out = self.k(x, out)
            return out

    return EveryOther


def _listing(compiled):
    return (compiled.artifact_dir() / compiled.manifest.kernels[0].listing).read_text()


def _runs(program, arrays, tmp_path):
    """(outputs batched, outputs per iteration, listing of the batched compile)."""
    outs, listing = [], ""
    for flag in (True, False):
        compiled = compile(program, CFG, output_dir=tmp_path / str(flag), batch_loops=flag)
        copies = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
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


@pytest.mark.parametrize("first, step", [(0, 1), (1, 2), (2, 3), (0, 4), (3, 4), (5, 7)])
def test_a_loop_over_every_nth_block_runs_batched_and_exact(first, step, tmp_path):
    rng = np.random.default_rng(first * 10 + step)
    x = rng.standard_normal((B * R, C)).astype(np.float32)
    acc = rng.standard_normal((B * R, C)).astype(np.float32)
    on, off, listing = _runs(strided_update_program(), [x, first, step, acc], tmp_path)
    assert "for b in pl.range(first, 6, step): batched" in listing, listing
    _same_bits(on[3], off[3])
    want = acc.copy()
    for b in range(first, B, step):
        rows = slice(b * R, (b + 1) * R)
        want[rows] = x[rows] * x[rows] + acc[rows]
    _same_bits(on[3], want)


def test_a_constant_step_with_gaps_runs_batched_and_leaves_the_gaps(tmp_path):
    x = np.random.default_rng(8).standard_normal((B * R, C)).astype(np.float32)
    fill = np.full((B * R, C), 7.0, np.float32)
    on, off, listing = _runs(every_other_program(), [x, fill], tmp_path)
    assert "for b in pl.range(16, 96, 32): batched" in listing, listing
    _same_bits(on[1], off[1])
    want = fill.copy()
    for b in range(R, B * R, 2 * R):
        want[b:b + R] = np.exp(x[b:b + R])
    _same_bits(on[1], want)


@pytest.mark.parametrize("axis", [0, 1, 2])
def test_strided_windows_are_the_per_iteration_windows(axis):
    from pytest_pypto.ir import batch
    from pytest_pypto.ir.ops._rules import OpBoundsError

    t = np.arange(30 * 40 * 12, dtype=np.float32).reshape(30, 40, 12)
    offsets, shape, n, stride = [1, 2, 0], [3, 4, 2], 4, [7, 9, 3][axis]
    got = batch.windows(t, tuple(offsets), tuple(shape), axis, n, stride)
    for i in range(n):
        o = list(offsets)
        o[axis] += i * stride
        want = t[tuple(slice(a, a + e) for a, e in zip(o, shape))]
        assert np.array_equal(got[i], want)
        assert np.shares_memory(got[i], t)
    assert batch.fits(t, tuple(offsets), tuple(shape), axis, n, stride)
    assert not batch.fits(t, tuple(offsets), tuple(shape), axis, 40, stride)
    with pytest.raises(OpBoundsError, match="outside the tensor"):
        batch.windows(t, tuple(offsets), tuple(shape), axis, 40, stride)
    with pytest.raises(OpBoundsError):  # overlapping windows are never handed out
        batch.windows(t, tuple(offsets), tuple(shape), axis, 2, shape[axis] - 1)


def test_a_loop_whose_batched_tiles_pass_the_memory_budget_runs_per_iteration(tmp_path, monkeypatch):
    """A batched loop holds every iteration's tiles at once: past `MAX_LOOP_BYTES` of them
    the generated guard takes the per-iteration path (same bits, no batched tile made).
    The task-batched calls' budget (`MAX_BATCH_BYTES`) does not bound a loop."""
    from pytest_pypto.ir import batch  # lazy: the module the generated kernels call

    made = []
    real = batch.batched_type
    monkeypatch.setattr(batch, "batched_type", lambda t, n: made.append(n) or real(t, n))
    rng = np.random.default_rng(5)
    arrays = [rng.standard_normal(s).astype(np.float32)
              for s in ((B * R, 1), (B * R, C), (B * R, 1), (B * R, C))]
    compiled = compile(online_update_program(), CFG, output_dir=tmp_path / "on", batch_loops=True)
    within = [a.copy() for a in arrays]
    run(compiled, *within, config=CFG)
    assert made and set(made) == {B}  # within the budget: batched over the B row blocks
    made.clear()
    monkeypatch.setattr(batch, "MAX_BATCH_BYTES", 1024)  # the task calls' budget: no effect
    unbounded = [a.copy() for a in arrays]
    run(compiled, *unbounded, config=CFG)
    assert made and set(made) == {B}
    made.clear()
    monkeypatch.setattr(batch, "MAX_LOOP_BYTES", 1024)  # far below B blocks of [R, C] FP32
    beyond = [a.copy() for a in arrays]
    run(compiled, *beyond, config=CFG)
    assert made == []
    for a, b, c in zip(within, beyond, unbounded):
        _same_bits(a, b)
        _same_bits(a, c)
