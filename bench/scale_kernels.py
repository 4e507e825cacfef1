"""Paged attention in our DSL, its inputs and a numpy reference (for bench/bench_scale.py).

The program is decode-style paged attention with an online softmax.  Entry tensors:

- ``query``        [batch * heads, head_dim]           BF16
- ``key_pool``     [pool_blocks * block, head_dim]     BF16 (the paged K cache)
- ``value_pool``   [pool_blocks * block, head_dim]     BF16 (the paged V cache)
- ``block_table``  [batch * table_width]               INT32 (physical block of each logical block)
- ``context_lens`` [batch]                             INT32
- ``out``          [batch * heads, head_dim]           FP32

The orchestration walks the requests; per request it reads the context length from
``context_lens`` (``pl.tensor.read`` in orchestration), and per group of ``q_tile`` heads
and per KV block it reads the block's physical index from ``block_table``, slices that
block out of both pools and submits four tasks: ``scores`` (AIC: q @ k^T),
``block_softmax`` (AIV: scale, row max, exp, row sum, on the block's valid columns),
``weighted_values`` (AIC: p @ v) and ``merge`` (AIV: the running max / sum / output of
the online softmax, and the normalised output on the request's last block).

``attention_program(..., dynamic=True)`` builds the same program with ``pl.dynamic``
dims in every kernel's annotations and in the entry's row counts: one compile serves
any batch and pool size.
"""

from __future__ import annotations

import math
from typing import Any

import ml_dtypes
import numpy as np

import pytest_pypto.language as pl

BF16 = ml_dtypes.bfloat16
Q_TILE = 16  # query heads per task (rows of the score tile)

# The dims of the dynamic variant (one object per dim: the kernels share them).
DYN_QROWS = pl.dynamic("ATT_QROWS")  # rows of a query / output tile
DYN_DIM = pl.dynamic("ATT_DIM")  # head_dim
DYN_BLOCK = pl.dynamic("ATT_BLOCK")  # rows of a KV block
DYN_REQS = pl.dynamic("ATT_REQS")  # batch
DYN_HEAD_ROWS = pl.dynamic("ATT_HEAD_ROWS")  # batch * heads
DYN_POOL_ROWS = pl.dynamic("ATT_POOL_ROWS")  # pool_blocks * block
DYN_TABLE = pl.dynamic("ATT_TABLE")  # batch * table_width


def attention_program(heads: int, head_dim: int, block: int, batch: int = 0,
                      pool_blocks: int = 0, table_width: int = 0, *,
                      dynamic: bool = False) -> Any:
    """The paged-attention `@pl.program` (module docstring).  Static: ``batch``,
    ``pool_blocks`` and ``table_width`` fix the entry shapes; dynamic: they are ignored."""
    QT, D, BS = Q_TILE, head_dim, block  # noqa: N806  (DSL closure constants)
    SCALE = 1.0 / math.sqrt(head_dim)  # noqa: N806
    assert heads % QT == 0, f"heads ({heads}) must be a multiple of {QT}"
    if dynamic:
        AQ, AD, AB = DYN_QROWS, DYN_DIM, DYN_BLOCK  # noqa: N806
        NREQ, HROWS, PROWS, TBL = DYN_REQS, DYN_HEAD_ROWS, DYN_POOL_ROWS, DYN_TABLE  # noqa: N806
    else:
        AQ, AD, AB = QT, D, BS  # noqa: N806
        NREQ, HROWS = batch, batch * heads  # noqa: N806
        PROWS, TBL = pool_blocks * block, batch * table_width  # noqa: N806

    @pl.program
    class PagedAttention:
        @pl.function(type=pl.FunctionType.InCore)
        def scores(
            self,
            q: pl.Tensor[[AQ, AD], pl.BF16],
            k: pl.Tensor[[AB, AD], pl.BF16],
            s: pl.Out[pl.Tensor[[AQ, AB], pl.FP32]],
        ) -> pl.Tensor[[AQ, AB], pl.FP32]:
            qa = pl.load(q, [0, 0], [QT, D], target_memory=pl.Mem.Mat)
            kb = pl.load(k, [0, 0], [BS, D], target_memory=pl.Mem.Mat)
            kt = pl.tile.transpose_view(kb)
            prod = pl.matmul(pl.move(qa, target_memory=pl.Mem.Left),
                             pl.move(kt, target_memory=pl.Mem.Right))
            s = pl.store(prod, [0, 0], s)
            return s

        @pl.function(type=pl.FunctionType.InCore)
        def block_softmax(
            self,
            s: pl.Tensor[[AQ, AB], pl.FP32],
            valid: pl.Scalar[pl.INDEX],
            p: pl.Out[pl.Tensor[[AQ, AB], pl.BF16]],
            m: pl.Out[pl.Tensor[[AQ, 1], pl.FP32]],
            total: pl.Out[pl.Tensor[[AQ, 1], pl.FP32]],
        ) -> tuple[pl.Tensor[[AQ, AB], pl.BF16], pl.Tensor[[AQ, 1], pl.FP32],
                   pl.Tensor[[AQ, 1], pl.FP32]]:
            raw = pl.load(s, [0, 0], [QT, BS], valid_shape=[QT, valid])
            full = pl.fillpad(raw, pad_value=pl.PadValue.min)  # past the context: -> exp 0
            x = pl.mul(full, SCALE)
            scratch = pl.create_tile([QT, BS], pl.FP32)
            mx = pl.row_max(x, scratch)
            e16 = pl.cast(pl.exp(pl.row_expand_sub(x, mx)), target_type=pl.BF16)
            sm = pl.row_sum(pl.cast(e16, target_type=pl.FP32), scratch)  # the sum of what PV sees
            p = pl.store(e16, [0, 0], p)
            m = pl.store(mx, [0, 0], m)
            total = pl.store(sm, [0, 0], total)
            return p, m, total

        @pl.function(type=pl.FunctionType.InCore)
        def weighted_values(
            self,
            p: pl.Tensor[[AQ, AB], pl.BF16],
            v: pl.Tensor[[AB, AD], pl.BF16],
            o: pl.Out[pl.Tensor[[AQ, AD], pl.FP32]],
        ) -> pl.Tensor[[AQ, AD], pl.FP32]:
            pa = pl.load(p, [0, 0], [QT, BS], target_memory=pl.Mem.Mat)
            vb = pl.load(v, [0, 0], [BS, D], target_memory=pl.Mem.Mat)
            prod = pl.matmul(pl.move(pa, target_memory=pl.Mem.Left),
                             pl.move(vb, target_memory=pl.Mem.Right))
            o = pl.store(prod, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.InCore)
        def merge(
            self,
            m_blk: pl.Tensor[[AQ, 1], pl.FP32],
            l_blk: pl.Tensor[[AQ, 1], pl.FP32],
            o_blk: pl.Tensor[[AQ, AD], pl.FP32],
            m_run: pl.InOut[pl.Tensor[[AQ, 1], pl.FP32]],
            l_run: pl.InOut[pl.Tensor[[AQ, 1], pl.FP32]],
            o_run: pl.InOut[pl.Tensor[[AQ, AD], pl.FP32]],
            dst: pl.Out[pl.Tensor[[AQ, AD], pl.FP32]],
            j: pl.Scalar[pl.INDEX],
            n_blk: pl.Scalar[pl.INDEX],
        ) -> tuple[pl.Tensor[[AQ, 1], pl.FP32], pl.Tensor[[AQ, 1], pl.FP32],
                   pl.Tensor[[AQ, AD], pl.FP32], pl.Tensor[[AQ, AD], pl.FP32]]:
            mb = pl.load(m_blk, [0, 0], [QT, 1])
            lb = pl.load(l_blk, [0, 0], [QT, 1])
            ob = pl.load(o_blk, [0, 0], [QT, D])
            if j == 0:  # the request's first block: the running state is this block's
                m_new = mb
                l_new = lb
                o_new = ob
            else:  # rescale both sides to the new running max
                m_old = pl.load(m_run, [0, 0], [QT, 1])
                l_old = pl.load(l_run, [0, 0], [QT, 1])
                o_old = pl.load(o_run, [0, 0], [QT, D])
                m_new = pl.maximum(m_old, mb)
                keep = pl.exp(pl.sub(m_old, m_new))
                take = pl.exp(pl.sub(mb, m_new))
                l_new = pl.add(pl.mul(l_old, keep), pl.mul(lb, take))
                o_new = pl.add(pl.row_expand_mul(o_old, keep), pl.row_expand_mul(ob, take))
            m_run = pl.store(m_new, [0, 0], m_run)
            l_run = pl.store(l_new, [0, 0], l_run)
            o_run = pl.store(o_new, [0, 0], o_run)
            if j == n_blk - 1:  # its last block: the normalised output
                dst = pl.store(pl.row_expand_div(o_new, l_new), [0, 0], dst)
            return m_run, l_run, o_run, dst

        @pl.function(type=pl.FunctionType.Orchestration)
        def attend(
            self,
            query: pl.Tensor[[HROWS, D], pl.BF16],
            key_pool: pl.Tensor[[PROWS, D], pl.BF16],
            value_pool: pl.Tensor[[PROWS, D], pl.BF16],
            block_table: pl.Tensor[[TBL], pl.INT32],
            context_lens: pl.Tensor[[NREQ], pl.INT32],
            out: pl.Out[pl.Tensor[[HROWS, D], pl.FP32]],
        ) -> pl.Tensor[[HROWS, D], pl.FP32]:
            n_req = pl.tensor.dim(context_lens, 0)
            width = pl.tensor.dim(block_table, 0) // n_req
            n_heads = pl.tensor.dim(query, 0) // n_req
            for b in pl.range(n_req):
                ctx = pl.tensor.read(context_lens, [b])
                n_blk = (ctx + BS - 1) // BS
                for g in pl.range(n_heads // QT):
                    row = b * n_heads + g * QT
                    q_rows = pl.slice(query, [QT, D], [row, 0])
                    m_run = pl.create_tensor([QT, 1], dtype=pl.FP32)
                    l_run = pl.create_tensor([QT, 1], dtype=pl.FP32)
                    o_run = pl.create_tensor([QT, D], dtype=pl.FP32)
                    for j in pl.range(n_blk):
                        phys = pl.tensor.read(block_table, [b * width + j])
                        k_blk = pl.slice(key_pool, [BS, D], [phys * BS, 0])
                        v_blk = pl.slice(value_pool, [BS, D], [phys * BS, 0])
                        valid = pl.min(BS, ctx - j * BS)
                        s = self.scores(q_rows, k_blk, pl.create_tensor([QT, BS], dtype=pl.FP32))
                        p, m_blk, l_blk = self.block_softmax(
                            s, valid, pl.create_tensor([QT, BS], dtype=pl.BF16),
                            pl.create_tensor([QT, 1], dtype=pl.FP32),
                            pl.create_tensor([QT, 1], dtype=pl.FP32))
                        o_blk = self.weighted_values(
                            p, v_blk, pl.create_tensor([QT, D], dtype=pl.FP32))
                        dst = pl.slice(out, [QT, D], [row, 0])
                        m_run, l_run, o_run, dst = self.merge(
                            m_blk, l_blk, o_blk, m_run, l_run, o_run, dst, j, n_blk)
            return out

    return PagedAttention


# ---------------------------------------------------------------------------- inputs


def _normal_bf16(rng: np.random.Generator, shape: tuple[int, int], chunk_rows: int) -> np.ndarray:
    """A BF16 array of standard normals, drawn ``chunk_rows`` rows at a time (no full-size
    float32 temporary: the peak RSS the bench reports is the simulator's, not ours)."""
    out = np.empty(shape, BF16)
    for r in range(0, shape[0], chunk_rows):
        rows = min(chunk_rows, shape[0] - r)
        out[r:r + rows] = rng.standard_normal((rows, shape[1]), dtype=np.float32).astype(BF16)
    return out


def make_inputs(batch: int, heads: int, head_dim: int, block: int, pool_blocks: int,
                context_lens: Any, seed: int = 0) -> dict[str, np.ndarray]:
    """The entry arrays by name.  Every request gets ``pool_blocks // batch`` table entries,
    distinct physical blocks drawn at random from the whole pool (as a block allocator
    would hand them out); ``context_lens``: one int for all requests, or one per request."""
    rng = np.random.default_rng(seed)
    width = pool_blocks // batch
    lens = np.broadcast_to(np.asarray(context_lens, np.int32), (batch,)).copy()
    assert int(lens.max()) <= width * block, "a context needs more blocks than its table has"
    pool_rows = pool_blocks * block
    chunk = max(1, (1 << 24) // head_dim)
    return {
        "query": _normal_bf16(rng, (batch * heads, head_dim), chunk),
        "key_pool": _normal_bf16(rng, (pool_rows, head_dim), chunk),
        "value_pool": _normal_bf16(rng, (pool_rows, head_dim), chunk),
        "block_table": rng.permutation(pool_blocks)[:batch * width].astype(np.int32),
        "context_lens": lens,
        "out": np.zeros((batch * heads, head_dim), np.float32),
    }


ORDER = ("query", "key_pool", "value_pool", "block_table", "context_lens", "out")


def task_count(batch: int, heads: int, block: int, context_lens: Any) -> int:
    """Tasks one run submits: 4 per (request, head group, KV block)."""
    lens = np.broadcast_to(np.asarray(context_lens, np.int64), (batch,))
    return int(4 * (heads // Q_TILE) * (-(-lens // block)).sum())


# ---------------------------------------------------------------------------- reference


def reference(query: np.ndarray, key_pool: np.ndarray, value_pool: np.ndarray,
              block_table: np.ndarray, context_lens: np.ndarray, heads: int,
              block: int) -> np.ndarray:
    """Attention of every request over its context, in plain vectorised numpy: gather the
    request's KV blocks through the table, one softmax over the whole context (masked past
    its length), no online rescaling.  Returns ``out``'s [batch * heads, head_dim]."""
    batch, dim = len(context_lens), query.shape[1]
    width = block_table.size // batch
    n_blk = -(-int(context_lens.max()) // block)
    table = block_table.reshape(batch, width)[:, :n_blk]
    span = n_blk * block
    k = key_pool.reshape(-1, block, dim)[table].reshape(batch, span, dim).astype(np.float32)
    v = value_pool.reshape(-1, block, dim)[table].reshape(batch, span, dim).astype(np.float32)
    q = query.reshape(batch, heads, dim).astype(np.float32)
    s = np.matmul(q, k.transpose(0, 2, 1)) * np.float32(1.0 / math.sqrt(dim))
    past = np.arange(span)[None, None, :] >= context_lens[:, None, None]
    s[np.broadcast_to(past, s.shape)] = -np.inf
    s -= s.max(axis=-1, keepdims=True)
    np.exp(s, out=s)
    o = np.matmul(s, v) / s.sum(axis=-1, keepdims=True)
    return o.reshape(batch * heads, dim)
