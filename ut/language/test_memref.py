# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.MemRef` in Tile annotations: the forms PyPTO accepts, what the parser records
on the annotation, and each parse-time refusal with its message and line."""

from __future__ import annotations

import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.compiler.walk import iter_stmts
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import ParserTypeError, UnsupportedFeatureError
from pytest_pypto.ir.printer import print_program

R, C = 16, 64
PING = pl.MemRef(slots=2)
SCRATCH = pl.MemRef()


def _bindings(program, fn="k"):
    """{target name: MemRefBinding} of the annotated assignments of ``fn``."""
    out = {}
    for s in iter_stmts(program.functions[fn].body):
        if isinstance(s, n.Assign) and getattr(s.annotation, "memref", None) is not None:
            out[s.targets[0].name] = s.annotation.memref
    return out


@pl.program
class Forms:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[4 * R, C], pl.FP32],
          y: pl.Out[pl.Tensor[[4 * R, C], pl.FP32]]) -> pl.Tensor[[4 * R, C], pl.FP32]:
        a: pl.Tile[[R, C], pl.FP32, SCRATCH, pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])
        b: pl.Tile[[R, C], pl.FP32, pl.Mem.Vec, PING[1]] = pl.load(x, [R, 0], [R, C])
        for i in pl.range(2):
            c: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", slots=3)[(i + 1) % 3], pl.Mem.Vec] = \
                pl.load(x, [i * R, 0], [R, C])
            y = pl.store(pl.add(c, b), [i * R, 0], y)
        y = pl.store(a, [2 * R, 0], y)
        return y


def test_declared_forms_record_name_slots_and_index():
    got = _bindings(Forms)
    assert (got["a"].name, got["a"].slots, got["a"].index) == ("SCRATCH", 1, None)
    assert (got["b"].name, got["b"].slots, got["b"].index) == ("PING", 2, 1)
    c = got["c"]
    assert (c.name, c.slots) == ("ub", 3)
    assert isinstance(c.index, n.BinOp) and c.index.op == "%"  # a run-time index expression
    assert c.index.type.dtype.is_int


def test_memory_space_comes_from_the_annotation_in_any_order():
    for s in iter_stmts(Forms.functions["k"].body):
        if isinstance(s, n.Assign) and getattr(s.annotation, "memref", None) is not None:
            assert s.annotation.space == "Vec"
            assert s.targets[0].type.space == "Vec"


def test_printer_shows_the_binding():
    text = print_program(Forms)
    assert 'MemRef("SCRATCH")' in text
    assert 'MemRef("PING", slots=2)[1]' in text
    assert 'MemRef("ub", slots=3)[' in text and "% 3" in text


def test_binding_is_no_part_of_type_equality():
    a = Forms.functions["k"].body[0].annotation
    assert a.memref is not None
    assert a == a.with_(memref=None) and hash(a) == hash(a.with_(memref=None))


def test_memref_and_memref_type_are_not_tier3():
    assert isinstance(pl.MemRef(slots=2), pl.MemRef)
    assert pl.MemRefType.__doc__
    assert "MemRef" in pl.__all__ and "MemRefType" in pl.__all__


def test_python_level_declarations_validate_their_arguments():
    with pytest.raises(ValueError, match="slots must be a positive integer"):
        pl.MemRef(slots=0)
    with pytest.raises(ValueError, match="non-empty string"):
        pl.MemRef("")
    with pytest.raises(IndexError, match="out of range"):
        PING[2]
    with pytest.raises(IndexError, match="single slot"):
        SCRATCH[0]
    assert repr(pl.MemRef("ub", slots=2)) == "pl.MemRef('ub', slots=2)"


def test_a_slot_selected_in_python_is_a_constant_slot():
    second = PING[1]

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32]):
            t: pl.Tile[[R, C], pl.FP32, second, pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])

    b = _bindings(P)["t"]
    assert (b.name, b.slots, b.index) == ("PING", 2, 1)


def _raises(line_of, marker, match, build):
    with pytest.raises(ParserTypeError) as ei:
        build()
    assert match in ei.value.message, ei.value.message
    assert ei.value.line == line_of(marker)
    assert ei.value.file == __file__
    return ei.value


def test_memref_needs_an_explicit_memory_space(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, PING[0]] = pl.load(x, [0, 0], [R, C])  # nospace

    e = _raises(line_of, "nospace",
                "Tile annotation with a memref argument must also specify explicit memory space",
                build)
    assert "pl.Mem.Vec" in e.hint


def test_at_most_one_memref(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, PING[0], SCRATCH, pl.Mem.Vec] = \
                    pl.load(x, [0, 0], [R, C])  # two

    with pytest.raises(ParserTypeError) as ei:
        build()
    assert "at most one memref argument" in ei.value.message
    assert ei.value.line == line_of("two") - 1  # the annotation's line


def test_single_slot_allocation_cannot_be_subscripted(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, pl.MemRef("one")[0], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # one

    e = _raises(line_of, "one", "'one' was declared with a single slot, so it cannot be subscripted",
                build)
    assert "pl.MemRef(slots=N)" in e.hint


def test_constant_slot_out_of_range(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, PING[1 + 1], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # range

    e = _raises(line_of, "range",
                "Slot index 2 is out of range for 'PING', declared with 2 slot(s)", build)
    assert "[0, 2)" in e.hint


def test_slot_index_must_be_an_integer(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32], s: pl.Scalar[pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, PING[s], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # float

    _raises(line_of, "float",
            "the slot index of 'PING' must be an integer Scalar, but got Scalar[FP32]", build)


def test_inline_slots_must_be_a_positive_integer_literal(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, pl.MemRef("ub", slots=0)[0], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # zero

    _raises(line_of, "zero", "slots must be a positive integer literal, got 0", build)


def test_inline_name_must_be_a_string(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, pl.MemRef(3), pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # name

    _raises(line_of, "name", "A declared allocation's name must be a non-empty string literal",
            build)


def test_resolved_address_form_is_refused(line_of):
    def build():
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, pl.MemRef("mem_vec", 0, 4096), pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # resolved

    e = _raises(line_of, "resolved", "is a resolved address", build)
    assert 'pl.MemRef("name", slots=N)' in e.hint


def test_one_declaration_through_two_names(line_of):
    def build():
        alias = PING

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, PING[0], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])
                u: pl.Tile[[R, C], pl.FP32, alias[1], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # alias

    _raises(line_of, "alias", "Declared allocation 'PING' is also referenced as 'alias'", build)


def test_two_declarations_with_one_name(line_of):
    def build():
        first = pl.MemRef("buf", slots=2)
        second = pl.MemRef("buf", slots=2)

        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]):
                t: pl.Tile[[R, C], pl.FP32, first[0], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])
                u: pl.Tile[[R, C], pl.FP32, second[1], pl.Mem.Vec] = pl.load(x, [0, 0], [R, C])  # twice

    _raises(line_of, "twice",
            "Two separate pl.MemRef() declarations both resolve to the name 'buf'", build)


def test_memref_on_a_tensor_is_tier3():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32, SCRATCH],
              y: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            y = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], y)
            return y

    with pytest.raises(UnsupportedFeatureError, match="memory references on tensors"):
        pytest_pypto.compile(P)
