# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.MemRef` slots and Scalar argument coercions through the whole pipeline, both sims.

Slotted tiles must compute exactly what unslotted ones do (the binding is a storage
hint here), a run-time slot index outside its allocation is a run-time error at the
binding's line (batched loops included), and a kernel's integer/BOOL Scalar parameter
takes an argument of another integer/BOOL dtype by C conversion.  numpy references
are written here, from the inputs."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import compile as compile_artifact
from pytest_pypto.ir.errors import ParserTypeError, SimulationError
from pytest_pypto.ir.printer import print_program
from ut.helpers import line_finder
from ut.pipeline.pipeline_kit import PLATFORMS

TR, TC, STEPS = 16, 64, 4
ROWS = TR * STEPS
M, K, N, TN = 16, 32, 64, 16
UB = pl.MemRef(slots=2)
L0C = pl.MemRef(slots=2)
NARROW = pl.MemRef("narrow", slots=2)


line_of = line_finder(__file__)


def ramp(rows: int, cols: int, scale: float, bias: float) -> np.ndarray:
    """Distinct values per element, so a swapped or collapsed slot shows."""
    return ((np.arange(rows * cols, dtype=np.float32).reshape(rows, cols) * scale + bias)
            / (rows * cols)).astype(np.float32)


def run(program, platform, *arrays, batch_loops=None):
    config = RunConfig(platform=platform)
    compiled = compile_artifact(program, config, batch_loops=batch_loops)
    pytest_pypto.run(compiled, *arrays, config=config)


@pl.program
class CoLiveSlots:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[ROWS, TC], pl.FP32], b: pl.Tensor[[ROWS, TC], pl.FP32],
          out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        for i in pl.range(STEPS):
            lo: pl.Tile[[TR, TC], pl.FP32, UB[i % 2], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])
            hi: pl.Tile[[TR, TC], pl.FP32, UB[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * TR, 0], [TR, TC])
            out = pl.store(pl.sub(lo, hi), [i * TR, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, TC], pl.FP32], b: pl.Tensor[[ROWS, TC], pl.FP32],
             out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        out = self.k(a, b, out)
        return out


@pl.program
class PingPongAccumulate:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[ROWS, TC], pl.FP32],
          out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        seed: pl.Tile[[TR, TC], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [TR, TC])
        for i, (acc,) in pl.range(1, STEPS, init_values=(seed,)):
            t: pl.Tile[[TR, TC], pl.FP32, pl.MemRef("pp", slots=2)[i % 2], pl.Mem.Vec] = \
                pl.load(a, [i * TR, 0], [TR, TC])
            r = pl.yield_(pl.add(acc, t))
        out = pl.store(r, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, TC], pl.FP32],
             out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class ConstantSlots:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[TR, TC], pl.FP32], b: pl.Tensor[[TR, TC], pl.FP32],
          out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        lo: pl.Tile[[TR, TC], pl.FP32, UB[0], pl.Mem.Vec] = pl.load(a, [0, 0], [TR, TC])
        hi: pl.Tile[[TR, TC], pl.FP32, UB[1], pl.Mem.Vec] = pl.load(b, [0, 0], [TR, TC])
        out = pl.store(pl.sub(lo, hi), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[TR, TC], pl.FP32], b: pl.Tensor[[TR, TC], pl.FP32],
             out: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        out = self.k(a, b, out)
        return out


@pl.program
class AccSlots:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        la: pl.Tile[[M, K], pl.FP32, pl.Mem.Mat] = pl.load(a, [0, 0], [M, K], target_memory=pl.Mem.Mat)
        for j in pl.range(N // TN):
            lb: pl.Tile[[K, TN], pl.FP32, pl.Mem.Mat] = pl.load(b, [0, j * TN], [K, TN], target_memory=pl.Mem.Mat)
            cur: pl.Tile[[M, TN], pl.FP32, L0C[j % 2], pl.Mem.Acc] = pl.tile.matmul(la, lb)
            out = pl.store(cur, [0, j * TN], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(a, b, out)
        return out


@pl.program
class SlotOverrun:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[ROWS, TC], pl.FP32],
          out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        for i in pl.range(STEPS):
            t: pl.Tile[[TR, TC], pl.FP32, NARROW[i], pl.Mem.Vec] = pl.load(a, [i * TR, 0], [TR, TC])  # overrun
            out = pl.store(pl.add(t, t), [i * TR, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[ROWS, TC], pl.FP32],
             out: pl.Out[pl.Tensor[[ROWS, TC], pl.FP32]]) -> pl.Tensor[[ROWS, TC], pl.FP32]:
        out = self.k(a, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_colive_slots_keep_both_tiles(platform):
    a, b = ramp(ROWS, TC, 1.0, 0.0), ramp(ROWS, TC, -3.0, 7.0)
    out = np.zeros_like(a)
    run(CoLiveSlots, platform, a, b, out)
    np.testing.assert_array_equal(out, a - b)


def test_kernel_listing_names_each_tiles_slot():
    compiled = pytest_pypto.compile(CoLiveSlots, RunConfig(platform="a5sim"))
    listing = (compiled.artifact_dir() / "kernels" / "k.txt").read_text()
    assert ': Tile[[16, 64], FP32, Vec] in pl.MemRef("UB", slots=2)[(i % 2)]' in listing
    assert 'in pl.MemRef("UB", slots=2)[((i + 1) % 2)]' in listing


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ping_pong_slot_accumulates_every_block(platform):
    a = ramp(ROWS, TC, 1.0, 0.5)
    out = np.zeros((TR, TC), np.float32)
    run(PingPongAccumulate, platform, a, out)
    want = a[:TR].copy()
    for i in range(1, STEPS):
        want = (want + a[i * TR:(i + 1) * TR]).astype(np.float32)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_constant_slots_stay_apart(platform):
    a, b = ramp(TR, TC, 1.0, 0.0), ramp(TR, TC, -3.0, 7.0)
    out = np.zeros_like(a)
    run(ConstantSlots, platform, a, b, out)
    np.testing.assert_array_equal(out, a - b)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_acc_slots_rotate_over_column_tiles(platform):
    a, b = ramp(M, K, 1.0, 0.0), ramp(K, N, 2.0, -1.0)
    out = np.zeros((M, N), np.float32)
    run(AccSlots, platform, a, b, out)
    np.testing.assert_allclose(out, a.astype(np.float64) @ b.astype(np.float64),
                               rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("batch_loops", [True, False], ids=["batched", "per-iteration"])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_runtime_slot_index_out_of_range(platform, batch_loops):
    a = ramp(ROWS, TC, 1.0, 0.0)
    with pytest.raises(SimulationError) as ei:
        run(SlotOverrun, platform, a, np.zeros_like(a), batch_loops=batch_loops)
    assert "slot index 2 is out of range for 'narrow', declared with 2 slot(s)" in ei.value.message
    assert ei.value.line == line_of("overrun") and ei.value.file == __file__


# --------------------------------------------------------- Scalar argument coercion


@pl.program
class FlagKernel:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[TR, TC], pl.FP32], first: pl.Scalar[pl.BOOL],
          bias: pl.Scalar[pl.INT32],
          y: pl.InOut[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        t = pl.load(x, [0, 0], [TR, TC])
        if first:
            acc = pl.adds(t, pl.cast(bias, pl.FP32))
        else:
            acc = pl.add(pl.load(y, [0, 0], [TR, TC]), t)
        y = pl.store(acc, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[TR, TC], pl.FP32],
             y: pl.InOut[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
        for i in pl.range(3):
            if i == 0:
                first: pl.Scalar[pl.INT64] = pl.yield_(pl.const(1, pl.INT64))
            else:
                first: pl.Scalar[pl.INT64] = pl.yield_(pl.const(0, pl.INT64))
            y = self.k(x, first, i + 5, y)      # INT64 -> BOOL, INDEX -> INT32
        y = self.k(x, pl.const(0, pl.INT64), pl.const(9, pl.INT64), y)  # constants fold
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_integer_scalars_convert_to_integer_and_bool_parameters(platform):
    x = ramp(TR, TC, 1.0, 0.25)
    y = np.full((TR, TC), -7.0, np.float32)
    run(FlagKernel, platform, x, y)
    want = (x + np.float32(5)).astype(np.float32)  # i == 0: first, bias 0 + 5
    for _ in range(3):  # i == 1, 2 and the constant call: not first, accumulate
        want = (want + x).astype(np.float32)
    np.testing.assert_array_equal(y, want)


def test_coerced_arguments_are_casts_in_the_ir():
    text = print_program(FlagKernel)
    assert "call @k(x, cast(first, BOOL), cast((i + 5:INDEX):Scalar[INDEX], INT32), " in text
    assert "call @k(x, False:BOOL, 9:INT32, " in text  # constants converted while parsing


def test_a_float_argument_to_an_integer_parameter_stays_an_error():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class FloatToInt:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[TR, TC], pl.FP32], n: pl.Scalar[pl.INT32],
                  y: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
                y = pl.store(pl.load(x, [0, 0], [TR, TC]), [0, 0], y)
                return y

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[TR, TC], pl.FP32], s: pl.Scalar[pl.FP32],
                     y: pl.Out[pl.Tensor[[TR, TC], pl.FP32]]) -> pl.Tensor[[TR, TC], pl.FP32]:
                y = self.k(x, s, y)  # float-arg
                return y
    assert "argument 'n' of self.k(...) (position 1) is Scalar[INT32], but got Scalar[FP32]" \
        in ei.value.message
    assert ei.value.line == line_of("float-arg")
    assert ei.value.hint == "pl.cast(s, pl.INT32)"
