"""Multi-chip programs with deferred completion (pld.system.defer_wait), written for
ut/distributed/test_defer_wait.py."""

from __future__ import annotations

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld

W = 8
NR = pl.dynamic("NR")


def handoff(waiters: int):
    """Each rank registers ``waiters`` deferred waits for its signal to reach the epoch
    (x[r][0, 0]), each followed by a consumer that copies the window into row k of
    out; only then does it publish its own x into the next rank's window and set that
    rank's signal to the epoch.  A blocking wait in the waiters would never let the
    publisher run."""
    K = waiters  # noqa: N806 - used in annotations

    @pl.program
    class Handoff:
        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, x: pl.Tensor[[1, W], pl.INT32], out: pl.Out[pl.Tensor[[K, W], pl.INT32]],
                 box: pl.InOut[pld.DistributedTensor[[1, W], pl.INT32]],
                 sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]],
                 nxt: pl.Scalar[pl.INT32]) -> pl.Tensor[[K, W], pl.INT32]:
            with pl.manual_scope():
                for k in pl.range(K):
                    with pl.at(level=pl.Level.CORE_GROUP, name_hint="waiter") as waited:
                        epoch: pl.Scalar[pl.INT32] = pl.read(x, [0, 0])
                        pld.system.defer_wait(  # DEFER-LINE
                            sig, offsets=[0, 0], expected=epoch, cmp=pld.WaitCmp.Ge)
                    with pl.at(level=pl.Level.CORE_GROUP, name_hint="consumer", deps=[waited]):
                        got = pl.load(box, [0, 0], [1, W])
                        out = pl.store(got, [k, 0], out)
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="publisher"):
                    mine = pl.load(x, [0, 0], [1, W])
                    pld.tile.remote_store(mine, target=box, peer=nxt, offsets=[0, 0])
                    epoch: pl.Scalar[pl.INT32] = pl.read(x, [0, 0])
                    pld.system.notify(sig, peer=nxt, offsets=[0, 0], value=epoch,
                                      op=pld.NotifyOp.Set)
            return out

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, 1, W], pl.INT32],
                 out: pl.Out[pl.Tensor[[NR, K, W], pl.INT32]]):
            box_buf = pld.alloc_window_buffer(W * pl.INT32.get_byte())
            sig_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                self.chip(x[r], out[r], pld.window(box_buf, [1, W], dtype=pl.INT32),
                          pld.window(sig_buf, [1, 1], dtype=pl.INT32),
                          (r + 1) % pld.world_size(), device=r)

    return Handoff


@pl.program
class NeverSet:
    """Rank 0's deferred wait is never satisfied: nobody notifies."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, out: pl.Out[pl.Tensor[[1, 1], pl.INT32]],
             sig: pl.InOut[pld.DistributedTensor[[1, 1], pl.INT32]]) -> pl.Tensor[[1, 1], pl.INT32]:
        with pl.manual_scope():
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="waiter") as waited:
                pld.system.defer_wait(  # NEVER-LINE
                    sig, offsets=[0, 0], expected=1, cmp=pld.WaitCmp.Ge)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="consumer", deps=[waited]):
                out = pl.store(pl.load(sig, [0, 0], [1, 1]), [0, 0], out)
        return out

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, out: pl.Out[pl.Tensor[[NR, 1, 1], pl.INT32]]):
        sig_buf = pld.alloc_window_buffer(pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(out[r], pld.window(sig_buf, [1, 1], dtype=pl.INT32), device=r)


def misuse(kind: str):
    """A kernel whose defer_wait breaks one of PyPTO's rules (``kind``)."""
    dtype = pl.FP32 if kind == "dtype" else pl.INT32
    cmp = pld.WaitCmp.Eq if kind == "eq" else pld.WaitCmp.Ge
    offsets = [0] if kind == "offsets" else [0, 0]
    expected = -1 if kind == "negative" else 1

    @pl.program
    class Misuse:
        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, sig: pl.InOut[pld.DistributedTensor[[1, 1], dtype]]
                 ) -> pld.DistributedTensor[[1, 1], dtype]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="waiter"):
                pld.system.defer_wait(  # MISUSE
                    sig, offsets=offsets, expected=expected, cmp=cmp)
            return sig

    return Misuse
