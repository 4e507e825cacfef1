"""Multi-chip programs the distributed tests share (written for these tests)."""

from __future__ import annotations

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld

N = 32
NR = pl.dynamic("NR")


@pl.program
class RankOffset:
    """Rank r writes y[r] = x[r] + r."""

    @pl.function(type=pl.FunctionType.InCore)
    def shift(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]],
              r: pl.Scalar[pl.INT32]) -> pl.Tensor[[4, N], pl.FP32]:
        t = pl.load(x, [0, 0], [4, N])
        t = pl.add(t, pl.cast(r, target_type=pl.FP32))
        return pl.store(t, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             r: pl.Scalar[pl.INT32]) -> pl.Tensor[[4, N], pl.FP32]:
        return self.shift(x, y, r)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 4, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 4, N], pl.FP32]]) -> pl.Tensor[[NR, 4, N], pl.FP32]:
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], r, device=r)
        return y


def _publish_consume(collective: str):
    """publish (input -> window), a host-level collective, consume (window -> output)."""

    @pl.program
    class PublishConsume:
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
        def consume_step(self, w: pld.DistributedTensor[[1, N], pl.FP32],
                         y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
            return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)

        @pl.function(type=pl.FunctionType.Orchestration)
        def consume(self, w: pld.DistributedTensor[[1, N], pl.FP32],
                    y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
            return self.consume_step(w, y)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
                 y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
            buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
            sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                self.publish(x[r], pld.window(buf, [1, N], dtype=pl.FP32), device=r)
            data = pld.window(buf, [1, N], dtype=pl.FP32)
            sig = pld.window(sig_buf, [pld.world_size()], dtype=pl.INT32)
            if collective == "max":
                data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Max)
            elif collective == "broadcast":
                data = pld.tensor.broadcast(data, sig, root=1)
            else:
                data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
            for r in pl.range(pld.world_size()):
                self.consume(data, y[r], device=r)
            return y

    return PublishConsume


ALLREDUCE_SUM = _publish_consume("sum")
ALLREDUCE_MAX = _publish_consume("max")
BROADCAST = _publish_consume("broadcast")


@pl.program
class MeshSum:
    """Each rank publishes its row, signals every peer, waits for all, sums remote rows."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        ctx = pld.get_comm_ctx(data)
        me = pld.rank(ctx)
        nr = pld.nranks(ctx)
        data = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], data)
        for p in pl.range(nr):
            pld.system.notify(sig, peer=p, offsets=[me, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        for p in pl.range(nr):
            pld.system.wait(sig, offsets=[p, 0], expected=1, cmp=pld.WaitCmp.Ge)
        acc = pl.load(data, [0, 0], [1, N])
        for p in pl.range(nr):
            if p != me:
                acc = pl.add(acc, pld.tile.remote_load(data, p, [0, 0], [1, N]))
        return pl.store(acc, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             data: pl.InOut[pld.DistributedTensor[[1, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, data, sig)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            data = pld.window(buf, [1, N], dtype=pl.FP32)
            sig = pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32)
            self.chip(x[r], y[r], data, sig, device=r)
        return y


@pl.program
class WaitForever:
    """Rank 0 waits for a signal nobody sends (a deadlock)."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        ctx = pld.get_comm_ctx(sig)
        if pld.rank(ctx) == 0:
            pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Eq)  # WAIT-LINE
        return pl.store(pl.tile.full([1, N], dtype=pl.FP32, value=1.0), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(y, sig)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(y[r], pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)
        return y


@pl.program
class ReadPastWindow:
    """Each rank reads a row past the end of its peer's window."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             data: pld.DistributedTensor[[2, N], pl.FP32], row: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        t = pld.tile.remote_load(data, 0, [row, 0], [1, N])  # BOUNDS-LINE
        return pl.store(t, [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             data: pld.DistributedTensor[[2, N], pl.FP32], row: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(y, data, row)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(2 * N * pl.FP32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(y[r], pld.window(buf, [2, N], dtype=pl.FP32), 2, device=r)
        return y


@pl.program
class RingPut:
    """Rank r pushes its row into rank (r + 1) % n's window, then reads what it got."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             dst: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        pld.tensor.put(dst, peer=peer, src=x, atomic=pld.AtomicType.None_)
        pld.system.notify(sig, peer=peer, offsets=[0, 0], value=1, op=pld.NotifyOp.AtomicAdd)
        pld.system.wait(sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
        return pl.store(pl.load(dst, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], y: pl.Out[pl.Tensor[[1, N], pl.FP32]],
             dst: pld.DistributedTensor[[1, N], pl.FP32],
             sig: pld.DistributedTensor[[1, 1], pl.INT32], peer: pl.Scalar[pl.INT32]
             ) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, y, dst, sig, peer)

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
class KernelCollectives:
    """In-kernel allreduce (sum) then reduce_scatter (max) on the result, with a barrier."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             data: pl.InOut[pld.DistributedTensor[[4, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]) -> pl.Tensor[[4, N], pl.FP32]:
        data = pl.store(pl.load(x, [0, 0], [4, N]), [0, 0], data)
        sig = pld.tensor.barrier(sig)
        data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
        return pl.store(pl.load(data, [0, 0], [4, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             data: pl.InOut[pld.DistributedTensor[[4, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]) -> pl.Tensor[[4, N], pl.FP32]:
        return self.step(x, y, data, sig)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 4, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 4, N], pl.FP32]]) -> pl.Tensor[[NR, 4, N], pl.FP32]:
        buf = pld.alloc_window_buffer(4 * N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], y[r], pld.window(buf, [4, N], dtype=pl.FP32),
                      pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)
        return y


@pl.program
class WriteUndeclaredWindow:
    """A kernel stores into a window parameter declared without pl.InOut (PyPTO allows it)."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], w: pld.DistributedTensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        w = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], w)
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], w: pld.DistributedTensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, w, y)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(N * pl.FP32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], pld.window(buf, [1, N], dtype=pl.FP32), y[r], device=r)
        return y


@pl.program
class DynamicRanks:
    """The host sizes its window from the bound pl.dynamic dim NR (not world_size())."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[1, N], pl.FP32], w: pld.DistributedTensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        w = pl.store(pl.load(x, [0, 0], [1, N]), [0, 0], w)
        return pl.store(pl.load(w, [0, 0], [1, N]), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[1, N], pl.FP32], w: pld.DistributedTensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[1, N], pl.FP32]]) -> pl.Tensor[[1, N], pl.FP32]:
        return self.step(x, w, y)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x: pl.Tensor[[NR, 1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[NR, 1, N], pl.FP32]]) -> pl.Tensor[[NR, 1, N], pl.FP32]:
        buf = pld.alloc_window_buffer(NR * N * pl.FP32.get_byte())
        for r in pl.range(NR):
            self.chip(x[r], pld.window(buf, [1, N], dtype=pl.FP32), y[r], device=r)
        return y


@pl.program
class Exchanges:
    """allgather, reduce_scatter (max), broadcast (root 1) and all_to_all, in kernels.

    Rank r's input x is [4, N] (4 = the ranks of this program); each result is copied to
    a [4, N] output of its own."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[4, N], pl.FP32],
             g: pl.Out[pl.Tensor[[4, N], pl.FP32]], s: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             b: pl.Out[pl.Tensor[[4, N], pl.FP32]], a: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             wg: pld.DistributedTensor[[4, N], pl.FP32], ws: pld.DistributedTensor[[4, N], pl.FP32],
             wb: pld.DistributedTensor[[4, N], pl.FP32], wa: pld.DistributedTensor[[4, N], pl.FP32],
             sig: pld.DistributedTensor[[4, 1], pl.INT32]):
        me = pld.rank(pld.get_comm_ctx(wg))
        row = pl.slice(x, [1, N], [me, 0])
        wg = pld.tensor.allgather(row, wg, sig)
        pld.tensor.put(ws, peer=me, src=x, atomic=pld.AtomicType.None_)
        ws = pld.tensor.reduce_scatter(ws, sig, op=pld.ReduceOp.Max)
        pld.tensor.put(wb, peer=me, src=x, atomic=pld.AtomicType.None_)
        wb = pld.tensor.broadcast(wb, sig, root=1)
        wa = pld.tensor.all_to_all(x, wa, sig)
        pld.tensor.get(g, peer=me, src=wg)
        pld.tensor.get(s, peer=me, src=ws)
        pld.tensor.get(b, peer=me, src=wb)
        pld.tensor.get(a, peer=me, src=wa)
        return g, s, b, a

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[4, N], pl.FP32],
             g: pl.Out[pl.Tensor[[4, N], pl.FP32]], s: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             b: pl.Out[pl.Tensor[[4, N], pl.FP32]], a: pl.Out[pl.Tensor[[4, N], pl.FP32]],
             wg: pld.DistributedTensor[[4, N], pl.FP32], ws: pld.DistributedTensor[[4, N], pl.FP32],
             wb: pld.DistributedTensor[[4, N], pl.FP32], wa: pld.DistributedTensor[[4, N], pl.FP32],
             sig: pld.DistributedTensor[[4, 1], pl.INT32]):
        g, s, b, a = self.step(x, g, s, b, a, wg, ws, wb, wa, sig)
        return g, s, b, a

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x, g, s, b, a):
        bufs = [pld.alloc_window_buffer(4 * N * pl.FP32.get_byte()) for _ in range(4)]
        sig_buf = pld.alloc_window_buffer(4 * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            w = [pld.window(buf, [4, N], dtype=pl.FP32) for buf in bufs]
            self.chip(x[r], g[r], s[r], b[r], a[r], w[0], w[1], w[2], w[3],
                      pld.window(sig_buf, [4, 1], dtype=pl.INT32), device=r)
        return g


@pl.program
class AllToAllV:
    """Two ranks, blocks of 2 rows: rank r sends counts[r] rows to each rank."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, x: pl.Tensor[[4, N], pl.FP32], counts: pl.Tensor[[2, 1], pl.INT32],
             y: pl.Out[pl.Tensor[[4, N], pl.FP32]], got: pl.Out[pl.Tensor[[2, 1], pl.INT32]],
             w: pld.DistributedTensor[[4, N], pl.FP32], recv: pld.DistributedTensor[[2, 1], pl.INT32],
             sig: pld.DistributedTensor[[2, 1], pl.INT32]):
        me = pld.rank(pld.get_comm_ctx(w))
        w = pld.tensor.all_to_all_v(x, w, sig, counts, recv)
        pld.tensor.get(y, peer=me, src=w)
        pld.tensor.get(got, peer=me, src=recv)
        return y, got

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, x: pl.Tensor[[4, N], pl.FP32], counts: pl.Tensor[[2, 1], pl.INT32],
             y: pl.Out[pl.Tensor[[4, N], pl.FP32]], got: pl.Out[pl.Tensor[[2, 1], pl.INT32]],
             w: pld.DistributedTensor[[4, N], pl.FP32], recv: pld.DistributedTensor[[2, 1], pl.INT32],
             sig: pld.DistributedTensor[[2, 1], pl.INT32]):
        y, got = self.step(x, counts, y, got, w, recv, sig)
        return y, got

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, x, counts, y, got):
        wbuf = pld.alloc_window_buffer(4 * N * pl.FP32.get_byte())
        rbuf = pld.alloc_window_buffer(2 * pl.INT32.get_byte())
        sbuf = pld.alloc_window_buffer(2 * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(x[r], counts[r], y[r], got[r], pld.window(wbuf, [4, N], dtype=pl.FP32),
                      pld.window(rbuf, [2, 1], dtype=pl.INT32),
                      pld.window(sbuf, [2, 1], dtype=pl.INT32), device=r)
        return y


@pl.program
class TwoOrchestrations:
    """Two chip orchestrations and no host orchestrator (PyPTO's L2 multi-orch)."""

    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]]
              ) -> pl.Tensor[[4, N], pl.FP32]:
        t = pl.load(x, [0, 0], [4, N])
        return pl.store(pl.add(t, t), [0, 0], y)

    @pl.function(type=pl.FunctionType.InCore)
    def square(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]]
               ) -> pl.Tensor[[4, N], pl.FP32]:
        t = pl.load(x, [0, 0], [4, N])
        return pl.store(pl.mul(t, t), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch_twice(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]]
                   ) -> pl.Tensor[[4, N], pl.FP32]:
        return self.twice(x, y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch_square(self, x: pl.Tensor[[4, N], pl.FP32], y: pl.Out[pl.Tensor[[4, N], pl.FP32]]
                    ) -> pl.Tensor[[4, N], pl.FP32]:
        return self.square(x, y)
