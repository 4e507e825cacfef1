"""Multi-chip programs whose windows serve a subset of the ranks (comm domains),
written for ut/distributed/test_comm_domains.py."""

from __future__ import annotations

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld

N = 16


def _swap_program(groups: tuple[tuple[int, int], ...], ranks: int):
    """Each group (a, b) of ``groups`` swaps its two ranks' rows through windows of its
    own; ``y[g][r]`` = the partner's row + 10 * (r's rank in the group) + group size."""
    G = len(groups)  # noqa: N806 - used in annotations

    @pl.program
    class GroupSwap:
        @pl.function(type=pl.FunctionType.InCore)
        def swap_step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                      stage: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                      sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                      peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, N], pl.FP32]:
            ctx = pld.get_comm_ctx(stage)
            me = pld.rank(ctx)
            size = pld.nranks(ctx)
            pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], stage)
            pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1,
                              op=pld.NotifyOp.AtomicAdd)
            pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
            got = pld.tile.remote_load(stage, peer=peer, offsets=[0, 0], shape=[1, N])
            tag = pl.cast(me * 10 + size, target_type=pl.FP32)
            return pl.store(pl.add(got, tag), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def swap(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 stage: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                 sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                 peer: pl.Scalar[pl.INT32]) -> pl.Tensor[[1, N], pl.FP32]:
            return self.swap_step(x, y, stage, sig, peer)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[ranks, 1, N], pl.FP32],
                 y: pl.Out[pl.Tensor[[G, ranks, 1, N], pl.FP32]]):
            for g, (a, b) in enumerate(groups):
                stage_buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
                sig_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
                for r in pl.range(a, b + 1):
                    stage = pld.window(stage_buf, [1, N], dtype=pl.FP32)
                    sig = pld.window(sig_buf, [1, 1], dtype=pl.INT32)
                    self.swap(x[r], y[g][r], stage, sig, b - r, device=r)

    return GroupSwap


DISJOINT = _swap_program(((0, 1), (2, 3)), 4)      # two groups on four ranks
OVERLAPPING = _swap_program(((0, 1), (1, 2)), 3)   # rank 1 serves both groups


@pl.program
class SubsetAllreduce:
    """Ranks 1..3 of 4 sum their rows with an in-kernel allreduce; rank 0 only copies."""

    @pl.function(type=pl.FunctionType.InCore)
    def reduce_step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                    data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
                    sig: pl.InOut[pld.DistributedTensor[[4, 1], pl.INT32]]
                    ) -> pl.Tensor[[1, N], pl.FP32]:
        data = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], data)
        data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
        return pl.store(pl.load(data, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def reduce(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
               data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
               sig: pl.InOut[pld.DistributedTensor[[4, 1], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.reduce_step(x, y, data, sig)

    @pl.function(type=pl.FunctionType.InCore)
    def copy_step(self, x: pl.Tensor[[1, N], pl.FP32],
                  y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def copy(self, x: pl.Tensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.copy_step(x, y)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[4, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[4, 1, N], pl.FP32]]):
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(4 * pl.INT32.get_byte())
        self.copy(x[0], y[0], device=0)
        for r in pl.range(1, 4):
            self.reduce(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32),
                        pld.window(sig_buf, [4, 1], dtype=pl.INT32), device=r)


@pl.program
class GrowingDomain:
    """A window first dispatched to ranks 0..1, then (after a host barrier) to 0..3."""

    @pl.function(type=pl.FunctionType.InCore)
    def touch_step(self, w: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]]
                   ) -> pld.DistributedTensor[[1, N], pl.FP32]:
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], w)

    @pl.function(type=pl.FunctionType.Orchestration)
    def touch(self, w: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]]
              ) -> pld.DistributedTensor[[1, N], pl.FP32]:
        return self.touch_step(w)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, y: pl.Tensor[[1, N], pl.FP32]):
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(4 * pl.INT32.get_byte())
        for r in pl.range(2):
            self.touch(pld.window(buf, [1, N], dtype=pl.FP32), device=r)
        pld.tensor.barrier(pld.window(sig_buf, [4], dtype=pl.INT32))
        for r in pl.range(4):
            self.touch(pld.window(buf, [1, N], dtype=pl.FP32), device=r)  # GROW-LINE
