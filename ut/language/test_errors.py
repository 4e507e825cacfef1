# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Parser errors: class, message content and the exact line of the user's kernel."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir.errors import (
    InvalidOperationError,
    ParserError,
    ParserSyntaxError,
    ParserTypeError,
)

T = 64


def test_annotation_kind_mismatch(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32]):
                r: pl.Tile[[64, 64], pl.FP32] = x  # kind
    e = ei.value
    assert "Type annotation for 'r' says Tile, but the value is a Tensor" in e.message
    assert e.line == line_of("kind")
    assert e.file == __file__
    assert e.hint == "annotate it as pl.Tensor[[64, 64], pl.FP32]"
    assert "--> " + __file__ + f":{line_of('kind')}:" in str(e)


def test_annotation_dtype_mismatch(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32]):
                y: pl.Tile[[64, 64], pl.FP16] = pl.load(x, [0, 0], [64, 64])  # dtype
    assert "Type annotation for 'y' says dtype FP16, but the value has dtype FP32" in ei.value.message
    assert ei.value.line == line_of("dtype")
    assert ei.value.column == 17  # the target's column in this file


def test_annotation_rank_and_dim_mismatch(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 128], pl.FP32]):
                m: pl.Tile[[64], pl.FP32] = pl.load(x, [0, 0], [64, 128])  # rank
    assert "Type annotation for 'm' is rank 1, but the value is rank 2" in ei.value.message
    assert ei.value.line == line_of("rank")

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 128], pl.FP32]):
                t = pl.load(x, [0, 0], [64, 128])
                tmp = pl.load(x, [0, 0], [64, 128])
                m: pl.Tile[[64, 128], pl.FP32] = pl.row_max(t, tmp)  # dim
    e = ei.value
    assert "Type annotation for 'm' disagrees with its value in dimension 1: annotated 128, inferred 1" in e.message
    assert e.hint == "annotate it as pl.Tile[[64, 1], pl.FP32]"
    assert e.line == line_of("dim")


def test_op_type_rule_becomes_parser_type_error_at_the_call(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP16], b: pl.Tensor[[64, 64], pl.FP32]):
                x = pl.load(a, [0, 0], [64, 64])
                y = pl.load(b, [0, 0], [64, 64])
                z = pl.add(x, y)  # add
    assert "tile.add" in ei.value.message and "FP16" in ei.value.message
    assert ei.value.line == line_of("add")
    assert ei.value.column == 21  # the call, not the statement


def test_operator_on_tiles_hints_the_op(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                x = pl.load(a, [0, 0], [64, 64])
                y = x + x  # plus
    assert ei.value.hint == "pl.add(x, x)"
    assert ei.value.line == line_of("plus")


def test_bare_range_and_while_ask_for_pl_iterators(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                for i in range(4):  # bare
                    pass
    assert "pl.range" in ei.value.message and "range(...)" in ei.value.message
    assert ei.value.line == line_of("bare")

    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, n: pl.Scalar[pl.INDEX]):
                while n > 0:  # while
                    n = n - 1
                else:
                    pass
    assert "while ... else" in ei.value.message
    assert ei.value.line == line_of("while")


def test_scalar_category_mixing_and_bool_arithmetic(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, s: pl.Scalar[pl.FP32], i: pl.Scalar[pl.INT32]):
                z = s * i  # mix
    assert "FP32" in ei.value.message and "INT32" in ei.value.message
    assert ei.value.line == line_of("mix")

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, i: pl.Scalar[pl.INT32]):
                b = i > 0
                c = b + 1  # boolarith
    assert "BOOL" in ei.value.message
    assert ei.value.line == line_of("boolarith")


def test_captured_value_that_cannot_fold(line_of):
    table = {"a": 1}
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                x = pl.load(a, [table, 0], [64, 64])  # capture
    assert "captured value 'table'" in ei.value.message
    assert "cannot be folded; pass it as a parameter" in ei.value.message
    assert ei.value.line == line_of("capture")


def test_strict_ssa_rejects_rebinding(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore, strict_ssa=True)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                x = pl.load(a, [0, 0], [64, 64])
                x = pl.add(x, x)  # rebind
    assert "'x'" in ei.value.message and "strict_ssa" in ei.value.message
    assert ei.value.line == line_of("rebind")


def test_loop_carried_type_change_names_the_variable(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32], b: pl.Tensor[[64, 64], pl.FP16]):
                acc = pl.load(a, [0, 0], [64, 64])
                for i in pl.range(4):
                    acc = pl.load(b, [0, 0], [64, 64])  # carried
    assert "'acc'" in ei.value.message and "FP32 vs FP16" in ei.value.message
    assert ei.value.line == line_of("carried")


def test_tensor_level_and_mixed_operands(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                y = pl.tensor.load(a, [0, 0], [64, 64])  # tensorlevel
    assert "pl.load has no tensor-level form in the bundled toolchain (pl.tensor.load)" \
        in ei.value.message
    assert ei.value.line == line_of("tensorlevel")

    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                t = pl.load(a, [0, 0], [64, 64])
                y = pl.add(t, a)  # mixed
    assert "pl.add: Tensor and Tile operands cannot be mixed" in ei.value.message
    assert ei.value.line == line_of("mixed")


def test_bad_keyword_and_missing_argument(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                t = pl.load(a, [0, 0], [64, 64], colour=1)  # kw
    assert "'colour'" in ei.value.message
    assert ei.value.line == line_of("kw")

    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, a: pl.Tensor[[64, 64], pl.FP32]):
                t = pl.load(a, [0, 0])  # missing
    assert "'shapes'" in ei.value.message
    assert ei.value.line == line_of("missing")


def test_self_call_checks(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32],
                  out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                t = pl.load(x, [0, 0], [64, 64])
                out = pl.store(t, [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[64, 32], pl.FP32],
                     out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
                out = self.k(x, out)  # dims
                return out
    assert "argument 'x'" in ei.value.message and "dimension 1" in ei.value.message
    assert ei.value.line == line_of("dims")

    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[64, 32], pl.FP32]):
                self.nothing(x)  # nofunc
    assert "'nothing'" in ei.value.message
    assert ei.value.line == line_of("nofunc")


def test_return_annotation_is_checked(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32],
                  out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP16]:
                t = pl.load(x, [0, 0], [64, 64])
                out = pl.store(t, [0, 0], out)
                return out  # ret
    assert "says dtype FP16, but the value has dtype FP32" in ei.value.message
    assert ei.value.line == line_of("ret")


def test_unsupported_statements_and_not_yet_constructs(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32]):
                try:  # try
                    pass
                finally:
                    pass
    assert "'try'" in ei.value.message
    assert ei.value.line == line_of("try")

    with pytest.raises(ParserError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def main(self, x: pl.Tensor[[64, 64], pl.FP32]):
                with pl.at(level=pl.Level.CORE_GROUP):  # at
                    pass
    assert "pl.at is not supported inside InCore function 'main'" in ei.value.message
    assert ei.value.line == line_of("at")


def test_tile_parameter_and_pl_dn_rejected(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, t: pl.Tile[[64, 64], pl.FP32]):  # tileparam
                pass
    assert "'t' is a Tile" in ei.value.message
    assert ei.value.line == line_of("tileparam")

    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K2:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, t: pl.Tensor[[64, 64], pl.FP32, pl.DN]):  # dn
                pass
    assert "pl.DN" in ei.value.message
    assert ei.value.line == line_of("dn")


def test_name_defined_inside_loop_is_not_visible_after(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32]):
                for i, (n,) in pl.range(2, init_values=(0,)):  # init_values loops leak nothing
                    t = pl.load(x, [0, 0], [64, 64])
                    n2 = pl.yield_(n + 1)
                u = pl.add(t, t)  # after
    assert "'t' is defined inside the loop" in ei.value.message
    assert ei.value.line == line_of("after")


def test_memory_space_annotation_disagrees_with_fixed_producer(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[64, 64], pl.FP32]):
                t = pl.load(x, [0, 0], [64, 64])
                u: pl.Tile[[64, 64], pl.FP32, pl.Mem.Mat] = pl.exp(t)  # space
    assert "memory space Mat" in ei.value.message and "Vec" in ei.value.message
    assert ei.value.line == line_of("space")


def test_loop_variable_is_not_visible_after_the_loop(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.Orchestration)
            def k(self, n: pl.Scalar[pl.INDEX]):
                for i in pl.range(n):
                    pass
                m = i + 1  # loopvar
    assert "loop variable 'i'" in ei.value.message
    assert ei.value.line == line_of("loopvar")
