"""A move of a view (transpose_view, slice, ...) shares its buffer: views write nothing.

`MemRule.view` tells a view apart from an in-place op, so only in-place ops make a
move copy.  The positive cases check the generated kernel moves with ``share=True``
and the values against numpy; the negative ones write in place, after the move,
either the view's source or the moved tile's source through a view, and check that
the move stays a copy and the other tile keeps its values.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import compile
from pytest_pypto.ir.registry import REGISTRY, MemRule, OpSpec, register
from pytest_pypto.runtime.worker import Worker

PLATFORMS = ("a2a3sim", "a5sim")
S = 16


def kernel_line(compiled, name: str, needle: str) -> str:
    source = (Path(compiled.artifact_dir()) / "kernels" / f"{name}.py").read_text()
    source = source.split("__tasks(")[0]  # (not a task-batched variant)
    lines = [line for line in source.splitlines() if needle in line]
    assert len(lines) == 1, lines
    return lines[0]


def viewed_right_program(transpose: bool):
    """out = q @ K where K is a view of a loaded Mat tile moved to Right."""

    @pl.program
    class Viewed:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, q: pl.Tensor[[S, S], pl.FP32], k: pl.Tensor[[2 * S, S], pl.FP32],
              out: pl.Out[pl.Tensor[[S, S], pl.FP32]]) -> pl.Tensor[[S, S], pl.FP32]:
            qa = pl.load(q, [0, 0], [S, S], target_memory=pl.Mem.Mat)
            kb = pl.load(k, [0, 0], [2 * S, S], target_memory=pl.Mem.Mat)
            if transpose:
                kv = pl.tile.transpose_view(pl.slice(kb, [S, S], [0, 0]))
            else:
                kv = pl.slice(kb, [S, S], [S, 0])
            prod = pl.matmul(pl.move(qa, target_memory=pl.Mem.Left),
                             pl.move(kv, target_memory=pl.Mem.Right))
            out = pl.store(prod, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, q: pl.Tensor[[S, S], pl.FP32], k: pl.Tensor[[2 * S, S], pl.FP32],
                 out: pl.Out[pl.Tensor[[S, S], pl.FP32]]) -> pl.Tensor[[S, S], pl.FP32]:
            out = self.k(q, k, out)
            return out

    return Viewed


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("view", ["transpose", "slice"])
def test_a_move_of_a_view_shares_its_buffer(platform, view):
    compiled = compile(viewed_right_program(view == "transpose"), RunConfig(platform=platform))
    assert "share=True" in kernel_line(compiled, "k", "target_memory='Right'")
    rng = np.random.default_rng(3)
    q = rng.standard_normal((S, S)).astype(np.float32)
    k = rng.standard_normal((2 * S, S)).astype(np.float32)
    out = np.empty((S, S), np.float32)
    Worker(platform).run(compiled, q, k, out)
    rhs = k[:S].T if view == "transpose" else k[S:]
    np.testing.assert_allclose(out, q.astype(np.float64) @ rhs, rtol=1e-5, atol=1e-5)


def written_after_program(through_view: bool):
    """Snapshot an Acc tile into Vec, then accumulate into it again; store both.

    ``through_view`` False: the snapshot moves a slice of ``acc`` and the accumulate
    writes ``acc`` itself.  True: the snapshot moves ``acc`` and the accumulate writes
    through a view of it (set_validshape over the whole tile)."""

    @pl.program
    class Written:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[S, S], pl.FP32], b: pl.Tensor[[S, S], pl.FP32],
              first: pl.Out[pl.Tensor[[S // 2, S], pl.FP32]],
              final: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
            la = pl.move(pl.load(a, [0, 0], [S, S], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Left)
            rb = pl.move(pl.load(b, [0, 0], [S, S], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Right)
            acc = pl.matmul(la, rb)
            if through_view:
                snap = pl.move(acc, target_memory=pl.Mem.Vec)
                whole = pl.tile.set_validshape(acc, S, S)
                acc = pl.matmul_acc(whole, la, rb)
                first = pl.store(pl.slice(snap, [S // 2, S], [0, 0]), [0, 0], first)
            else:
                snap = pl.move(pl.slice(acc, [S // 2, S], [0, 0]), target_memory=pl.Mem.Vec)
                acc = pl.matmul_acc(acc, la, rb)
                first = pl.store(snap, [0, 0], first)
            final = pl.store(acc, [0, 0], final)
            return first, final

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[S, S], pl.FP32], b: pl.Tensor[[S, S], pl.FP32],
                 first: pl.Out[pl.Tensor[[S // 2, S], pl.FP32]],
                 final: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
            first, final = self.k(a, b, first, final)
            return first, final

    return Written


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("through_view", [False, True])
def test_a_move_whose_class_is_written_through_a_view_copies(platform, through_view):
    compiled = compile(written_after_program(through_view), RunConfig(platform=platform))
    assert "share=True" not in kernel_line(compiled, "k", "target_memory='Vec'")
    rng = np.random.default_rng(4)
    a, b = (rng.standard_normal((S, S)).astype(np.float32) for _ in range(2))
    first = np.empty((S // 2, S), np.float32)
    final = np.empty((S, S), np.float32)
    Worker(platform).run(compiled, a, b, first, final)
    product = a.astype(np.float64) @ b
    np.testing.assert_allclose(first, product[:S // 2], rtol=1e-5, atol=1e-5)  # not 2x
    np.testing.assert_allclose(final, 2 * product, rtol=1e-5, atol=1e-5)


def test_every_same_result_op_is_a_view_or_writes_its_operand():
    """The registry's views are exactly the ops that return a window of their operand
    and leave its data alone; every other ``same:`` op writes in place."""
    views = {name for name, spec in REGISTRY.items() if spec.mem.view}
    assert views == {"tile.slice", "tile.reshape", "tile.transpose_view",
                     "tile.set_validshape", "tile.reinterpret_view"}
    writers = {name for name, spec in REGISTRY.items()
               if (spec.mem.result or "").startswith("same:") and not spec.mem.view}
    assert {"tile.write", "tile.assemble", "tile.matmul_acc", "tile.scatter",
            "tile.fillpad_inplace"} <= writers


def test_a_view_flag_without_a_same_result_is_refused():
    spec = OpSpec(name="test.bad_view", params=(), type_rule=lambda info: None,
                  mem=MemRule(result="Vec", view=True), doc="", execute=lambda: None)
    with pytest.raises(ValueError, match="test.bad_view.*same:<param>"):
        register(spec)
    assert "test.bad_view" not in REGISTRY


def test_a_shared_move_of_a_transposed_layout_is_a_row_major_copy():
    """``share=True`` lets a move reuse the buffer; the simulator still copies a source
    whose rows are not contiguous (the matmul it feeds is faster on a row-major copy)."""
    from pytest_pypto.ir.dtypes import FP32
    from pytest_pypto.ir.types import TileType
    from pytest_pypto.ir.values import TileValue

    move = REGISTRY["tile.move"].execute
    base = np.arange(32, dtype=np.float32).reshape(4, 8)
    out = TileType((8, 4), FP32, "Right")
    transposed = TileValue(base.T, (8, 4), FP32, "Mat")
    got = move(transposed, target_memory="Right", out=out, share=True)
    assert not np.shares_memory(got.data, base)
    assert got.data.flags.c_contiguous
    np.testing.assert_array_equal(got.data, base.T)
    assert got.valid == (8, 4) and got.space == "Right"
    rows = TileValue(base[:, 2:6], (4, 4), FP32, "Mat")  # a window: rows stay contiguous
    shared = move(rows, target_memory="Right", out=TileType((4, 4), FP32, "Right"), share=True)
    assert np.shares_memory(shared.data, base)
    np.testing.assert_array_equal(shared.data, base[:, 2:6])
