"""System tests: DSL kernels compiled by the bundled compiler and dispatched on the simulator.

Each test runs once per requested cell (``pypto_config``); ``pytest st --pypto-arch all``
runs them on a2a3sim and a5sim.  Every result is compared against plain numpy.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
from st.kernels import KK, KM, KN, MK, MM, MN, SC, SR, MatMulAccK, MatMulFP16, RowSoftmax

# -- tiled elementwise over a pl.range loop (docs/design/language.md §3)
# ------------------------------

M, N, TM = 128, 64, 32


@pl.program
class Axpy:
    @pl.function(type=pl.FunctionType.InCore)
    def axpy(
        self,
        x: pl.Tensor[[M, N], pl.FP16],
        y: pl.Tensor[[M, N], pl.FP32],
        alpha: pl.Scalar[pl.FP32],
        out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            xh: pl.Tile[[TM, N], pl.FP16] = pl.load(x, [r, 0], [TM, N])
            xf: pl.Tile[[TM, N], pl.FP32] = pl.cast(xh, pl.FP32)
            yt = pl.load(y, [r, 0], [TM, N])
            out = pl.store(pl.add(pl.mul(xf, alpha), yt), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[M, N], pl.FP16],
        y: pl.Tensor[[M, N], pl.FP32],
        out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.axpy(x, y, 0.5, out)
        return out


def test_axpy_tiled_over_rows(pypto_config, pypto_runner, pypto_rng):
    x = pypto_rng.standard_normal((M, N)).astype(np.float16)
    y = pypto_rng.standard_normal((M, N)).astype(np.float32)
    x0, y0 = x.copy(), y.copy()
    out = np.zeros((M, N), np.float32)
    run = pypto_runner.run(Axpy, x, y, out)
    # FP16 -> FP32 widening is exact; 0.5 * x is exact; one FP32 rounding for the add
    np.testing.assert_array_equal(out, x.astype(np.float32) * np.float32(0.5) + y)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    assert run.platform == pypto_config.platform
    assert run.sim_backend == "numpy-functional"
    assert [t["kernel"] for t in run.tasks] == ["axpy"]
    assert run.tasks[0]["core_type"] == "aiv"


# -- matmul: Mat -> Left/Right -> Acc ---------------------------------------------------

def test_matmul_through_left_right_acc(pypto_runner, pypto_rng):
    a = pypto_rng.standard_normal((MM, MK)).astype(np.float16)
    b = pypto_rng.standard_normal((MK, MN)).astype(np.float16)
    c = np.zeros((MM, MN), np.float32)
    run = pypto_runner.run(MatMulFP16, a, b, c)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)
    assert run.tasks[0]["core_type"] == "aic"


# -- matmul_acc over K -------------------------------------------------------------------

def test_matmul_acc_over_k_chunks(pypto_runner, pypto_rng):
    a = pypto_rng.standard_normal((KM, KK)).astype(np.float32)
    b = pypto_rng.standard_normal((KK, KN)).astype(np.float32)
    c = np.zeros((KM, KN), np.float32)
    pypto_runner.run(MatMulAccK, a, b, c)
    expected = a.astype(np.float64) @ b.astype(np.float64)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)


# -- row softmax ---------------------------------------------------------------------------

def _softmax(x):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def test_row_softmax(pypto_runner, pypto_rng):
    x = (pypto_rng.standard_normal((SR, SC)) * 4).astype(np.float32)
    out = np.zeros((SR, SC), np.float32)
    pypto_runner.run(RowSoftmax, x, out)
    np.testing.assert_allclose(out, _softmax(x), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(out.sum(axis=1), 1.0, rtol=1e-5)


# -- two kernels with a pl.create_tensor intermediate --------------------------------------

PR, PC = 64, 64


@pl.program
class Pipeline:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(
        self,
        x: pl.Tensor[[PR, PC], pl.FP32],
        t: pl.Out[pl.Tensor[[PR, PC], pl.FP32]],
    ) -> pl.Tensor[[PR, PC], pl.FP32]:
        xt = pl.load(x, [0, 0], [PR, PC])
        t = pl.store(pl.mul(xt, 3.0), [0, 0], t)
        return t

    @pl.function(type=pl.FunctionType.InCore)
    def shift_exp(
        self,
        t: pl.Tensor[[PR, PC], pl.FP32],
        out: pl.Out[pl.Tensor[[PR, PC], pl.FP32]],
    ) -> pl.Tensor[[PR, PC], pl.FP32]:
        tt = pl.load(t, [0, 0], [PR, PC])
        out = pl.store(pl.exp(pl.sub(tt, 1.0)), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[PR, PC], pl.FP32],
        out: pl.Out[pl.Tensor[[PR, PC], pl.FP32]],
    ) -> pl.Tensor[[PR, PC], pl.FP32]:
        tmp = pl.create_tensor([PR, PC], pl.FP32)
        tmp = self.scale(x, tmp)
        out = self.shift_exp(tmp, out)
        return out


def test_pipeline_intermediate_is_a_raw_edge(pypto_config, pypto_runner, pypto_rng):
    x = pypto_rng.uniform(-1, 1, (PR, PC)).astype(np.float32)
    out = np.zeros((PR, PC), np.float32)
    run = pypto_runner.run(Pipeline, x, out)
    expected = np.exp((x * np.float32(3.0)).astype(np.float32) - np.float32(1.0))
    np.testing.assert_allclose(out, expected, rtol=1e-6)
    deps = run.deps()
    assert deps["sim_backend"] == "numpy-functional"
    assert deps["platform"] == pypto_config.platform
    assert [t["kernel"] for t in deps["tasks"]] == ["scale", "shift_exp"]
    assert deps["edges"] == [{"from": 0, "to": 1, "kind": "RAW"}]
    tmp = [t for t in deps["tensors"] if t["origin"] == "create_tensor"]
    assert len(tmp) == 1 and tmp[0]["shape"] == [PR, PC]
    written = deps["tasks"][0]["args"][1]
    read = deps["tasks"][1]["args"][0]
    assert written["tensor"] == read["tensor"] == tmp[0]["id"]
    assert (written["direction"], read["direction"]) == ("Out", "In")
    assert written["bytes"] == read["bytes"] == [0, PR * PC * 4]


# -- a mix kernel: cube matmul, then a vector op on the result (Acc -> Vec crossing) ------

XM, XK, XN = 32, 64, 32


@pl.program
class MatmulRelu:
    @pl.function(type=pl.FunctionType.InCore)
    def mm_relu(
        self,
        a: pl.Tensor[[XM, XK], pl.FP16],
        b: pl.Tensor[[XK, XN], pl.FP16],
        c: pl.Out[pl.Tensor[[XM, XN], pl.FP32]],
    ) -> pl.Tensor[[XM, XN], pl.FP32]:
        ta = pl.load(a, [0, 0], [XM, XK], target_memory=pl.Mem.Mat)
        tb = pl.load(b, [0, 0], [XK, XN], target_memory=pl.Mem.Mat)
        acc = pl.matmul(pl.move(ta, target_memory=pl.Mem.Left),
                        pl.move(tb, target_memory=pl.Mem.Right))
        v = pl.move(acc, target_memory=pl.Mem.Vec)
        c = pl.store(pl.relu(v), [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[XM, XK], pl.FP16],
        b: pl.Tensor[[XK, XN], pl.FP16],
        c: pl.Out[pl.Tensor[[XM, XN], pl.FP32]],
    ) -> pl.Tensor[[XM, XN], pl.FP32]:
        c = self.mm_relu(a, b, c)
        return c


def test_mix_kernel_takes_one_cluster(pypto_runner, pypto_rng):
    a = pypto_rng.standard_normal((XM, XK)).astype(np.float16)
    b = pypto_rng.standard_normal((XK, XN)).astype(np.float16)
    c = np.zeros((XM, XN), np.float32)
    run = pypto_runner.run(MatmulRelu, a, b, c)
    expected = np.maximum(a.astype(np.float64) @ b.astype(np.float64), 0.0)
    np.testing.assert_allclose(c, expected, rtol=1e-4, atol=1e-4)
    task = run.tasks[0]
    assert task["core_type"] == "mix"
    assert task["slots"] == ["aic0", "aiv0", "aiv1"]  # 1 AIC + both AIVs of cluster 0
