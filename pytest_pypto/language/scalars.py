# SPDX-License-Identifier: Apache-2.0
"""Scalar arithmetic (docs/design/language.md §19): typing, constant folding, literal constants.

Operands must share a category (int or float); the wider width wins; BOOL takes
no arithmetic.  Python literals adopt the dtype of the Scalar they meet (same
category only), so `i * 2` stays `INT32` when `i` is.  Constant operands fold
with the DSL's own semantics: `//` and `%` floor like Python, `/` on ints
truncates toward zero like the generated C code.

Folding has explicit limits, each a `ParserTypeError` at the user's line naming
the limit and the expression (docs/design/language.md §19): a folded integer's magnitude stays
below 2**MAX_FOLD_BITS (64 bits beyond the widest DSL integer type, INT64/UINT64:
room for the product of two 64-bit values, while `1 << (1 << 40)` or repeated
squaring cannot allocate gigabytes or run for minutes); a shift count is not
negative; a float folded from finite operands stays finite (overflow to inf, or
an integer too large for a float, is an error, not inf).  Infinite or NaN closure
constants (`math.inf`) fold as IEEE values.
"""

from __future__ import annotations

import ast
import math
import operator
from typing import Any

from pytest_pypto.ir import dtypes
from pytest_pypto.ir.dtypes import DataType, round_float
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import BinOp, Compare, Const, DynDim, Expr, ScalarCast, UnaryOp
from pytest_pypto.ir.types import (
    DYN_OPS,
    DynExpr,
    DynVar,
    ScalarType,
    TensorType,
    TileType,
    type_str,
)
from pytest_pypto.language.context import FunctionContext

BINOPS: dict[type, str] = {
    ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.FloorDiv: "//",
    ast.Mod: "%", ast.LShift: "<<", ast.RShift: ">>",
}
CMPOPS: dict[type, str] = {
    ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">=",
}
TILE_HINTS = {"+": "add", "-": "sub", "*": "mul", "/": "div"}

MAX_FOLD_BITS = 128  # |folded int| < 2**128: 64 bits beyond INT64/UINT64
_SHOWN_CHARS = 60  # how much of an offending expression a message quotes


def literal_dtype(value: Any) -> DataType:
    if isinstance(value, bool):
        return dtypes.BOOL
    if isinstance(value, int):
        return dtypes.INDEX
    return dtypes.FP32


def category(dtype: DataType) -> str:
    if dtype.kind == "bool":
        return "bool"
    return "float" if dtype.is_float else "int"


# Largest finite value of the float dtypes a literal constant can take (FP32 for a
# Python float; FP16 / BF16 by adopting a Scalar's dtype or through pl.const).
_FLOAT_MAX = {"FP32": 3.4028234663852886e38, "FP16": 65504.0, "BF16": 3.3895313892515355e38}


def check_float_fits(value: Any, dtype: DataType, span: Any = None) -> None:
    """ParserTypeError at ``span`` when the finite ``value`` would become inf in the float
    ``dtype`` (1e40 as FP32): an overflow is an error, never a silent inf.  An explicit
    infinity or NaN, and a value rounding onto the dtype's largest one, pass."""
    limit = _FLOAT_MAX.get(dtype.name)
    if limit is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return
    try:
        x = float(value)
    except OverflowError:  # an int beyond every float
        x = math.inf
    else:
        if not math.isfinite(x) and isinstance(value, float):
            return  # math.inf / nan: an IEEE value the user asked for
        if abs(x) <= limit or math.isfinite(round_float(x, dtype.name)):
            return
    raise ParserTypeError(
        f"the constant {value!r} does not fit {dtype.name} (largest finite value "
        f"{limit!r}): {dtype.name} would hold inf",
        span,
        hint=f"use a value within {dtype.name}'s range, a wider dtype, or math.inf if an "
        "infinity is meant",
    )


def make_const(value: Any, dtype: DataType | None = None, span: Any = None) -> Const:
    dtype = dtype or literal_dtype(value)
    if dtype.is_float:
        check_float_fits(value, dtype, span)
    return Const(value, type=ScalarType(dtype), span=span)


def is_number(value: Any) -> bool:
    return isinstance(value, (bool, int, float))


def as_scalar_expr(value: Any, span: Any = None) -> Expr | None:
    """A number, DynVar or Scalar-typed Expr as an IR Expr; None if it is none of those."""
    if is_number(value):
        return make_const(value, span=span)
    if isinstance(value, DynVar):
        return DynDim(value, type=ScalarType(dtypes.INDEX), span=span)
    if isinstance(value, Expr) and isinstance(value.type, ScalarType):
        return value
    return None


def fold_binop(op: str, a: Any, b: Any) -> Any:
    if op == "/" and isinstance(a, int) and isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError("division by zero")
        q = abs(a) // abs(b)
        return q if (a >= 0) == (b >= 0) else -q
    table = {
        "+": operator.add, "-": operator.sub, "*": operator.mul, "/": operator.truediv,
        "//": operator.floordiv, "%": operator.mod, "<<": operator.lshift,
        ">>": operator.rshift, "max": max, "min": min, "and": lambda x, y: x and y,
        "or": lambda x, y: x or y,
    }
    return table[op](a, b)


def shown(ctx: FunctionContext, node: ast.AST) -> str:
    """The source of ``node`` for a message, cut to a readable length."""
    text = ctx.written(node)
    return text if len(text) <= _SHOWN_CHARS else text[: _SHOWN_CHARS - 3] + "..."


def _int_operands(a: Any, b: Any) -> bool:
    return isinstance(a, int) and isinstance(b, int) and not isinstance(a, bool) \
        and not isinstance(b, bool)


def _fold_limit_error(ctx: FunctionContext, what: str, node: ast.AST) -> Exception:
    return ctx.error(
        ParserTypeError,
        f"constant folding of '{shown(ctx, node)}' {what}, over the {MAX_FOLD_BITS}-bit "
        "limit of folded integers",
        node,
        hint=f"a folded integer's magnitude stays below 2**{MAX_FOLD_BITS}; no DSL integer "
        "type holds more than 64 bits",
    )


def fold(ctx: FunctionContext, op: str, a: Any, b: Any, node: ast.AST) -> Any:
    """`a op b` on two constants, within the folding limits (module docstring)."""
    if _int_operands(a, b):
        if op in ("<<", ">>") and b < 0:
            raise ctx.error(
                ParserTypeError,
                f"constant folding of '{shown(ctx, node)}' shifts by a negative count ({b})",
                node,
                hint="a shift count must be 0 or more",
            )
        # Refuse before computing what the limit forbids: the work itself is the hazard.
        if op == "<<" and a and a.bit_length() + b > MAX_FOLD_BITS:
            raise _fold_limit_error(ctx, f"gives an integer of {a.bit_length() + b} bits", node)
        if op == "*" and a and b and a.bit_length() + b.bit_length() - 1 > MAX_FOLD_BITS:
            bits = a.bit_length() + b.bit_length() - 1
            raise _fold_limit_error(ctx, f"gives an integer of at least {bits} bits", node)
    try:
        result = fold_binop(op, a, b)
    except ZeroDivisionError:
        raise ctx.error(ParserTypeError, "division by zero in a constant", node) from None
    except OverflowError:
        big = max((v for v in (a, b) if isinstance(v, int)), key=abs, default=0)
        raise ctx.error(
            ParserTypeError,
            f"constant folding of '{shown(ctx, node)}' needs an integer of "
            f"{abs(big).bit_length()} bits as a float, beyond the float range (about 1.8e308)",
            node,
            hint="keep float constants finite: |x| <= 1.8e308",
        ) from None
    if isinstance(result, bool):
        return result
    if isinstance(result, int):
        if result.bit_length() > MAX_FOLD_BITS:
            raise _fold_limit_error(ctx, f"gives an integer of {result.bit_length()} bits", node)
    elif isinstance(result, float) and not math.isfinite(result):
        if all(not isinstance(v, float) or math.isfinite(v) for v in (a, b)):
            raise ctx.error(
                ParserTypeError,
                f"constant folding of '{shown(ctx, node)}' overflows the float range "
                f"(the result is {result}), over the limit of finite folded floats",
                node,
                hint="keep float constants finite: |x| <= 1.8e308; write math.inf if an "
                "infinity is meant",
            )
    return result


def fold_compare(op: str, a: Any, b: Any) -> bool:
    table = {
        "==": operator.eq, "!=": operator.ne, "<": operator.lt,
        "<=": operator.le, ">": operator.gt, ">=": operator.ge,
    }
    return bool(table[op](a, b))


def _reject_containers(ctx: FunctionContext, op: str, operands: list[Any], node: ast.AST) -> None:
    for v in operands:
        t = v.type if isinstance(v, Expr) else None
        if isinstance(t, (TileType, TensorType)):
            kind = "tiles" if isinstance(t, TileType) else "tensors"
            name = TILE_HINTS.get(op, "cmp" if op in CMPOPS.values() else None)
            args = ", ".join(ctx.text(a) for a in _operand_nodes(node))
            hint = f"pl.{name}({args})" if name else "use the pl. op for it"
            raise ctx.error(
                InvalidOperationError,
                f"operator {op} is not defined on {kind}: tiles and tensors have no "
                "operator overloads",
                node,
                hint=hint,
            )


def _operand_nodes(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.BinOp):
        return [node.left, node.right]
    if isinstance(node, ast.Compare):
        return [node.left, *node.comparators]
    if isinstance(node, ast.AugAssign):
        return [node.target, node.value]
    if isinstance(node, ast.Call):
        return list(node.args)
    return [node]


def _operands(
    ctx: FunctionContext, op: str, a: Any, b: Any, node: ast.AST
) -> tuple[Expr, Expr, DataType, DataType]:
    """Turn both operands into Scalar Exprs, literals adopting the other side's dtype."""
    span = ctx.span(node)
    ea, eb = as_scalar_expr(a, span), as_scalar_expr(b, span)
    for value, expr in ((a, ea), (b, eb)):
        if expr is None:
            raise ctx.error(
                ParserTypeError,
                f"operator {op} needs Scalar operands, but got {_describe(value)}",
                node,
            )
    assert ea is not None and eb is not None
    ta, tb = ea.type.dtype, eb.type.dtype  # type: ignore[union-attr]
    if is_number(a) and not is_number(b) and category(ta) == category(tb):
        ea, ta = make_const(a, tb, span), tb
    elif is_number(b) and not is_number(a) and category(ta) == category(tb):
        eb, tb = make_const(b, ta, span), ta
    return ea, eb, ta, tb


def _describe(value: Any) -> str:
    if isinstance(value, Expr):
        return type_str(value.type)
    return f"the {type(value).__name__} {value!r}"


def _wider(ta: DataType, tb: DataType) -> DataType:
    if tb.bits > ta.bits or (tb.bits == ta.bits and tb.kind == "index"):
        return tb
    return ta


def binop(ctx: FunctionContext, op: str, a: Any, b: Any, node: ast.AST) -> Any:
    """`a op b` on Scalars or constants (op in BINOPS values, "max", "min", "and", "or")."""
    _reject_containers(ctx, op, [a, b], node)
    if op in DYN_OPS and _dim_like(a) and _dim_like(b) and (
            isinstance(a, DynVar) or isinstance(b, DynVar)):
        if op in ("//", "%") and b == 0:
            raise ctx.error(ParserTypeError, "division by zero in a dimension expression", node)
        return DynExpr.make(op, a, b)  # `M * 2`: a shape expression (PyPTO composite dim)
    if is_number(a) and is_number(b):
        if op in ("and", "or") or not (isinstance(a, bool) or isinstance(b, bool)):
            return fold(ctx, op, a, b, node)
    ea, eb, ta, tb = _operands(ctx, op, a, b, node)
    ca, cb = category(ta), category(tb)
    if op in ("and", "or"):
        if ca != "bool" or cb != "bool":
            raise ctx.error(
                ParserTypeError,
                f"'{op}' needs BOOL Scalars, but got {ta.name} and {tb.name}",
                node,
                hint="compare first, e.g. (i > 0)",
            )
        return BinOp(op, ea, eb, type=ScalarType(dtypes.BOOL), span=ctx.span(node))
    if "bool" in (ca, cb):
        raise ctx.error(
            ParserTypeError,
            f"Scalar operator {op} does not take BOOL operands, but got {ta.name} and {tb.name}",
            node,
            hint="pl.cast the BOOL Scalar to an integer dtype first",
        )
    if ca != cb:
        raise ctx.error(
            ParserTypeError,
            f"Scalar operator {op} mixes {ca} and {cb} operands ({ta.name} and {tb.name})",
            node,
            hint="write a float literal (e.g. 2.0), or pl.cast the Scalar",
        )
    if op in ("<<", ">>") and ca != "int":
        raise ctx.error(ParserTypeError, f"operator {op} needs integer Scalars", node)
    return BinOp(op, ea, eb, type=ScalarType(_wider(ta, tb)), span=ctx.span(node))


def _dim_like(v: Any) -> bool:
    return isinstance(v, DynVar) or (isinstance(v, int) and not isinstance(v, bool))


def compare(ctx: FunctionContext, op: str, a: Any, b: Any, node: ast.AST) -> Any:
    _reject_containers(ctx, op, [a, b], node)
    if is_number(a) and is_number(b):
        return fold_compare(op, a, b)
    ea, eb, ta, tb = _operands(ctx, op, a, b, node)
    ca, cb = category(ta), category(tb)
    if ca != cb or (ca == "bool" and op not in ("==", "!=")):
        raise ctx.error(
            ParserTypeError,
            f"comparison {op} needs Scalars of one category, but got {ta.name} and {tb.name}",
            node,
            hint="write a float literal (e.g. 2.0), or pl.cast the Scalar",
        )
    return Compare(op, ea, eb, type=ScalarType(dtypes.BOOL), span=ctx.span(node))


def unary(ctx: FunctionContext, node: ast.UnaryOp, value: Any) -> Any:
    if isinstance(node.op, ast.UAdd):
        return value
    if isinstance(node.op, ast.Invert):
        raise ctx.error(ParserSyntaxError, "operator ~ is not supported on Scalars", node)
    op = "not" if isinstance(node.op, ast.Not) else "-"
    if isinstance(value, Expr) and isinstance(value.type, (TileType, TensorType)):
        raise ctx.error(
            InvalidOperationError,
            f"operator {op} is not defined on tiles and tensors",
            node,
            hint=f"pl.neg({ctx.text(node.operand)})" if op == "-" else None,
        )
    if is_number(value):
        return (not value) if op == "not" else -value
    expr = as_scalar_expr(value, ctx.span(node))
    if expr is None:
        raise ctx.error(ParserTypeError, f"operator {op} needs a Scalar operand", node)
    dtype = expr.type.dtype  # type: ignore[union-attr]
    if (op == "not") != (dtype.kind == "bool"):
        raise ctx.error(
            ParserTypeError,
            f"operator {op} does not apply to a {dtype.name} Scalar",
            node,
        )
    return UnaryOp(op, expr, type=ScalarType(dtype), span=ctx.span(node))


def retype_index(value: Any, ann: Any, span: Any = None) -> Any:
    """An INDEX Scalar under an integer `pl.Scalar[...]` annotation takes the annotated dtype.

    PyPTO lets the annotation override an INDEX value's type (`n: pl.Scalar[pl.INT64] =
    pl.tensor.dim(x, 0)`); the value converts as a C integer cast would.
    """
    if not (isinstance(ann, ScalarType) and ann.dtype.is_int and ann.dtype.name != "INDEX"):
        return value
    if isinstance(value, DynVar):
        value = as_scalar_expr(value, span)
    if isinstance(value, Expr) and isinstance(value.type, ScalarType) \
            and value.type.dtype.name == "INDEX":
        return ScalarCast(value, ann.dtype, type=ScalarType(ann.dtype), span=span)
    return value
