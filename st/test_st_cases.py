"""System tests in PyPTO's case style: `PTOTestCase` + `TensorSpec`, run with
``pypto_runner.check(case)`` once per requested cell.

Each case's golden is plain numpy written here (float64 where it matters), never
taken from the toolchain; ``check`` compares every ``is_output`` tensor and fails
with the full report (worst elements, platform, seed, repro command).
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
from pytest_pypto.harness import DataType, PTOTestCase, ScalarSpec, TensorSpec
from st.kernels import MK, MM, MN, SC, SR, MatMulFP16, RowSoftmax

# -- elementwise: c = relu((a + b) * 2), tiled over rows -----------------------------------

M, N, TM = 128, 64, 32


@pl.program
class AddScaleRelu:
    @pl.function(type=pl.FunctionType.InCore)
    def fused(
        self,
        a: pl.Tensor[[M, N], pl.FP32],
        b: pl.Tensor[[M, N], pl.FP32],
        c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            s = pl.add(pl.load(a, [r, 0], [TM, N]), pl.load(b, [r, 0], [TM, N]))
            c = pl.store(pl.relu(pl.mul(s, 2.0)), [r, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[M, N], pl.FP32],
        b: pl.Tensor[[M, N], pl.FP32],
        c: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        c = self.fused(a, b, c)
        return c


class AddScaleReluCase(PTOTestCase):
    def get_name(self):
        return "add_scale_relu_128x64"

    def define_tensors(self):
        return [
            TensorSpec("a", [M, N], DataType.FP32),  # seeded standard normal
            TensorSpec("b", [M, N], DataType.FP32, init_value=0.25),
            TensorSpec("c", [M, N], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return AddScaleRelu

    def compute_expected(self, tensors, params=None):
        tensors["c"][:] = np.maximum((tensors["a"] + tensors["b"]) * 2, 0)


def test_elementwise_case(pypto_runner):
    result = pypto_runner.check(AddScaleReluCase())
    assert result.passed and result.platform == pypto_runner.platform
    c = result.outputs["c"]
    assert (c >= 0).all() and (c == 0).any() and (c > 0).any()  # relu did both things


# -- matmul: FP16 operands through Mat -> Left/Right -> Acc, FP32 result ------------------

class MatMulCase(PTOTestCase):
    # FP16 products are exact in FP32; the FP32 accumulation over K=64 rounds.
    rtol = 1e-4
    atol = 1e-4

    def define_tensors(self):
        return [
            TensorSpec("a", [MM, MK], DataType.FP16),
            TensorSpec("b", [MK, MN], DataType.FP16),
            TensorSpec("c", [MM, MN], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return MatMulFP16

    def compute_expected(self, tensors, params=None):
        tensors["c"][:] = tensors["a"].astype(np.float64) @ tensors["b"].astype(np.float64)


def test_matmul_case(pypto_runner):
    result = pypto_runner.check(MatMulCase())
    assert result.inputs["a"].dtype == np.float16 and result.outputs["c"].dtype == np.float32
    assert np.abs(result.outputs["c"]).max() > 1  # not a trivially small product


# -- row softmax; input from a callable init_value that uses the test's seeded rng --------

class RowSoftmaxCase(PTOTestCase):
    def define_tensors(self):
        return [
            # Scaled so rows have a clear maximum (exp of large logits).
            TensorSpec("x", [SR, SC], DataType.FP32, init_value=lambda s, rng: rng.normal(0, 4, s)),
            TensorSpec("out", [SR, SC], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return RowSoftmax

    def compute_expected(self, tensors, params=None):
        x = tensors["x"].astype(np.float64)
        e = np.exp(x - x.max(axis=1, keepdims=True))
        tensors["out"][:] = e / e.sum(axis=1, keepdims=True)


def test_row_softmax_case_with_seeded_callable_input(pypto_runner, pypto_config):
    result = pypto_runner.check(RowSoftmaxCase())
    # The callable received the test's generator: the same draws, in order.
    want = np.random.default_rng(pypto_config.seed).normal(0, 4, (SR, SC)).astype(np.float32)
    np.testing.assert_array_equal(result.inputs["x"], want)
    np.testing.assert_allclose(result.outputs["out"].sum(axis=1), 1.0, rtol=1e-5)


# -- a run-time scalar: out = alpha * x + y ------------------------------------------------

AR, AC = 32, 64


@pl.program
class Axpy:
    @pl.function(type=pl.FunctionType.InCore)
    def axpy(
        self,
        x: pl.Tensor[[AR, AC], pl.FP32],
        alpha: pl.Scalar[pl.FP32],
        y: pl.Tensor[[AR, AC], pl.FP32],
        out: pl.Out[pl.Tensor[[AR, AC], pl.FP32]],
    ) -> pl.Tensor[[AR, AC], pl.FP32]:
        t = pl.mul(pl.load(x, [0, 0], [AR, AC]), alpha)
        out = pl.store(pl.add(t, pl.load(y, [0, 0], [AR, AC])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[AR, AC], pl.FP32],
        alpha: pl.Scalar[pl.FP32],
        y: pl.Tensor[[AR, AC], pl.FP32],
        out: pl.Out[pl.Tensor[[AR, AC], pl.FP32]],
    ) -> pl.Tensor[[AR, AC], pl.FP32]:
        out = self.axpy(x, alpha, y, out)
        return out


@pl.program
class AxpyScalarLast:
    """PyPTO's layout: scalars after every tensor (``define_scalars``)."""

    @pl.function(type=pl.FunctionType.InCore)
    def axpy(
        self,
        x: pl.Tensor[[AR, AC], pl.FP32],
        y: pl.Tensor[[AR, AC], pl.FP32],
        out: pl.Out[pl.Tensor[[AR, AC], pl.FP32]],
        alpha: pl.Scalar[pl.FP32],
    ) -> pl.Tensor[[AR, AC], pl.FP32]:
        t = pl.mul(pl.load(x, [0, 0], [AR, AC]), alpha)
        out = pl.store(pl.add(t, pl.load(y, [0, 0], [AR, AC])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[AR, AC], pl.FP32],
        y: pl.Tensor[[AR, AC], pl.FP32],
        out: pl.Out[pl.Tensor[[AR, AC], pl.FP32]],
        alpha: pl.Scalar[pl.FP32],
    ) -> pl.Tensor[[AR, AC], pl.FP32]:
        out = self.axpy(x, y, out, alpha)
        return out


class AxpyCase(PTOTestCase):
    def define_tensors(self):
        return [
            TensorSpec("x", [AR, AC], DataType.FP32),
            ScalarSpec("alpha", DataType.FP32, -1.5),
            TensorSpec("y", [AR, AC], DataType.FP32),
            TensorSpec("out", [AR, AC], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return Axpy

    def compute_expected(self, tensors, params=None):
        # FP32 throughout: one rounding for the product, one for the add.
        prod = (np.float32(params["alpha"]) * tensors["x"]).astype(np.float32)
        tensors["out"][:] = prod + tensors["y"]


class AxpyScalarLastCase(AxpyCase):
    def define_tensors(self):
        return [s for s in super().define_tensors() if not isinstance(s, ScalarSpec)]

    def define_scalars(self):
        return [ScalarSpec("alpha", -1.5, "float")]  # PyPTO's (name, value, ctype)

    def get_program(self):
        return AxpyScalarLast


def test_scalar_case(pypto_runner):
    inline = pypto_runner.check(AxpyCase())
    last = pypto_runner.check(AxpyScalarLastCase())
    # Same seeded draws for x and y in both layouts, so the same result bit for bit.
    np.testing.assert_array_equal(inline.outputs["out"], last.outputs["out"])
    x, y = inline.inputs["x"], inline.inputs["y"]
    np.testing.assert_array_equal(inline.outputs["out"], np.float32(-1.5) * x + y)


# -- INT32: out = max(a * b, c) + a, exact ---------------------------------------------------

IR, IC = 16, 64


@pl.program
class IntMix:
    @pl.function(type=pl.FunctionType.InCore)
    def mix(
        self,
        a: pl.Tensor[[IR, IC], pl.INT32],
        b: pl.Tensor[[IR, IC], pl.INT32],
        c: pl.Tensor[[IR, IC], pl.INT32],
        out: pl.Out[pl.Tensor[[IR, IC], pl.INT32]],
    ) -> pl.Tensor[[IR, IC], pl.INT32]:
        ta = pl.load(a, [0, 0], [IR, IC])
        tb = pl.load(b, [0, 0], [IR, IC])
        tc = pl.load(c, [0, 0], [IR, IC])
        out = pl.store(pl.add(pl.maximum(pl.mul(ta, tb), tc), ta), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        a: pl.Tensor[[IR, IC], pl.INT32],
        b: pl.Tensor[[IR, IC], pl.INT32],
        c: pl.Tensor[[IR, IC], pl.INT32],
        out: pl.Out[pl.Tensor[[IR, IC], pl.INT32]],
    ) -> pl.Tensor[[IR, IC], pl.INT32]:
        out = self.mix(a, b, c, out)
        return out


def _ints(shape, rng):
    return rng.integers(-30000, 30000, shape)


class IntMixCase(PTOTestCase):
    def define_tensors(self):
        return [
            TensorSpec("a", [IR, IC], DataType.INT32, init_value=_ints),
            TensorSpec("b", [IR, IC], DataType.INT32, init_value=_ints),
            TensorSpec("c", [IR, IC], DataType.INT32, init_value=np.arange(IC) * 1000),
            TensorSpec("out", [IR, IC], DataType.INT32, is_output=True),
        ]

    def get_program(self):
        return IntMix

    def compute_expected(self, tensors, params=None):
        a, b, c = (tensors[k].astype(np.int64) for k in "abc")
        # |a * b| < 9e8 fits INT32, so int64 arithmetic is the exact answer.
        tensors["out"][:] = np.maximum(a * b, c) + a


def test_int32_case(pypto_runner):
    result = pypto_runner.check(IntMixCase())
    out = result.outputs["out"]
    assert out.dtype == np.int32 and np.abs(out).max() > 10**8  # large products kept exact
    assert (result.inputs["c"][0] == np.arange(IC) * 1000).all()  # array init, broadcast
