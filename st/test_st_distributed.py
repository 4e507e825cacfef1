"""System test: a two-rank tensor-parallel matmul with an allreduce (docs/design/distributed.md).

C = A @ B with K split over two simulated ranks: rank r multiplies its column block of A
by its row block of B on the cube into a window, the ranks allreduce the partial
products in the kernel, and each rank writes the whole C.  Runs once per requested cell.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
import pytest_pypto.language.distributed as pld
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig

M, K, N = 16, 64, 32
KR = K // 2  # the K block of one rank


@pl.program
class TensorParallelMatmul:
    @pl.function(type=pl.FunctionType.InCore)
    def partial(self, a: pl.Tensor[[M, KR], pl.FP16], b: pl.Tensor[[KR, N], pl.FP16],
                part: pl.InOut[pld.DistributedTensor[[M, N], pl.FP32]]
                ) -> pld.DistributedTensor[[M, N], pl.FP32]:
        ta = pl.load(a, [0, 0], [M, KR], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [KR, N], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left),
                        pl.move(tb, target_memory=pl.Mem.Right))
        return pl.store(acc, [0, 0], part)

    @pl.function(type=pl.FunctionType.InCore)
    def reduce(self, part: pl.InOut[pld.DistributedTensor[[M, N], pl.FP32]],
               sig: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        part = pld.tensor.allreduce(part, sig, op=pld.ReduceOp.Sum)
        return pl.store(pl.load(part, [0, 0], [M, N]), [0, 0], c)

    @pl.function(type=pl.FunctionType.Orchestration)
    def chip(self, a: pl.Tensor[[M, KR], pl.FP16], b: pl.Tensor[[KR, N], pl.FP16],
             part: pl.InOut[pld.DistributedTensor[[M, N], pl.FP32]],
             sig: pl.InOut[pld.DistributedTensor[[2, 1], pl.INT32]],
             c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        part = self.partial(a, b, part)
        return self.reduce(part, sig, c)

    @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
    def host(self, a: pl.Tensor[[2, M, KR], pl.FP16], b: pl.Tensor[[2, KR, N], pl.FP16],
             c: pl.Out[pl.Tensor[[2, M, N], pl.FP32]]) -> pl.Tensor[[2, M, N], pl.FP32]:
        part_buf = pld.alloc_window_buffer(M * N * pl.FP32.get_byte())
        sig_buf = pld.alloc_window_buffer(2 * pl.INT32.get_byte())
        for r in pl.range(pld.world_size()):
            self.chip(a[r], b[r], pld.window(part_buf, [M, N], dtype=pl.FP32),
                      pld.window(sig_buf, [2, 1], dtype=pl.INT32), c[r], device=r)
        return c


def test_two_rank_tensor_parallel_matmul(pypto_config, pypto_rng) -> None:
    a = pypto_rng.standard_normal((M, K)).astype(np.float16)
    b = pypto_rng.standard_normal((K, N)).astype(np.float16)
    a_blocks = np.stack([a[:, :KR], a[:, KR:]])  # rank r holds A[:, r-th K block]
    b_blocks = np.stack([b[:KR], b[KR:]])  # and B[r-th K block, :]
    c = np.zeros((2, M, N), np.float32)
    compiled = ir.compile(TensorParallelMatmul, platform=pypto_config.platform,
                          distributed_config=DistributedConfig(device_ids=[0, 1]))
    compiled(a_blocks, b_blocks, c)
    partials = [a_blocks[r].astype(np.float32) @ b_blocks[r].astype(np.float32) for r in (0, 1)]
    want = partials[0] + partials[1]
    np.testing.assert_allclose(c[0], want, rtol=1e-5, atol=1e-4)
    np.testing.assert_array_equal(c[0], c[1])  # both ranks hold the same reduced C
