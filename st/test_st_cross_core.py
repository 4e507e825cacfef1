# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""System test: a hand-written AIC/AIV pipeline through two-way pipes (docs/design/language.md §14).

Per key block j the cube computes S_j = Q @ Kt_j and sends it to the vector kernel
(C2V); the vector kernel scales it to P_j = S_j * 0.5 + 1, stores P_j and sends it back
(V2C); the cube computes O_j = P_j @ V_j and stores it.  Pipes of two slots each way
and four blocks make the kernels take turns: the run checks both results against
plain numpy on each requested cell and that the whole Group is one task.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl

D, NB = 16, 4
SLOT = D * D * 4


@pl.program
class ScoresRoundTrip:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, q: pl.Tensor[[D, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
             v: pl.Tensor[[D * NB, D], pl.FP32], p_out: pl.Out[pl.Tensor[[D, D * NB], pl.FP32]],
             o_out: pl.Out[pl.Tensor[[D * NB, D], pl.FP32]]) -> pl.Tensor[[D * NB, D], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=3, slot_size=SLOT, slot_num=2)
        q_left = pl.move(pl.load(q, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                         target_memory=pl.Mem.Left)
        for j in pl.range(NB):
            k_mat = pl.load(kt, [0, j * D], [D, D], target_memory=pl.MemorySpace.Mat)
            s = pl.matmul(q_left, pl.move(k_mat, target_memory=pl.Mem.Right))
            pl.tpush_to_aiv(s, split=0)
            p: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0)
            v_mat = pl.load(v, [j * D, 0], [D, D], target_memory=pl.MemorySpace.Mat)
            o = pl.matmul(pl.move(p, target_memory=pl.Mem.Left),
                          pl.move(v_mat, target_memory=pl.Mem.Right))
            pl.tfree_to_aiv(p)
            o_out = pl.store(o, [j * D, 0], o_out)
        return o_out

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, q: pl.Tensor[[D, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
            v: pl.Tensor[[D * NB, D], pl.FP32], p_out: pl.Out[pl.Tensor[[D, D * NB], pl.FP32]],
            o_out: pl.Out[pl.Tensor[[D * NB, D], pl.FP32]]) -> pl.Tensor[[D, D * NB], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=3, slot_size=SLOT, slot_num=2)
        for j in pl.range(NB):
            s: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0)
            p = pl.adds(pl.muls(s, 0.5), 1.0)
            pl.tfree_to_aic(s)
            p_out = pl.store(p, [0, j * D], p_out)
            pl.tpush_to_aic(p, split=0)
        return p_out

    @pl.function(type=pl.FunctionType.Group)
    def round_trip(self, q: pl.Tensor[[D, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
                   v: pl.Tensor[[D * NB, D], pl.FP32],
                   p_out: pl.Out[pl.Tensor[[D, D * NB], pl.FP32]],
                   o_out: pl.Out[pl.Tensor[[D * NB, D], pl.FP32]]
                   ) -> tuple[pl.Tensor[[D, D * NB], pl.FP32], pl.Tensor[[D * NB, D], pl.FP32]]:
        o = self.cube(q, kt, v, p_out, o_out)
        p = self.vec(q, kt, v, p_out, o_out)
        return p, o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, q: pl.Tensor[[D, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
             v: pl.Tensor[[D * NB, D], pl.FP32], p_out: pl.Out[pl.Tensor[[D, D * NB], pl.FP32]],
             o_out: pl.Out[pl.Tensor[[D * NB, D], pl.FP32]]
             ) -> tuple[pl.Tensor[[D, D * NB], pl.FP32], pl.Tensor[[D * NB, D], pl.FP32]]:
        p_out, o_out = self.round_trip(q, kt, v, p_out, o_out)
        return p_out, o_out


def test_scores_round_trip_between_cube_and_vector(pypto_runner, pypto_rng):
    q = pypto_rng.standard_normal((D, D)).astype(np.float32)
    kt = pypto_rng.standard_normal((D, D * NB)).astype(np.float32)
    v = pypto_rng.standard_normal((D * NB, D)).astype(np.float32)
    p_out = np.zeros((D, D * NB), np.float32)
    o_out = np.zeros((D * NB, D), np.float32)
    run = pypto_runner.run(ScoresRoundTrip, q, kt, v, p_out, o_out)
    p_want = (q @ kt) * np.float32(0.5) + np.float32(1)
    np.testing.assert_allclose(p_out, p_want, rtol=1e-5, atol=1e-5)
    o_want = np.concatenate([p_want[:, j * D:(j + 1) * D] @ v[j * D:(j + 1) * D]
                             for j in range(NB)])
    np.testing.assert_allclose(o_out, o_want, rtol=1e-4, atol=1e-4)
    assert [(t["kernel"], t["core_type"]) for t in run.tasks] == [("round_trip", "mix")]
