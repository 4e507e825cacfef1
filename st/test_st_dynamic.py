# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""System test: a tensor read driving a dynamic loop in the orchestration (docs/design/language.md
§8).

The row count is a `pl.dynamic` dim; a first outlined region writes a small control
tensor (how many leading row blocks to scale, and by which factor); the orchestration
reads it back with `pl.tensor.read` (which waits for that task), scales that many
blocks in an outlined region inside a `pl.range` loop (leaving it early with `break`
past the tensor's end), then copies the remaining blocks in a `while` loop bounded by
`pl.tensor.dim`.  Goldens are plain numpy; both the task graph and the outputs are
checked on each requested cell.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
from pytest_pypto.harness import DataType, PTOTestCase, TensorSpec

M = pl.dynamic("M")
N, TM = 64, 16


@pl.program
class ReadDrivenBlocks:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[M, N], pl.FP32],
        meta: pl.Tensor[[1, 16], pl.INT32],
        out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        ctrl = pl.create_tensor([1, 16], dtype=pl.INT32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="decode"):
            m = pl.load(meta, [0, 0], [1, 16])
            ctrl = pl.store(pl.add(m, m), [0, 0], ctrl)  # doubled: blocks and factor code
        blocks = pl.tensor.read(ctrl, [0, 0]) // 2
        code = pl.tensor.read(ctrl, [0, 1])
        if code == 2:
            factor = 2.0
        else:
            factor = -1.0
        rows = pl.tensor.dim(x, 0)
        for b in pl.range(blocks):
            r = b * TM
            if r >= rows:
                break  # more blocks asked for than the tensor has
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="scale"):
                t = pl.load(x, [r, 0], [TM, N])
                out = pl.store(pl.mul(t, factor), [r, 0], out)
            done = b + 1
        r = done * TM
        while r < rows:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
                t = pl.load(x, [r, 0], [TM, N])
                out = pl.store(t, [r, 0], out)
            r = r + TM
        return out


class ReadDrivenBlocksCase(PTOTestCase):
    def __init__(self, rows: int, blocks: int, code: int) -> None:
        super().__init__()
        self.rows, self.blocks, self.code = rows, blocks, code

    def get_name(self):
        return f"read_driven_blocks_{self.rows}_{self.blocks}_{self.code}"

    def define_tensors(self):
        meta = np.zeros((1, 16), np.int32)
        meta[0, 0], meta[0, 1] = self.blocks, self.code // 2
        return [
            TensorSpec("x", [self.rows, N], DataType.FP32),  # seeded standard normal
            TensorSpec("meta", [1, 16], DataType.INT32, init_value=meta),
            TensorSpec("out", [self.rows, N], DataType.FP32, is_output=True),
        ]

    def get_program(self):
        return ReadDrivenBlocks

    def compute_expected(self, tensors, params=None):
        x = tensors["x"]
        scaled = min(self.blocks, self.rows // TM) * TM
        factor = 2.0 if self.code == 2 else -1.0
        tensors["out"][:] = x
        tensors["out"][:scaled] = x[:scaled] * factor  # exact: power of two / sign


def test_read_drives_a_dynamic_loop(pypto_runner):
    case = ReadDrivenBlocksCase(rows=96, blocks=3, code=2)
    result = pypto_runner.check(case)
    assert result.passed
    run = pypto_runner.run(ReadDrivenBlocks, *_inputs(case, seed=3))
    kernels = [t["kernel"] for t in run.tasks]
    assert kernels == ["decode"] + ["scale"] * 3 + ["copy"] * 3
    assert run.tasks[1]["deps"] == []  # `scale` reads x only; the decode task's ctrl was read


def test_read_asks_for_more_blocks_than_the_tensor_has(pypto_runner):
    case = ReadDrivenBlocksCase(rows=48, blocks=10, code=0)
    result = pypto_runner.check(case)
    assert result.passed
    out = result.outputs["out"]
    np.testing.assert_array_equal(out, -result.inputs["x"])  # every block scaled by -1


def _inputs(case: ReadDrivenBlocksCase, seed: int) -> tuple[np.ndarray, ...]:
    x = np.random.default_rng(seed).standard_normal((case.rows, N)).astype(np.float32)
    meta = np.zeros((1, 16), np.int32)
    meta[0, 0], meta[0, 1] = case.blocks, case.code // 2
    return x, meta, np.zeros((case.rows, N), np.float32)
