# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Parse-time limits: constant folding, expression and block depth, tile.full's fill value.

Each of these once crashed the parser with a Python exception (ValueError,
OverflowError, MemoryError, RecursionError) or hung on a huge integer; each is now
a designed error at the user's line naming the limit and the expression, while
folding inside the limits keeps its values and long chains compile and run.
"""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import ParserSyntaxError, ParserTypeError
from pytest_pypto.language.expressions import HOIST_DEPTH, MAX_EXPR_DEPTH
from pytest_pypto.language.scalars import MAX_FOLD_BITS
from pytest_pypto.language.statements import MAX_BLOCK_DEPTH

BIG = 1 << 2000  # a closure constant no float holds
INF = math.inf
NAN = math.nan


# ------------------------------------------------------------------ integer folding


def test_negative_shift_count_is_a_designed_error(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = 1 << -1  # neg-shift
    e = ei.value
    assert e.line == line_of("neg-shift") and e.file == __file__
    assert "constant folding of '1 << -1' shifts by a negative count (-1)" in e.message


def test_shift_right_by_a_negative_count_too(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = 256 >> (2 - 3)  # neg-rshift
    assert ei.value.line == line_of("neg-rshift")
    assert "'256 >> (2 - 3)' shifts by a negative count (-1)" in ei.value.message


def test_huge_shift_is_refused_before_it_allocates(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = 1 << (1 << 40)  # huge-shift
    e = ei.value
    assert e.line == line_of("huge-shift")
    assert "constant folding of '1 << (1 << 40)' gives an integer of 1099511627777 bits" in e.message
    assert f"over the {MAX_FOLD_BITS}-bit limit of folded integers" in e.message


def test_shift_past_the_limit_then_float_multiply(line_of):
    # (1 << 2000) * 1.0 once raised OverflowError converting to float; the shift is the
    # first step over the limit, and the error names that sub-expression.
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = (1 << 2000) * 1.0  # shift-float
    e = ei.value
    assert e.line == line_of("shift-float")
    assert "'1 << 2000' gives an integer of 2001 bits, over the 128-bit limit" in e.message


def test_repeated_squaring_stops_at_the_limit_without_computing(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = 1 << 100
                a = a * a  # square
                a = a * a
    e = ei.value
    assert e.line == line_of("square")
    assert "constant folding of 'a * a' gives an integer of at least 201 bits" in e.message
    assert "128-bit limit" in e.message


def test_the_limit_is_exact(line_of):
    @pl.program
    class Fits:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            a = (1 << 64) * (1 << 63)  # 2**127
            pl.static_assert(a == 170141183460469231731687303715884105728, "2**127")
            b = -a - (a - 1)  # -(2**128 - 1): 128 bits of magnitude, the most there is
            pl.static_assert(b == -340282366920938463463374607431768211455, "2**128 - 1")

    assert "k" in Fits.functions
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class Over:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = (1 << 64) * (1 << 63)
                b = a + a  # 129 bits
    assert ei.value.line == line_of("129 bits")
    assert "'a + a' gives an integer of 129 bits" in ei.value.message


def test_closure_integer_too_large_for_a_float(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = BIG * 1.0  # big-float
    e = ei.value
    assert e.line == line_of("big-float")
    assert "'BIG * 1.0' needs an integer of 2001 bits as a float, beyond the float range" in e.message


def test_power_is_not_a_dsl_operator_so_it_cannot_hang(line_of):
    # `10 ** 10**8` would be a 330-million-bit integer; `**` is not in docs/design/language.md §19's
    # operator list, so it is refused before anything is computed.
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = 10 ** 10**8  # pow
    assert ei.value.line == line_of("pow")
    assert "operator Pow is not supported" in ei.value.message


def test_legal_folding_keeps_its_values():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, out: pl.Out[pl.Tensor[[16, 16], pl.INT64]]) -> pl.Tensor[[16, 16], pl.INT64]:
            pl.static_assert((1 << 31) == 2147483648, "1 << 31")
            pl.static_assert(-(1 << 63) == -9223372036854775808, "-(1 << 63)")
            pl.static_assert((1 << 40) >> 38 == 4, ">>")
            pl.static_assert(1024 * 1024 * 1024 * 1024 == 1099511627776, "*")
            pl.static_assert(-7 // 2 == -4 and -7 / 2 == -3 and -7 % 2 == 1, "// / %")
            t = pl.tile.full([16, 16], pl.INT64, -(1 << 63))
            out = pl.store(t, [0, 0], out)
            return out

    full = next(
        s.value for s in K.functions["k"].body
        if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op == "tile.full"
    )
    assert full.arg("value") == -(1 << 63)


# ------------------------------------------------------------------ float folding


def test_float_overflow_is_an_error_not_inf(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = 1e308 * 10.0  # float-ovf
    e = ei.value
    assert e.line == line_of("float-ovf")
    assert "constant folding of '1e308 * 10.0' overflows the float range (the result is inf)" \
        in e.message
    assert "limit of finite folded floats" in e.message


def test_infinite_closure_constants_fold_as_ieee_values():
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            a = -INF * 2.0
            pl.static_assert(a < -1e308, "-inf")
            b = NAN + 1.0
            pl.static_assert(b != b, "nan")

    assert "k" in K.functions


def test_scalar_cast_of_inf_to_an_int_dtype(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                a = pl.cast(INF, pl.INT32)  # cast-inf
    assert ei.value.line == line_of("cast-inf")
    assert "pl.cast(inf, pl.INT32): inf has no INT32 value" in ei.value.message


# ------------------------------------------------------------------ tile.full's value


def test_fill_value_beyond_every_float_into_an_int_tile(line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                f = pl.tile.full([16, 16], pl.INT32, 1e400)  # fill-1e400
    e = ei.value
    assert e.line == line_of("fill-1e400")
    assert ("The operator tile.full requires a finite fill value for INT32 "
            "(range [-2147483648, 2147483647]), but got inf") in e.message
    assert "1e400" in e.hint


@pytest.mark.parametrize("value", [INF, -INF, NAN], ids=["inf", "-inf", "nan"])
def test_non_finite_fill_value_into_an_int_tile(value, line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                f = pl.tile.full([16, 16], pl.INT16, value)  # fill-nonfinite
    assert ei.value.line == line_of("fill-nonfinite")
    assert f"finite fill value for INT16 (range [-32768, 32767]), but got {value!r}" \
        in ei.value.message


@pytest.mark.parametrize(
    ("dtype", "value", "expected"),
    [
        (pl.INT8, 300, "within the range of INT8 [-128, 127], but got 300"),
        (pl.INT8, -129, "within the range of INT8 [-128, 127], but got -129"),
        (pl.UINT8, -1, "within the range of UINT8 [0, 255], but got -1"),
        (pl.INT32, 3e9, "within the range of INT32 [-2147483648, 2147483647], but got 3000000000.0"),
        (pl.UINT64, BIG, "within the range of UINT64 [0, 18446744073709551615], but got an "
                         "integer of 2001 bits"),
        (pl.FP16, 1e5, "within the range of FP16 [-65504.0, 65504.0], but got 100000.0, which "
                       "FP16 stores as inf"),
        (pl.FP32, BIG, "within the range of FP32 [-3.4028234663852886e+38, "
                       "3.4028234663852886e+38], but got an integer of 2001 bits"),
        (pl.FP8E4M3FN, -INF, "within the range of FP8E4M3FN [-448.0, 448.0], but got -inf, "
                             "which FP8E4M3FN stores as nan"),
    ],
    ids=["int8-high", "int8-low", "uint8-negative", "int32-float", "uint64-huge", "fp16-overflow",
         "fp32-huge-int", "fp8-no-inf"],
)
def test_fill_value_out_of_the_dtype_range(dtype, value, expected, line_of):
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
                f = pl.tile.full([16, 16], dtype, value)  # fill-range
    assert ei.value.line == line_of("fill-range")
    assert f"The operator tile.full requires a fill value {expected}" in ei.value.message


@pytest.mark.parametrize(
    ("dtype", "value"),
    [(pl.INT8, 127), (pl.INT8, -128), (pl.UINT8, 255), (pl.INT32, -2.9), (pl.UINT8, -0.5),
     (pl.FP32, 3.4028235e38), (pl.FP32, -INF), (pl.FP16, NAN), (pl.FP16, 65519.0)],
    ids=["int8-max", "int8-min", "uint8-max", "int32-truncates", "uint8-truncates-to-0",
         "fp32-max-as-printed", "fp32-minus-inf", "fp16-nan", "fp16-rounds-to-max"],
)
def test_fill_values_the_dtype_holds(dtype, value):
    @pl.program
    class K:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, 16], pl.FP32]):
            f = pl.tile.full([16, 16], dtype, value)

    (assign,) = K.functions["k"].body
    assert assign.value.type.dtype is dtype


# ------------------------------------------------------------------ depth


_TEMPLATE = '''\
import pytest_pypto.language as pl


@pl.program
class K:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[16, 16], pl.FP32], s: pl.Scalar[pl.INDEX],
          out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(x, [0, 0], [16, 16])
{body}
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32], s: pl.Scalar[pl.INDEX],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.k(x, s, out)
        return out
'''
_BODY_LINE = 10  # file line of the body's first line in _TEMPLATE


def _kernel(tmp_path: Path, name: str, body: list[str]) -> tuple[Any, str]:
    """Import a module whose program K has ``body`` in its kernel; (K, the file)."""
    path = tmp_path / f"{name}.py"
    path.write_text(_TEMPLATE.format(body="\n".join("        " + line for line in body)))
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[name]
    return module.K, str(path)


def _run(pypto_runner: Any, program: Any, s: int) -> np.ndarray:
    x = np.ones((16, 16), np.float32)
    out = np.zeros((16, 16), np.float32)
    pypto_runner.run(program, x, s, out)
    return out


def _max_scalar_depth(expr: n.Expr) -> int:
    if isinstance(expr, (n.BinOp, n.Compare)):
        return 1 + max(_max_scalar_depth(expr.lhs), _max_scalar_depth(expr.rhs))
    if isinstance(expr, (n.UnaryOp, n.ScalarCast)):
        return 1 + _max_scalar_depth(expr.operand)
    return 0


def test_500_term_constant_chain_folds(tmp_path):
    program, _ = _kernel(tmp_path, "const_chain", [
        "a = 1",
        "b = " + " + ".join(["a"] * 500),
        'pl.static_assert(b == 500, "sum")',
        "c = " + " * ".join(["1"] * 300) + " - " + " - ".join(["1"] * 200),
        'pl.static_assert(c == -199, "mixed")',
    ])
    assert list(program.functions) == ["k", "main"]


def test_500_term_scalar_chain_compiles_runs_and_stays_shallow(tmp_path, pypto_runner):
    program, _ = _kernel(tmp_path, "scalar_chain", [
        "b = " + " + ".join(["s"] * 500),
        "c = " + "-" * 301 + "s",
        "ok = " + " and ".join(["s > 0"] * 200),
        "t = pl.adds(t, pl.cast(b + c, pl.FP32))",
    ])
    body = program.functions["k"].body
    depths = [_max_scalar_depth(s.value) for s in body if isinstance(s, n.Assign)]
    assert max(depths) <= HOIST_DEPTH  # long chains became `partial` steps, not deep trees
    assert any(v.name.startswith("partial") for s in body if isinstance(s, n.Assign)
               for v in s.targets)
    out = _run(pypto_runner, program, 3)
    assert (out == 1 + 500 * 3 - 3).all()


def test_right_nested_parentheses_past_the_depth_limit(tmp_path):
    depth = MAX_EXPR_DEPTH + 20
    program, file = _kernel(tmp_path, "right_nested", [
        "a = 1",
        "b = " + "a + (" * depth + "a" + ")" * depth,
    ])
    err = program.error()
    assert isinstance(err, ParserTypeError)
    assert (err.file, err.line) == (file, _BODY_LINE + 1)
    assert f"nests more than {MAX_EXPR_DEPTH} levels deep, over the nesting limit" in err.message
    assert "the expression 'a + (a + (a + (a + (" in err.message


def test_nesting_within_the_depth_limit_parses(tmp_path):
    depth = MAX_EXPR_DEPTH // 2 - 5  # each level is a BinOp and a parenthesised BinOp
    program, _ = _kernel(tmp_path, "nested_ok", [
        "a = 1",
        "b = " + "a + (" * depth + "a" + ")" * depth,
        f'pl.static_assert(b == {depth + 1}, "sum")',
    ])
    assert list(program.functions) == ["k", "main"]


def test_deeply_nested_calls_past_the_depth_limit(tmp_path):
    program, file = _kernel(tmp_path, "nested_calls", [
        "u = " + "pl.add(" * MAX_EXPR_DEPTH + "t" + ", t)" * MAX_EXPR_DEPTH,
    ])
    err = program.error()
    assert isinstance(err, ParserTypeError)
    assert (err.file, err.line) == (file, _BODY_LINE)
    assert "the expression 'pl.add(pl.add(" in err.message and "nesting limit" in err.message


def _elif_chain(levels: int) -> list[str]:
    lines = ["b = s"]
    for i in range(levels):
        lines += [f"{'if' if i == 0 else 'elif'} s == {i}:", f"    b = s + {i + 10}"]
    return [*lines, "else:", "    b = s", "t = pl.adds(t, pl.cast(b, pl.FP32))"]


def test_elif_chain_at_the_block_limit_compiles_and_runs(tmp_path, pypto_runner):
    program, _ = _kernel(tmp_path, "elif_ok", _elif_chain(MAX_BLOCK_DEPTH))
    assert (_run(pypto_runner, program, 3) == 1 + 3 + 13).all()
    assert (_run(pypto_runner, program, 1000) == 1 + 1000).all()


def test_elif_chain_past_the_block_limit(tmp_path):
    program, file = _kernel(tmp_path, "elif_deep", _elif_chain(MAX_BLOCK_DEPTH + 1))
    err = program.error()
    assert isinstance(err, ParserSyntaxError)
    assert f"blocks nested more than {MAX_BLOCK_DEPTH} levels deep" in err.message
    # the body of the 65th if: line 1 is `b = s`, each level two lines
    assert (err.file, err.line) == (file, _BODY_LINE + 1 + 2 * MAX_BLOCK_DEPTH + 1)


def test_recursion_error_in_the_parser_is_a_designed_error(monkeypatch, line_of):
    # The explicit limits keep kernels far from Python's recursion limit; a program
    # decorated deep inside the caller's own recursion can still reach it, and the
    # parser turns that into a diagnostic at the function instead of a traceback.
    from pytest_pypto.language import statements

    def starved(self, *args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(statements.BodyParser, "_block", starved)
    with pytest.raises(ParserSyntaxError) as ei:
        @pl.program
        class K:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16, 16], pl.FP32]):  # starved-def
                a = 1
    e = ei.value
    assert "function 'k' nests too deeply to parse: Python's recursion limit was reached" \
        in e.message
    assert e.line == line_of("starved-def")
