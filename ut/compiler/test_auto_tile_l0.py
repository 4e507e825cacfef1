"""AutoL0 (docs/design/checks.md §7a): a hand-written Mat-operand matmul larger than L0 compiles
by being cut into L0 tiles and computes what numpy computes on both sims; a matmul the pass
cannot place still fails at the user's line."""

from __future__ import annotations

import functools

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto.compiler.api as api
import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.arch import spec
from pytest_pypto.compiler.api import compile, lower
from pytest_pypto.compiler.l0_chooser import choose_l0_tile, config_for
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.types import TileType
from ut.helpers import line_finder

line_of = line_finder(__file__)
PLATFORMS = ("a2a3sim", "a5sim")
DT = {"BF16": (pl.BF16, ml_dtypes.bfloat16), "INT8": (pl.INT8, np.int8)}
ACC = {"BF16": (pl.FP32, np.float32), "INT8": (pl.INT32, np.int32)}


def biased(M, K, N, dt="BF16"):
    """out = a @ b + bias, the operands loaded whole into Mat by hand."""
    t, acc = DT[dt][0], ACC[dt][0]

    @pl.program
    class Biased:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], t], b: pl.Tensor[[K, N], t],
              bias: pl.Tensor[[1, N], acc],
              out: pl.Out[pl.Tensor[[M, N], acc]]) -> pl.Tensor[[M, N], acc]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            bias_mat = pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul_bias(a_mat, b_mat, bias_mat)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], t], b: pl.Tensor[[K, N], t],
                 bias: pl.Tensor[[1, N], acc],
                 out: pl.Out[pl.Tensor[[M, N], acc]]) -> pl.Tensor[[M, N], acc]:
            out = self.k(a, b, bias, out)
            return out

    return Biased


def plain(M, K, N):
    """out = a @ b (BF16 -> FP32), then ``acc += a2 @ b`` when ``twice``."""

    @pl.program
    class Plain:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(a_mat, b_mat)
            c = pl.tile.matmul_acc(c, a_mat, b_mat)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, out)
            return out

    return Plain


def _data(M, K, N, dt, seed=0):
    rng = np.random.default_rng(seed)
    np_t = DT[dt][1]
    if dt == "INT8":
        a = rng.integers(-3, 4, (M, K)).astype(np_t)
        b = rng.integers(-3, 4, (K, N)).astype(np_t)
        bias = rng.integers(-20, 21, (1, N)).astype(np.int32)
        return a, b, bias
    a = rng.standard_normal((M, K)).astype(np_t)
    b = rng.standard_normal((K, N)).astype(np_t)
    return a, b, rng.standard_normal((1, N)).astype(np.float32)


def _wide(x):
    return x.astype(np.int64) if x.dtype == np.int8 else x.astype(np.float32)


def _left_tiles(program, cfg):
    work, _ = lower(program, cfg)
    fn = work.functions["k"]
    return [s.targets[0].type for s in _stmts(fn.body)
            if isinstance(s, n.Assign) and isinstance(s.targets[0].type, TileType)
            and s.targets[0].type.space == "Left"]


def _stmts(body):
    for s in body:
        yield s
        for attr in ("body", "then_body", "else_body"):
            yield from _stmts(getattr(s, attr, []) or [])


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("shape,dt", [((256, 256, 512), "BF16"), ((128, 512, 512), "INT8"),
                                      ((400, 48, 400), "BF16"), ((128, 272, 128), "BF16")],
                         ids=["mn-and-k", "int8-exact", "boundary-tiles", "k-tail"])
def test_biased_matmul_larger_than_l0_matches_numpy(platform, shape, dt):
    M, K, N = shape
    cfg = RunConfig(platform=platform)
    compiled = compile(biased(M, K, N, dt), cfg)
    a, b, bias = _data(M, K, N, dt)
    out = np.zeros((M, N), ACC[dt][1])
    run(compiled, a, b, bias, out, config=cfg)
    expected = _wide(a) @ _wide(b) + bias
    if dt == "INT8":
        assert np.array_equal(out, expected.astype(np.int32))
    else:
        np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-3)


def test_boundary_case_really_has_partial_tiles():
    # The "boundary-tiles" shape above is meant to cut M and N unevenly on a2a3: pin that.
    arch = spec("a2a3")
    r = choose_l0_tile(config_for(arch, 400, 400, 48, bytes_a=2, bytes_b=2, acc_dtype="FP32",
                                  max_n=arch.capacity["Bias"] // 4))
    assert 400 % r.m or 400 % r.n


@pytest.mark.parametrize("platform", PLATFORMS)
def test_k_only_matmul_and_matmul_acc_match_numpy(platform):
    # [128, 1024] BF16 is 256 KiB: far over L0A; the [128, 128] FP32 output fits Acc.
    M, K, N = 128, 1024, 128
    cfg = RunConfig(platform=platform)
    program = plain(M, K, N)
    lefts = _left_tiles(program, cfg)
    assert lefts and all(t.shape[0] == M and t.shape[1] < K for t in lefts)
    a, b, _ = _data(M, K, N, "BF16", seed=3)
    out = np.zeros((M, N), np.float32)
    run(compile(program, cfg), a, b, out, config=cfg)
    np.testing.assert_allclose(out, 2 * (_wide(a) @ _wide(b)), rtol=1e-4, atol=2e-3)


def test_a_matmul_that_fits_l0_is_left_alone():
    # [64, 64] @ [64, 64]: the operands move to Left/Right whole, as written.
    lefts = _left_tiles(plain(64, 64, 64), RunConfig(platform="a2a3sim"))
    assert [t.shape for t in lefts] == [(64, 64), (64, 64)]


def test_an_output_without_a_store_to_place_it_fails_at_the_users_line():
    M, K, N = 256, 64, 512

    @pl.program
    class Twice:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
              out2: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(a_mat, b_mat)  # too-big-twice
            out = pl.store(c, [0, 0], out)
            out2 = pl.store(c, [0, 0], out2)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
                 out2: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, out, out2)
            return out

    with pytest.raises(CapacityError, match="Acc peak usage") as info:
        compile(Twice, RunConfig(platform="a2a3sim"))
    assert info.value.file == __file__ and info.value.line == line_of("too-big-twice")


def test_a_bias_tile_that_would_need_cutting_fails_at_the_users_line():
    # A bias already in Bias is not cut into windows; [128, 1024] FP32 needs N cut on a2a3.
    M, K, N = 128, 32, 1024

    @pl.program
    class Resident:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              bias: pl.Tensor[[1, N], pl.FP32],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            bias_mat = pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat)
            bias_l0 = pl.tile.move(bias_mat, target_memory=pl.Mem.Bias)
            c = pl.tile.matmul_bias(a_mat, b_mat, bias_l0)  # resident-bias
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 bias: pl.Tensor[[1, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, bias, out)
            return out

    with pytest.raises(CapacityError) as info:
        compile(Resident, RunConfig(platform="a2a3sim"))
    assert info.value.file == __file__ and info.value.line == line_of("resident-bias")


def chained(M, K, N, E, mode):
    """d = cast(a @ b + bias, BF16, mode) @ e: the first output is consumed on chip."""

    @pl.program
    class Chained:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              bias: pl.Tensor[[1, N], pl.FP32], e: pl.Tensor[[N, E], pl.BF16],
              out: pl.Out[pl.Tensor[[M, E], pl.FP32]]) -> pl.Tensor[[M, E], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            bias_mat = pl.load(bias, [0, 0], [1, N], target_memory=pl.Mem.Mat)
            e_mat = pl.load(e, [0, 0], [N, E], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul_bias(a_mat, b_mat, bias_mat)  # chained-producer
            cb = pl.cast(c, pl.BF16, mode=mode)
            d = pl.tile.matmul(cb, e_mat)
            out = pl.store(d, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 bias: pl.Tensor[[1, N], pl.FP32], e: pl.Tensor[[N, E], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, E], pl.FP32]]) -> pl.Tensor[[M, E], pl.FP32]:
            out = self.k(a, b, bias, e, out)
            return out

    return Chained


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("M,K,N,E", [(272, 192, 352, 32), (256, 256, 256, 64)],
                         ids=["over-acc", "fits-acc-on-a5"])
def test_a_chained_result_goes_through_a_rounded_scratch(platform, M, K, N, E):
    # [272, 352] FP32 is 374 KiB: over both arches' Acc.  [256, 256] FP32 fits a5's 256 KiB
    # Acc (only K is cut there).  The BF16 cast (round half to even) feeds a second matmul,
    # itself too large for L0A as one [M, N] BF16 tile.
    cfg = RunConfig(platform=platform)
    a, b, bias = _data(M, K, N, "BF16", seed=5)
    e = np.random.default_rng(6).standard_normal((N, E)).astype(ml_dtypes.bfloat16)
    out = np.zeros((M, E), np.float32)
    run(compile(chained(M, K, N, E, "rint"), cfg), a, b, bias, e, out, config=cfg)
    inter = (_wide(a) @ _wide(b) + bias).astype(ml_dtypes.bfloat16).astype(np.float32)
    expected = inter @ _wide(e)
    # A sum order other than numpy's may round a few intermediates to the next BF16 value.
    assert np.linalg.norm(out - expected) / np.linalg.norm(expected) < 1e-3


def test_a_chained_cast_with_another_rounding_is_not_placed():
    # Only round-half-to-even is what the cube's write-back does: the default "round" keeps
    # the whole accumulator, which does not fit, reported at the user's matmul.
    with pytest.raises(CapacityError, match="Acc peak usage") as info:
        compile(chained(272, 192, 352, 32, "round"), RunConfig(platform="a2a3sim"))
    assert info.value.file == __file__ and info.value.line == line_of("chained-producer")


def test_a_k_tail_block_is_narrower():
    # [128, 272] BF16 is 68 KiB, over L0A: K is cut, by a k that leaves a narrower last block.
    arch = spec("a2a3")
    k = choose_l0_tile(config_for(arch, 128, 128, 272, bytes_a=2, bytes_b=2,
                                  acc_dtype="FP32")).k
    assert 272 % k
    tiles = _left_tiles(biased(128, 272, 128), RunConfig(platform="a2a3sim"))
    assert {t.shape[1] for t in tiles} == {k, 272 % k}


def test_an_operand_already_in_left_that_cannot_fit_fails_at_its_line():
    # [128, 512] BF16 is 128 KiB, twice L0A: AutoL0 does not cut a tile the user placed.
    M, K, N = 128, 512, 64

    @pl.program
    class Placed:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            a_left = pl.move(a_mat, target_memory=pl.Mem.Left)  # placed-left
            c = pl.tile.matmul(a_left, b_mat)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, out)
            return out

    with pytest.raises(CapacityError, match=r"'a_left' is already in Left.*131072 bytes") as info:
        compile(Placed, RunConfig(platform="a5sim"))
    assert info.value.file == __file__ and info.value.line == line_of("placed-left")
    assert "keep it in Mat" in (info.value.hint or "")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_vec_left_operand_is_staged_in_mat_and_cut_along_k(platform):
    # [64, 1024] BF16 in Vec (128 KiB) is twice L0A; the [64, 64] FP32 output fits Acc.
    M, K, N = 64, 1024, 64

    @pl.program
    class VecLeft:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_vec = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Vec)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(a_vec, b_mat)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, out)
            return out

    cfg = RunConfig(platform=platform)
    assert all(t.shape[1] < K for t in _left_tiles(VecLeft, cfg))
    a, b, _ = _data(M, K, N, "BF16", seed=9)
    out = np.zeros((M, N), np.float32)
    run(compile(VecLeft, cfg), a, b, out, config=cfg)
    np.testing.assert_allclose(out, _wide(a) @ _wide(b), rtol=1e-4, atol=2e-3)


def test_a_result_is_not_moved_past_a_statement_sharing_a_buffer():
    # A statement whose result shares a buffer (here a view of the left operand; an in-place
    # write would be one too) lies between the matmul and its store: the matmul is not moved
    # past it, so it is not placed, and is reported at its line.
    M, K, N = 256, 64, 512

    @pl.program
    class Shared:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(a_mat, b_mat)  # not-moved
            view = pl.tile.slice(a_mat, [16, 16], [0, 0])  # noqa: F841
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, out)
            return out

    with pytest.raises(CapacityError, match="Acc peak usage") as info:
        compile(Shared, RunConfig(platform="a2a3sim"))
    assert info.value.line == line_of("not-moved")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_grid_with_two_alternating_accumulators_matches_numpy(platform, monkeypatch):
    """With the double-buffered accumulator allowed, the interior of a ragged grid is a
    two-stage pipeline marked ``pipeline_double_buffer_c`` and computes what numpy does."""
    monkeypatch.setattr(api, "PassContext", functools.partial(PassContext, l0c_double_buffer=True))
    M, K, N = 320, 64, 320
    program = plain_store(M, K, N)
    cfg = RunConfig(platform=platform)
    work, _ = lower(program, cfg)
    marked = [s for s in _stmts(work.functions["k"].body)
              if isinstance(s, n.For) and s.attrs.get("pipeline_double_buffer_c")]
    assert len(marked) == 1 and marked[0].kind == "pipeline" and marked[0].attrs["stage"] == 2
    rng = np.random.default_rng(3)
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    run(compile(program, cfg), a, b, out, config=cfg)
    np.testing.assert_allclose(out, a @ b, rtol=1e-4, atol=1e-4)


def plain_store(M, K, N):
    """out = a @ b (FP32), the operands loaded whole into Mat by hand."""

    @pl.program
    class PlainStore:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
              out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            a_mat = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
            b_mat = pl.load(b, [0, 0], [K, N], target_memory=pl.Mem.Mat)
            c = pl.tile.matmul(a_mat, b_mat)
            out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            out = self.k(a, b, out)
            return out

    return PlainStore
