"""The task-batched variant of a kernel (compiler/codegen_tasks.py): which kernels get
one, and what it is attached as (docs/design/runtime.md §6)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile
from pytest_pypto.runtime.loader import load_artifact

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "bench"))
import scale_kernels as sk  # noqa: E402

CFG = RunConfig(platform="a2a3sim")
R, C = 8, 16


def _kernels(program):
    compiled = compile(program, CFG)
    return compiled, load_artifact(compiled).kernels


def test_the_paged_attention_kernels_all_get_a_variant():
    compiled, kernels = _kernels(sk.attention_program(16, 32, 16, 2, 8, 4, dynamic=True))
    for name in ("scores", "block_softmax", "weighted_values", "merge"):
        fn = kernels[name].fn
        assert callable(fn.tasks) and fn.task_bytes > 0, name
    # the softmax's Out parameters are overwritten whole by one store of a tile of this
    # shape (the runtime skips gathering them when a task's window has it)
    assert kernels["block_softmax"].fn.task_fills == {2: (16, 16), 3: (16, 1), 4: (16, 1)}
    assert kernels["merge"].fn.task_fills == {}  # dst is written on the last block only
    text = compiled.memory.text("kernels/merge.py")
    assert "def merge__tasks(_n, " in text and "if (j == 0):" in text.split("__tasks")[1]


def clamp_program():
    @pl.program
    class Clamp:
        @pl.function(type=pl.FunctionType.InCore)
        def edge(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            t = pl.load(x, [0, 0], [R, C], clamp=True)
            out = pl.store(pl.fillpad(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.InCore)
        def plain(self, x: pl.Tensor[[R, C], pl.FP32],
                  out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            t = pl.load(x, [0, 0], [R, C])
            out = pl.store(pl.exp(t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.edge(x, out)
            out = self.plain(x, out)
            return out

    return Clamp


def test_a_clamped_load_gets_no_variant_and_a_plain_kernel_one():
    compiled, kernels = _kernels(clamp_program())
    assert getattr(kernels["edge"].fn, "tasks", None) is None
    assert "__tasks" not in compiled.memory.text("kernels/edge.py")
    listing = compiled.memory.text("kernels/edge.txt")
    assert "task-batched variant: none: a load clamps its window" in listing
    assert "task-batched variant: yes" in compiled.memory.text("kernels/plain.txt")
    plain = kernels["plain"].fn
    assert plain.task_fills == {1: (R, C)}  # one whole store at offset 0
    x = np.linspace(-1, 1, 3 * R * C, dtype=np.float32).reshape(3, R, C)
    out = np.zeros_like(x)
    got = plain.tasks(3, x, out)[0]
    assert got is out  # stored into the stack it was given
    for i in range(3):  # each task's slice as the kernel computes it alone
        alone = np.zeros((R, C), np.float32)
        plain(x[i].copy(), alone)
        assert out[i].tobytes() == alone.tobytes()


def test_a_task_batched_call_is_cache_sized_and_a_batched_loop_keeps_its_own_budget():
    """A task-batched call holds at most `ir.batch.MAX_BATCH_BYTES` of tiles per call:
    a few MiB, so the stacks, their widenings and the products stay in the core's cache
    (measured on the paged-attention bench: 64 MiB calls took twice the kernel time of
    4 MiB ones); a batched loop cannot be split, so its all-or-nothing budget is the
    separate, larger `MAX_LOOP_BYTES` (docs/design/runtime.md §4)."""
    from pytest_pypto.ir import batch  # lazy: the module the generated kernels call

    assert batch.MAX_BATCH_BYTES <= 8 << 20
    assert batch.MAX_LOOP_BYTES >= 64 << 20
    _, kernels = _kernels(sk.attention_program(16, 128, 128, 2, 8, 4))
    per = batch.MAX_BATCH_BYTES // kernels["scores"].fn.task_bytes
    assert 8 <= per <= 64  # the bench's QK kernel: tens of tasks per call


def _qk_program(dtype):
    """q @ k^T per task through a transposed view moved to Right (as the bench's QK
    kernel), one task per block of ``KB`` rows of k."""
    M, K, KB, NB = 16, 32, 32, 6  # noqa: N806  (DSL closure constants)

    @pl.program
    class QK:
        @pl.function(type=pl.FunctionType.InCore)
        def qk(self, q: pl.Tensor[[M, K], dtype], k: pl.Tensor[[KB, K], dtype],
               s: pl.Out[pl.Tensor[[M, KB], pl.FP32]]) -> pl.Tensor[[M, KB], pl.FP32]:
            qa = pl.load(q, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            kb = pl.load(k, [0, 0], [KB, K], target_memory=pl.Mem.Mat)
            prod = pl.matmul(pl.move(qa, target_memory=pl.Mem.Left),
                             pl.move(pl.tile.transpose_view(kb), target_memory=pl.Mem.Right))
            s = pl.store(prod, [0, 0], s)
            return s

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, q: pl.Tensor[[M, K], dtype], k: pl.Tensor[[NB * KB, K], dtype],
                 s: pl.Out[pl.Tensor[[M, NB * KB], pl.FP32]]) -> pl.Tensor[[M, NB * KB], pl.FP32]:
            for b in pl.range(NB):
                blk = self.qk(q, pl.slice(k, [KB, K], [b * KB, 0]),
                              pl.slice(s, [M, KB], [0, b * KB]))
            return s

    return QK, (M, K, KB, NB)


@pytest.mark.parametrize("dtype", ["BF16", "FP32"])
@pytest.mark.parametrize("batched", ["0", "1"], ids=["unbatched", "batched"])
def test_a_matmul_on_a_moved_transposed_view_is_numpys(monkeypatch, dtype, batched):
    """The Right operand moved from a transpose_view (a non-row-contiguous buffer, laid out
    row-major by the move or widened from the view) gives numpy's float32 product of the
    transposed block, bit for bit, per task and in the task-batched variant."""
    from pytest_pypto.runtime import task_batches  # lazy: only for its switch and counter

    monkeypatch.setenv(task_batches.ENV_VAR, batched)
    program, (m, k, kb, nb) = _qk_program(getattr(pl, dtype))
    compiled = compile(program, CFG)
    rng = np.random.default_rng(11)
    npdt = sk.BF16 if dtype == "BF16" else np.float32
    q = rng.standard_normal((m, k), np.float32).astype(npdt)
    keys = rng.standard_normal((nb * kb, k), np.float32).astype(npdt)
    s = np.full((m, nb * kb), np.nan, np.float32)
    before = task_batches.STATS["tasks"]
    run(compiled, q, keys, s, config=CFG)
    assert (task_batches.STATS["tasks"] - before == nb) == (batched == "1")
    q32 = q.astype(np.float32)
    for b in range(nb):
        block = np.ascontiguousarray(keys[b * kb:(b + 1) * kb].astype(np.float32).T)
        want = np.matmul(q32, block)
        np.testing.assert_array_equal(s[:, b * kb:(b + 1) * kb], want)
