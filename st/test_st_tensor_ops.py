"""System test: an attention-style kernel written in tensor-level ops, PyPTO's style
(an Opaque function with a `pl.at` region, `pl.matmul(..., b_trans=True, out_dtype=)`,
row reductions, `pl.assemble` into the output), run once per requested cell.

The tiling the compiler picks depends on the cell's arch: each product reaches AutoL0
whole and is cut with the L0 chooser's tile (docs/design/checks.md §7a).  The [256, 256]
FP32 score accumulator (256 KiB) fits a5's Acc whole but must be cut in two on a2a3
(128 KiB); its K=64 is cut where the chooser says (on a5 the FP32 [256, 64] moving
operand is half of L0A), while the second product's K=256 is accumulated in Acc over
blocks on both.  The golden is float64 numpy.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import lower
from pytest_pypto.compiler.l0_chooser import choose_l0_tile, config_for
from pytest_pypto.compiler.walk import iter_calls
from pytest_pypto.harness import DataType, PTOTestCase, TensorSpec

S, D = 256, 64  # sequence length, head dim


@pl.program
class Attention:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(
        self,
        q: pl.Tensor[[S, D], pl.FP32],
        k: pl.Tensor[[S, D], pl.FP32],
        v: pl.Tensor[[S, D], pl.FP32],
        out: pl.Out[pl.Tensor[[S, D], pl.FP32]],
    ) -> pl.Tensor[[S, D], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="attention"):
            scores = pl.matmul(q, k, b_trans=True, out_dtype=pl.FP32)
            scaled = pl.mul(scores, 0.0625)
            m = pl.row_max(scaled)
            e = pl.exp(pl.row_expand_sub(scaled, m))
            p = pl.row_expand_div(e, pl.row_sum(e))
            o = pl.matmul(p, v, out_dtype=pl.FP32)
            out = pl.assemble(out, o, [0, 0])
        return out


class AttentionCase(PTOTestCase):
    rtol = 1e-4
    atol = 1e-5

    def get_name(self):
        return "tensor_level_attention_256x64"

    def define_tensors(self):
        return [
            TensorSpec("q", [S, D], DataType.FP32),
            TensorSpec("k", [S, D], DataType.FP32),
            TensorSpec("v", [S, D], DataType.FP32),
            TensorSpec("out", [S, D], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return Attention

    def compute_expected(self, tensors, params=None):
        q, k, v = (tensors[n].astype(np.float64) for n in "qkv")
        s = q @ k.T * 0.0625
        e = np.exp(s - s.max(axis=1, keepdims=True))
        tensors["out"][:] = (e / e.sum(axis=1, keepdims=True)) @ v


def test_attention_case(pypto_runner):
    result = pypto_runner.check(AttentionCase())
    assert np.abs(result.outputs["out"]).max() > 0.1  # a real mix of v's rows


def test_the_score_matmul_is_tiled_for_the_cell(pypto_runner):
    work, ctx = lower(Attention, RunConfig(platform=pypto_runner.platform))
    arch = ctx.arch
    kernel = work.functions["attention"]
    calls = [e for _, e in iter_calls(kernel.body) if hasattr(e, "op")]
    accs = [c for c in calls if c.op in ("tile.matmul", "tile.matmul_acc")]
    line = accs[0].span.line  # the first product's: the score accumulator tile
    score_tile = accs[0].type.shape
    peak = ctx.kernels["attention"].peak
    for space in ("Acc", "Left", "Right", "Mat", "Vec"):
        assert peak[space] <= arch.capacity[space], space
    cfg = config_for(arch, S, S, D, bytes_a=4, bytes_b=4, acc_dtype="FP32")
    cfg.allow_a_stationary = cfg.allow_b_stationary = True
    choice = choose_l0_tile(cfg)
    assert tuple(score_tile) == (choice.m, choice.n)
    if arch.name == "a2a3":
        assert score_tile[0] * score_tile[1] == S * S // 2  # cut in two 128 KiB tiles
    else:
        assert tuple(score_tile) == (S, S)  # 256 KiB: a5's whole Acc
    lefts = [c for c in calls if c.op == "tile.extract" and c.span.line == line
             and c.type.space == "Left"]
    assert lefts and {c.type.shape[1] for c in lefts} == {choice.k}
    assert any(c.op == "tile.matmul_acc" and c.span.line != line for c in accs)  # p @ v
