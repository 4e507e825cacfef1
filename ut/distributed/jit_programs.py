"""A ``@pl.jit.host`` multi-chip program (written for these tests)."""

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld

N = 32


@pl.jit.incore
def bump(x: pl.Tensor[[1, N], pl.FP32], w: pld.DistributedTensor[[1, N], pl.FP32],
         y: pl.Out[pl.Tensor[[1, N], pl.FP32]], peer: pl.Scalar[pl.INT32]):
    pld.tensor.put(w, peer=peer, src=x, atomic=pld.AtomicType.None_)
    pld.tensor.barrier(w)
    t = pl.load(w, [0, 0], [1, N])
    return pl.store(pl.add(t, 1.0), [0, 0], y)


@pl.jit
def per_rank(x: pl.Tensor[[1, N], pl.FP32], w: pld.DistributedTensor[[1, N], pl.FP32],
             y: pl.Out[pl.Tensor[[1, N], pl.FP32]], peer: pl.Scalar[pl.INT32]):
    return bump(x, w, y, peer)


@pl.jit.host
def shift_plus_one(x: pl.Tensor[[4, 1, N], pl.FP32], y: pl.Out[pl.Tensor[[4, 1, N], pl.FP32]]):
    buf = pld.alloc_window_buffer([1, N], dtype=pl.FP32)
    for r in pl.range(pld.world_size()):
        per_rank(x[r], pld.window(buf, [1, N], dtype=pl.FP32), y[r],
                 (r + 1) % pld.world_size(), device=r)
