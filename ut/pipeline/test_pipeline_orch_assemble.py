# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.assemble` in orchestration, and argument directions traced through tensor views.

An orchestration assemble waits for the tasks producing its source and for every
pending task touching the target window, then copies (PyPTO has the producer write
into the window in place: the values are the same).  A write through a slice,
reshape or set_validshape view is a write of the viewed buffer, for the In/Out
checks and for the directions a `pl.at` region infers.  References are numpy.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import DirectionError, PlacementError, ShapeError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")


line_of = line_finder(__file__)


def compile_for(program, platform="a2a3sim"):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def run(program, platform, *arrays, **config):
    return pytest_pypto.run(compile_for(program, platform), *arrays,
                            config=RunConfig(platform=platform, **config))


# ---------------------------------------------------------------- orchestration


@pl.program
class Stack:
    """Each iteration's kernel result assembled into one slab of a 3-D output."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[4, 16], pl.FP32], k: pl.Scalar[pl.FP32],
              out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [4, 16])
        out = pl.store(pl.mul(t, k), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[4, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[3, 4, 16], pl.FP32]]) -> pl.Tensor[[3, 4, 16], pl.FP32]:
        for b in pl.range(3):
            chunk = pl.create_tensor([4, 16], dtype=pl.FP32)
            chunk = self.scale(x, pl.cast(b + 1, pl.FP32), chunk)
            out = pl.assemble(out, chunk, [b, 0, 0])
        return out


@pytest.mark.parametrize("seed", [None, 7])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_lower_rank_result_is_assembled_into_its_slab(platform, seed):
    x = np.random.default_rng(1).standard_normal((4, 16)).astype(np.float32)
    out = np.zeros((3, 4, 16), np.float32)
    result = run(Stack, platform, x, out, schedule_seed=seed)
    np.testing.assert_array_equal(out, np.stack([x * np.float32(k) for k in (1, 2, 3)]))
    assert [t["kernel"] for t in result.tasks] == ["scale"] * 3  # the copies are no tasks


@pl.program
class AssembleThenRead:
    """A kernel reads the target after the assemble: it sees the assembled values."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[8, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
        out = pl.store(pl.exp(pl.load(x, [0, 0], [8, 16])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def total(self, y: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(y, [0, 0], [16, 16])
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def orch(self, x: pl.Tensor[[8, 16], pl.FP32], out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]
             ) -> pl.Tensor[[16, 16], pl.FP32]:
        y = pl.create_tensor([16, 16], dtype=pl.FP32, init_value=1.0)
        part = pl.create_tensor([8, 16], dtype=pl.FP32)
        part = self.fill(x, part)
        y = pl.assemble(y, part, [8, 0])
        out = self.total(y, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_assemble_orders_after_its_producer_and_before_its_readers(platform):
    x = np.random.default_rng(2).standard_normal((8, 16)).astype(np.float32)
    out = np.zeros((16, 16), np.float32)
    run(AssembleThenRead, platform, x, out, schedule_seed=3)
    y = np.ones((16, 16), np.float32)
    y[8:] = np.exp(x)
    np.testing.assert_allclose(out, y + y, rtol=1e-6)


def test_orchestration_assemble_rejects_atomic_add_at_its_line():
    @pl.program
    class Atomic:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[4, 16], pl.FP32],
                 out: pl.InOut[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
            out = pl.assemble(out, x, [0, 0], atomic=pl.AtomicType.Add)  # orch-atomic
            return out

    with pytest.raises(ShapeError, match="orchestration has no atomic-combine instruction") as ei:
        compile_for(Atomic)
    assert ei.value.line == line_of("# orch-atomic") and ei.value.file == __file__


def test_orchestration_assemble_does_not_convert_dtypes():
    @pl.program
    class Convert:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[4, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[4, 16], pl.BF16]]) -> pl.Tensor[[4, 16], pl.BF16]:
            out = pl.assemble(out, x, [0, 0])  # orch-convert
            return out

    with pytest.raises(ShapeError, match="Orchestration code copies tensors as they are") as ei:
        compile_for(Convert)
    assert ei.value.line == line_of("# orch-convert")


def test_orchestration_assemble_into_an_in_parameter_is_a_direction_error():
    @pl.program
    class IntoIn:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[4, 16], pl.FP32], y: pl.Tensor[[8, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
            y = pl.assemble(y, x, [4, 0])  # into-in
            return out

    with pytest.raises(DirectionError, match="writes parameter 'y', which is declared In") as ei:
        compile_for(IntoIn)
    assert ei.value.line == line_of("# into-in")


# ------------------------------------------------------------ directions through views


def test_a_store_into_a_window_of_an_in_parameter_is_a_direction_error():
    @pl.program
    class StoreIntoInWindow:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = pl.load(x, [0, 0], [8, 16])
            top = pl.slice(x, [8, 16], [8, 0])
            top = pl.store(t, [0, 0], top)  # in-window
            out = pl.store(t, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            out = self.k(x, out)
            return out

    with pytest.raises(DirectionError, match="'k' writes parameter 'x', which is declared In") \
            as ei:
        compile_for(StoreIntoInWindow)
    assert ei.value.line == line_of("# in-window")


def test_passing_a_window_of_an_in_parameter_to_an_out_slot_is_a_direction_error():
    @pl.program
    class WindowToOut:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[8, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
            out = pl.store(pl.load(x, [0, 0], [8, 16]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[8, 16], pl.FP32], y: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[8, 16], pl.FP32]]) -> pl.Tensor[[8, 16], pl.FP32]:
            half = pl.reshape(pl.slice(y, [8, 16], [0, 0]), [8, 16])
            half = self.k(x, half)  # window-to-out
            out = self.k(x, out)
            return out

    with pytest.raises(DirectionError, match="Argument 'y' passed to self.k\\(...\\) at "
                       "position 1 is the entry's In parameter") as ei:
        compile_for(WindowToOut)
    assert ei.value.line == line_of("# window-to-out")


@pl.program
class RegionWritesWindow:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32],
             out: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            low = out[16:32, :]
            low = pl.store(pl.load(x, [0, 0], [16, 32]), [0, 0], low)
        with pl.at(level=pl.Level.CORE_GROUP):
            head = x[0:8, :]  # a read-only view of an In parameter stays a read
            out = pl.store(pl.neg(pl.load(head, [0, 0], [8, 32])), [0, 0], out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_region_writing_through_a_window_writes_the_viewed_buffer(platform):
    compiled = compile_for(RegionWritesWindow, platform)
    directions = [[(a.name, a.direction) for a in k.args] for k in compiled.manifest.kernels]
    assert directions == [[("out", "Out"), ("x", "In")], [("x", "In"), ("out", "Out")]]
    x = np.random.default_rng(3).standard_normal((16, 32)).astype(np.float32)
    out = np.full((32, 32), 9.0, np.float32)
    result = pytest_pypto.run(compiled, x, out, config=RunConfig(platform=platform))
    want = np.full((32, 32), 9.0, np.float32)
    want[16:] = x
    want[:8] = -x[:8]
    np.testing.assert_array_equal(out, want)
    second = result.tasks[1]
    assert [d["task"] for d in second["deps"]] == [result.tasks[0]["id"]]  # WAW on out


def test_assemble_outside_a_kernel_or_orchestration_is_still_placed():
    # tensor.assemble is an orchestration op now; compute ops are still InCore-only
    @pl.program
    class Misplaced:
        @pl.function(type=pl.FunctionType.Orchestration)
        def orch(self, x: pl.Tensor[[4, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[4, 16], pl.FP32]]) -> pl.Tensor[[4, 16], pl.FP32]:
            y = pl.add(x, x)  # misplaced-add
            out = pl.assemble(out, y, [0, 0])
            return out

    with pytest.raises(PlacementError, match="Misplaced tensor op 'tensor.add'") as ei:
        compile_for(Misplaced)
    assert ei.value.line == line_of("# misplaced-add")
