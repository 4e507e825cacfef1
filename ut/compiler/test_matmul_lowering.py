"""Tensor-level matmuls reach AutoL0 whole (docs/design/checks.md §7a): a static 2-D
``pl.matmul`` whose operands fit Mat becomes one Mat-operand ``tile.matmul`` that AutoL0
cuts with the chooser's tile, in every branch it is written in; a matmul whose result is
only rounded (``mode="rint"``) into the operand of further matmuls keeps it on chip, as
AutoL0's rounded Mat scratch; both compute what numpy computes."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.arch import spec
from pytest_pypto.compat.pypto import ir, passes
from pytest_pypto.compat.pypto.backend import BackendType, reset_for_testing, set_backend_type
from pytest_pypto.compat.pypto.passes import MemoryPlanner
from pytest_pypto.compiler.api import compile
from pytest_pypto.compiler.l0_chooser import choose_l0_tile, config_for

PLATFORMS = ("a2a3sim", "a5sim")
DBC = '"pipeline_double_buffer_c": True'
PREFIX = ("convert_to_ssa", "convert_tensor_to_tile_ops", "flatten_tile_nd_to_2d",
          "auto_tile_matmul_l0")


def through(program, **options):
    set_backend_type(BackendType.Ascend910B)
    try:
        with passes.PassContext([], **options):
            for name in PREFIX:
                program = getattr(passes, name)()(program)
        return ir.python_print(program)
    finally:
        reset_for_testing()


def chunked(M, KC, N, CH):
    """out = a @ b over CH chunks of KC: the first chunk by pl.matmul, the rest by
    pl.matmul_acc, in the two branches of an if inside a two-stage pipeline."""
    K = KC * CH

    @pl.program
    class Chunked:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="chunks"):
                acc = pl.create_tensor([M, N], dtype=pl.FP32)
                for c in pl.pipeline(CH, stage=2):
                    k0 = c * KC
                    part_a = a[:, k0 : k0 + KC]
                    part_b = b[k0 : k0 + KC, 0:N]
                    if c == 0:
                        acc = pl.matmul(part_a, part_b, out_dtype=pl.FP32)
                    else:
                        acc = pl.matmul_acc(acc, part_a, part_b)
                out = pl.assemble(out, acc, [0, 0])
            return out

    return Chunked


def test_every_branch_of_a_chunked_matmul_gets_the_choosers_k_pipeline():
    M, KC, N, CH = 48, 384, 96, 3
    cfg = config_for(spec("a2a3"), M, N, KC, bytes_a=2, bytes_b=2, acc_dtype="FP32")
    cfg.allow_a_stationary = cfg.allow_b_stationary = True
    choice = choose_l0_tile(cfg)
    assert (choice.m, choice.n) == (M, N) and choice.k < KC
    lines = through(chunked(M, KC, N, CH)).splitlines()
    outer = [i for i, line in enumerate(lines) if f"pl.pipeline({CH}, stage=2" in line]
    inner = [i for i, line in enumerate(lines) if f"pl.pipeline(0, {KC}, {choice.k}," in line]
    assert len(outer) == 1 and len(inner) == 2

    def indent(i):
        return len(lines[i]) - len(lines[i].lstrip())

    assert all(i > outer[0] and indent(i) > indent(outer[0]) for i in inner)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_chunked_matmul_matches_numpy(platform):
    M, KC, N, CH = 48, 384, 96, 3
    rng = np.random.default_rng(11)
    a = rng.standard_normal((M, KC * CH)).astype(ml_dtypes.bfloat16)
    b = rng.standard_normal((KC * CH, N)).astype(ml_dtypes.bfloat16)
    out = np.zeros((M, N), np.float32)
    cfg = RunConfig(platform=platform)
    run(compile(chunked(M, KC, N, CH), cfg), a, b, out, config=cfg)
    np.testing.assert_allclose(out, a.astype(np.float32) @ b.astype(np.float32),
                               rtol=1e-4, atol=2e-3)


def rounded_chain(M, K, N, P, mode):
    """out = cast(a @ b, BF16, mode) @ e, all at tensor level."""

    @pl.program
    class Chain:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
              e: pl.Tensor[[N, P], pl.BF16],
              out: pl.Out[pl.Tensor[[M, P], pl.FP32]]) -> pl.Tensor[[M, P], pl.FP32]:
            c = pl.matmul(a, b, out_dtype=pl.FP32)
            cb = pl.cast(c, pl.BF16, mode=mode)
            d = pl.matmul(cb, e, out_dtype=pl.FP32)
            out = pl.assemble(out, d, [0, 0])
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], pl.BF16], b: pl.Tensor[[K, N], pl.BF16],
                 e: pl.Tensor[[N, P], pl.BF16],
                 out: pl.Out[pl.Tensor[[M, P], pl.FP32]]) -> pl.Tensor[[M, P], pl.FP32]:
            out = self.k(a, b, e, out)
            return out

    return Chain


def test_a_rounded_chain_keeps_the_first_product_on_chip():
    # [128, 512] FP32 is 256 KiB, over a2a3's 128 KiB L0C: a grid of two alternating
    # accumulators written into a BF16 scratch read whole into Mat; no vector cast is left.
    text = through(rounded_chain(128, 32, 512, 32, "rint"), memory_planner=MemoryPlanner.DSA_RP)
    assert "pl.tile.cast(" not in text
    assert text.count("pl.tensor.local([128, 512], dtype=pl.BF16)") == 1
    assert text.count("pl.tensor.local([128, 512], dtype=pl.FP32)") == 0
    assert text.count(DBC) == 2  # both matmuls: the chooser's grids on a2a3 for these shapes


def test_a_chain_with_another_rounding_goes_through_the_vector_cast():
    text = through(rounded_chain(128, 32, 512, 32, "round"), memory_planner=MemoryPlanner.DSA_RP)
    assert "pl.tile.cast(" in text
    assert text.count("pl.tensor.local([128, 512], dtype=pl.FP32)") == 1


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("mode", ["rint", "round"])
def test_a_rounded_chain_matches_numpy(platform, mode):
    M, K, N, P = 128, 32, 512, 32
    rng = np.random.default_rng(12)
    a = rng.standard_normal((M, K)).astype(ml_dtypes.bfloat16)
    b = (rng.standard_normal((K, N)) / np.sqrt(K)).astype(ml_dtypes.bfloat16)
    e = (rng.standard_normal((N, P)) / np.sqrt(N)).astype(ml_dtypes.bfloat16)
    out = np.zeros((M, P), np.float32)
    cfg = RunConfig(platform=platform)
    run(compile(rounded_chain(M, K, N, P, mode), cfg), a, b, e, out, config=cfg)
    inter = (a.astype(np.float32) @ b.astype(np.float32)).astype(ml_dtypes.bfloat16)
    expected = inter.astype(np.float32) @ e.astype(np.float32)
    assert np.linalg.norm(out - expected) / np.linalg.norm(expected) < 1e-3
