# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Tensor-level ops in InCore code through the whole pipeline, both sims (docs/design/language.md
§10).

Shapes are chosen so the lowering has to split: 512x512 FP32 operands do not fit Vec
whole on either arch, [46, 1000] leaves a tail tile on both (no divisor of 46 near the
rows that fit), a 2^17-element row is reduced in chunks, and a 1 MiB FP32 accumulator
is tiled over M and N.  References are numpy written here: floats computed wide and
rounded once to the dtype (docs/design/numerics.md §2), matmuls in float64 (docs/design/numerics.md
§3, rtol 1e-4 for FP32 sums).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pipeline_kit import PLATFORMS, assert_exact, assert_ulp, data, round_to, run, wide

import pytest_pypto.language as pl

BIG = (512, 512)
TAIL = (46, 1000)


@pytest.fixture
def rng():
    return np.random.default_rng(20240909)


def out_like(shape, dtype):
    return np.full(shape, -3.0, dtype=np.float32).astype(_np(dtype))


def _np(dtype):
    from pipeline_kit import storage

    return storage(dtype)


# ---------------------------------------------------------------- elementwise


def k_binary(name, DT, R, C):
    OP = getattr(pl, name)  # noqa: N806  (a pl.* op stub the kernel captures)

    @pl.program
    class Binary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
              out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            z = OP(x, y)
            out = pl.assemble(out, z, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], y: pl.Tensor[[R, C], DT],
                 out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, y, out)
            return out

    return Binary


BINARY = {
    "add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.divide,
    "maximum": np.maximum, "minimum": np.minimum,
}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(BINARY))
@pytest.mark.parametrize("shape", [BIG, TAIL], ids=["512x512", "46x1000"])
def test_binary_fp32_split_into_tiles(platform, name, shape, rng):
    x = data(rng, shape, pl.FP32)
    y = data(rng, shape, pl.FP32, "nonzero")
    out = out_like(shape, pl.FP32)
    run(k_binary, (name, pl.FP32, *shape), platform, x, y, out)
    assert_exact(out, round_to(BINARY[name](wide(x), wide(y)), pl.FP32), name)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("DT", [pl.FP16, pl.BF16, pl.INT16])
def test_binary_low_precision_rounds_once_to_the_dtype(platform, DT, rng):
    x, y = data(rng, TAIL, DT, "mid"), data(rng, TAIL, DT, "mid")
    out = out_like(TAIL, DT)
    run(k_binary, ("mul", DT, *TAIL), platform, x, y, out)
    assert_exact(out, round_to(wide(x) * wide(y), DT), f"mul {DT.name}")


def k_scalar_chain(DT, R, C, s):
    @pl.program
    class Chain:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], b: pl.Tensor[[1, C], DT],
              out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            t = pl.mul(x, s)          # tensor.muls
            u = pl.add(t, b)          # b broadcasts along the rows
            v = pl.tensor.relu(u)
            out = pl.assemble(out, v, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], b: pl.Tensor[[1, C], DT],
                 out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, b, out)
            return out

    return Chain


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("DT", [pl.FP32, pl.FP16])
def test_scalar_form_broadcast_and_unary_chain(platform, DT, rng):
    shape = (300, 520)
    x, b = data(rng, shape, DT), data(rng, (1, 520), DT)
    out = out_like(shape, DT)
    run(k_scalar_chain, (DT, *shape, 0.1), platform, x, b, out)
    s = wide(round_to(0.1, DT))  # the scalar is converted to the tile dtype first
    t = round_to(wide(x) * s, DT)
    u = round_to(wide(t) + wide(b), DT)
    assert_exact(out, np.maximum(u, 0).astype(_np(DT)), DT.name)


def k_unary(name, DT, R, C):
    OP = getattr(pl, name)  # noqa: N806  (a pl.* op stub the kernel captures)

    @pl.program
    class Unary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], DT], out: pl.Out[pl.Tensor[[R, C], DT]]
              ) -> pl.Tensor[[R, C], DT]:
            y = OP(x)
            out = pl.assemble(out, y, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], DT], out: pl.Out[pl.Tensor[[R, C], DT]]
                 ) -> pl.Tensor[[R, C], DT]:
            out = self.k(x, out)
            return out

    return Unary


# name -> (reference, input kind, ULPs allowed: numpy's float32 exp is 1-2 ULP off,
# docs/design/numerics.md §2)
UNARY = {"exp": (np.exp, "small", 2), "sqrt": (np.sqrt, "pos", 0), "abs": (np.abs, "any", 0),
         "neg": (np.negative, "any", 0)}


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", sorted(UNARY))
def test_unary_on_a_tensor_with_tail_tiles(platform, name, rng):
    fn, kind, ulps = UNARY[name]
    x = data(rng, TAIL, pl.FP32, kind)
    out = out_like(TAIL, pl.FP32)
    run(k_unary, (name, pl.FP32, *TAIL), platform, x, out)
    assert_ulp(out, round_to(fn(wide(x)), pl.FP32), pl.FP32, ulps, name)


def k_cast(R, C):
    @pl.program
    class Cast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP16]]
              ) -> pl.Tensor[[R, C], pl.FP16]:
            y = pl.cast(x, pl.FP16)
            out = pl.assemble(out, y, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP16]]
                 ) -> pl.Tensor[[R, C], pl.FP16]:
            out = self.k(x, out)
            return out

    return Cast


@pytest.mark.parametrize("platform", PLATFORMS)
def test_cast_changes_the_tensor_dtype(platform, rng):
    x = data(rng, BIG, pl.FP32)
    out = out_like(BIG, pl.FP16)
    run(k_cast, BIG, platform, x, out)
    assert_exact(out, x.astype(np.float16), "cast FP32 -> FP16 (round to nearest even)")


# ----------------------------------------------------------------- reductions


def k_rows(name, R, C):
    OP = getattr(pl, name)  # noqa: N806  (a pl.* op stub the kernel captures)

    @pl.program
    class Rows:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, 1], pl.FP32]]
              ) -> pl.Tensor[[R, 1], pl.FP32]:
            r = OP(x)
            out = pl.assemble(out, r, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, 1], pl.FP32]]
                 ) -> pl.Tensor[[R, 1], pl.FP32]:
            out = self.k(x, out)
            return out

    return Rows


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["row_sum", "row_max", "row_min"])
@pytest.mark.parametrize("shape", [(100, 1000), (2, 131072)], ids=["rows", "chunked-row"])
def test_row_reductions_whole_and_chunked(platform, name, shape, rng):
    x = data(rng, shape, pl.FP32)
    out = out_like((shape[0], 1), pl.FP32)
    run(k_rows, (name, *shape), platform, x, out)
    if name == "row_sum":
        np.testing.assert_allclose(out[:, 0], wide(x).sum(axis=1), rtol=2e-5, atol=2e-3)
    else:
        fn = np.max if name == "row_max" else np.min
        assert_exact(out, fn(x, axis=1, keepdims=True), name)


def k_cols(name, R, C):
    OP = getattr(pl, name)  # noqa: N806  (a pl.* op stub the kernel captures)

    @pl.program
    class Cols:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[1, C], pl.FP32]]
              ) -> pl.Tensor[[1, C], pl.FP32]:
            r = OP(x)
            out = pl.assemble(out, r, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[1, C], pl.FP32]]
                 ) -> pl.Tensor[[1, C], pl.FP32]:
            out = self.k(x, out)
            return out

    return Cols


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", ["col_sum", "col_max"])
def test_col_reductions_tile_along_the_columns(platform, name, rng):
    shape = (1000, 300)
    x = data(rng, shape, pl.FP32)
    out = out_like((1, 300), pl.FP32)
    run(k_cols, (name, *shape), platform, x, out)
    if name == "col_sum":
        np.testing.assert_allclose(out[0], wide(x).sum(axis=0), rtol=2e-5, atol=2e-3)
    else:
        assert_exact(out, x.max(axis=0, keepdims=True), name)


def k_softmax(R, C):
    @pl.program
    class Softmax:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], out: pl.Out[pl.Tensor[[R, C], pl.FP32]]
                 ) -> pl.Tensor[[R, C], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="softmax"):
                m = pl.row_max(x)
                e = pl.exp(pl.row_expand_sub(x, m))
                s = pl.row_sum(e)
                y = pl.row_expand_div(e, s)
                out = pl.assemble(out, y, [0, 0])
            return out

    return Softmax


@pytest.mark.parametrize("platform", PLATFORMS)
def test_softmax_in_an_outlined_region(platform, rng):
    x = data(rng, (256, 700), pl.FP32, "small")
    out = out_like((256, 700), pl.FP32)
    run(k_softmax, (256, 700), platform, x, out)
    e = np.exp(wide(x) - wide(x).max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-5, atol=1e-7)


def k_full(R, C, value):
    @pl.program
    class Full:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, out: pl.Out[pl.Tensor[[R, C], pl.FP16]]) -> pl.Tensor[[R, C], pl.FP16]:
            f = pl.full([R, C], pl.FP16, value)
            out = pl.assemble(out, f, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, out: pl.Out[pl.Tensor[[R, C], pl.FP16]]) -> pl.Tensor[[R, C], pl.FP16]:
            out = self.k(out)
            return out

    return Full


@pytest.mark.parametrize("platform", PLATFORMS)
def test_full_fills_every_tile(platform):
    out = out_like((300, 700), pl.FP16)
    run(k_full, (300, 700, 0.1), platform, out)
    assert_exact(out, np.full((300, 700), np.float16(0.1)), "full")


# -------------------------------------------------------------------- matmul


def k_matmul(DT, OUT, M, K, N, a_trans, b_trans):
    A = [K, M] if a_trans else [M, K]
    B = [N, K] if b_trans else [K, N]

    @pl.program
    class Matmul:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[A, DT], b: pl.Tensor[B, DT],
              out: pl.Out[pl.Tensor[[M, N], OUT]]) -> pl.Tensor[[M, N], OUT]:
            c = pl.matmul(a, b, out_dtype=OUT, a_trans=a_trans, b_trans=b_trans)
            out = pl.assemble(out, c, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[A, DT], b: pl.Tensor[B, DT],
                 out: pl.Out[pl.Tensor[[M, N], OUT]]) -> pl.Tensor[[M, N], OUT]:
            out = self.k(a, b, out)
            return out

    return Matmul


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("a_trans,b_trans", [(False, False), (True, False), (False, True)])
def test_fp32_matmul_with_a_1mib_accumulator(platform, a_trans, b_trans, rng):
    M, K, N = 512, 384, 512
    a = data(rng, (K, M) if a_trans else (M, K), pl.FP32)
    b = data(rng, (N, K) if b_trans else (K, N), pl.FP32)
    out = out_like((M, N), pl.FP32)
    run(k_matmul, (pl.FP32, pl.FP32, M, K, N, a_trans, b_trans), platform, a, b, out)
    want = (wide(a).T if a_trans else wide(a)) @ (wide(b).T if b_trans else wide(b))
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-2)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_fp16_matmul_rounds_the_fp32_sum_once_to_out_dtype(platform, rng):
    M, K, N = 96, 1024, 160  # K in chunks: the partial sums stay FP32 in Acc
    a = (rng.standard_normal((M, K)) * 0.25).astype(np.float16)
    b = (rng.standard_normal((K, N)) * 0.25).astype(np.float16)
    out = out_like((M, N), pl.FP16)
    run(k_matmul, (pl.FP16, pl.FP16, M, K, N, False, False), platform, a, b, out)
    exact = wide(a) @ wide(b)
    # one rounding of a (nearly exact) FP32 sum: within one FP16 ULP of the exact product
    # (where the sum does not cancel to a value smaller than the FP32 partial sums' error)
    big = np.abs(exact) > 0.05
    assert_ulp(out[big], round_to(exact[big], pl.FP16), pl.FP16, 1, "fp16 out")
    np.testing.assert_allclose(out[~big].astype(np.float64), exact[~big], rtol=0, atol=2e-4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_int8_matmul_accumulates_in_int32_exactly(platform, rng):
    M, K, N = 64, 2048, 96
    a = rng.integers(-128, 128, (M, K)).astype(np.int8)
    b = rng.integers(-128, 128, (K, N)).astype(np.int8)
    out = np.zeros((M, N), np.int32)
    run(k_matmul, (pl.INT8, pl.INT32, M, K, N, False, False), platform, a, b, out)
    assert_exact(out, (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32), "int8")


def k_batch(B, M, K, N):
    @pl.program
    class Batch:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[B, M, K], pl.FP32], w: pl.Tensor[[1, N, K], pl.FP32],
              b0: pl.Tensor[[B, M, K], pl.FP32], c: pl.Out[pl.Tensor[[B, M, N], pl.FP32]]
              ) -> pl.Tensor[[B, M, N], pl.FP32]:
            s = pl.add(a, b0)                              # N-D tiles
            cm = pl.tensor.matmul(s, w, b_trans=True, out_dtype=pl.FP32)  # w broadcasts
            c = pl.assemble(c, cm, [0, 0, 0])
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[B, M, K], pl.FP32], w: pl.Tensor[[1, N, K], pl.FP32],
                 b0: pl.Tensor[[B, M, K], pl.FP32], c: pl.Out[pl.Tensor[[B, M, N], pl.FP32]]
                 ) -> pl.Tensor[[B, M, N], pl.FP32]:
            c = self.k(a, w, b0, c)
            return c

    return Batch


@pytest.mark.parametrize("platform", PLATFORMS)
def test_batched_matmul_broadcasts_a_single_weight(platform, rng):
    B, M, K, N = 3, 16, 80, 48
    a, b0 = data(rng, (B, M, K), pl.FP32), data(rng, (B, M, K), pl.FP32)
    w = data(rng, (1, N, K), pl.FP32)
    out = out_like((B, M, N), pl.FP32)
    run(k_batch, (B, M, K, N), platform, a, w, b0, out)
    s = round_to(wide(a) + wide(b0), pl.FP32)
    np.testing.assert_allclose(out, wide(s) @ np.swapaxes(wide(w), -1, -2), rtol=1e-4, atol=1e-2)


def k_matmul_acc(M, K, N):
    @pl.program
    class Acc:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, 2 * K], pl.FP32], b: pl.Tensor[[2 * K, N], pl.FP32],
              first: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
              ) -> pl.Tensor[[M, N], pl.FP32]:
            a0 = pl.slice(a, [M, K], [0, 0])
            a1 = pl.slice(a, [M, K], [0, K])
            b0 = pl.slice(b, [K, N], [0, 0])
            b1 = pl.slice(b, [K, N], [K, 0])
            acc = pl.matmul(a0, b0, out_dtype=pl.FP32)
            acc = pl.matmul_acc(acc, a1, b1, init_cond=(first == 1))
            out = pl.assemble(out, acc, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, 2 * K], pl.FP32], b: pl.Tensor[[2 * K, N], pl.FP32],
                 first: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor[[M, N], pl.FP32]]
                 ) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, first, out)
            return out

    return Acc


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("first", [0, 1])
def test_matmul_acc_adds_or_overwrites(platform, first, rng):
    M, K, N = 256, 128, 256  # a 256 KiB accumulator: tiled over M/N on a2a3
    a, b = data(rng, (M, 2 * K), pl.FP32), data(rng, (2 * K, N), pl.FP32)
    out = out_like((M, N), pl.FP32)
    run(k_matmul_acc, (M, K, N), platform, a, b, first, out)
    second = wide(a[:, K:]) @ wide(b[K:])
    want = second if first else wide(a[:, :K]) @ wide(b[:K]) + second
    np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-2)


# ------------------------------------------------------------ property test


@settings(max_examples=8, deadline=None)
@given(rows=st.integers(1, 90), cols=st.integers(1, 3000), seed=st.integers(0, 2**31))
def test_tensor_sub_matches_numpy_for_any_shape(rows, cols, seed):
    r = np.random.default_rng(seed)
    x, y = data(r, (rows, cols), pl.FP32), data(r, (rows, cols), pl.FP32)
    want = round_to(wide(x) - wide(y), pl.FP32)
    for platform in PLATFORMS:
        out = out_like((rows, cols), pl.FP32)
        run(k_binary, ("sub", pl.FP32, rows, cols), platform, x, y, out)
        assert_exact(out, want, f"{rows}x{cols} on {platform}")
