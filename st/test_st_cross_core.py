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


# ------------------------------------------------------------- the same pipeline in pl.cluster()
# (docs/design/language.md §14a, §14b): the orchestration dispatches the two kernels inside
# `with pl.cluster(): with pl.spmd(BLOCKS):`, so each block's pair runs as one Group task on
# its own rows of q; then a pl.at region projects the result on v and finishes it on the
# two AIV lanes (a pl.split_aiv region: each lane takes its UP_DOWN half of the product).

BLOCKS = 2


@pl.program
class ClusteredRoundTrip:
    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, q: pl.Tensor[[D * BLOCKS, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
             v: pl.Tensor[[D * NB, D], pl.FP32],
             o_out: pl.Out[pl.Tensor[[D * BLOCKS, D * NB], pl.FP32]]
             ) -> pl.Tensor[[D * BLOCKS, D * NB], pl.FP32]:
        pl.aic_initialize_pipe(dir_mask=3, slot_size=SLOT, slot_num=2)
        row = pl.tile.get_block_idx() * D
        q_left = pl.move(pl.load(q, [row, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                         target_memory=pl.Mem.Left)
        for j in pl.range(NB):
            k_mat = pl.load(kt, [0, j * D], [D, D], target_memory=pl.MemorySpace.Mat)
            pl.tpush_to_aiv(pl.matmul(q_left, pl.move(k_mat, target_memory=pl.Mem.Right)),
                            split=0)
            p: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0)
            v_mat = pl.load(v, [j * D, 0], [D, D], target_memory=pl.MemorySpace.Mat)
            o = pl.matmul(pl.move(p, target_memory=pl.Mem.Left),
                          pl.move(v_mat, target_memory=pl.Mem.Right))
            pl.tfree_to_aiv(p)
            o_out = pl.store(o, [row, j * D], o_out)
        return o_out

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, q: pl.Tensor[[D * BLOCKS, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
            v: pl.Tensor[[D * NB, D], pl.FP32],
            o_out: pl.Out[pl.Tensor[[D * BLOCKS, D * NB], pl.FP32]]):
        pl.aiv_initialize_pipe(dir_mask=3, slot_size=SLOT, slot_num=2)
        for _j in pl.range(NB):
            s: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0)
            pl.tpush_to_aic(pl.adds(pl.muls(s, 0.5), 1.0), split=0)
            pl.tfree_to_aic(s)

    @pl.function
    def main(self, q: pl.Tensor[[D * BLOCKS, D], pl.FP32], kt: pl.Tensor[[D, D * NB], pl.FP32],
             v: pl.Tensor[[D * NB, D], pl.FP32],
             o_out: pl.Out[pl.Tensor[[D * BLOCKS, D * NB], pl.FP32]],
             total: pl.Out[pl.Tensor[[D * BLOCKS, D], pl.FP32]]):
        with pl.cluster(name_hint="round_trip"):
            with pl.spmd(BLOCKS):
                self.cube(q, kt, v, o_out)
                self.vec(q, kt, v, o_out)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="project"):
            o_all = pl.load(o_out, [0, 0], [D * BLOCKS, D * NB], target_memory=pl.MemorySpace.Mat)
            v_all = pl.load(v, [0, 0], [D * NB, D], target_memory=pl.MemorySpace.Mat)
            mm = pl.matmul(pl.move(o_all, target_memory=pl.Mem.Left),
                           pl.move(v_all, target_memory=pl.Mem.Right))
            for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                half = pl.aiv_shard(mm)  # this lane's block of rows
                total = pl.store(pl.adds(pl.muls(half, 2.0), 1.0), [lane * D, 0], total)
        return o_out, total


def test_a_cluster_launch_and_an_aiv_split_region(pypto_runner, pypto_rng):
    q = pypto_rng.standard_normal((D * BLOCKS, D)).astype(np.float32)
    kt = pypto_rng.standard_normal((D, D * NB)).astype(np.float32)
    v = pypto_rng.standard_normal((D * NB, D)).astype(np.float32)
    o_out = np.zeros((D * BLOCKS, D * NB), np.float32)
    total = np.zeros((D * BLOCKS, D), np.float32)
    run = pypto_runner.run(ClusteredRoundTrip, q, kt, v, o_out, total)
    p = (q @ kt) * np.float32(0.5) + np.float32(1)
    o_want = np.concatenate([p[:, j * D:(j + 1) * D] @ v[j * D:(j + 1) * D]
                             for j in range(NB)], axis=1)
    np.testing.assert_allclose(o_out, o_want, rtol=1e-4, atol=1e-3)
    np.testing.assert_allclose(total, (o_want @ v) * 2 + 1, rtol=1e-4, atol=1e-2)
    kinds = [(t["kernel"], t["core_type"]) for t in run.tasks]
    assert kinds == [("round_trip", "mix")] * BLOCKS + [("project", "mix")]
