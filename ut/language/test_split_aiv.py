# SPDX-License-Identifier: Apache-2.0
"""`pl.split_aiv` regions, `pl.aiv_shard`, `pl.aic_gather`, `pl.get_subblock_idx`
(docs/design/language.md §14b): runs on both sims against numpy, and the parse-time
rules with their lines."""

from __future__ import annotations

import importlib.util
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import (
    InvalidOperationError,
    ParserSyntaxError,
    PlacementError,
    PyptoError,
    SimulationError,
)
from ut.helpers import line_of

PLATFORMS = ("a2a3sim", "a5sim")
S = 32
H = S // 2


def _run(program, platform, *arrays):
    config = RunConfig(platform=platform)
    return pytest_pypto.run(pytest_pypto.compile(program, config), *arrays, config=config)


@pytest.fixture
def ab() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7)
    return (rng.standard_normal((S, S)).astype(np.float32),
            rng.standard_normal((S, S)).astype(np.float32))


@pl.program
class Halves:
    """UP_DOWN: each lane scales its half of the rows of a @ b; LEFT_RIGHT: each lane adds 1
    to its half of the columns, the cube multiplies the joined tile by b again."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[S, S], pl.FP32], b: pl.Tensor[[S, S], pl.FP32],
             rows: pl.Out[pl.Tensor[[S, S], pl.FP32]], again: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
        with pl.at(level=pl.Level.CORE_GROUP):
            left = pl.move(pl.load(a, [0, 0], [S, S], target_memory=pl.MemorySpace.Mat),
                           target_memory=pl.MemorySpace.Left)
            right = pl.move(pl.load(b, [0, 0], [S, S], target_memory=pl.MemorySpace.Mat),
                            target_memory=pl.MemorySpace.Right)
            mm = pl.matmul(left, right)
            for _ in pl.range(2):  # a region nested in a loop
                for lane in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):
                    half = pl.aiv_shard(mm)
                    rows = pl.store(pl.mul(half, 2.0), [lane * H, 0], rows)
            for lane in pl.split_aiv(2, mode=pl.SplitMode.LEFT_RIGHT):
                cols = pl.aiv_shard(mm)
                joined = pl.aic_gather(pl.add(cols, 1.0))
            mm2 = pl.matmul(pl.move(joined, target_memory=pl.MemorySpace.Left), right)
            again = pl.store(mm2, [0, 0], again)
        return rows, again


@pytest.mark.parametrize("platform", PLATFORMS)
def test_data_parallel_regions_give_each_lane_its_half(platform, ab):
    a, b = ab
    rows = np.zeros((S, S), np.float32)
    again = np.zeros((S, S), np.float32)
    _run(Halves, platform, a, b, rows, again)
    np.testing.assert_allclose(rows, (a @ b) * 2, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(again, (a @ b + 1) @ b, rtol=1e-4, atol=1e-3)


@pl.program
class TaskParallel:
    """NONE at the top of an Opaque function: both lanes run the whole body; lane k stores
    row blocks k, k + 2, ... (by aiv_id) and its lane index (by pl.get_subblock_idx())."""

    @pl.function
    def main(self, x: pl.Tensor[[4 * 8, S], pl.FP32], out: pl.Out[pl.Tensor[[4 * 8, S], pl.FP32]],
             who: pl.Out[pl.Tensor[[4 * 8, S], pl.FP32]]):
        for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
            for blk in pl.range(aiv_id, 4, 2):
                t = pl.load(x, [blk * 8, 0], [8, S])
                out = pl.store(pl.add(t, 10.0), [blk * 8, 0], out)
                lane = pl.cast(pl.tensor.get_subblock_idx(), pl.FP32)
                who = pl.store(pl.add(pl.mul(t, 0.0), lane), [blk * 8, 0], who)
        return out, who


@pytest.mark.parametrize("platform", PLATFORMS)
def test_task_parallel_lanes_split_the_work_by_lane_index(platform):
    x = np.arange(32 * S, dtype=np.float32).reshape(32, S)
    out = np.zeros_like(x)
    who = np.full_like(x, -1.0)
    _run(TaskParallel, platform, x, out, who)
    np.testing.assert_array_equal(out, x + np.float32(10))
    lanes = np.repeat(np.array([0, 1, 0, 1], np.float32), 8)[:, None] * np.ones((1, S), np.float32)
    np.testing.assert_array_equal(who, lanes)
    assert "main_incore_0" in TaskParallel.functions  # the region became a kernel of its own


def _gather_program(lane_dependent: bool):
    @pl.program
    class Gather:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[S, S], pl.FP32], b: pl.Tensor[[S, S], pl.FP32],
                 out: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                right = pl.move(pl.load(b, [0, 0], [S, S], target_memory=pl.MemorySpace.Mat),
                                target_memory=pl.MemorySpace.Right)
                for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):
                    v = pl.load(a, [0, 0], [S, S])
                    if lane_dependent:
                        v2 = pl.add(v, pl.cast(aiv_id, pl.FP32))
                    else:
                        v2 = pl.exp(v)
                    g = pl.aic_gather(v2)
                mm = pl.matmul(pl.move(g, target_memory=pl.MemorySpace.Left), right)
                out = pl.store(mm, [0, 0], out)
            return out

    return Gather


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_lane_uniform_value_gathers_out_of_a_none_region(platform, ab):
    a, b = ab
    out = np.zeros((S, S), np.float32)
    _run(_gather_program(False), platform, a, b, out)
    np.testing.assert_allclose(out, np.exp(a) @ b, rtol=1e-4, atol=1e-3)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_lanes_gathering_different_values_out_of_a_none_region_fail(platform, ab):
    a, b = ab
    with pytest.raises(SimulationError, match="the two AIV lanes hold different values"):
        _run(_gather_program(True), platform, a, b, np.zeros((S, S), np.float32))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_get_subblock_idx_outside_a_region_is_lane_0(platform):
    @pl.program
    class Plain:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[8, S], pl.FP32], o: pl.Out[pl.Tensor[[8, S], pl.FP32]]
              ) -> pl.Tensor[[8, S], pl.FP32]:
            lane = pl.cast(pl.get_subblock_idx(), pl.FP32)
            return pl.store(pl.add(pl.load(x, [0, 0], [8, S]), lane), [0, 0], o)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[8, S], pl.FP32], o: pl.Out[pl.Tensor[[8, S], pl.FP32]]
                 ) -> pl.Tensor[[8, S], pl.FP32]:
            return self.k(x, o)

    x = np.ones((8, S), np.float32)
    o = np.zeros_like(x)
    _run(Plain, platform, x, o)
    np.testing.assert_array_equal(o, x)


# ------------------------------------------------------------- parse rules


_TEMPLATE = '''import pytest_pypto.language as pl
S = {S}
def build():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[S, S], pl.FP32], o: pl.Out[pl.Tensor[[S, S], pl.FP32]]
              ) -> pl.Tensor[[S, S], pl.FP32]:
            {kernel}
            return pl.store(pl.load(x, [0, 0], [S, S]), [0, 0], o)
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[S, S], pl.FP32], o: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
            with pl.at(level=pl.Level.CORE_GROUP):
                m = pl.load(a, [0, 0], [S, S], target_memory=pl.MemorySpace.Mat)
                mm = pl.matmul(pl.move(m, target_memory=pl.MemorySpace.Left),
                               pl.move(m, target_memory=pl.MemorySpace.Right))
{body}
            return o
    return P
'''


def _parse(tmp_path, body: str, kernel: str = "pass"):
    """The region body ``body`` sits in main's pl.at region: its first line is line 17."""
    path = tmp_path / "split_mod.py"
    path.write_text(_TEMPLATE.format(S=S, kernel=kernel, body=textwrap.indent(body, " " * 16)))
    name = f"_split_mod_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds a class's source through its module
    try:
        spec.loader.exec_module(module)
        return module.build()
    finally:
        del sys.modules[name]


REGION = "for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.UP_DOWN):\n"


@pytest.mark.parametrize(("body", "error", "message", "line"), [
    ("for aiv_id in pl.split_aiv(4, mode=pl.SplitMode.NONE):\n    pass",
     ParserSyntaxError, "pl.split_aiv(n) requires n == 2", 17),
    ("for aiv_id in pl.split_aiv(2):\n    pass",
     ParserSyntaxError, "pl.split_aiv() requires mode=", 17),
    ("for aiv_id in pl.split_aiv(2, mode=1):\n    pass",
     ParserSyntaxError, "pl.split_aiv() mode= must be a pl.SplitMode member", 17),
    ("for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE, step=2):\n    pass",
     ParserSyntaxError, "pl.split_aiv() loop form does not accept 'step='", 17),
    ("for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE, lanes=2):\n    pass",
     ParserSyntaxError, "pl.split_aiv() got unexpected keyword argument 'lanes'", 17),
    ("for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE,\n"
     "                          optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):\n    pass",
     ParserSyntaxError, "pl.split_aiv() does not accept 'optimizations='", 18),
    ("for a_id, b_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n    pass",
     ParserSyntaxError, "must use a single loop variable", 17),
    (REGION + "    for b in pl.split_aiv(2, mode=pl.SplitMode.NONE):\n        pass",
     ParserSyntaxError, "nested 'for ... in pl.split_aiv(...)' is not allowed", 18),
    ("for i in pl.range(2):\n    " + REGION + "        break",
     ParserSyntaxError, "'break' inside a pl.split_aiv region has no loop to leave", 19),
    ("t = pl.aiv_shard(mm)",
     InvalidOperationError, "pl.aiv_shard must be used inside a 'for aiv_id in pl.split_aiv", 17),
    (REGION + "    t = pl.aiv_shard(mm, mode=pl.SplitMode.NONE)",
     ParserSyntaxError, "pl.aiv_shard takes one tile; the split mode comes from the enclosing",
     18),
    (REGION + "    for i in pl.range(2):\n        g = pl.aic_gather(pl.load(a, [0, 0], [S, S]))",
     InvalidOperationError, "write it directly in the pl.split_aiv region's body", 19),
    (REGION + "    t = pl.aiv_shard(pl.load(a, [0, 0], [S, S], target_memory=pl.MemorySpace.Vec))",
     PyptoError, "brings a cube-produced tile (Acc) onto the vector lane, but its operand is in "
     "Vec", 18),
    (REGION + "    t = pl.mul(mm, 2.0)",
     PlacementError, "'mm' is produced on the CUBE lane outside every pl.split_aiv region", 18),
    ("lm = pl.move(m, target_memory=pl.MemorySpace.Left)\n"
     "rm = pl.move(m, target_memory=pl.MemorySpace.Right)\n" + REGION
     + "    mm2 = pl.matmul(lm, rm)",
     PlacementError, "cube op 'tile.matmul' inside a pl.split_aiv region", 20),
    (REGION + "    h = pl.aiv_shard(mm)\n    c = pl.col_sum(h)",
     PlacementError, "'tile.col_sum' reduces over the split axis of a "
     "pl.split_aiv(mode=pl.SplitMode.UP_DOWN) region", 19),
    ("v = pl.exp(pl.load(a, [0, 0], [S, S], target_memory=pl.MemorySpace.Vec))\n" + REGION
     + "    h = pl.aiv_shard(mm)",
     PlacementError, "vector op 'tile.exp' sits outside every pl.split_aiv region of a kernel "
     "that has one", 17),
    (REGION + "    v = pl.exp(pl.aiv_shard(mm))\n"
     "lv = pl.move(v, target_memory=pl.MemorySpace.Left)",
     PlacementError, "is defined inside a pl.split_aiv region, but 'tile.move' reads it on the "
     "CUBE lane outside it", 19),
])
def test_split_aiv_mistakes_are_reported_at_their_line(tmp_path, body, error, message, line):
    with pytest.raises(error) as ei:
        _parse(tmp_path, body)
    assert message in ei.value.message
    assert ei.value.line == line


def test_an_odd_split_axis_cannot_be_halved(tmp_path):
    odd = ("odd = pl.matmul(pl.move(pl.load(a, [0, 0], [S - 1, S], target_memory=pl.MemorySpace"
           ".Mat), target_memory=pl.MemorySpace.Left), pl.move(m, target_memory=pl.MemorySpace"
           ".Right))\n")
    with pytest.raises(PyptoError) as ei:
        _parse(tmp_path, odd + REGION + "    t = pl.aiv_shard(odd)")
    assert "halves axis 0 of the tile between the two AIV lanes (UP_DOWN), but it has 31 " \
           "elements (odd)" in ei.value.message
    assert ei.value.line == 19


def test_a_region_in_a_pl_at_with_a_split_optimization_is_refused():
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class Both:
            @pl.function
            def main(self, a: pl.Tensor[[S, S], pl.FP32], o: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
                with pl.at(level=pl.Level.CORE_GROUP,
                           optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
                    for lane in pl.split_aiv(2, mode=pl.SplitMode.NONE):  # split-and-region
                        o = pl.store(pl.load(a, [0, 0], [S, S]), [0, 0], o)
                return o
    assert "combines optimizations=[pl.split(pl.SplitMode.UP_DOWN)] with a pl.split_aiv " \
           "region" in ei.value.message
    assert ei.value.line == line_of(Path(__file__), "split-and-region")


def test_a_region_in_a_declared_incore_function_is_refused(tmp_path):
    with pytest.raises(PlacementError) as ei:
        _parse(tmp_path, "pass", kernel="for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE):"
                                        "\n                pass")
    assert "pl.split_aiv opens a CORE_GROUP-level region, so it cannot be written in InCore " \
           "function 'k'" in ei.value.message
    assert ei.value.line == 9
