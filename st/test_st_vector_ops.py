"""System test: one vector kernel exercising the Tier 1 unary, binary and broadcast ops.

Compiled and dispatched per cell, every output compared against plain numpy (float64
reference; FP32 transcendentals are numpy's float32 results, docs/design/numerics.md §2).
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl

R, C = 16, 64


@pl.program
class VectorOps:
    @pl.function(type=pl.FunctionType.InCore)
    def unary(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        o_sqrt: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_rsqrt: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_recip: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_sin: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_cos: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        t = pl.load(x, [0, 0], [R, C])
        o_sqrt = pl.store(pl.sqrt(t), [0, 0], o_sqrt)
        o_rsqrt = pl.store(pl.rsqrt(t), [0, 0], o_rsqrt)
        o_recip = pl.store(pl.recip(t), [0, 0], o_recip)
        o_sin = pl.store(pl.sin(t), [0, 0], o_sin)
        o_cos = pl.store(pl.cos(t), [0, 0], o_cos)
        return o_sqrt, o_rsqrt, o_recip, o_sin, o_cos

    @pl.function(type=pl.FunctionType.InCore)
    def binary(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        y: pl.Tensor[[R, C], pl.FP32],
        o_max: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_min: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_maxs: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_mins: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        a = pl.load(x, [0, 0], [R, C])
        b = pl.load(y, [0, 0], [R, C])
        o_max = pl.store(pl.maximum(a, b), [0, 0], o_max)
        o_min = pl.store(pl.minimum(a, b), [0, 0], o_min)
        o_maxs = pl.store(pl.maximums(a, 1.25), [0, 0], o_maxs)
        o_mins = pl.store(pl.minimums(a, 1.25), [0, 0], o_mins)
        return o_max, o_min, o_maxs, o_mins

    @pl.function(type=pl.FunctionType.InCore)
    def broadcast(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        o_cmax: pl.Out[pl.Tensor[[1, C], pl.FP32]],
        o_cmin: pl.Out[pl.Tensor[[1, C], pl.FP32]],
        o_radd: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_rmul: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        a = pl.load(x, [0, 0], [R, C])
        tmp = pl.create_tile([R, C], pl.FP32)
        o_cmax = pl.store(pl.col_max(a), [0, 0], o_cmax)
        o_cmin = pl.store(pl.col_min(a), [0, 0], o_cmin)
        s = pl.row_sum(a, tmp)
        o_radd = pl.store(pl.row_expand_add(a, s), [0, 0], o_radd)
        o_rmul = pl.store(pl.row_expand_mul(a, s), [0, 0], o_rmul)
        return o_cmax, o_cmin, o_radd, o_rmul

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        y: pl.Tensor[[R, C], pl.FP32],
        o_sqrt: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_rsqrt: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_recip: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_sin: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_cos: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_max: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_min: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_maxs: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_mins: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_cmax: pl.Out[pl.Tensor[[1, C], pl.FP32]],
        o_cmin: pl.Out[pl.Tensor[[1, C], pl.FP32]],
        o_radd: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        o_rmul: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ):
        o_sqrt, o_rsqrt, o_recip, o_sin, o_cos = self.unary(
            x, o_sqrt, o_rsqrt, o_recip, o_sin, o_cos
        )
        o_max, o_min, o_maxs, o_mins = self.binary(x, y, o_max, o_min, o_maxs, o_mins)
        o_cmax, o_cmin, o_radd, o_rmul = self.broadcast(x, o_cmax, o_cmin, o_radd, o_rmul)
        return o_sqrt


def test_vector_ops_match_numpy(pypto_runner, pypto_rng):
    x = pypto_rng.uniform(0.25, 4.0, (R, C)).astype(np.float32)
    y = pypto_rng.uniform(0.25, 4.0, (R, C)).astype(np.float32)
    names = ["sqrt", "rsqrt", "recip", "sin", "cos", "max", "min", "maxs", "mins",
             "cmax", "cmin", "radd", "rmul"]
    outs = {n: np.zeros((1, C) if n in ("cmax", "cmin") else (R, C), np.float32) for n in names}
    run = pypto_runner.run(VectorOps, x, y, *outs.values())
    xd, yd = x.astype(np.float64), y.astype(np.float64)
    s = xd.sum(axis=1, keepdims=True)
    expected = {
        "sqrt": np.sqrt(xd), "rsqrt": 1 / np.sqrt(xd), "recip": 1 / xd,
        "sin": np.sin(xd), "cos": np.cos(xd),
        "max": np.maximum(xd, yd), "min": np.minimum(xd, yd),
        "maxs": np.maximum(xd, 1.25), "mins": np.minimum(xd, 1.25),
        "cmax": xd.max(axis=0, keepdims=True), "cmin": xd.min(axis=0, keepdims=True),
        "radd": xd + s, "rmul": xd * s,
    }
    for name in names:
        np.testing.assert_allclose(outs[name], expected[name], rtol=2e-6, atol=1e-6,
                                   err_msg=name)
    assert [t["kernel"] for t in run.tasks] == ["unary", "binary", "broadcast"]
    deps = run.deps()
    assert deps["edges"] == []  # three readers of x, disjoint outputs: no dependencies
    # independent aiv tasks run side by side on distinct AIV slots
    assert [t["step"] for t in deps["tasks"]] == [0, 0, 0]
    assert len({t["slots"][0] for t in deps["tasks"]}) == 3
