# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Cube ops through the whole pipeline: Mat -> Left/Right -> Acc (docs/design/language.md §21,
docs/design/numerics.md §3).

Operands are loaded into Mat, moved to Left/Right, multiplied into Acc and stored
from Acc.  FP32/FP16/BF16 accumulate in FP32, INT8 in INT32; numpy's summation
order may differ from the simulator's, so float results get rtol 1e-4 (docs/design/numerics.md §3).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_kit import PLATFORMS, assert_exact, assert_ulp, data, round_to, run, sentinel, wide

import pytest_pypto.language as pl

MM_DTYPES = (pl.FP32, pl.FP16, pl.BF16, pl.INT8)


def acc_dtype(dt):
    return pl.INT32 if dt.name == "INT8" else pl.FP32


# ------------------------------------------------------------------ kernels


def k_matmul(DT, AT, M, K, N, VM, VK, VN):
    """One product: a [M, K] valid [VM, VK] times b [K, N] valid [VK, VN] into c (AT)."""

    @pl.program
    class Matmul:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
              c: pl.InOut[pl.Tensor[[M, N], AT]]) -> pl.Tensor[[M, N], AT]:
            ma = pl.load(a, [0, 0], [M, K], valid_shape=[VM, VK], target_memory=pl.Mem.Mat)
            mb = pl.load(b, [0, 0], [K, N], valid_shape=[VK, VN], target_memory=pl.Mem.Mat)
            la = pl.move(ma, target_memory=pl.Mem.Left)
            rb = pl.move(mb, target_memory=pl.Mem.Right)
            acc = pl.matmul(la, rb)
            c = pl.store(acc, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
                 c: pl.InOut[pl.Tensor[[M, N], AT]]) -> pl.Tensor[[M, N], AT]:
            c = self.k(a, b, c)
            return c

    return Matmul


def k_matmul_acc(DT, AT, M, K, N, TK):
    """K split in TK chunks: the first by matmul, the rest by matmul_acc into the same Acc."""

    @pl.program
    class MatmulAcc:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
              c: pl.Out[pl.Tensor[[M, N], AT]]) -> pl.Tensor[[M, N], AT]:
            ma = pl.load(a, [0, 0], [M, TK], target_memory=pl.Mem.Mat)
            mb = pl.load(b, [0, 0], [TK, N], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(ma, target_memory=pl.Mem.Left),
                            pl.move(mb, target_memory=pl.Mem.Right))
            for k in pl.range(TK, K, TK):
                ma = pl.load(a, [0, k], [M, TK], target_memory=pl.Mem.Mat)
                mb = pl.load(b, [k, 0], [TK, N], target_memory=pl.Mem.Mat)
                la = pl.move(ma, target_memory=pl.Mem.Left)
                rb = pl.move(mb, target_memory=pl.Mem.Right)
                acc = pl.matmul_acc(acc, la, rb)
            c = pl.store(acc, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
                 c: pl.Out[pl.Tensor[[M, N], AT]]) -> pl.Tensor[[M, N], AT]:
            c = self.k(a, b, c)
            return c

    return MatmulAcc


def k_matmul_acc_init(DT, AT, M, K, N, TK):
    """Every chunk by matmul_acc into a created Acc tile; init_cond=(k == 0) overwrites it."""

    @pl.program
    class MatmulAccInit:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
              c: pl.Out[pl.Tensor[[M, N], AT]]) -> pl.Tensor[[M, N], AT]:
            acc = pl.create_tile([M, N], AT, target_memory=pl.Mem.Acc)
            for k in pl.range(0, K, TK):
                ma = pl.load(a, [0, k], [M, TK], target_memory=pl.Mem.Mat)
                mb = pl.load(b, [k, 0], [TK, N], target_memory=pl.Mem.Mat)
                la = pl.move(ma, target_memory=pl.Mem.Left)
                rb = pl.move(mb, target_memory=pl.Mem.Right)
                acc = pl.matmul_acc(acc, la, rb, init_cond=(k == 0))
            c = pl.store(acc, [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
                 c: pl.Out[pl.Tensor[[M, N], AT]]) -> pl.Tensor[[M, N], AT]:
            c = self.k(a, b, c)
            return c

    return MatmulAccInit


def k_cross_core(M, K, N):
    """A mix kernel: exp on the vector side -> Mat (cross-core) -> Left; Acc -> Vec -> relu."""

    @pl.program
    class CrossCore:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
              c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            va = pl.load(a, [0, 0], [M, K])
            ma = pl.move(pl.exp(va), target_memory=pl.Mem.Mat)
            mb = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(ma, target_memory=pl.Mem.Left),
                            pl.move(mb, target_memory=pl.Mem.Right))
            v = pl.move(acc, target_memory=pl.Mem.Vec)
            c = pl.store(pl.relu(v), [0, 0], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                 c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            c = self.k(a, b, c)
            return c

    return CrossCore


def k_matmul_at(DT, M, K, N, VM, VKL, VKR, VN, OM, ON, CM, CN):
    """Ragged product stored from Acc at offsets [OM, ON] of a larger FP32 tensor."""

    @pl.program
    class MatmulAt:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
              c: pl.InOut[pl.Tensor[[CM, CN], pl.FP32]]) -> pl.Tensor[[CM, CN], pl.FP32]:
            ma = pl.load(a, [0, 0], [M, K], valid_shape=[VM, VKL], target_memory=pl.Mem.Mat)
            mb = pl.load(b, [0, 0], [K, N], valid_shape=[VKR, VN], target_memory=pl.Mem.Mat)
            acc = pl.matmul(pl.move(ma, target_memory=pl.Mem.Left),
                            pl.move(mb, target_memory=pl.Mem.Right))
            c = pl.store(acc, [OM, ON], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], DT], b: pl.Tensor[[K, N], DT],
                 c: pl.InOut[pl.Tensor[[CM, CN], pl.FP32]]) -> pl.Tensor[[CM, CN], pl.FP32]:
            c = self.k(a, b, c)
            return c

    return MatmulAt


# ------------------------------------------------------------------- checks


def mm_reference(a, b):
    """float64 product (exact enough to judge float32 accumulation); int64 for INT8."""
    return wide(a) @ wide(b)


def assert_product(got, exact, dt, what):
    if dt.name == "INT8":  # INT32 accumulator: exact, wraps
        assert_exact(got, round_to(exact, pl.INT32), what)
    else:
        np.testing.assert_allclose(got.astype(np.float64), exact, rtol=1e-4,
                                   atol=1e-4 * float(np.abs(exact).max() or 1), err_msg=what)


def operands(dt, M, K, N, seed):
    rng = np.random.default_rng(seed)
    kind = "mid" if dt.name == "INT8" else "any"
    return data(rng, (M, K), dt, kind), data(rng, (K, N), dt, kind)


# (M, K, N, VM, VK, VN): full and ragged on each of M, K, N.
MM_SHAPES = [(16, 32, 16, 16, 32, 16), (32, 64, 32, 32, 64, 32), (16, 32, 32, 11, 20, 25)]


def check_matmul(dt, platform, shape, seed):
    M, K, N, VM, VK, VN = shape
    at = acc_dtype(dt)
    a, b = operands(dt, M, K, N, seed)
    c = sentinel((M, N), at)
    init = c.copy()
    run(k_matmul, (dt, at, M, K, N, VM, VK, VN), platform, a, b, c)
    # Only the valid K contributes, and only the [VM, VN] window is stored.
    assert_product(c[:VM, :VN], mm_reference(a[:VM, :VK], b[:VK, :VN]), dt, f"matmul {dt.name}")
    mask = np.ones((M, N), bool)
    mask[:VM, :VN] = False
    assert_exact(c[mask], init[mask], "outside the valid [VM, VN] window")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", MM_DTYPES, ids=lambda d: d.name)
@settings(max_examples=4, deadline=None)
@given(shape=st.sampled_from(MM_SHAPES[:2]), seed=st.integers(0, 2**32 - 1))
def test_matmul_matches_numpy(dt, platform, shape, seed):
    check_matmul(dt, platform, shape, seed)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", MM_DTYPES, ids=lambda d: d.name)
def test_matmul_ragged_m_k_n(dt, platform):
    check_matmul(dt, platform, MM_SHAPES[2], seed=13)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", [pl.FP16, pl.BF16])
def test_acc_stored_into_a_low_precision_tensor_rounds_once(dt, platform):
    """docs/design/numerics.md §3: an Acc stored into an FP16/BF16 tensor rounds RNE once."""
    M, K, N = 16, 32, 16
    a, b = operands(dt, M, K, N, 6)
    c = sentinel((M, N), dt)
    run(k_matmul, (dt, dt, M, K, N, M, K, N), platform, a, b, c)
    exact = mm_reference(a, b)
    # the FP32 accumulator may differ from float64 by its own rounding: 1 ULP of dt at most
    assert_ulp(c, round_to(exact, dt), dt, 1, f"Acc -> {dt.name}")


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dt", MM_DTYPES, ids=lambda d: d.name)
@pytest.mark.parametrize("builder", [k_matmul_acc, k_matmul_acc_init],
                         ids=["matmul_then_acc", "init_cond"])
def test_matmul_acc_over_k_chunks(builder, dt, platform):
    M, K, N, TK = 16, 64, 32, 16
    at = acc_dtype(dt)
    a, b = operands(dt, M, K, N, 17)
    c = np.zeros((M, N), at.np)
    run(builder, (dt, at, M, K, N, TK), platform, a, b, c)
    assert_product(c, mm_reference(a, b), dt, f"{builder.__name__} {dt.name}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int8_products_accumulate_in_int32_without_overflow_of_int8(platform):
    M, K, N = 16, 32, 16
    a = np.full((M, K), 127, np.int8)
    b = np.full((K, N), -128, np.int8)
    c = sentinel((M, N), pl.INT32)
    run(k_matmul, (pl.INT8, pl.INT32, M, K, N, M, K, N), platform, a, b, c)
    assert (c == 127 * -128 * K).all()


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cross_core_moves_vec_to_mat_and_acc_to_vec(platform):
    M, K, N = 16, 32, 16
    rng = np.random.default_rng(1)
    a = rng.uniform(-2, 2, (M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = np.zeros((M, N), np.float32)
    run(k_cross_core, (M, K, N), platform, a, b, c)
    want = np.maximum(np.exp(a.astype(np.float64)) @ b.astype(np.float64), 0)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
    assert (c >= 0).all() and (c == 0).any()


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("key", [
    (pl.FP32, 1, 16, 16, 1, 16, 16, 16, 0, 0, 1, 16),      # a single row (M = 1)
    (pl.FP32, 5, 16, 16, 5, 16, 16, 16, 0, 0, 5, 16),      # M not a fractal multiple
    (pl.FP16, 16, 32, 32, 10, 20, 32, 20, 3, 7, 40, 64),   # rhs valid K covers more than lhs
    (pl.BF16, 16, 16, 16, 16, 16, 16, 16, 24, 48, 40, 64),  # stored at the far corner
], ids=["M1", "M5", "ragged-at-3-7", "corner"])
def test_matmul_odd_m_and_ragged_acc_stored_at_offsets(key, platform):
    dt, M, K, N, VM, VKL, VKR, VN, OM, ON, CM, CN = key
    a, b = operands(dt, M, K, N, 23)
    c = np.full((CM, CN), 9.0, np.float32)
    want = c.astype(np.float64)
    # lhs valid K bounds the sum: rows of b past VKL never contribute (docs/design/language.md §21)
    want[OM:OM + VM, ON:ON + VN] = mm_reference(a[:VM, :VKL], b[:VKL, :VN])
    run(k_matmul_at, key, platform, a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4 * float(np.abs(want).max()))
    assert (c[:OM] == 9).all() and (c[:, :ON] == 9).all()
