# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Declared allocations against the memory planners' rules (compiler/memref_slots.py):
what every planner refuses, what only ``memory_planner=PTOAS`` refuses, each with its
message and the binding's line, and the shapes every planner accepts."""

from __future__ import annotations

import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.compat.pypto.backend.pto_backend import PartialCodegenError
from pytest_pypto.compat.pypto.pypto_core.passes import MemoryPlanner
from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.selections import ir_compile
from pytest_pypto.ir.errors import CompileError
from ut.helpers import line_finder

R, C, STEPS = 16, 64, 4
PING = pl.MemRef(slots=2)
SCRATCH = pl.MemRef()
ALL_PLANNERS = [None, MemoryPlanner.PYPTO, MemoryPlanner.DSA_RP, MemoryPlanner.PTOAS]


line_of = line_finder(__file__)


def compile_with(program, planner, platform="a2a3sim"):
    return pytest_pypto.compile(program, RunConfig(platform=platform, memory_planner=planner))


def refused(program, planner, match, marker):
    with pytest.raises(CompileError) as ei:
        compile_with(program, planner)
    assert match in ei.value.message, ei.value.message
    assert ei.value.line == line_of(marker)
    assert ei.value.file == __file__
    return ei.value


@pl.program
class CoLive:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[STEPS * R, C], pl.FP32], b: pl.Tensor[[STEPS * R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[STEPS * R, C], pl.FP32]]) -> pl.Tensor[[STEPS * R, C], pl.FP32]:
        for i in pl.range(STEPS):
            lo: pl.Tile[[R, C], pl.FP32, PING[i % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])  # colive
            hi: pl.Tile[[R, C], pl.FP32, PING[(i + 1) % 2], pl.Mem.Vec] = pl.load(b, [i * R, 0], [R, C])
            out = pl.store(pl.add(lo, hi), [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[STEPS * R, C], pl.FP32], b: pl.Tensor[[STEPS * R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[STEPS * R, C], pl.FP32]]) -> pl.Tensor[[STEPS * R, C], pl.FP32]:
        out = self.k(a, b, out)
        return out


@pl.program
class OnePerIteration:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[STEPS * R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[STEPS * R, C], pl.FP32]]) -> pl.Tensor[[STEPS * R, C], pl.FP32]:
        for i in pl.range(STEPS):
            t: pl.Tile[[R, C], pl.FP32, PING[i % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
            for j in pl.range(1):  # a nested loop's body counts on its own
                u: pl.Tile[[R, C], pl.FP32, PING[(i + 1) % 2], pl.Mem.Vec] = pl.load(a, [i * R, 0], [R, C])
                out = pl.store(pl.add(t, u), [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[STEPS * R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[STEPS * R, C], pl.FP32]]) -> pl.Tensor[[STEPS * R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class ConstSlots:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        lo: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        hi: pl.Tile[[R, C], pl.FP32, PING[1], pl.Mem.Vec] = pl.load(b, [0, 0], [R, C])
        out = pl.store(pl.sub(lo, hi), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, b, out)
        return out


@pl.program
class SingleSlot:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t: pl.Tile[[R, C], pl.FP32, SCRATCH, pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # single
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class Unselected:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # unselected
        out = pl.store(t, [0, 0], out)
        u: pl.Tile[[R, C], pl.FP32, PING, pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        out = pl.store(u, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class Ragged:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # shapes
        out = pl.store(t, [0, 0], out)
        u: pl.Tile[[R, 32], pl.FP32, PING[1], pl.Mem.Vec] = pl.load(a, [0, 0], [R, 32])
        out = pl.store(u, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class TooManySlots:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t: pl.Tile[[R, C], pl.FP32, pl.MemRef("big", slots=17)[3], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # many
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class Phi:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32], flag: pl.Scalar[pl.INT32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        if flag == 0:
            t: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # phi
        else:
            t: pl.Tile[[R, C], pl.FP32, PING[1], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32], flag: pl.Scalar[pl.INT32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, flag, out)
        return out


@pl.program
class SameSlotOverlap:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        x: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        y: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # overlap
        out = pl.store(pl.add(x, y), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class SameSlotInTurn:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        x: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        out = pl.store(x, [0, 0], out)
        y: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        out = pl.store(pl.add(y, y), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class LoopInvariantSlot:
    """A slot tile read in a loop it is defined outside of stays live over the loop."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        x: pl.Tile[[R, C], pl.FP32, PING[1], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        for i in pl.range(2):
            y: pl.Tile[[R, C], pl.FP32, PING[1], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # invariant
            out = pl.store(pl.add(x, y), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class SlotCounts:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        x: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", slots=2)[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        y: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", slots=3)[1], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])  # counts
        out = pl.store(pl.add(x, y), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pl.program
class Spaces:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        x: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(a, [0, 0], [R, C])
        y: pl.Tile[[R, C], pl.FP32, PING[1], pl.Mem.Mat] = pl.load(a, [0, 0], [R, C], target_memory=pl.Mem.Mat)  # spaces
        out = pl.store(x, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(a, out)
        return out


@pytest.mark.parametrize("planner", [None, MemoryPlanner.PYPTO, MemoryPlanner.DSA_RP])
def test_colive_slots_compile_under_pypto_planners(planner):
    compiled = compile_with(CoLive, planner)
    assert compiled.manifest is not None


def test_colive_slots_refused_under_ptoas():
    e = refused(CoLive, MemoryPlanner.PTOAS, "two of its slots are live at once inside a loop",
                "colive")
    assert e.message.startswith(
        "The declared allocation 'pl.MemRef(\"PING\", slots=2)' cannot be lowered to a ptoas "
        "multi-buffer region because")
    assert "compile with the default PyPTO memory planner" in e.hint


def test_refusal_reaches_ir_compile_as_partial_codegen_error():
    with pytest.raises(PartialCodegenError, match="live at once inside a loop"):
        ir_compile(CoLive, memory_planner=MemoryPlanner.PTOAS)
    assert ir_compile(CoLive, memory_planner=MemoryPlanner.PYPTO) is not None


@pytest.mark.parametrize("program", [OnePerIteration, ConstSlots], ids=lambda p: p.name)
@pytest.mark.parametrize("planner", ALL_PLANNERS)
def test_one_slot_per_iteration_and_straight_line_slots_compile_everywhere(program, planner):
    assert compile_with(program, planner).manifest is not None


def test_single_slot_declaration_refused_under_ptoas_only():
    refused(SingleSlot, MemoryPlanner.PTOAS,
            'A single-slot declared allocation (pl.MemRef("SCRATCH")) is not supported under '
            "memory_planner=PTOAS", "single")
    assert compile_with(SingleSlot, MemoryPlanner.PYPTO).manifest is not None


@pytest.mark.parametrize(("program", "reason", "marker"), [
    (Unselected, "tile 'u' binds it without selecting a slot", "unselected"),
    (Ragged, "its slots hold differently shaped tiles, and ptoas slots are uniform", "shapes"),
    (TooManySlots, "ptoas supports 2 to 16 slots, and it declares 17", "many"),
    (Phi, "one of its slots is carried out of an if or a loop as a phi", "phi"),
], ids=["unselected", "shapes", "slots", "phi"])
def test_ptoas_region_blockers(program, reason, marker):
    refused(program, MemoryPlanner.PTOAS, reason, marker)
    assert compile_with(program, MemoryPlanner.PYPTO).manifest is not None


@pytest.mark.parametrize("planner", ALL_PLANNERS)
def test_two_live_tiles_on_one_constant_slot_are_refused(planner):
    e = refused(SameSlotOverlap, planner,
                "Tiles 'x' and 'y' are both bound to the same slot of the declared allocation "
                "'PING' but are live at the same time", "overlap")
    assert "different slots" in e.hint


def test_a_slot_reused_in_turn_is_accepted():
    assert compile_with(SameSlotInTurn, None).manifest is not None


def test_a_use_inside_a_loop_keeps_the_outer_tile_live_over_the_loop():
    refused(LoopInvariantSlot, None, "Tiles 'x' and 'y' are both bound to the same slot",
            "invariant")


def test_references_disagreeing_on_slot_count():
    refused(SlotCounts, None,
            "References to the declared allocation 'ub' disagree on how many slots it has "
            "(2 vs 3)", "counts")


def test_tiles_of_one_allocation_share_a_memory_space():
    refused(Spaces, None,
            "Tiles bound to the declared allocation 'PING' must all live in the same memory "
            "space, but 'y' is Mat while the allocation is already Vec", "spaces")


def test_the_compile_cache_keys_on_the_planner():
    from pytest_pypto.harness.cache import cache_key

    default = cache_key(CoLive, RunConfig(platform="a2a3sim"))
    ptoas = cache_key(CoLive, RunConfig(platform="a2a3sim", memory_planner=MemoryPlanner.PTOAS))
    pypto = cache_key(CoLive, RunConfig(platform="a2a3sim", memory_planner=MemoryPlanner.PYPTO))
    assert len({default, ptoas, pypto}) == 3  # a PYPTO artifact never answers a PTOAS compile
