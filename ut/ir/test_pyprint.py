"""ir/pyprint.py: a program written back in the DSL's Python syntax (docs/design/checks.md
§7a), the form PyPTO's ``ir.python_print`` gives and tests read."""

from __future__ import annotations

import pytest_pypto.language as pl
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.pyprint import python_print


@pl.program
class Small:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 64], pl.FP32],
          out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        for i in pl.pipeline(0, 64, 32, stage=2):
            t = pl.load(a, [0, i], [32, 32], target_memory=pl.Mem.Vec)
            out = pl.store(t, [0, i], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:
        out = self.k(a, out)
        return out


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines()]


def test_program_class_functions_and_annotated_params():
    text = python_print(Small)
    lines = _lines(text)
    assert lines[:2] == ["@pl.program", "class Small:"]
    assert "@pl.function(type=pl.FunctionType.InCore)" in lines
    assert "@pl.function(type=pl.FunctionType.Orchestration)" in lines
    assert ("def k(self, a: pl.Tensor[[32, 64], pl.FP32], "
            "out: pl.Out[pl.Tensor[[32, 64], pl.FP32]]) -> pl.Tensor[[32, 64], pl.FP32]:") in lines


def test_pipeline_loop_prints_stage_and_carried_values():
    text = python_print(Small)
    head = next(line for line in _lines(text) if line.startswith("for "))
    # start 0 and step 32: all three bounds; stage= as the DSL spells it; one carried value
    assert " in pl.pipeline(0, 64, 32, stage=2, init_values=(out,)):" in head
    assert head.startswith("for i") and ", (" in head


def test_body_is_indented_under_its_loop_and_ends_with_yield():
    lines = python_print(Small).splitlines()
    at = next(i for i, line in enumerate(lines) if line.lstrip().startswith("for "))
    indent = len(lines[at]) - len(lines[at].lstrip())
    body = lines[at + 1:at + 4]
    assert all(len(b) - len(b.lstrip()) == indent + 4 for b in body)
    assert "pl.tile.load(a, [0, i], [32, 32], target_memory=pl.Mem.Vec" in body[0]
    assert ": pl.Tile[[32, 32], pl.FP32, pl.Mem.Vec] = " in body[0]
    assert "= pl.yield_(" in body[2]


def test_range_from_zero_step_one_prints_only_the_stop_and_attrs_sorted():
    i = n.Var("i", type=None)
    loop = n.For(i, n.Const(0), n.Const(8), n.Const(1), [n.Yield(())],
                 kind="pipeline", attrs={"stage": 4, "zeta": False, "alpha": "x"})
    fn = n.Function("f", "InCore", [], (), [loop])
    text = python_print(fn)
    assert 'for i in pl.pipeline(8, stage=4, attrs={"alpha": "x", "zeta": False}):' in text
    plain = n.For(i, n.Const(2), n.Const(8), n.Const(1), [n.Yield(())])
    assert "for i in pl.range(2, 8):" in python_print(n.Function("g", "InCore", [], (), [plain]))
