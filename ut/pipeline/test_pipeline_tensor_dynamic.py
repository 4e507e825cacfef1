# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Tensor-level ops on `pl.dynamic` dims (docs/design/language.md §10, §12), parse -> compile ->
both sims.

A tensor op whose tiled axis is dynamic lowers to a run-time loop over that dim with a
partial last tile (loads read ``min(T, M - r)`` rows), so one compiled artifact serves
every size: each test compiles once per platform and runs several sizes through that
one artifact, including sizes that are not a multiple of the tile and a single row.
The references are numpy, written here.  A dynamic reduced axis is still rejected, at
the user's line, naming the op and the dim.
"""

from __future__ import annotations

import functools
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler import api
from pytest_pypto.compiler.api import lower
from pytest_pypto.compiler.walk import iter_calls, iter_stmts
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import InvalidOperationError, ShapeError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")

M = pl.dynamic("M")
N = pl.dynamic("N")
K = pl.dynamic("K")


line_of = line_finder(__file__)


# ------------------------------------------------------------------ programs


@pl.program
class AbsAt:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[M, 64], pl.FP32]]) -> pl.Tensor[[M, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.abs(x)
            out = pl.assemble(out, y, [0, 0])
        return out


@pl.program
class RowChain:
    """A written InCore kernel: binary, scalar-form, row reduction, row expand, cast, rsqrt."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 96], pl.FP32], z: pl.Tensor[[M, 96], pl.FP32],
          d: pl.Out[pl.Tensor[[M, 96], pl.FP32]], s: pl.Out[pl.Tensor[[M, 1], pl.FP32]],
          h: pl.Out[pl.Tensor[[M, 96], pl.FP16]], q: pl.Out[pl.Tensor[[M, 96], pl.FP32]]):
        y = pl.mul(pl.add(x, z), 2.0)
        r = pl.row_sum(y)
        e = pl.row_expand_sub(y, r)
        c = pl.cast(e, target_type=pl.FP16)
        w = pl.rsqrt(pl.add(pl.mul(x, x), 1.0), high_precision=True)
        d = pl.assemble(d, e, [0, 0])
        s = pl.assemble(s, r, [0, 0])
        h = pl.assemble(h, c, [0, 0])
        q = pl.assemble(q, w, [0, 0])
        return d, s, h, q

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 96], pl.FP32], z: pl.Tensor[[M, 96], pl.FP32],
             d: pl.Out[pl.Tensor[[M, 96], pl.FP32]], s: pl.Out[pl.Tensor[[M, 1], pl.FP32]],
             h: pl.Out[pl.Tensor[[M, 96], pl.FP16]], q: pl.Out[pl.Tensor[[M, 96], pl.FP32]]):
        d, s, h, q = self.k(x, z, d, s, h, q)
        return d, s, h, q


@pl.program
class TwoDims:
    """Both dims dynamic; a [1, N] column vector broadcast down the rows."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], v: pl.Tensor[[1, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.col_expand_mul(pl.maximum(x, 0.0), v)
            out = pl.assemble(out, y, [0, 0])
        return out


@pl.program
class CompositeRows:
    """A composite dim (`M * 2`) is a dynamic dim like any other."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M * 2, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[M * 2, 64], pl.FP32]]) -> pl.Tensor[[M * 2, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.sub(pl.exp(x), 1.0)
            out = pl.assemble(out, y, [0, 0])
        return out


@pl.program
class MatmulMNK:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP16], b: pl.Tensor[[K, N], pl.FP16],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.matmul(a, b, out_dtype=pl.FP32)
            out = pl.assemble(out, y, [0, 0])
        return out


@pl.program
class MatmulBTrans:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, 128], pl.BF16], b: pl.Tensor[[N, 128], pl.BF16],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        y = pl.matmul(a, b, b_trans=True, out_dtype=pl.FP32)
        out = pl.assemble(out, y, [0, 0])
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, 128], pl.BF16], b: pl.Tensor[[N, 128], pl.BF16],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(a, b, out)
        return out


# ------------------------------------------------------------------- helpers


@functools.cache
def compiled(program, platform: str):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def kernel(program, platform: str) -> n.Function:
    work, _ = lower(program, RunConfig(platform=platform))
    return next(f for f in work.functions.values() if f.kind == "InCore")


def dynamic_loops(fn: n.Function) -> list[n.For]:
    """The lowering's run-time loops: a For whose stop is a dynamic dim."""
    return [s for s in iter_stmts(fn.body) if isinstance(s, n.For) and isinstance(s.stop, n.DynDim)]


def row_step(fn: n.Function) -> int:
    """The largest tile extent T of the loops over M (each op has its own plan; the
    sizes around the largest are ragged or multiples for the smaller ones too, as they
    are powers of two)."""
    steps = {s.step.value for s in dynamic_loops(fn) if s.stop.var.name == "M"}
    assert steps and all(max(steps) % t == 0 for t in steps), steps
    return max(steps)


def sizes_around(t: int) -> list[int]:
    """One row, a partial single tile, a multiple of the tile, and ragged multi-tile sizes."""
    return [1, t - 3, 2 * t, 2 * t + 5]


def run(program, platform: str, *arrays):
    return pytest_pypto.run(compiled(program, platform), *arrays,
                            config=RunConfig(platform=platform))


# --------------------------------------------------------------------- tests


@pytest.mark.parametrize("platform", PLATFORMS)
def test_abs_in_pl_at_runs_every_size_through_one_artifact(platform, monkeypatch):
    fn = kernel(AbsAt, platform)
    loops = dynamic_loops(fn)
    assert [s.stop.var.name for s in loops] == ["M"]  # one run-time loop over M
    t = row_step(fn)
    loads = [c for _, c in iter_calls(fn.body) if isinstance(c, n.Call) and c.op == "tile.load"]
    assert loads and all(isinstance(c.arg("valid_shapes")[0], n.BinOp) and
                         c.arg("valid_shapes")[0].op == "min" for c in loads)
    assert all(c.type.shape == (t, 64) for c in loads)
    lowered = []
    real_lower = api.lower
    monkeypatch.setattr(api, "lower", lambda *a, **k: lowered.append(1) or real_lower(*a, **k))
    artifact = pytest_pypto.compile(AbsAt, RunConfig(platform=platform))
    files = sorted(p.name for p in Path(artifact.artifact_dir()).rglob("*"))
    rng = np.random.default_rng(1)
    for m in sizes_around(t):
        x = rng.standard_normal((m, 64)).astype(np.float32)
        out = np.full((m, 64), -7.0, np.float32)
        pytest_pypto.run(artifact, x, out, config=RunConfig(platform=platform))
        np.testing.assert_array_equal(out, np.abs(x), err_msg=f"M={m}")
    assert len(lowered) == 1  # one compile served every size
    assert sorted(p.name for p in Path(artifact.artifact_dir()).rglob("*")) == files


@pytest.mark.parametrize("platform", PLATFORMS)
def test_row_chain_with_reduction_expand_cast_and_rsqrt_over_dynamic_rows(platform):
    t = row_step(kernel(RowChain, platform))
    rng = np.random.default_rng(2)
    for m in sizes_around(t):
        x = rng.standard_normal((m, 96)).astype(np.float32)
        z = rng.standard_normal((m, 96)).astype(np.float32)
        d = np.zeros((m, 96), np.float32)
        s = np.zeros((m, 1), np.float32)
        h = np.zeros((m, 96), np.float16)
        q = np.zeros((m, 96), np.float32)
        run(RowChain, platform, x, z, d, s, h, q)
        y = (x + z) * np.float32(2.0)  # float32 ops, exactly as the tile ops round
        want_s = y.astype(np.float64).sum(axis=1, keepdims=True)
        np.testing.assert_allclose(s, want_s, rtol=1e-5, atol=1e-4, err_msg=f"M={m}")
        want_d = y - s  # the expand subtracts the stored row sums
        np.testing.assert_array_equal(d, want_d, err_msg=f"M={m}")
        np.testing.assert_array_equal(h, want_d.astype(np.float16), err_msg=f"M={m}")
        want_q = 1.0 / np.sqrt(x.astype(np.float64) ** 2 + 1.0)
        np.testing.assert_allclose(q, want_q, rtol=1e-5, err_msg=f"M={m}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_both_dims_dynamic_with_a_broadcast_column_vector(platform):
    fn = kernel(TwoDims, platform)
    assert {s.stop.var.name for s in dynamic_loops(fn)} == {"M", "N"}
    rng = np.random.default_rng(3)
    for m, cols in [(1, 1), (9, 1500), (37, 33)]:
        x = rng.standard_normal((m, cols)).astype(np.float32)
        v = rng.standard_normal((1, cols)).astype(np.float32)
        out = np.zeros((m, cols), np.float32)
        run(TwoDims, platform, x, v, out)
        np.testing.assert_array_equal(out, np.maximum(x, 0) * v, err_msg=f"{m}x{cols}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_composite_dynamic_dim_loops_over_its_run_time_value(platform):
    rng = np.random.default_rng(6)
    for m in (1, 301):
        x = rng.uniform(-2, 2, (2 * m, 64)).astype(np.float32)
        out = np.zeros((2 * m, 64), np.float32)
        run(CompositeRows, platform, x, out)
        np.testing.assert_allclose(out, np.exp(x.astype(np.float64)) - 1.0, rtol=1e-5,
                                   atol=1e-6, err_msg=f"M={m}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_matmul_with_dynamic_m_n_and_k(platform):
    fn = kernel(MatmulMNK, platform)
    assert {s.stop.var.name for s in dynamic_loops(fn)} == {"M", "N", "K"}
    rng = np.random.default_rng(4)
    for m, nn, k in [(1, 16, 16), (37, 300, 700), (130, 33, 1500)]:
        a = rng.standard_normal((m, k)).astype(np.float16)
        b = rng.standard_normal((k, nn)).astype(np.float16)
        out = np.zeros((m, nn), np.float32)
        run(MatmulMNK, platform, a, b, out)
        want = a.astype(np.float64) @ b.astype(np.float64)
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3, err_msg=f"{m}x{nn}x{k}")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_transposed_matmul_with_dynamic_m_and_n(platform):
    rng = np.random.default_rng(5)
    for m, nn in [(5, 7), (300, 130)]:
        a = rng.standard_normal((m, 128)).astype(ml_dtypes.bfloat16)
        b = rng.standard_normal((nn, 128)).astype(ml_dtypes.bfloat16)
        out = np.zeros((m, nn), np.float32)
        run(MatmulBTrans, platform, a, b, out)
        want = a.astype(np.float64) @ b.astype(np.float64).T
        np.testing.assert_allclose(out, want, rtol=1e-4, atol=1e-3, err_msg=f"{m}x{nn}")


# ------------------------------------------------------------- still rejected


@pl.program
class RowSumOverDynamicCols:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, N], pl.FP32],
             out: pl.Out[pl.Tensor[[64, 1], pl.FP32]]) -> pl.Tensor[[64, 1], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.row_sum(x)  # dyn-row-sum
            out = pl.assemble(out, y, [0, 0])
        return out


@pl.program
class ColMaxOverDynamicRows:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, 64], pl.FP32],
          out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]) -> pl.Tensor[[1, 64], pl.FP32]:
        y = pl.col_max(x)  # dyn-col-max
        out = pl.assemble(out, y, [0, 0])
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[1, 64], pl.FP32]]) -> pl.Tensor[[1, 64], pl.FP32]:
        out = self.k(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("program", "op", "dim", "marker"), [
    (RowSumOverDynamicCols, "tensor.row_sum", "N", "dyn-row-sum"),
    (ColMaxOverDynamicRows, "tensor.col_max", "M", "dyn-col-max"),
])
def test_a_dynamic_reduced_axis_is_an_error_naming_the_op_and_dim(program, op, dim, marker,
                                                                   platform):
    with pytest.raises(ShapeError) as ei:
        pytest_pypto.compile(program, RunConfig(platform=platform))
    assert f"{op} cannot be tiled over the dynamic dimension {dim}: it is the reduced axis" \
        in ei.value.message
    assert f"pl.min(T, {dim} - r)" in ei.value.hint
    assert ei.value.line == line_of(marker)


def test_an_op_whose_tensor_form_needs_static_shapes_says_so_at_the_line():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[M, 64], pl.FP32]):
                y = pl.cmps(x, 0.0, cmp_type=0)  # dyn-cmps
    assert "The operator tensor.cmps needs static tensor shapes, but 'lhs' has the dynamic " \
           "dimension M (dimension 0)" in ei.value.message
    assert ei.value.line == line_of("dyn-cmps")
