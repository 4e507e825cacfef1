# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""`with pl.at(...)` and `pl.spmd(n)`: outlined functions, inferred parameters, names, errors.

The expected parameters, directions and names follow PyPTO's OutlineIncoreScopes
rules (live-in values in order of first use; a tensor written only as a store /
assemble destination is Out, also read is InOut; `name_hint` or
`<enclosing>_incore_<n>`); each rule that rejects a program has a test asserting
its message and the user's line.
"""

from __future__ import annotations

import sys

import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import (
    CapacityError,
    InvalidOperationError,
    ParserSyntaxError,
    ParserTypeError,
    PlacementError,
    UnsupportedFeatureError,
)
from pytest_pypto.ir.nodes import Assign, ExprStmt, FuncCall
from pytest_pypto.ir.types import Direction

A2 = RunConfig(platform="a2a3sim")
IN, OUT, INOUT, SCALAR = Direction.IN, Direction.OUT, Direction.INOUT, Direction.SCALAR


def sig(fn):
    return [(p.name, p.direction) for p in fn.params]


def calls(fn):
    return [s.value if isinstance(s, Assign) else s.expr for s in fn.body
            if isinstance(getattr(s, "value", getattr(s, "expr", None)), FuncCall)]


# ------------------------------------------------------------------ parameters


def test_region_becomes_an_incore_function_called_once():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[16, 32], pl.FP32], y: pl.Tensor[[16, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                b = pl.load(y, [0, 0], [16, 32])
                a = pl.load(x, [0, 0], [16, 32])
                out = pl.store(pl.add(a, b), [0, 0], out)
            return out

    assert list(P.functions) == ["main", "main_incore_0"]
    main, k = P.functions["main"], P.functions["main_incore_0"]
    assert main.kind == "Orchestration"  # an Opaque parent that outlines is promoted
    assert k.kind == "InCore"
    assert sig(k) == [("y", IN), ("x", IN), ("out", OUT)]  # order of first use
    (call,) = calls(main)
    assert call.callee == "main_incore_0" and [a.name for a in call.args] == ["y", "x", "out"]
    assert call.blocks is None
    # after the region, `out` is the call's result, which the function returns
    assert main.body[0].targets[0] is main.body[-1].values[0]


def test_directions_follow_what_the_region_does_to_each_tensor():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 32], pl.FP32], acc: pl.InOut[pl.Tensor[[16, 32], pl.FP32]],
                 out: pl.Out[pl.Tensor[[16, 32], pl.FP32]], alpha: pl.Scalar[pl.FP32]):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="k"):
                t = pl.mul(pl.load(x, [0, 0], [16, 32]), alpha)
                old = pl.load(acc, [0, 0], [16, 32])
                acc = pl.store(pl.add(old, t), [0, 0], acc)  # read and written: InOut
                out = pl.store(t, [0, 0], out)  # only written: Out
            return acc, out

    assert sig(P.functions["k"]) == [("x", IN), ("alpha", SCALAR), ("acc", INOUT), ("out", OUT)]
    assert [str(t) for t in P.functions["k"].returns] == [str(t) for t in
                                                          P.functions["main"].returns]


def test_a_store_without_rebinding_still_makes_the_parameter_written():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [16, 16])
                pl.store(t, [0, 0], out, atomic=pl.AtomicType.Add)
            return out

    k = P.functions["main_incore_0"]
    assert sig(k) == [("x", IN), ("out", OUT)] and k.returns == ()
    assert isinstance(P.functions["main"].body[0], ExprStmt)


def test_one_value_under_two_names_is_one_parameter_and_constants_are_not_parameters():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            alias = x
            rows = 16
            with pl.at(level=pl.Level.CORE_GROUP):
                a = pl.load(x, [0, 0], [rows, 16])
                b = pl.load(alias, [0, 0], [rows, 16])
                out = pl.store(pl.add(a, b), [0, 0], out)
            return out

    assert sig(P.functions["main_incore_0"]) == [("x", IN), ("out", OUT)]


def test_loop_variables_of_the_orchestration_become_scalar_parameters():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            for r in pl.range(0, 64, 16):
                with pl.at(level=pl.Level.CORE_GROUP):
                    row = r + 0
                    t = pl.load(x, [row, 0], [16, 16])
                    out = pl.store(t, [row, 0], out)
            return out

    assert sig(P.functions["main_incore_0"]) == [("r", SCALAR), ("x", IN), ("out", OUT)]


def test_a_name_defined_before_its_use_in_the_region_is_not_a_parameter():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32], y: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            t = x
            with pl.at(level=pl.Level.CORE_GROUP):
                t = y  # rebinds before any read: the outer t (x) is not passed
                out = pl.store(pl.load(t, [0, 0], [16, 16]), [0, 0], out)
            return out

    assert sig(P.functions["main_incore_0"]) == [("y", IN), ("out", OUT)]


# ----------------------------------------------------------------------- names


def test_names_from_hints_counters_and_clashes():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
                out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
                out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Opaque)
        def other(self, x: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="copy"):
                out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)
            return out

    assert [c.callee for c in calls(P.functions["main"])] == [
        "main_incore_0", "copy", "copy_0", "main_incore_1"]
    assert [c.callee for c in calls(P.functions["other"])] == ["other_copy"]


@pytest.mark.parametrize(("hint", "message"), [
    ('name_hint=f"k"', "'name_hint' argument must be a string literal"),
    ('name_hint="2k"', "'name_hint' must be a valid non-keyword identifier, got '2k'"),
    ('name_hint="for"', "'name_hint' must be a valid non-keyword identifier, got 'for'"),
])
def test_name_hint_must_be_an_identifier_literal(hint, message, tmp_path):
    with pytest.raises(ParserSyntaxError, match=message) as ei:
        _program_with(tmp_path, f"with pl.at(level=pl.Level.CORE_GROUP, {hint}):")
    assert ei.value.line == WITH_LINE


# -------------------------------------------------------------- visibility


def test_a_tile_defined_in_the_region_is_not_visible_after_it(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 16], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):  # region
                    t = pl.load(x, [0, 0], [16, 16])
                    out = pl.store(t, [0, 0], out)
                out = self.k(t, out)  # escaped
                return out

            @pl.function(type=pl.FunctionType.InCore)
            def k(self, t: pl.Tensor[[16, 16], pl.FP32],
                  out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                return out
    assert ei.value.line == line_of("escaped")
    assert (f"'t' is a Tile defined inside the pl.at region at line {line_of('region')}"
            in ei.value.message)


def test_parse_time_constants_assigned_in_the_region_stay_visible():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                rows = 8
                out = pl.store(pl.load(x, [0, 0], [rows, 16]), [0, 0], out)
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.store(pl.load(x, [rows, 0], [rows, 16]), [rows, 0], out)
            return out

    second = P.functions["main_incore_1"].body
    assert second[0].value.arg("offsets") == (8, 0)


# ------------------------------------------------------------------ checks


def test_errors_inside_the_region_point_at_the_users_line(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[16, 32], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
                with pl.at(level=pl.Level.CORE_GROUP):
                    a = pl.load(x, [0, 0], [16, 32])
                    b = pl.load(x, [0, 0], [16, 16])
                    c = pl.add(a, b)  # mismatch
                    out = pl.store(c, [0, 0], out)
                return out
    assert ei.value.line == line_of("mismatch")


def test_compile_checks_run_on_the_outlined_kernel(line_of):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[512, 512], pl.FP32],
                 out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="big"):
                t = pl.load(x, [0, 0], [512, 512])  # too-big
                out = pl.store(t, [0, 0], out)
            return out

    with pytest.raises(CapacityError) as ei:
        pytest_pypto.compile(P, A2)
    assert ei.value.line == line_of("too-big")
    assert "big" in ei.value.message


# ----------------------------------------------------------- pl.at keywords


WITH_LINE = 8  # the line of the `with` in _program_with's module


def _program_with(tmp_path, with_line: str, body: str = "out = pl.store(pl.load(x, [0, 0], "
                  "[16, 16]), [0, 0], out)", kind: str = "Orchestration"):
    """A one-region program in its own module; the `with` is on line WITH_LINE."""
    import importlib.util

    path = tmp_path / "region_mod.py"
    path.write_text(
        "import pytest_pypto.language as pl\n"
        "def build():\n"
        "    @pl.program\n"
        "    class P:\n"
        f"        @pl.function(type=pl.FunctionType.{kind})\n"
        "        def main(self, x: pl.Tensor[[16, 16], pl.FP32],\n"
        "                 out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):\n"
        f"            {with_line}\n"
        f"                {body}\n"
        "            return out\n"
        "    return P\n"
    )
    name = f"_region_mod_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds a class's source through its module
    try:
        spec.loader.exec_module(module)
        return module.build()
    finally:
        del sys.modules[name]


@pytest.mark.parametrize(("with_line", "error", "message"), [
    ("with pl.at(name_hint='k'):", ParserSyntaxError, "pl.at() requires a level argument"),
    ("with pl.at(level=3):", ParserTypeError, "pl.at() level must be a pl.Level member, got 3"),
    ("with pl.at(level=pl.Level.CORE_GROUP, bogus=1):", ParserSyntaxError,
     "Unknown keyword argument 'bogus' in pl.at()"),
    ("with pl.at(pl.Level.CORE_GROUP, level=pl.Level.CORE_GROUP):", ParserSyntaxError,
     "pl.at() got multiple values for argument 'level'"),
    ("with pl.at(level=pl.Level.CORE_GROUP, role=None):", ParserSyntaxError,
     "role= is not supported with level=pl.Level.CORE_GROUP"),
    ("with pl.at(level=pl.Level.CORE_GROUP, windowize=1):", ParserSyntaxError,
     "pl.at() windowize must be a boolean literal"),
    ("with pl.at(level=pl.Level.CORE_GROUP, optimizations=(pl.split(pl.SplitMode.NONE),)):",
     ParserSyntaxError, "pl.at(optimizations=...) must be a list literal"),
    ("with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.SplitMode.NONE]):",
     ParserSyntaxError, "Unsupported entry in pl.at(optimizations=[...])"),
    ("with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.NONE), "
     "pl.split(pl.SplitMode.UP_DOWN)]):", ParserSyntaxError,
     "Duplicate 'pl.split(...)' in optimizations=[...]"),
    ("with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.Level.HOST)]):",
     ParserTypeError, "pl.split() takes a pl.SplitMode member, got pl.Level.HOST"),
    ("with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot(slot_num=0)]):",
     ParserSyntaxError, "pl.cross_core_slot(slot_num=...) must be positive, got 0"),
    ("with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.cross_core_slot()]):",
     ParserSyntaxError, "pl.cross_core_slot() requires the slot_num= keyword argument"),
    ("with pl.at(level=pl.Level.CORE_GROUP), pl.at(level=pl.Level.CORE_GROUP):",
     ParserSyntaxError, "must be the only context manager of its with statement"),
    ("with pl.at:", ParserSyntaxError, "pl.at must be called"),
])
def test_pl_at_keywords_are_validated(tmp_path, with_line, error, message):
    with pytest.raises(error) as ei:
        _program_with(tmp_path, with_line)
    assert message in ei.value.message
    assert ei.value.line == WITH_LINE


def test_accepted_keywords_and_optimizations_are_recorded_without_effect(tmp_path):
    P = _program_with(
        tmp_path, "with pl.at(pl.Level.CORE_GROUP, name_hint='k', allow_early_resolve=True, "
        "windowize=False, optimizations=[pl.split(pl.SplitMode.LEFT_RIGHT), "
        "pl.cross_core_slot(slot_num=4)]):")
    assert sig(P.functions["k"]) == [("x", IN), ("out", OUT)]


@pytest.mark.parametrize(("with_line", "construct"), [
    ("with pl.at(level=pl.Level.HOST):", "pl.at(level=pl.Level.HOST)"),
])
def test_tier3_forms_are_recorded_and_raise_at_compile(tmp_path, with_line, construct):
    P = _program_with(tmp_path, with_line)
    with pytest.raises(UnsupportedFeatureError) as ei:
        pytest_pypto.compile(P, A2)
    assert f"{construct} is not supported by the bundled toolchain (tier 3" in ei.value.message
    assert ei.value.line == WITH_LINE


@pytest.mark.parametrize(("body", "message"), [
    ("return out", "return is not allowed inside a pl.at region"),
    ("with pl.at(level=pl.Level.CORE_GROUP): pass",
     "pl.at is not supported inside InCore function 'main_incore_0'"),
])
def test_region_bodies_reject_return_and_nesting(tmp_path, body, message):
    with pytest.raises((ParserSyntaxError, InvalidOperationError)) as ei:
        _program_with(tmp_path, "with pl.at(level=pl.Level.CORE_GROUP):", body)
    assert message in ei.value.message
    assert ei.value.line == WITH_LINE + 1


def test_pl_at_inside_an_incore_function_is_rejected(tmp_path):
    with pytest.raises(InvalidOperationError) as ei:
        _program_with(tmp_path, "with pl.at(level=pl.Level.CORE_GROUP):", kind="InCore")
    assert "pl.at is not supported inside InCore function 'main'" in ei.value.message
    assert ei.value.line == WITH_LINE


# -------------------------------------------------------------------- pl.spmd


def test_spmd_dispatch_form_marks_the_one_kernel_call_as_a_launch():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            i = pl.tile.get_block_idx()
            out = pl.store(pl.load(x, [i * 16, 0], [16, 16]), [i * 16, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            with pl.spmd(4):
                out = self.k(x, out)
            return out

    (call,) = calls(P.functions["main"])
    assert call.callee == "k" and call.blocks.value == 4
    assert list(P.functions) == ["k", "main"]


def test_spmd_loop_form_outlines_with_the_index_bound_and_the_hint_named():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[64, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            for b in pl.spmd(4, name_hint="rows_spmd"):
                out = pl.store(pl.load(x, [b * 16, 0], [16, 16]), [b * 16, 0], out)
            return out

    k = P.functions["rows"]  # PyPTO's "_spmd" suffix names the launch, not the kernel
    assert sig(k) == [("x", IN), ("out", OUT)]
    assert k.body[0].value.op == "tile.get_block_idx" and k.body[0].targets[0].name == "b"
    (call,) = calls(P.functions["main"])
    assert call.callee == "rows" and call.blocks.value == 4


def test_spmd_with_form_outlines_a_body_that_reads_the_block_index():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 16], pl.FP32]]) -> pl.Tensor[[64, 16], pl.FP32]:
            with pl.spmd(core_num=2):
                i = pl.get_block_idx()
                out = pl.store(pl.load(x, [i * 32, 0], [32, 16]), [i * 32, 0], out)
            with pl.spmd(2):
                with pl.at(level=pl.Level.CORE_GROUP, name_hint="carried"):
                    j = pl.tensor.get_block_idx()
                    out = pl.store(pl.load(x, [j * 32, 0], [32, 16]), [j * 32, 0], out)
            return out

    assert [(c.callee, c.blocks.value) for c in calls(P.functions["main"])] == [
        ("main_incore_0", 2), ("carried", 2)]


@pytest.mark.parametrize(("with_line", "body", "message", "line"), [
    ("with pl.spmd(4):", "out = pl.store(pl.load(x, [0, 0], [16, 16]), [0, 0], out)",
     "body neither reads the block index via pl.get_block_idx() nor dispatches", WITH_LINE),
    ("with pl.spmd(0):", "pass", "core_num must be a positive integer, got 0", WITH_LINE),
    ("with pl.spmd(2.5):", "pass", "core_num must be an integer expression, got 2.5", WITH_LINE),
    ("with pl.spmd():", "pass", "pl.spmd() requires core_num", WITH_LINE),
    ("with pl.spmd(2, 3):", "pass", "pl.spmd() accepts at most one positional argument",
     WITH_LINE),
    ("with pl.spmd(2, sync_start=1):", "pass", "pl.spmd() sync_start must be a boolean literal",
     WITH_LINE),
    ("for i in pl.spmd(2, step=1):", "pass", "pl.spmd() loop form does not accept 'step='",
     WITH_LINE),
    ("with pl.spmd(2, optimizations=[pl.split(pl.SplitMode.NONE)]):",
     "with pl.at(level=pl.Level.CORE_GROUP): pass",
     "`optimizations=` belongs on the inner `pl.at(level=pl.Level.CORE_GROUP, ...)`", WITH_LINE),
])
def test_spmd_forms_are_validated(tmp_path, with_line, body, message, line):
    with pytest.raises(ParserSyntaxError) as ei:
        _program_with(tmp_path, with_line, body)
    assert message in ei.value.message
    assert ei.value.line == line


def test_spmd_dispatch_body_launches_one_kernel(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]):
                with pl.spmd(2):
                    out = self.k(out)
                    out = self.k(out)  # second
                return out
    assert "dispatch body launches 2 kernels" in ei.value.message
    assert ei.value.line == line_of("second")


def test_block_index_outside_a_kernel_is_misplaced(line_of):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32]):
            i = pl.get_block_num()  # orch
            return x

    with pytest.raises(PlacementError) as ei:
        pytest_pypto.compile(P, A2)
    assert "tile.get_block_num" in ei.value.message and ei.value.line == line_of("orch")
