# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""A tensor created with a Scalar dim has a dynamic dim that *is* that Scalar: two
tensors created with the same Scalar Var have one type, so a loop may carry one and
yield the other (docs/design/language.md §12); different Scalars give different dims."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.errors import ParserTypeError

N = pl.dynamic("N")


def _program(same_dim: bool):
    @pl.program
    class Carry:
        @pl.function(type=pl.FunctionType.InCore)
        def double(self, a: pl.Tensor[[16, N], pl.FP32],
                   b: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 64])
            b = pl.store(pl.add(t, t), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.InCore)
        def copy_into(self, b: pl.Out[pl.Tensor[[16, N], pl.FP32]],
                      a: pl.Tensor[[16, N], pl.FP32]) -> pl.Tensor[[16, N], pl.FP32]:
            b = pl.store(pl.load(a, [0, 0], [16, 64]), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.InCore)
        def double_in_place(self, like: pl.Tensor[[16, N], pl.FP32],
                            b: pl.InOut[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            t = pl.load(b, [0, 0], [16, 64])
            b = pl.store(pl.add(t, t), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, N], pl.FP32], y: pl.Tensor[[16, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            n = pl.tensor.dim(x, 1)
            m = pl.tensor.dim(y, 1)
            acc = pl.create_tensor([16, n], dtype=pl.FP32)
            acc = self.copy_into(acc, x)  # its dim: n
            for i in pl.range(2):
                if same_dim:
                    nxt = pl.create_tensor([16, n], dtype=pl.FP32)
                else:
                    nxt = pl.create_tensor([16, m], dtype=pl.FP32)  # binds N of the call below
                acc = self.double_in_place(nxt, acc)  # carried
            out = self.double(acc, out)
            return out

    return Carry


def test_tensors_created_with_one_scalar_dim_share_a_type() -> None:
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    out = np.zeros_like(x)
    pytest_pypto.run(_program(True), x, x.copy(), out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, x * 8)


def test_tensors_created_with_different_scalar_dims_differ(line_of) -> None:
    x = np.zeros((16, 64), np.float32)
    with pytest.raises(ParserTypeError) as ei:
        pytest_pypto.run(_program(False), x, x, np.zeros_like(x),
                         config=RunConfig(platform="a2a3sim"))
    assert ei.value.line == line_of("carried")
    assert "loop-carried value 'acc' changes type" in ei.value.message
    assert "[16, n]" in ei.value.message and "[16, m]" in ei.value.message


def _window_program(same_dim: bool):
    """A loop carries a window of x sized by the Scalar n and is given a buffer sized by
    n (one type) or by m (another)."""

    @pl.program
    class Window:
        @pl.function(type=pl.FunctionType.InCore)
        def double_into(self, b: pl.Out[pl.Tensor[[16, N], pl.FP32]],
                        a: pl.Tensor[[16, N], pl.FP32]) -> pl.Tensor[[16, N], pl.FP32]:
            t = pl.load(a, [0, 0], [16, 64])
            b = pl.store(pl.add(t, t), [0, 0], b)
            return b

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, N], pl.FP32], y: pl.Tensor[[16, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
            n = pl.tensor.dim(x, 1)
            m = pl.tensor.dim(y, 1)
            cur = pl.slice(x, [16, n], [16, 0])
            for i in pl.range(2):
                if same_dim:
                    nxt = pl.create_tensor([16, n], dtype=pl.FP32)
                else:
                    nxt = pl.create_tensor([16, m], dtype=pl.FP32)
                cur = self.double_into(nxt, cur)  # window-carried
            out = self.double_into(out, cur)
            return out

    return Window


def test_a_window_and_a_buffer_sized_by_one_scalar_share_a_type() -> None:
    x = np.arange(32 * 64, dtype=np.float32).reshape(32, 64)
    out = np.zeros((16, 64), np.float32)
    pytest_pypto.run(_window_program(True), x, out.copy(), out,
                     config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, x[16:] * 8)


def test_a_window_and_a_buffer_sized_by_different_scalars_differ(line_of) -> None:
    x = np.zeros((32, 64), np.float32)
    with pytest.raises(ParserTypeError) as ei:
        pytest_pypto.run(_window_program(False), x, np.zeros((16, 64), np.float32),
                         np.zeros((16, 64), np.float32), config=RunConfig(platform="a2a3sim"))
    assert ei.value.line == line_of("window-carried")
    assert "loop-carried value 'cur' changes type" in ei.value.message


# ------------------------------------------------------------ pl.TensorView annotations

V = pl.dynamic("V")


@pl.program
class HalfValid:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32,
                             pl.TensorView(valid_shape=[8, 64], layout=pl.TensorLayout.ND)],
          out: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out = pl.assemble(out, pl.add(x, x), [0, 0])  # the valid 8 rows only
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32],
             out: pl.InOut[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        out = self.k(x, out)
        return out


@pl.program
class RunTimeValid:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, N], pl.FP32, pl.TensorView(valid_shape=[16, V])],
          v: pl.Scalar[pl.INDEX],
          out: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 64], valid_shapes=[16, v])
        out = pl.store(pl.fillpad(t, pad_value=pl.PadValue.zero), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, N], pl.FP32], v: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[16, N], pl.FP32]]) -> pl.Tensor[[16, N], pl.FP32]:
        w = pl.slice(x, [16, 64], [0, 0], valid_shape=[16, v])
        out = self.k(w, v, out)
        return out


def test_a_tensor_view_valid_shape_narrows_the_parameter() -> None:
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64)
    out = np.full((16, 64), -1.0, np.float32)
    pytest_pypto.run(HalfValid, x, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out[:8], x[:8] * 2)
    np.testing.assert_array_equal(out[8:], -1.0)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_run_time_tensor_view_extent_leaves_the_read_to_the_kernel(platform) -> None:
    x = np.arange(16 * 64, dtype=np.float32).reshape(16, 64) + 1
    out = np.zeros_like(x)
    pytest_pypto.run(RunTimeValid, x, 40, out, config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out[:, :40], x[:, :40])
    np.testing.assert_array_equal(out[:, 40:], 0.0)


@pl.program
class Strided:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32, pl.TensorView(stride=[64, 1])]):  # strided
        t = pl.load(x, [0, 0], [16, 64])


@pl.program
class Fractal:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 64], pl.FP32,
                             pl.TensorView(layout=pl.TensorLayout.NZ)]):
        t = pl.load(x, [0, 0], [16, 64])


@pytest.mark.parametrize(("program", "what"), [(Strided, "strided tensor views"),
                                               (Fractal, "tensor layout")])
def test_strided_or_non_row_major_tensor_views_are_tier_3(program, what) -> None:
    u = program.functions["k"].unsupported
    assert u is not None and "tier 3" in u.reason and what in u.reason
