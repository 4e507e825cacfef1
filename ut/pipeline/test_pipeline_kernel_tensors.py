# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.create_tensor` inside InCore code: a kernel-local tensor.

PyPTO lowers it to an on-chip Vec tile of static shape whose contents start
undefined (its ``init_value`` is dropped there), so here it is a kernel-local tensor
that starts poisoned and is usable by assemble, views, tensor-level ops, loads and
stores.  References are numpy; every program runs on both sims.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import CapacityError, PlacementError, PyptoWarning
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
POISON_INT32 = np.int32(-0x5A5A5A5B)  # every byte 0xA5 (docs/design/numerics.md §6)


line_of = line_finder(__file__)


def compile_for(program, platform="a2a3sim"):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def run(program, platform, *arrays):
    return pytest_pypto.run(compile_for(program, platform), *arrays,
                            config=RunConfig(platform=platform))


def rand(shape, seed, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# ------------------------------------------------------------ assemble + gather


@pl.program
class GatherFromLocal:
    """A local copy of the source, gathered along its last dim, then echoed out."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[8, 32], pl.FP32], idx: pl.Tensor[[8, 8], pl.INT32],
             echo: pl.Out[pl.Tensor[[8, 32], pl.FP32]],
             picked: pl.Out[pl.Tensor[[8, 8], pl.FP32]],
             ) -> tuple[pl.Tensor[[8, 32], pl.FP32], pl.Tensor[[8, 8], pl.FP32]]:
        with pl.at(level=pl.Level.CORE_GROUP):
            buf = pl.create_tensor([8, 32], dtype=pl.FP32)
            buf = pl.assemble(buf, src, [0, 0])
            g = pl.tensor.gather(buf, dim=-1, index=idx)
            picked = pl.assemble(picked, g, [0, 0])
            echo = pl.assemble(echo, buf, [0, 0])
        return echo, picked


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_local_tensor_is_assembled_gathered_and_left_unchanged(platform):
    src = rand((8, 32), 1)
    idx = np.random.default_rng(2).integers(0, 32, (8, 8)).astype(np.int32)
    echo, picked = np.zeros((8, 32), np.float32), np.zeros((8, 8), np.float32)
    run(GatherFromLocal, platform, src, idx, echo, picked)
    np.testing.assert_array_equal(echo, src)
    np.testing.assert_array_equal(picked, np.take_along_axis(src, idx, axis=-1))


@pl.program
class SliceOfLocal:
    """A column window of a wider local tensor feeds a tensor-level op."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Tensor[[16, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            wide = pl.create_tensor([16, 64], dtype=pl.FP32)
            wide = pl.assemble(wide, x, [0, 0])
            right = wide[:, 32:64]
            s = pl.add(right, y)
            out = pl.assemble(out, pl.exp(s), [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_view_of_a_kernel_local_tensor_feeds_tensor_level_ops(platform):
    x, y = rand((16, 64), 3), rand((16, 32), 4)
    out = np.zeros((16, 32), np.float32)
    run(SliceOfLocal, platform, x, y, out)
    expected = np.exp(x[:, 32:].astype(np.float64) + y.astype(np.float64))
    np.testing.assert_allclose(out, expected.astype(np.float32), rtol=2e-6)


# ---------------------------------------------------------------- loads, stores


@pl.program
class StagedThroughLocal:
    """An InCore function stores two tiles into halves of a local tensor, then loads it
    back whole: rows swapped on the way through."""

    @pl.function(type=pl.FunctionType.InCore)
    def swap_halves(self, x: pl.Tensor[[16, 32], pl.FP32],
                    out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        stage = pl.create_tensor([16, 32], dtype=pl.FP32)
        top = pl.load(x, [0, 0], [8, 32])
        bottom = pl.load(x, [8, 0], [8, 32])
        stage = pl.store(top, [8, 0], stage)
        stage = pl.store(bottom, [0, 0], stage)
        whole = pl.load(stage, [0, 0], [16, 32])
        out = pl.store(pl.mul(whole, 2.0), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[16, 32], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        out = self.swap_halves(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tiles_are_stored_into_and_loaded_from_a_kernel_local_tensor(platform):
    x = rand((16, 32), 5)
    out = np.zeros((16, 32), np.float32)
    run(StagedThroughLocal, platform, x, out)
    np.testing.assert_array_equal(out, np.concatenate([x[8:], x[:8]]) * np.float32(2))


@pl.program
class LoopIntoLocal:
    """A local tensor carried by a loop, one row band assembled per iteration."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[4, 16], pl.INT32],
             out: pl.Out[pl.Tensor[[16, 16], pl.INT32]]) -> pl.Tensor[[16, 16], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            acc = pl.create_tensor([16, 16], dtype=pl.INT32)
            for i, (a,) in pl.range(4, init_values=(acc,)):
                t = pl.load(x, [0, 0], [4, 16])
                band = pl.store(pl.adds(t, i), [i * 4, 0], a)
                a_next = pl.yield_(band)
            out = pl.assemble(out, a_next, [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_local_tensor_is_carried_through_a_loop(platform):
    x = np.random.default_rng(6).integers(-100, 100, (4, 16)).astype(np.int32)
    out = np.zeros((16, 16), np.int32)
    run(LoopIntoLocal, platform, x, out)
    np.testing.assert_array_equal(out, np.concatenate([x + k for k in range(4)]))


# ------------------------------------------------------------------- poison


@pl.program
class HalfWritten:
    """Only the top half of the local tensor is written; all of it is copied out."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[4, 16], pl.INT32],
             out: pl.Out[pl.Tensor[[8, 16], pl.INT32]]) -> pl.Tensor[[8, 16], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            buf = pl.create_tensor([8, 16], dtype=pl.INT32)
            buf = pl.assemble(buf, x, [0, 0])
            out = pl.assemble(out, buf, [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_unwritten_elements_of_a_kernel_local_tensor_are_poisoned(platform):
    x = np.arange(64, dtype=np.int32).reshape(4, 16)
    out = np.zeros((8, 16), np.int32)
    run(HalfWritten, platform, x, out)
    np.testing.assert_array_equal(out[:4], x)
    assert (out[4:] == POISON_INT32).all()


@pl.program
class InitInKernel:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, out: pl.Out[pl.Tensor[[8, 16], pl.INT32]]) -> pl.Tensor[[8, 16], pl.INT32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            buf = pl.create_tensor([8, 16], dtype=pl.INT32, init_value=0)  # init-in-kernel
            out = pl.assemble(out, buf, [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_kernel_local_init_value_warns_at_its_line_and_is_not_applied(platform):
    with pytest.warns(PyptoWarning) as record:
        compiled = compile_for(InitInKernel, platform)
    text = "\n".join(str(w.message) for w in record)
    assert "init_value=0 of pl.create_tensor inside InCore function" in text
    assert f":{line_of('# init-in-kernel')}:" in text
    out = np.zeros((8, 16), np.int32)
    pytest_pypto.run(compiled, out, config=RunConfig(platform=platform))
    assert (out == POISON_INT32).all()  # PyPTO's kernel tile starts undefined


# ------------------------------------------------------------------ negatives


def test_dynamic_dims_of_a_kernel_local_tensor_are_rejected_at_their_line():
    @pl.program
    class Dynamic:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[8, 16], pl.FP32], n: pl.Scalar[pl.INDEX],
              out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
            buf = pl.create_tensor([n, 16], dtype=pl.FP32)  # dynamic-local
            out = pl.store(pl.load(x, [0, 0], [8, 16]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[8, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
            out = self.k(x, 8, out)
            return out

    with pytest.raises(PlacementError) as ei:
        compile_for(Dynamic)
    assert "pl.create_tensor([n, 16]) inside InCore function 'k' needs static dims" \
        in ei.value.message
    assert ei.value.span.line == line_of("# dynamic-local")


@pytest.mark.parametrize(("platform", "limit"), [("a2a3sim", 188416), ("a5sim", 245760)])
def test_a_kernel_local_tensor_over_vec_is_rejected_at_its_line(platform, limit):
    @pl.program
    class TooBig:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[8, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                big = pl.create_tensor([256, 256], dtype=pl.FP32)  # too-big-local
                big = pl.assemble(big, x, [0, 0])
                out = pl.assemble(out, big[0:8, 0:16], [0, 0])
            return out

    with pytest.raises(CapacityError) as ei:
        compile_for(TooBig, platform)
    assert (f"pl.create_tensor([256, 256], FP32) inside InCore function 'main_incore_0' "
            f"needs 262144 bytes of Vec, over the {limit}-byte Vec") in ei.value.message
    assert ei.value.span.line == line_of("# too-big-local")
