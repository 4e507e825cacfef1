"""Multi-chip programs for the cross-rank race detector tests (written for these tests).

Each rank r works with peer (r + 1) % n ("the next rank") on a [1, N] window.
"""

from __future__ import annotations

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld

N = 32
NR = pl.dynamic("NR")


@pl.program
class StoreThenRead:
    """Rank r stores its row into the next rank's window, then reads its own window:
    nothing orders the previous rank's store before the read (a race)."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        pld.tile.remote_store(pl.load(x, [0, 0], [1, N]), w, peer, [0, 0])  # RACY-STORE
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)  # RACY-READ

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, w, peer)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32),
                      (r + 1) % pld.world_size(), device=r)
        return y


@pl.program
class StoreSignalRead:
    """As StoreThenRead, but the store is followed by a notify of the next rank and the
    read waits for the previous rank's notify: ordered, no race."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        pld.tile.remote_store(pl.load(x, [0, 0], [1, N]), w, peer, [0, 0])
        pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, w, sig, peer)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32),
                      pld.window(sig_buf, [1, 1], dtype=pl.INT32), (r + 1) % pld.world_size(),
                      device=r)
        return y


@pl.program
class NotifyTooEarly:
    """The notify goes out before the store it should announce: the wait orders
    nothing that matters, so the store still races with the read."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        pld.tile.remote_store(pl.load(x, [0, 0], [1, N]), w, peer, [0, 0])  # LATE-STORE
        pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)  # EARLY-READ

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, w, sig, peer)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32),
                      pld.window(sig_buf, [1, 1], dtype=pl.INT32), (r + 1) % pld.world_size(),
                      device=r)
        return y


@pl.program
class PutBarrierRead:
    """Rank r puts its row into the next rank's window, every rank meets at a barrier,
    then each reads its own window: ordered, no race."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        pld.tensor.put(w, peer=peer, src=x, atomic=pld.AtomicType.None_)
        sig = pld.tensor.barrier(sig)
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, w, sig, peer)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32),
                      pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32),
                      (r + 1) % pld.world_size(), device=r)
        return y


def _all_write_rank_zero(atomic: bool):
    @pl.program
    class AllWriteRankZero:
        """Every rank stores its row into rank 0's window, plainly (atomic=False: a race
        between every two writers) or as atomic adds (no race); a barrier, then every rank
        reads rank 0's window."""

        @pl.function(type=pl.FunctionType.InCore)
        def plain(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                  w: pld.DistributedTensor[[1, N], pl.FP32],
                  sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
                  ) -> pl.Tensor[[1, N], pl.FP32]:
            pld.tile.remote_store(pl.load(x, [0, 0], [1, N]), w, 0, [0, 0])  # SHARED-STORE
            sig = pld.tensor.barrier(sig)
            return pl.store(pld.tile.remote_load(w, 0, [0, 0], [1, N]), [0, 0], y)

        @pl.function(type=pl.FunctionType.InCore)
        def added(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                  w: pld.DistributedTensor[[1, N], pl.FP32],
                  sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
                  ) -> pl.Tensor[[1, N], pl.FP32]:
            pld.tile.remote_store(pl.load(x, [0, 0], [1, N]), w, 0, [0, 0],
                                  atomic=pld.AtomicType.Add)
            sig = pld.tensor.barrier(sig)
            return pl.store(pld.tile.remote_load(w, 0, [0, 0], [1, N]), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip_plain(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                       w: pld.DistributedTensor[[1, N], pl.FP32],
                       sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
                       ) -> pl.Tensor[[1, N], pl.FP32]:
            return self.plain(x, y, w, sig)

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip_added(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                       w: pld.DistributedTensor[[1, N], pl.FP32],
                       sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
                       ) -> pl.Tensor[[1, N], pl.FP32]:
            return self.added(x, y, w, sig)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]],
                 ) -> pl.Tensor[[NR, 1, N], pl.FP32]:
            buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
            sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                w = pld.window(buf, [1, N], dtype=pl.FP32)
                sig = pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32)
                if atomic:
                    self.chip_added(x[r], y[r], w, sig, device=r)
                else:
                    self.chip_plain(x[r], y[r], w, sig, device=r)
            return y

    return AllWriteRankZero


ALL_WRITE_PLAIN = _all_write_rank_zero(False)
ALL_WRITE_ATOMIC = _all_write_rank_zero(True)


def _publish_read(mode: str):
    @pl.program
    class PublishRead:
        """mode "collect": each rank writes its own window in one dispatch, a host-level
        allreduce, then every rank reads the next rank's window (ordered by the host);
        "rounds": the same without the allreduce (a later round of dispatches);
        "together": odd ranks read the previous rank's window in the same round as
        even ranks write it (a race)."""

        @pl.function(type=pl.FunctionType.InCore)
        def publish_step(self, x: pl.Tensor[[1, N], pl.FP32],
                         w: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]]
                         ) -> pld.DistributedTensor[[1, N], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], w)

        @pl.function(type=pl.FunctionType.Orchestration)
        def publish(self, x: pl.Tensor[[1, N], pl.FP32],
                    w: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]]
                    ) -> pld.DistributedTensor[[1, N], pl.FP32]:
            return self.publish_step(x, w)

        @pl.function(type=pl.FunctionType.InCore)
        def read_step(self, w: pld.DistributedTensor[[1, N], pl.FP32],
                      y: pl.Out[pl.Tensor[[1, N], pl.FP32]], peer: pl.Scalar[pl.INT32]
                      ) -> pl.Tensor[[1, N], pl.FP32]:
            return pl.store(pld.tile.remote_load(w, peer, [0, 0], [1, N]), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def read(self, w: pld.DistributedTensor[[1, N], pl.FP32],
                 y: pl.Out[pl.Tensor[[1, N], pl.FP32]], peer: pl.Scalar[pl.INT32]
                 ) -> pl.Tensor[[1, N], pl.FP32]:
            return self.read_step(w, y, peer)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]],
                 ) -> pl.Tensor[[NR, 1, N], pl.FP32]:
            buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
            sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
            w = pld.window(buf, [1, N], dtype=pl.FP32)
            if mode == "together":
                for r in pl.range(pld.world_size()):
                    if r % 2 == 0:
                        self.publish(x[r], w, device=r)
                    else:
                        self.read(w, y[r], r - 1, device=r)
                return y
            for r in pl.range(pld.world_size()):
                self.publish(x[r], w, device=r)
            if mode == "collect":
                w = pld.tensor.allreduce(w, pld.window(sig_buf, [pld.world_size()], dtype=pl.INT32),
                                         op=pld.ReduceOp.Max)
            for r in pl.range(pld.world_size()):
                self.read(w, y[r], (r + 1) % pld.world_size(), device=r)
            return y

    return PublishRead


PUBLISH_COLLECT_READ = _publish_read("collect")
PUBLISH_THEN_READ = _publish_read("rounds")
PUBLISH_WHILE_READ = _publish_read("together")


@pl.program
class DisjointColumns:
    """Every rank stores its 8 columns into rank 0's window at columns 8r .. 8r + 8 (no
    two ranks touch one element: no race, though nothing orders the stores), then a
    barrier, and every rank reads rank 0's whole window."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        me = pld.rank(pld.get_comm_ctx(w))
        pld.tile.remote_store(pl.load(x, [0, 0], [1, 8]), w, 0, [0, me * 8])
        sig = pld.tensor.barrier(sig)
        return pl.store(pld.tile.remote_load(w, 0, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             w: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, w, sig)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], pld.window(buf, [1, N], dtype=pl.FP32),
                      pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)
        return y
