# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, F821, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Parse-level tests of loop exits and while loops (language/loops.py), dynamic dims
(`M * 2`), and the scalar tensor ops (`pl.tensor.read/write/dim`): the IR they build and
one negative test per rule, asserting the message and the user's line."""

from __future__ import annotations

import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.types import DynExpr, ScalarType, TensorType
from ut.helpers import line_of

M = pl.dynamic("M")
N = pl.dynamic("N")


def _build_from_source(tmp_path, monkeypatch, name: str, src: str):
    """Import ``src`` as module ``name`` (registered, so its source is readable) and run
    nothing else; the test calls its build()."""
    import importlib.util
    import sys

    path = tmp_path / f"{name}.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)
    spec.loader.exec_module(module)
    return module


def _loops(body: list[n.Stmt]) -> list[n.For]:
    return [s for s in body if isinstance(s, n.For)]


# ------------------------------------------------------------ escaping values


def test_value_first_bound_in_a_plain_loop_is_carried_out_with_the_out_param():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32],
              c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(2):
                t = pl.load(a, [0, 0], [64, 64])
                out = pl.store(t, [0, 0], c)
            return out

    k = P.functions["k"]
    (loop,) = _loops(k.body)
    (iter_var, init), = loop.carried  # only `out` is read after the loop; `t` is not
    assert init.name == "c" and isinstance(iter_var.type, TensorType)
    assert isinstance(loop.body[-1], n.Yield) and len(loop.body[-1].values) == 1
    ret = k.body[-1]
    assert isinstance(ret, n.Return) and ret.values[0] is loop.results[0]


def test_escape_through_nested_loops_and_a_one_armed_if():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[64, 64], pl.FP32], s: pl.Scalar[pl.INDEX],
              c: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            for i in pl.range(2):
                for j in pl.range(2):
                    if j < s:
                        out = pl.store(pl.load(a, [0, 0], [64, 64]), [0, 0], c)
            return out

    outer, = _loops(P.functions["k"].body)
    inner, = _loops(outer.body)
    assert [init.name for _, init in outer.carried] == ["c"]
    assert inner.carried[0][1] is outer.carried[0][0]  # the inner loop starts from the outer's
    if_stmt = next(s for s in inner.body if isinstance(s, n.If))
    assert len(if_stmt.results) == 1  # the else arm keeps the carried value


def test_scalar_escape_without_a_value_before_the_loop_starts_at_zero():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4], pl.INT32]):
            for i in pl.range(3):
                last = i * 2
            y = last + 1

    (loop,) = _loops(P.functions["main"].body)
    (_, init), = loop.carried
    assert isinstance(init, n.Const) and init.value == 0


def test_escape_read_before_this_iteration_assigns_it(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[4], pl.INT32]):
                for i in pl.range(3):
                    y = t + 1  # early
                    t = i
                z = t
    assert "'t' is read in the loop" in ei.value.message and "before this iteration" in ei.value.message
    assert ei.value.line == line_of("early")


def test_init_values_loop_leaks_nothing_but_its_yield_targets(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[4], pl.INT32]):
                for i, (a,) in pl.range(3, init_values=(0,)):
                    t = a + i
                    a2 = pl.yield_(t)
                z = t + a2  # leak
    assert "'t' is defined inside the loop" in ei.value.message
    assert ei.value.line == line_of("leak")


def test_init_values_loop_needs_an_assignment_form_yield(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[4], pl.INT32]):
                for i, (a,) in pl.range(3, init_values=(0,)):
                    pl.yield_(a + i)  # bare
    assert "assignment-form pl.yield_" in ei.value.message
    assert ei.value.line == line_of("bare")


def test_init_values_loop_without_yield_carries_the_rebound_name():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4], pl.INT32]):
            for i, (a,) in pl.range(3, init_values=(0,)):
                a = a + i

    (loop,) = _loops(P.functions["main"].body)
    (yield_stmt,) = [s for s in loop.body if isinstance(s, n.Yield)]
    assert isinstance(yield_stmt.values[0], n.Var) and yield_stmt.values[0] is not loop.carried[0][0]


# ---------------------------------------------------------------- break / continue


def test_break_and_continue_carry_the_current_values():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4], pl.INT32]):
            acc = 0
            for i in pl.range(10):
                acc = acc + i
                if i > 5:
                    break
                if i % 2 == 0:
                    continue
                acc = acc * 2
            y = acc

    (loop,) = _loops(P.functions["main"].body)
    jumps = [s for st in loop.body if isinstance(st, n.If) for s in st.then_body
             if isinstance(s, n.LoopJump)]
    assert [type(j) for j in jumps] == [n.Break, n.Continue]
    assert all(len(j.values) == 1 for j in jumps)
    first_if = next(s for s in loop.body if isinstance(s, n.If))
    assert first_if.results == ()  # the break arm adds nothing to merge


def test_continue_in_parallel_and_break_in_unroll_loops(line_of):
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, s: pl.Scalar[pl.INDEX]):
                for i in pl.parallel(4):
                    continue  # par
    assert "'continue' not supported in parallel loops" in ei.value.message
    assert ei.value.line == line_of("par")
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class P2:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, s: pl.Scalar[pl.INDEX]):
                for i in pl.unroll(4):
                    break  # unr
    assert "'break' not supported in unrolled loops" in ei.value.message
    assert ei.value.line == line_of("unr")


def test_statement_after_break_is_unreachable(line_of):
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, s: pl.Scalar[pl.INDEX]):
                for i in pl.range(4):
                    break
                    t = i  # dead
    assert "unreachable" in ei.value.message
    assert ei.value.line == line_of("dead")


# ---------------------------------------------------------------------- while


def test_python_while_carries_its_condition():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, s: pl.Scalar[pl.INDEX]):
            i = 0
            while i < s:
                i = i + 3
            y = i

    (loop,) = _loops(P.functions["main"].body)
    assert isinstance(loop, n.While) and loop.kind == "while"
    assert loop.cond is loop.carried[-1][0] and loop.cond.type == ScalarType(pl.BOOL)
    assert isinstance(loop.carried[-1][1], n.Compare)  # first test, before the loop
    assert isinstance(loop.body[-1], n.Yield) and len(loop.body[-1].values) == 2


def test_while_condition_must_be_bool(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, s: pl.Scalar[pl.INDEX]):
                while s:  # notbool
                    s = s - 1
    assert "while condition must be a Scalar[BOOL]" in ei.value.message
    assert ei.value.line == line_of("notbool")


def test_while_underscore_form_and_its_results():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, s: pl.Scalar[pl.INDEX]):
            for (x, y) in pl.while_(init_values=(0, 1)):
                pl.cond(x < s)
                x2, y2 = pl.yield_(x + 1, y * 2)
            z = y2

    (loop,) = _loops(P.functions["main"].body)
    assert isinstance(loop, n.While) and len(loop.carried) == 3  # x, y, the condition
    assert [c.value for _, c in loop.carried[:2]] == [0, 1]


@pytest.mark.parametrize(
    ("body", "message", "mark"),
    [
        ("for (x,) in pl.while_():  # bad\n    pl.cond(x < s)\n    x2 = pl.yield_(x)",
         "pl.while_() requires init_values", "bad"),
        ("for (x,) in pl.while_(0, init_values=(0,)):  # bad\n    pl.cond(x < s)\n"
         "    x2 = pl.yield_(x)", "takes no positional arguments", "bad"),
        ("for x in pl.while_(init_values=(0,)):  # bad\n    pl.cond(x < s)\n    x2 = pl.yield_(x)",
         "While loop target must be a tuple", "bad"),
        ("for (x, y) in pl.while_(init_values=(0,)):  # bad\n    pl.cond(x < s)\n"
         "    x2 = pl.yield_(x)", "Mismatch: 2 iter_args but 1 init_values", "bad"),
        ("for (x,) in pl.while_(init_values=(0,)):\n    x = x + 1  # bad\n    pl.cond(x < s)",
         "First statement in pl.while_() body must be pl.cond(condition)", "bad"),
        ("for (x,) in pl.while_(init_values=(0,)):\n    pl.cond(x < s)\n    pl.cond(x < 2)  # bad",
         "pl.cond() can only be the first statement", "bad"),
        ("pl.cond(s < 2)  # bad", "pl.cond() can only be the first statement", "bad"),
    ],
    ids=["no-init", "positional", "target", "arity", "cond-first", "cond-twice", "cond-alone"],
)
def test_while_underscore_rules(tmp_path, monkeypatch, body, message, mark):
    import textwrap

    inner = textwrap.indent(body, " " * 12)
    src = (
        "import pytest_pypto.language as pl\n\n"
        "def build():\n"
        "    @pl.program\n"
        "    class P:\n"
        "        @pl.function(type=pl.FunctionType.Orchestration)\n"
        "        def main(self, s: pl.Scalar[pl.INDEX]):\n"
        f"{inner}\n"
        "    return P\n"
    )
    module = _build_from_source(tmp_path, monkeypatch, "while_rules", src)
    with pytest.raises((ParserSyntaxError, InvalidOperationError)) as ei:
        module.build()
    assert message in ei.value.message
    want = line_of(src, mark)
    assert ei.value.line == want


# --------------------------------------------------------------- dynamic dims


def test_dyn_arithmetic_builds_one_shape_expression():
    a, b = M * 2, M * 2
    assert isinstance(a, DynExpr) and a == b and hash(a) == hash(b)
    assert a != N * 2 and a != M * 3 and repr(M // 16 + 1) == "(M // 16) + 1"
    assert (2 * M).evaluate({M: 5}) == 10 and (M // 4 - 1).evaluate({M: 32}) == 7

    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[M * 2, N], pl.FP32]):
            y: pl.Tensor[[M * 2, N], pl.FP32] = pl.create_tensor([M * 2, N], dtype=pl.FP32)

    (p,) = P.functions["main"].params
    assert p.type.shape[0] == M * 2 and p.type.shape[1] is N


def test_dyn_dim_division_by_zero(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[M, 4], pl.FP32]):
                n = M // 0  # zero
    assert "division by zero" in ei.value.message
    assert ei.value.line == line_of("zero")


# ------------------------------------------------------- tensor.read / write / dim


def test_tensor_read_dim_types_and_index_annotation():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, t: pl.Tensor[[2, M], pl.INT32]):
            v = pl.tensor.read(t, [1, 0])
            d: pl.Scalar[pl.INT64] = pl.tensor.dim(t, -1)
            pl.tensor.write(t, [0, 0], v)

    body = P.functions["main"].body
    assert body[0].value.op == "tensor.read" and body[0].targets[0].type == ScalarType(pl.INT32)
    dim = body[1].value
    assert isinstance(dim, n.ScalarCast) and dim.operand.op == "tensor.dim"
    assert body[1].targets[0].type == ScalarType(pl.INT64)
    assert body[2].expr.op == "tensor.write"


@pytest.mark.parametrize(
    ("stmt", "error", "message"),
    [
        ("v = pl.tensor.read(t, [0])  # bad", ParserTypeError, "one index per dimension"),
        ("v = pl.tensor.read(t, [2, 0])  # bad", InvalidOperationError, "index 2 on axis 0 is out"),
        ("v = pl.tensor.dim(t, 2)  # bad", ParserTypeError, "axis 2 is out of range"),
        ("pl.tensor.write(t, [0, 0], 1.5)  # bad", ParserTypeError, "dtype category"),
    ],
    ids=["rank", "bounds", "axis", "write-dtype"],
)
def test_tensor_scalar_op_rules(tmp_path, monkeypatch, stmt, error, message):
    src = (
        "import pytest_pypto.language as pl\n\n"
        "def build():\n"
        "    @pl.program\n"
        "    class P:\n"
        "        @pl.function(type=pl.FunctionType.Orchestration)\n"
        "        def main(self, t: pl.InOut[pl.Tensor[[2, 3], pl.INT32]]):\n"
        f"            {stmt}\n"
        "    return P\n"
    )
    module = _build_from_source(tmp_path, monkeypatch, "scalar_rules", src)
    with pytest.raises(error) as ei:
        module.build()
    assert message in ei.value.message
    assert ei.value.line == 8


def test_annotated_yield_in_both_arms_merges(line_of):
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, s: pl.Scalar[pl.INDEX]):
            if s == 0:
                first: pl.Scalar[pl.INT64] = pl.yield_(pl.const(1, pl.INT64))
            else:
                first: pl.Scalar[pl.INT64] = pl.yield_(s)  # INDEX takes the annotated dtype
            y = first + 1

    if_stmt = P.functions["main"].body[0]
    assert isinstance(if_stmt, n.If) and if_stmt.results[0].type == ScalarType(pl.INT64)
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P2:
            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, s: pl.Scalar[pl.INDEX]):
                if s == 0:
                    f: pl.Scalar[pl.FP32] = pl.yield_(s)  # annyield
                else:
                    f: pl.Scalar[pl.FP32] = pl.yield_(1.0)
    assert "Type annotation for 'f' says dtype FP32" in ei.value.message
    assert ei.value.line == line_of("annyield")
