# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Tensor-level gather, scatter, cmp, rsqrt, sort, random, expand_clone and
create_l1/gather_row through the whole pipeline on both sims (PyPTO's tensor forms).

References are numpy written here: torch.gather / scatter_ semantics by explicit
loops or take_along_axis, cmp as 1/0 in the input dtype, a Philox4x32 of our own.
Big shapes make the lowering cut tiles (a [1024, 256] FP32 gather source is 1 MiB,
more than either Vec), so the tiling is checked against the same reference.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from pipeline_kit import PLATFORMS, run

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import (
    ArchSupportError,
    CapacityError,
    InvalidOperationError,
    ParserTypeError,
    SimulationError,
)
from ut.helpers import line_finder

NP = {"FP32": np.float32, "FP16": np.float16, "BF16": ml_dtypes.bfloat16, "INT32": np.int32,
      "INT16": np.int16, "UINT32": np.uint32}


line_of = line_finder(__file__)


@pytest.fixture
def rng():
    return np.random.default_rng(7)


# ---------------------------------------------------------------------- gather


def k_gather(IN, IDX, DT, IDT, DIM):
    IN, IDX = list(IN), list(IDX)  # noqa: N806  (keys are tuples, annotations take lists)
    ZERO = [0] * len(IDX)  # noqa: N806

    @pl.program
    class Gather:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[IN, DT], i: pl.Tensor[IDX, IDT],
              out: pl.Out[pl.Tensor[IDX, DT]]) -> pl.Tensor[IDX, DT]:
            g = pl.tensor.gather(x, dim=DIM, index=i)  # gather-line
            out = pl.assemble(out, g, ZERO)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[IN, DT], i: pl.Tensor[IDX, IDT],
                 out: pl.Out[pl.Tensor[IDX, DT]]) -> pl.Tensor[IDX, DT]:
            out = self.k(x, i, out)
            return out

    return Gather


def torch_gather(x, idx, dim):
    """out[p] = x[p with p[dim] = idx[p]] (index no larger than x off dim)."""
    pos = list(np.indices(idx.shape))
    pos[dim] = idx.astype(np.int64)
    return x[tuple(pos)]


GATHERS = [  # (input shape, index shape, dim)
    ((4, 16), (4, 8), -1),
    ((4, 16), (2, 8), -1),  # index rows < input rows: the extra rows are unused
    ((4, 32), (4, 64), 1),  # more index columns than input columns (an interleave)
    ((2, 3, 16), (2, 3, 8), -1),
    ((2, 8, 8), (2, 3, 8), 1),
    ((8, 2, 8), (3, 2, 8), -3),
    ((1024, 256), (1024, 64), -1),  # 1 MiB source: cut into row tiles
    ((512, 300), (200, 300), 0),  # gathered along rows: cut along the columns
]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("shape", "ishape", "dim"), GATHERS)
def test_gather_index_form_is_torch_gather(platform, shape, ishape, dim, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    idx = rng.integers(0, shape[dim], ishape).astype(np.int32)
    out = np.full(ishape, -5.0, np.float32)
    run(k_gather, (shape, ishape, pl.FP32, pl.INT32, dim), platform, x, idx, out)
    np.testing.assert_array_equal(out, torch_gather(x, idx, dim % len(shape)))


def test_fp16_gather_with_int16_indices_on_a5_and_its_arch_gate_on_a2a3(rng):
    x = rng.standard_normal((4, 16)).astype(np.float16)
    idx = rng.integers(0, 16, (4, 16)).astype(np.int16)
    out = np.zeros((4, 16), np.float16)
    key = ((4, 16), (4, 16), pl.FP16, pl.INT16, -1)
    run(k_gather, key, "a5sim", x, idx, out)
    np.testing.assert_array_equal(out, torch_gather(x, idx, 1))
    with pytest.raises(ArchSupportError) as exc:
        run(k_gather, key, "a2a3sim", x, idx, out)
    assert "INT16 indices on the 'a2a3' backend" in exc.value.message
    assert exc.value.line == line_of("# gather-line")


def test_int16_indices_over_more_than_32768_elements_are_cut_into_rows_that_fit(rng):
    # [4096, 16] FP16 holds 65536 elements: INT16 flat offsets of one tile must stay
    # below 32768, so the rows are cut although the bytes would fit Vec.
    x = rng.standard_normal((4096, 16)).astype(np.float16)
    idx = rng.integers(0, 16, (4096, 16)).astype(np.int16)
    out = np.zeros((4096, 16), np.float16)
    run(k_gather, ((4096, 16), (4096, 16), pl.FP16, pl.INT16, -1), "a5sim", x, idx, out)
    np.testing.assert_array_equal(out, torch_gather(x, idx, 1))
    base = rng.standard_normal((4096, 16)).astype(np.float16)
    vals = rng.standard_normal((4096, 8)).astype(np.float16)
    sidx = np.tile(np.arange(8, dtype=np.int16) * 2, (4096, 1))
    got = np.zeros_like(base)
    run(k_scatter, ((4096, 16), (4096, 8), pl.FP16, pl.INT16), "a5sim", base, sidx, vals, got)
    np.testing.assert_array_equal(got, scatter_ref(base, sidx, vals))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_index_outside_the_gathered_axis_is_a_simulation_error_at_the_line(platform):
    x = np.zeros((4, 16), np.float32)
    idx = np.zeros((4, 8), np.int32)
    idx[2, 5] = 16  # one past the row: the flat buffer would read row 3
    with pytest.raises(SimulationError) as exc:
        run(k_gather, ((4, 16), (4, 8), pl.FP32, pl.INT32, -1), platform, x, idx,
            np.zeros((4, 8), np.float32))
    assert "tensor.gather: index 16 at position [2, 5] is out of range" in str(exc.value)
    assert exc.value.line == line_of("# gather-line")


def k_gather_mask(R, C, OC, PATTERN, ODT):
    @pl.program
    class GatherMask:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, OC], ODT]]) -> pl.Tensor[[R, OC], ODT]:
            with pl.at(level=pl.Level.CORE_GROUP):
                g = pl.gather(x, mask_pattern=PATTERN, output_dtype=ODT)
                out = pl.assemble(out, g, [0, 0])
            return out

    return GatherMask


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("rows", "pattern", "start", "stride", "odt"), [
    (8, pl.tile.MaskPattern.P0101, 0, 2, pl.FP32),
    (8, pl.tile.MaskPattern.P1010, 1, 2, pl.UINT32),  # the bits, reinterpreted
    (8, pl.tile.MaskPattern.P0100, 2, 4, pl.FP32),
    (2048, pl.tile.MaskPattern.P1111, 0, 1, pl.FP32),  # 1 MiB: cut into row tiles
])
def test_gather_mask_form_keeps_the_marked_columns(platform, rows, pattern, start, stride,
                                                   odt, rng):
    x = rng.standard_normal((rows, 128)).astype(np.float32)
    out = np.zeros((rows, 128 // stride), NP[odt.name])
    run(k_gather_mask, (rows, 128, 128 // stride, pattern, odt), platform, x, out)
    want = np.ascontiguousarray(x[:, start::stride]).view(NP[odt.name])
    np.testing.assert_array_equal(out, want)


# --------------------------------------------------------------------- scatter


def k_scatter(IN, SRC, DT, IDT):
    IN, SRC = list(IN), list(SRC)  # noqa: N806

    @pl.program
    class Scatter:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, base: pl.Tensor[IN, DT], i: pl.Tensor[SRC, IDT], v: pl.Tensor[SRC, DT],
                 out: pl.Out[pl.Tensor[IN, DT]]) -> pl.Tensor[IN, DT]:
            with pl.at(level=pl.Level.CORE_GROUP):
                s = pl.scatter(base, dim=-1, index=i, src=v)  # scatter-line
                out = pl.assemble(out, s, [0, 0])
            return out

    return Scatter


def scatter_ref(base, idx, src):
    out = base.copy()
    for b in range(idx.shape[0]):
        for k in range(idx.shape[1]):  # ascending k: the last write wins
            out[b, int(idx[b, k])] = src[b, k]
    return out


SCATTERS = [  # (dtype, index dtype, input shape, src shape)
    (pl.FP32, pl.INT32, (8, 16), (8, 8)),
    (pl.INT32, pl.INT32, (8, 16), (8, 8)),
    (pl.FP16, pl.INT16, (16, 32), (16, 16)),
    (pl.BF16, pl.INT16, (16, 32), (16, 16)),
    (pl.INT16, pl.INT16, (16, 32), (16, 16)),
    (pl.FP32, pl.INT32, (1, 16), (1, 8)),
    (pl.FP32, pl.INT32, (12, 16), (5, 4)),  # rows no index addresses keep the input
    (pl.FP32, pl.INT32, (1024, 128), (1000, 32)),  # 512 KiB base: cut into row tiles
]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("dt", "idt", "shape", "sshape"), SCATTERS)
def test_scatter_index_form_is_a_copy_with_the_columns_written(platform, dt, idt, shape,
                                                                sshape, rng):
    base = (-np.arange(np.prod(shape)).reshape(shape) - 1).astype(NP[dt.name])
    vals = (np.arange(np.prod(sshape)).reshape(sshape) % 1000 + 1).astype(NP[dt.name])
    # Repeated columns with distinct values pin the ascending-k order.
    idx = ((np.arange(sshape[1])[None, :] // 2 + np.arange(sshape[0])[:, None] * 3)
           % shape[1]).astype(NP[idt.name])
    out = np.zeros(shape, NP[dt.name])
    run(k_scatter, (shape, sshape, dt, idt), platform, base, idx, vals, out)
    np.testing.assert_array_equal(out.astype(np.float64),
                                  scatter_ref(base, idx, vals).astype(np.float64))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_scatter_column_past_the_row_is_a_simulation_error_at_the_line(platform):
    idx = np.zeros((8, 8), np.int32)
    idx[7, 0] = -1
    with pytest.raises(SimulationError) as exc:
        run(k_scatter, ((8, 16), (8, 8), pl.FP32, pl.INT32), platform,
            np.zeros((8, 16), np.float32), idx, np.ones((8, 8), np.float32),
            np.zeros((8, 16), np.float32))
    assert "tensor.scatter: index -1 at position [7, 0] is out of range" in str(exc.value)
    assert exc.value.line == line_of("# scatter-line")


def k_scatter_mask(R, C):
    @pl.program
    class ScatterMask:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, even: pl.Tensor[[R, C], pl.FP32], odd: pl.Tensor[[R, C], pl.FP32],
                 dst: pl.Tensor[[R, 2 * C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, 2 * C], pl.FP32]],
                 once: pl.Out[pl.Tensor[[R, 2 * C], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                a = pl.tensor.scatter(even, mask_pattern=pl.tile.MaskPattern.P0101, dst=dst)
                b = pl.scatter(odd, mask_pattern=pl.tile.MaskPattern.P1010, dst=a)
                out = pl.assemble(out, b, [0, 0])
                once = pl.assemble(once, a, [0, 0])
            return out, once

    return ScatterMask


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows", [16, 1024])  # 1024 rows: 512 KiB dst, cut into row tiles
def test_mask_scatters_chain_and_keep_the_unmarked_columns(platform, rows, rng):
    even = rng.standard_normal((rows, 64)).astype(np.float32)
    odd = rng.standard_normal((rows, 64)).astype(np.float32)
    dst = np.full((rows, 128), -9.0, np.float32)
    out, once = np.zeros_like(dst), np.zeros_like(dst)
    run(k_scatter_mask, (rows, 64), platform, even, odd, dst, out, once)
    np.testing.assert_array_equal(out[:, 0::2], even)
    np.testing.assert_array_equal(out[:, 1::2], odd)
    np.testing.assert_array_equal(once[:, 0::2], even)
    np.testing.assert_array_equal(once[:, 1::2], dst[:, 1::2])  # dst preserved
    np.testing.assert_array_equal(dst, -9.0)  # an input, not written


# ------------------------------------------------------------------------- cmp


def k_cmp(R, C, RC, DT, CT):
    @pl.program
    class Cmp:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[R, C], DT], b: pl.Tensor[[R, RC], DT],
              o1: pl.Out[pl.Tensor[[R, C], DT]], o2: pl.Out[pl.Tensor[[R, C], DT]]):
            o1 = pl.assemble(o1, pl.cmp(a, b, cmp_type=CT), [0, 0])
            o2 = pl.assemble(o2, pl.cmp(a, 0.5, cmp_type=CT), [0, 0])
            return o1, o2

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[R, C], DT], b: pl.Tensor[[R, RC], DT],
                 o1: pl.Out[pl.Tensor[[R, C], DT]], o2: pl.Out[pl.Tensor[[R, C], DT]]):
            o1, o2 = self.k(a, b, o1, o2)
            return o1, o2

    return Cmp


CMP = [np.equal, np.not_equal, np.less, np.less_equal, np.greater, np.greater_equal]


CMP_CASES = [(dt, shape, rcols, ct) for dt, shape, rcols in (
    (pl.FP32, (16, 32), 32), (pl.FP16, (8, 64), 1), (pl.INT32, (16, 32), 32)) for ct in range(6)]
CMP_CASES.append((pl.FP32, (512, 512), 512, 2))  # 1 MiB operands: cut into tiles


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("dt", "shape", "rcols", "cmp_type"), CMP_CASES)
def test_tensor_cmp_is_one_or_zero_in_the_input_dtype(platform, dt, shape, rcols, cmp_type,
                                                      rng):
    st = NP[dt.name]
    a = rng.integers(-2, 3, shape).astype(st)
    b = rng.integers(-2, 3, (shape[0], rcols)).astype(st)
    a[0, :4] = 0.5 if dt.name != "INT32" else 0  # exact ties with the scalar
    o1, o2 = np.full(shape, 9, st), np.full(shape, 9, st)
    run(k_cmp, (*shape, rcols, dt, cmp_type), platform, a, b, o1, o2)
    wide = np.float64 if dt.is_float else np.int64
    scalar = 0.5 if dt.is_float else 0
    np.testing.assert_array_equal(o1, CMP[cmp_type](a.astype(wide), b.astype(wide)).astype(st))
    np.testing.assert_array_equal(o2, CMP[cmp_type](a.astype(wide), scalar).astype(st))


# ----------------------------------------------------------------------- rsqrt


def k_rsqrt(R, C, HP):
    @pl.program
    class Rsqrt:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y = pl.rsqrt(x, high_precision=HP)
                out = pl.assemble(out, y, [0, 0])
            return out

    return Rsqrt


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("high_precision", [False, True])
@pytest.mark.parametrize("shape", [(16, 64), (512, 512)])
def test_tensor_rsqrt_with_and_without_high_precision(platform, high_precision, shape, rng):
    x = rng.uniform(0.05, 50.0, shape).astype(np.float32)
    out = np.zeros(shape, np.float32)
    run(k_rsqrt, (*shape, high_precision), platform, x, out)
    want = (1.0 / np.sqrt(x.astype(np.float64))).astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=2e-7)


def test_tensor_rsqrt_scratch_is_lowered_only_with_high_precision():
    from pytest_pypto.compiler.api import lower
    from pytest_pypto.compiler.walk import iter_calls

    for hp, want in ((False, None), (True, "Vec")):
        work, _ = lower(k_rsqrt(16, 64, hp), RunConfig(platform="a2a3sim"))
        calls = [e for fn in work.functions.values() for _, e in iter_calls(fn.body)
                 if getattr(e, "op", None) == "tile.rsqrt"]
        assert len(calls) == 1
        tmp = calls[0].arg("tmp")
        assert (None if tmp is None else tmp.type.space) == want


# ------------------------------------------------------------------------ sort


def k_sort(N):
    @pl.program
    class Sort:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, src: pl.Tensor[[1, N], pl.FP32], idx: pl.Tensor[[1, N], pl.UINT32],
                 vals: pl.Out[pl.Tensor[[1, N], pl.FP32]],
                 ids: pl.Out[pl.Tensor[[1, N], pl.UINT32]],
                 two: pl.Out[pl.Tensor[[1, 128], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                s = pl.sort32(src, idx)
                for i, (acc,) in pl.range(3, init_values=(s,)):
                    merged = pl.mrgsort(acc, block_len=1 << (6 + i * 2))
                    result = pl.yield_(merged)
                v = pl.gather(result, mask_pattern=pl.tile.MaskPattern.P0101)
                k = pl.tensor.gather(result, mask_pattern=pl.tile.MaskPattern.P1010,
                                     output_dtype=pl.UINT32)
                vals = pl.assemble(vals, v, [0, 0])
                ids = pl.assemble(ids, k, [0, 0])
                left = pl.sort32(pl.slice(src, [1, 32], [0, 0]), pl.slice(idx, [1, 32], [0, 0]))
                right = pl.sort32(pl.slice(src, [1, 32], [0, 32]),
                                  pl.slice(idx, [1, 32], [0, 32]))
                both = pl.tensor.mrgsort(left, right)  # format 2: tmp from the compiler
                two = pl.assemble(two, both, [0, 0])
            return vals, ids, two

    return Sort


@pytest.mark.parametrize("platform", PLATFORMS)
def test_sort32_and_mrgsort_on_tensors_sort_descending_with_indices(platform, rng):
    src = rng.permutation(2048).astype(np.float32)[None] - 1000.0
    idx = np.arange(2048, dtype=np.uint32)[None]
    vals, ids = np.zeros_like(src), np.zeros_like(idx)
    two = np.zeros((1, 128), np.float32)
    run(k_sort, (2048,), platform, src, idx, vals, ids, two)
    np.testing.assert_array_equal(vals[0], np.sort(src[0])[::-1])
    np.testing.assert_array_equal(src[0][ids[0]], vals[0])
    first = src[0, :64]
    np.testing.assert_array_equal(two[0, 0::2], np.sort(first)[::-1])
    np.testing.assert_array_equal(two[0, 1::2].view(np.uint32), np.argsort(-first))


# ---------------------------------------------------------------------- random


def philox_words(key, counter, count, rounds=10):
    """Philox4x32-R (Salmon et al. 2011): block b uses counter + b; words in order."""
    m = 0xFFFFFFFF
    base = sum(c << (32 * i) for i, c in enumerate(counter))
    words = []
    for b in range((count + 3) // 4):
        ctr = base + b
        c = [(ctr >> (32 * i)) & m for i in range(4)]
        k0, k1 = key
        for _ in range(rounds):
            p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
            c = [((p1 >> 32) ^ c[1] ^ k0) & m, p1 & m, ((p0 >> 32) ^ c[3] ^ k1) & m, p0 & m]
            k0, k1 = (k0 + 0x9E3779B9) & m, (k1 + 0xBB67AE85) & m
        words.extend(c)
    return np.array(words[:count], dtype=np.uint64).astype(np.uint32)


def k_random(R, C, DT, ROUNDS):
    @pl.program
    class Random:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            a: pl.Tensor[[R, C], DT] = pl.random(  # random-line
                0x1234, 0x5678, 1, 2, 3, 4, [R, C], dtype=DT, rounds=ROUNDS)
            return pl.assemble(out, a, [0, 0])

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, out: pl.Out[pl.Tensor[[R, C], DT]]) -> pl.Tensor[[R, C], DT]:
            return self.k(out)

    return Random


@pytest.mark.parametrize(("dt", "rounds"), [(pl.UINT32, 10), (pl.INT32, 7)])
def test_tensor_random_is_philox_over_the_whole_tensor_on_a5(dt, rounds):
    out = np.zeros((4, 256), NP[dt.name])
    run(k_random, (4, 256, dt, rounds), "a5sim", out)
    want = philox_words((0x1234, 0x5678), (1, 2, 3, 4), 4 * 256, rounds)
    np.testing.assert_array_equal(out.reshape(-1).view(np.uint32), want)


def test_tensor_random_too_big_for_one_tile_is_a_capacity_error_at_the_line():
    with pytest.raises(CapacityError) as exc:
        pytest_pypto.compile(k_random(512, 512, pl.UINT32, 10), RunConfig(platform="a5sim"))
    assert "tensor-level random: the whole [512, 512] tensor needs" in exc.value.message
    assert exc.value.line == line_of("# random-line")


# ---------------------------------------------------------------- expand_clone


def k_expand(IN, OUT):
    IN, OUT = list(IN), list(OUT)  # noqa: N806

    @pl.program
    class Expand:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[IN, pl.FP32],
              y: pl.Out[pl.Tensor[OUT, pl.FP32]]) -> pl.Tensor[OUT, pl.FP32]:
            out: pl.Tensor[OUT, pl.FP32] = pl.expand_clone(x, y)  # expand-line
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[IN, pl.FP32],
                 y: pl.Out[pl.Tensor[OUT, pl.FP32]]) -> pl.Tensor[OUT, pl.FP32]:
            y = self.k(x, y)
            return y

    return Expand


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("shape", "target"), [
    ((8, 8, 8), (8, 8, 8)), ((1, 8, 8), (8, 8, 8)), ((8, 1, 8), (8, 8, 8)),
    ((8, 8, 1), (8, 8, 8)), ((1, 512, 512), (3, 512, 512)),  # 1 MiB slices: cut
])
def test_expand_clone_repeats_the_input_along_its_unit_axis(platform, shape, target, rng):
    x = rng.standard_normal(shape).astype(np.float32)
    y = np.zeros(target, np.float32)
    run(k_expand, (shape, target), platform, x, y)
    np.testing.assert_array_equal(y, np.broadcast_to(x, target))


def test_expand_clone_stretching_two_axes_is_a_type_error_at_the_line():
    with pytest.raises(ParserTypeError) as exc:
        k_expand([1, 1, 8], [8, 8, 8])
    assert "stretches at most one dimension" in exc.value.message
    assert exc.value.line == line_of("# expand-line")


# ------------------------------------------------------- create_l1, gather_row


def k_l1(ROWS, D, POOL):
    @pl.program
    class PagedRows:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, src: pl.Tensor[[POOL, D], pl.FP16], n: pl.Tensor[[1], pl.INT32],
                 eye: pl.Tensor[[ROWS, ROWS], pl.FP16],
                 out: pl.Out[pl.Tensor[[ROWS, D], pl.FP32]]) -> pl.Tensor[[ROWS, D], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                r = pl.cast(pl.read(n, [0]), pl.INDEX)
                kv = pl.create_l1([ROWS, D], pl.FP16)  # l1-line
                kv = pl.gather_row(kv, src, [0, 0], [ROWS, 0], [ROWS, D])
                kv = pl.tensor.gather_row(kv, src, [0, 0], [0, 0], [ROWS, D],
                                          valid_shape=[r, D])
                res = pl.matmul(eye, kv, out_dtype=pl.FP32)
                out = pl.assemble(out, res, [0, 0])
            return out

    return PagedRows


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("rows", [1, 37, 64])
def test_gather_row_fills_a_create_l1_accumulator_up_to_a_runtime_row_count(platform, rows):
    src = np.repeat(np.arange(128, dtype=np.float16)[:, None], 32, 1)
    out = np.zeros((64, 32), np.float32)
    run(k_l1, (64, 32, 128), platform, src, np.array([rows], np.int32),
        np.eye(64, dtype=np.float16), out)
    want = np.concatenate([src[:rows], src[64 + rows:128]]).astype(np.float32)
    np.testing.assert_array_equal(out, want)


def test_create_l1_larger_than_mat_is_a_capacity_error_at_the_line():
    with pytest.raises(CapacityError) as exc:
        pytest_pypto.compile(k_l1(2048, 256, 2048), RunConfig(platform="a2a3sim"))
    assert "pl.create_l1 of [2048, 256] FP16 needs 1048576 bytes of Mat" in exc.value.message
    assert exc.value.line == line_of("# l1-line")


# -------------------------------------------------------------- call-site errors


def _parse_call(tmp_path, text):
    """Parse a kernel whose one op call is ``text``, on line 8 of its own file."""
    path = tmp_path / "calls.py"
    path.write_text(
        "import pytest_pypto.language as pl\n\n\n"
        "def build():\n"
        "    @pl.program\n"
        "    class P:\n"
        "        @pl.function(type=pl.FunctionType.InCore)\n"
        f"        def k(self, x: pl.Tensor[[8, 16], pl.FP32], i: pl.Tensor[[8, 8], pl.INT32], "
        f"d: pl.Tensor[[8, 32], pl.FP32]):\n"
        f"            g = {text}\n"
        "    return P\n"
    )
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("calls_under_test", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # @pl.program reads the class source through it
    try:
        spec.loader.exec_module(module)
        return module.build()
    finally:
        del sys.modules[spec.name]


@pytest.mark.parametrize(("text", "cls", "message"), [
    ("pl.gather(x, dim=-1, index=i, mask_pattern=pl.tile.MaskPattern.P0101)", ParserTypeError,
     "the index form (dim, index) and mask form (mask_pattern) are mutually exclusive"),
    ("pl.gather(x, kvalue=1.0, cmp_mode='bogus', out_cols=8)", ParserTypeError,
     "tensor.gather requires cmp_mode in ['eq', 'ne', 'lt', 'le', 'gt', 'ge']"),
    ("pl.gather(x, dim=-1, index=i, output_dtype=pl.UINT32)", ParserTypeError,
     "output_dtype is only valid for the mask form"),
    ("pl.gather(x, dim=2, index=i)", ParserTypeError, "requires dim in [-2, 1], but got dim=2"),
    ("pl.scatter(x, dim=0, index=i, src=x)", ParserTypeError,
     "supports dim=-1 (last axis) only, but got dim=0"),
    ("pl.scatter(x, dim=-1, index=i, src=x)", ParserTypeError,
     "requires index of src's shape [8, 16], but got [8, 8]"),
    ("pl.scatter(x, mask_pattern=pl.tile.MaskPattern.P0001, dst=d)", ParserTypeError,
     "with mask_pattern=3 requires dst.shape[1] (32) == src.shape[1] (16) * 4"),
    ("pl.scatter(x, dim=-1, index=i)", ParserTypeError,
     "index form requires dim, index and src (missing src)"),
    ("pl.rsqrt(x, tmp=x)", InvalidOperationError,
     "Tensor inputs must not pass tmp"),
])
def test_tensor_form_rules_name_the_op_at_the_call_line(tmp_path, text, cls, message):
    with pytest.raises(cls) as exc:
        _parse_call(tmp_path, text)
    assert message in exc.value.message
    assert (exc.value.file, exc.value.line) == (str(tmp_path / "calls.py"), 9)


def test_mask_pattern_is_pyptos_numbering():
    mp = pl.tile.MaskPattern
    assert [int(mp[n]) for n in ("P0101", "P1010", "P0001", "P0010", "P0100", "P1000",
                                 "P1111")] == list(range(1, 8))
