# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Gather/scatter, sort, random and the matmul family through the whole pipeline on both
sims, against numpy references written here (docs/design/language.md §21)."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from pipeline_kit import PLATFORMS, run

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import ArchSupportError, SimulationError
from ut.helpers import line_finder

line_of = line_finder(__file__)


# ------------------------------------------------------------------ matmul family


def k_batch(B, M, K, N):
    @pl.program
    class Batch:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[B, M, K], pl.FP16], b: pl.Tensor[[1, K, N], pl.FP16],
              c: pl.Out[pl.Tensor[[B, M, N], pl.FP32]]) -> pl.Tensor[[B, M, N], pl.FP32]:
            ta = pl.load(a, [0, 0, 0], [B, M, K], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [0, 0, 0], [1, K, N], target_memory=pl.Mem.Mat)
            tc = pl.batch_matmul(ta, tb)
            tc = pl.batch_matmul_acc(tc, ta, tb)
            c = pl.store(tc, [0, 0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[B, M, K], pl.FP16], b: pl.Tensor[[1, K, N], pl.FP16],
                 c: pl.Out[pl.Tensor[[B, M, N], pl.FP32]]) -> pl.Tensor[[B, M, N], pl.FP32]:
            c = self.k(a, b, c)
            return c

    return Batch


@pytest.mark.parametrize("platform", PLATFORMS)
def test_batch_matmul_broadcasts_rhs_and_accumulates(platform):
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 16, 32)).astype(np.float16)
    b = rng.standard_normal((1, 32, 16)).astype(np.float16)
    c = np.zeros((3, 16, 16), np.float32)
    run(k_batch, (3, 16, 32, 16), platform, a, b, c)
    want = 2 * np.einsum("bmk,kn->bmn", a.astype(np.float64), b[0].astype(np.float64))
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)


def k_gemv(K, N, VK, VN):
    @pl.program
    class Gemv:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[2, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              bias: pl.Tensor[[1, N], pl.FP32], o: pl.InOut[pl.Tensor[[2, N], pl.FP32]],
              m: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> tuple[pl.Tensor[[2, N], pl.FP32],
                                                             pl.Tensor[[16, N], pl.FP32]]:
            a0 = pl.load(a, [0, 0], [1, K], valid_shape=[1, VK], target_memory=pl.Mem.Mat)
            a1 = pl.load(a, [1, 0], [1, K], valid_shape=[1, VK], target_memory=pl.Mem.Mat)
            tb = pl.load(b, [0, 0], [K, N], valid_shape=[VK, VN], target_memory=pl.Mem.Mat)
            tbias = pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat)
            acc = pl.tile.gemv(a0, tb, acc_phase="partial")
            acc = pl.tile.gemv_acc(acc, a1, tb, acc_phase="final")
            o = pl.store(acc, [0, 0], o)
            gb = pl.tile.gemv_bias(a0, tb, tbias)
            o = pl.store(gb, [1, 0], o)
            full = pl.load(a, [0, 0], [2, K], valid_shape=[2, VK], target_memory=pl.Mem.Mat)
            mb = pl.matmul_bias(full, tb, tbias)
            m = pl.store(mb, [0, 0], m)
            return o, m

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[2, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 bias: pl.Tensor[[1, N], pl.FP32], o: pl.InOut[pl.Tensor[[2, N], pl.FP32]],
                 m: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> tuple[pl.Tensor[[2, N], pl.FP32],
                                                                pl.Tensor[[16, N], pl.FP32]]:
            o, m = self.k(a, b, bias, o, m)
            return o, m

    return Gemv


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gemv_forms_and_matmul_bias_over_ragged_k_and_n(platform):
    rng = np.random.default_rng(1)
    K, N, VK, VN = 32, 32, 20, 24
    a = rng.standard_normal((2, K)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((K, N)).astype(ml_dtypes.bfloat16)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    o = np.full((2, N), -7.0, np.float32)
    m = np.zeros((16, N), np.float32)
    run(k_gemv, (K, N, VK, VN), platform, a, b, bias, o, m)
    af, bf = a.astype(np.float64)[:, :VK], b.astype(np.float64)[:VK, :VN]
    np.testing.assert_allclose(o[0, :VN], af[0] @ bf + af[1] @ bf, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(o[1, :VN], af[0] @ bf + bias[0, :VN], rtol=1e-4, atol=1e-4)
    assert (o[:, VN:] == -7.0).all()
    np.testing.assert_allclose(m[:2, :VN], af @ bf + bias[:, :VN], rtol=1e-4, atol=1e-4)


# ------------------------------------------------------------------ gather / scatter


def k_gather_scatter(R, C):
    @pl.program
    class GatherScatter:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, src: pl.Tensor[[R, C], pl.FP32], idx: pl.Tensor[[R, C], pl.INT32],
              base: pl.Tensor[[R, C], pl.FP32], g: pl.Out[pl.Tensor[[R, C], pl.FP32]],
              s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> tuple[pl.Tensor[[R, C], pl.FP32],
                                                              pl.Tensor[[R, C], pl.FP32]]:
            ts = pl.load(src, [0, 0], [R, C])
            ti = pl.load(idx, [0, 0], [R, C])
            tmp = pl.create_tile([R, C], pl.INT32)
            gathered = pl.tile.gather(ts, ti, tmp)  # gather-line
            g = pl.store(gathered, [0, 0], g)
            dst = pl.load(base, [0, 0], [R, C])
            dst = pl.tile.scatter(dst, ts, ti)  # scatter-line
            s = pl.store(dst, [0, 0], s)
            return g, s

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, src: pl.Tensor[[R, C], pl.FP32], idx: pl.Tensor[[R, C], pl.INT32],
                 base: pl.Tensor[[R, C], pl.FP32], g: pl.Out[pl.Tensor[[R, C], pl.FP32]],
                 s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> tuple[pl.Tensor[[R, C], pl.FP32],
                                                                 pl.Tensor[[R, C], pl.FP32]]:
            g, s = self.k(src, idx, base, g, s)
            return g, s

    return GatherScatter


@pytest.mark.parametrize("platform", PLATFORMS)
def test_gather_and_scatter_use_flat_indices(platform):
    rng = np.random.default_rng(2)
    R, C = 8, 16
    src = rng.standard_normal((R, C)).astype(np.float32)
    idx = rng.permutation(R * C).reshape(R, C).astype(np.int32)
    base = np.full((R, C), -1.0, np.float32)
    g, s = np.zeros((R, C), np.float32), np.zeros((R, C), np.float32)
    run(k_gather_scatter, (R, C), platform, src, idx, base, g, s)
    np.testing.assert_array_equal(g, src.reshape(-1)[idx])
    want = base.reshape(-1).copy()
    want[idx.reshape(-1)] = src.reshape(-1)
    np.testing.assert_array_equal(s.reshape(-1), want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_out_of_range_gather_index_is_a_simulation_error_at_its_line(platform):
    R, C = 8, 16
    idx = np.zeros((R, C), np.int32)
    idx[2, 5] = R * C + 3
    z = np.zeros((R, C), np.float32)
    with pytest.raises(SimulationError) as exc:
        run(k_gather_scatter, (R, C), platform, z, idx, z, z.copy(), z.copy())
    err = exc.value
    assert err.file == __file__ and err.line == line_of("# gather-line")
    assert f"index {R * C + 3} at position [2, 5]" in err.message
    assert f"valid indices are 0..{R * C - 1}" in err.message


def k_sort(N):
    @pl.program
    class Sort:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, s: pl.Tensor[[1, N], pl.FP32], i: pl.Tensor[[1, N], pl.UINT32],
              vo: pl.Out[pl.Tensor[[1, N], pl.FP32]],
              io: pl.Out[pl.Tensor[[1, N], pl.UINT32]]) -> tuple[pl.Tensor[[1, N], pl.FP32],
                                                                 pl.Tensor[[1, N], pl.UINT32]]:
            st = pl.load(s, [0, 0], [1, N])
            it = pl.load(i, [0, 0], [1, N])
            pairs = pl.sort32(st, it)
            for j, (acc,) in pl.range(2, init_values=(pairs,)):
                merged = pl.mrgsort(acc, block_len=64 << (2 * j))
                acc = pl.yield_(merged)
            vo = pl.store(pl.tile.gather_mask(acc, 1), [0, 0], vo)
            io = pl.store(pl.tile.gather_mask(acc, 2, output_dtype=pl.UINT32), [0, 0], io)
            return vo, io

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, s: pl.Tensor[[1, N], pl.FP32], i: pl.Tensor[[1, N], pl.UINT32],
                 vo: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 io: pl.Out[pl.Tensor[[1, N], pl.UINT32]]) -> tuple[pl.Tensor[[1, N], pl.FP32],
                                                                    pl.Tensor[[1, N], pl.UINT32]]:
            vo, io = self.k(s, i, vo, io)
            return vo, io

    return Sort


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sort32_then_mrgsort_sorts_a_row_with_its_indices(platform):
    rng = np.random.default_rng(3)
    N = 512
    s = (rng.permutation(N) - 200).astype(np.float32).reshape(1, N)
    i = rng.permutation(N).astype(np.uint32).reshape(1, N)
    vo, io = np.zeros((1, N), np.float32), np.zeros((1, N), np.uint32)
    run(k_sort, (N,), platform, s, i, vo, io)
    order = np.argsort(-s[0])
    np.testing.assert_array_equal(vo[0], s[0, order])
    np.testing.assert_array_equal(io[0], i[0, order])


# ------------------------------------------------------------------ a5-only ops


def k_a5_only():
    @pl.program
    class A5Only:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, src: pl.Tensor[[4, 16], pl.INT32], idx: pl.Tensor[[4, 16], pl.INT32],
              o: pl.InOut[pl.Tensor[[128], pl.INT32]],
              r: pl.Out[pl.Tensor[[4, 16], pl.UINT32]]) -> tuple[pl.Tensor[[128], pl.INT32],
                                                                 pl.Tensor[[4, 16], pl.UINT32]]:
            ts = pl.load(src, [0, 0], [4, 16])
            ti = pl.load(idx, [0, 0], [4, 16])
            o = pl.mscatter(ts, ti, o)  # mscatter-line
            x = pl.tile.random(7, 9, 1, 0, 0, 0, [4, 16])
            y = pl.tile.random(7, 9, 1, 0, 0, 0, [4, 16])
            r = pl.store(pl.sub(x, y), [0, 0], r)
            return o, r

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, src: pl.Tensor[[4, 16], pl.INT32], idx: pl.Tensor[[4, 16], pl.INT32],
                 o: pl.InOut[pl.Tensor[[128], pl.INT32]],
                 r: pl.Out[pl.Tensor[[4, 16], pl.UINT32]]) -> tuple[pl.Tensor[[128], pl.INT32],
                                                                    pl.Tensor[[4, 16], pl.UINT32]]:
            o, r = self.k(src, idx, o, r)
            return o, r

    return A5Only


def test_mscatter_and_random_run_on_a5():
    rng = np.random.default_rng(4)
    src = rng.integers(-1000, 1000, (4, 16)).astype(np.int32)
    idx = (rng.permutation(64) * 2).reshape(4, 16).astype(np.int32)
    o = np.full(128, -5, np.int32)
    r = np.ones((4, 16), np.uint32)
    run(k_a5_only, (), "a5sim", src, idx, o, r)
    want = np.full(128, -5, np.int32)
    want[idx.reshape(-1)] = src.reshape(-1)
    np.testing.assert_array_equal(o, want)
    assert (r == 0).all()  # two draws with one seed are bit-identical


def test_mscatter_and_random_are_arch_errors_on_a2a3_at_their_line():
    with pytest.raises(ArchSupportError) as exc:
        pytest_pypto.compile(k_a5_only(), RunConfig(platform="a2a3sim"))
    err = exc.value
    assert "The operator tile.mscatter is not available on the 'a2a3' backend" in err.message
    assert err.file == __file__ and err.line == line_of("# mscatter-line")


def k_mx(M, K, N):
    @pl.program
    class Mx:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN], sa: pl.Tensor[[M, K // 32], pl.FP8E8M0],
              b: pl.Tensor[[K, N], pl.FP8E4M3FN], sb: pl.Tensor[[K // 32, N], pl.FP8E8M0],
              bias: pl.Tensor[[1, N], pl.FP32],
              o: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            la = pl.move(pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Left)
            ls = pl.move(pl.load(sa, [0, 0], [M, K // 32], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.LeftScale)
            rb = pl.move(pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Right)
            rs = pl.move(pl.load(sb, [0, 0], [K // 32, N], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.RightScale)
            tbias = pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat)
            acc = pl.matmul_mx_bias(la, ls, rb, rs, tbias)
            acc = pl.matmul_mx_acc(acc, la, ls, rb, rs)
            o = pl.store(acc, [0, 0], o)
            return o

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.FP8E4M3FN], sa: pl.Tensor[[M, K // 32], pl.FP8E8M0],
                 b: pl.Tensor[[K, N], pl.FP8E4M3FN], sb: pl.Tensor[[K // 32, N], pl.FP8E8M0],
                 bias: pl.Tensor[[1, N], pl.FP32],
                 o: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            o = self.k(a, sa, b, sb, bias, o)
            return o

    return Mx


def test_matmul_mx_bias_and_acc_on_a5_match_the_exact_scaled_product():
    rng = np.random.default_rng(5)
    M, K, N = 16, 64, 32
    a = rng.integers(-2, 3, (M, K)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.integers(-2, 3, (K, N)).astype(ml_dtypes.float8_e4m3fn)
    ca, cb = rng.integers(125, 130, (M, 2)).astype(np.uint8), rng.integers(125, 130, (2, N)).astype(np.uint8)
    bias = rng.standard_normal((1, N)).astype(np.float32)
    o = np.zeros((M, N), np.float32)
    run(k_mx, (M, K, N), "a5sim", a, ca.view(ml_dtypes.float8_e8m0fnu), b,
        cb.view(ml_dtypes.float8_e8m0fnu), bias, o)
    g = np.arange(K) // 32
    prod = (a.astype(np.float64) * np.exp2(ca[:, g] - 127.0)) @ (b.astype(np.float64) * np.exp2(cb[g, :] - 127.0))
    once = (prod + bias).astype(np.float32)
    np.testing.assert_array_equal(o, (once.astype(np.float64) + prod).astype(np.float32))
    with pytest.raises(ArchSupportError, match="'a2a3'"):
        pytest_pypto.compile(k_mx(M, K, N), RunConfig(platform="a2a3sim"))
