# SPDX-License-Identifier: Apache-2.0
"""Expressions of a kernel body: each evaluates to an IR `Expr` or a parse-time constant.

Values that are known while parsing (literals, closure constants, dtypes, enum
members, lists of those, arithmetic over them) stay plain Python objects and fold;
everything that exists only at run time is an IR expression.  Constants become
`Const` nodes only where an IR expression is needed.

Depth: left-associative operator chains (`a + b + ... + z`, the shape Python
parses them into) and unary chains are walked iteratively, so their length costs
no recursion.  Any other nesting (operands within operands, calls within calls)
may go MAX_EXPR_DEPTH levels deep; beyond that is a `ParserTypeError` naming the
limit, not Python's RecursionError.  A run-time Scalar expression deeper than
HOIST_DEPTH is given its own Var (`partial`, an Assign before the statement), so
the IR the compiler passes and codegen walk recursively stays shallow however
long the chain in the source.
"""

from __future__ import annotations

import ast
import math
from typing import Any

from pytest_pypto.ir.dtypes import DataType, round_float
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import (
    Assign,
    BinOp,
    Call,
    Compare,
    Const,
    Expr,
    FuncCall,
    ScalarCast,
    Stmt,
    UnaryOp,
    Var,
)
from pytest_pypto.ir.types import DynVar, ScalarType, TensorType, TileType, TupleType, type_str
from pytest_pypto.language import annots, calls, memref, scalars, scheduling, split_aiv
from pytest_pypto.language.arrays import read_element
from pytest_pypto.language.calls import Arg
from pytest_pypto.language.closure import check_value, lookup
from pytest_pypto.language.context import FunctionContext, Unavailable
from pytest_pypto.language.memref import MemRef
from pytest_pypto.language.subscripts import create_tensor, read_subscript
from pytest_pypto.language.surface import (
    ANNOTATION_FORMS,
    ITERATORS,
    SUBMIT_FUNCTIONS,
    AnnotationForm,
    DslFunction,
    OpStub,
    TileView,
    task_dummy,
    task_invalid,
)
from pytest_pypto.language.unsupported import JitFunction, TensorView

_MISSING = object()
# (parser class, AST node class) -> the unbound `_<NodeClass>` method, or None.
_DISPATCH: dict[tuple[type, type], Any] = {}

MAX_EXPR_DEPTH = 100  # nesting levels of one expression (chains excluded, see above)
HOIST_DEPTH = 32  # deepest run-time Scalar expression kept inline in the IR
_SCALAR_TREES = (BinOp, Compare, UnaryOp, ScalarCast)


def deeper_than(expr: Expr, limit: int) -> bool:
    """True if the Scalar operator tree ``expr`` nests more than ``limit`` levels."""
    stack: list[tuple[Expr, int]] = [(expr, 1)]
    while stack:
        e, depth = stack.pop()
        if depth > limit:
            return True
        if isinstance(e, (BinOp, Compare)):
            stack.append((e.lhs, depth + 1))
            stack.append((e.rhs, depth + 1))
        elif isinstance(e, (UnaryOp, ScalarCast)):
            stack.append((e.operand, depth + 1))
    return False


class ExprParser:
    """Evaluates expression ASTs against an environment (name -> Var or constant)."""

    def __init__(
        self, ctx: FunctionContext, env: dict[str, Any], sink: list[Stmt] | None = None
    ) -> None:
        self.ctx = ctx
        self.env = env
        self.sink = sink  # where hoisted call results are assigned

    def hoist(self, value: Any, node: ast.AST) -> Any:
        """Give a nested call result its own Var, so every op call is one Assign."""
        if isinstance(value, (list, tuple)):
            return type(value)(self.hoist(v, node) for v in value)
        if not isinstance(value, (Call, FuncCall)) or self.sink is None:
            return value
        if value.type is None or isinstance(value.type, TupleType):
            raise self.ctx.error(
                ParserTypeError, "this call produces no single value to pass on", node
            )
        base = value.op.split(".")[-1] if isinstance(value, Call) else value.callee
        var = Var(self.ctx.namer.fresh(base), type=value.type, span=value.span)
        self.sink.append(Assign((var,), value, span=value.span))
        return var

    def shallow(self, value: Any) -> Any:
        """A run-time Scalar expression deeper than HOIST_DEPTH as its own Var."""
        if self.sink is None or not isinstance(value, _SCALAR_TREES):
            return value
        if not deeper_than(value, HOIST_DEPTH):
            return value
        var = Var(self.ctx.namer.fresh("partial"), type=value.type, span=value.span)
        self.sink.append(Assign((var,), value, span=value.span))
        return var

    # ------------------------------------------------------------ dispatch
    def eval(self, node: ast.expr) -> Any:
        key = (type(self), type(node))
        method = _DISPATCH.get(key, _MISSING)
        if method is _MISSING:
            method = _DISPATCH[key] = getattr(type(self), f"_{type(node).__name__}", None)
        if method is None:
            raise self.ctx.error(
                ParserSyntaxError,
                f"{type(node).__name__} expressions are not supported in kernel code",
                node,
            )
        ctx = self.ctx
        if ctx.expr_depth == 0:
            ctx.expr_root = node
        elif ctx.expr_depth >= MAX_EXPR_DEPTH:
            root = ctx.expr_root
            raise ctx.error(
                ParserTypeError,
                f"the expression '{scalars.shown(ctx, root)}' nests more than {MAX_EXPR_DEPTH} "
                "levels deep, over the nesting limit of kernel expressions",
                root,
                hint="name intermediate values (t = ...) to split the expression",
            )
        ctx.expr_depth += 1
        try:
            value = method(self, node)
        finally:
            ctx.expr_depth -= 1
        return self.shallow(value) if isinstance(value, _SCALAR_TREES) else value

    def _Constant(self, node: ast.Constant) -> Any:
        if node.value is Ellipsis or isinstance(node.value, bytes):
            raise self.ctx.error(ParserSyntaxError, "unsupported literal", node)
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            value = self.env[node.id]
            if isinstance(value, Unavailable):
                raise self.ctx.error(ParserTypeError, value.message, node, hint=value.hint)
            return value
        if node.id == "self":
            raise self.ctx.error(
                ParserSyntaxError, "'self' is only valid in self.<function>(...) calls", node
            )
        return lookup(self.ctx, node.id, node)

    def _Attribute(self, node: ast.Attribute) -> Any:
        if isinstance(node.value, ast.Name) and node.value.id == "self":
            raise self.ctx.error(
                ParserTypeError,
                f"self.{node.attr} cannot be read in kernel code: the program class is "
                "never instantiated",
                node,
                hint=f"copy it into a local before @pl.program (e.g. {node.attr} = "
                f"self.{node.attr}) and use {node.attr}",
            )
        base = self.eval(node.value)
        if isinstance(base, Expr):
            raise self.ctx.error(
                InvalidOperationError,
                f"attribute access '.{node.attr}' on a {base.type.kind if base.type else 'value'} "
                "is not supported in kernel code",
                node,
            )
        try:
            value = getattr(base, node.attr)
        except AttributeError as exc:
            raise self.ctx.error(InvalidOperationError, str(exc), node) from None
        return check_value(self.ctx, value, lambda: f"'{self.ctx.text(node)}'", node)

    def _List(self, node: ast.List) -> list[Any]:
        return [self.eval(e) for e in node.elts]

    def _Tuple(self, node: ast.Tuple) -> tuple[Any, ...]:
        return tuple(self.eval(e) for e in node.elts)

    def _BinOp(self, node: ast.BinOp) -> Any:
        # `a + b + c` is BinOp(BinOp(a, b), c): walk down the left spine, then fold
        # upwards, in the order (and with the errors) of the recursive evaluation.
        chain: list[tuple[ast.BinOp, str]] = []
        left: ast.expr = node
        while isinstance(left, ast.BinOp):
            op = scalars.BINOPS.get(type(left.op))
            if op is None:
                raise self.ctx.error(
                    ParserSyntaxError, f"operator {type(left.op).__name__} is not supported",
                    left,
                )
            chain.append((left, op))
            left = left.left
        value = self.eval(left)
        for step, op in reversed(chain):
            value = scalars.binop(self.ctx, op, value, self.eval(step.right), step)
            if step is not node:
                value = self.shallow(value)
        return value

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        chain = [node]
        while isinstance(chain[-1].operand, ast.UnaryOp):
            chain.append(chain[-1].operand)  # type: ignore[arg-type]
        value = self.eval(chain[-1].operand)
        for step in reversed(chain):
            value = scalars.unary(self.ctx, step, value)
            if step is not node:
                value = self.shallow(value)
        return value

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        op = "and" if isinstance(node.op, ast.And) else "or"
        result = self.eval(node.values[0])
        for value in node.values[1:]:
            result = self.shallow(scalars.binop(self.ctx, op, result, self.eval(value), node))
        return result

    def _Compare(self, node: ast.Compare) -> Any:
        if len(node.ops) != 1:
            raise self.ctx.error(
                ParserSyntaxError, "chained comparisons are not supported", node,
                hint="split it: (a < b) and (b < c)",
            )
        op = scalars.CMPOPS.get(type(node.ops[0]))
        if op is None:
            raise self.ctx.error(ParserSyntaxError, "only == != < <= > >= compare Scalars", node)
        left, right = self.eval(node.left), self.eval(node.comparators[0])
        return scalars.compare(self.ctx, op, left, right, node)

    def _Subscript(self, node: ast.Subscript) -> Any:
        base = self.eval(node.value)
        if isinstance(base, MemRef):  # `buf[i % 2]`: a slot of a declared allocation
            return memref.parse_subscript(self, base, node)
        if base is tuple or base in ANNOTATION_FORMS:
            items = self.eval(node.slice)
            form = "Tuple" if base is tuple else base.__name__
            return AnnotationForm(form, items)
        if isinstance(getattr(base, "pl_annotation_form", None), str):  # pld.DistributedTensor
            return base[self.eval(node.slice)]
        if isinstance(base, Expr) and isinstance(base.type, (TileType, TensorType)):
            return read_subscript(self, base, node)
        if isinstance(base, Expr) and getattr(base.type, "kind", None) == "Array":
            return read_element(self, base, node)
        if isinstance(base, (tuple, list)):
            index = self.eval(node.slice)
            if isinstance(index, int):
                try:
                    return base[index]
                except IndexError:
                    raise self.ctx.error(ParserTypeError, "index out of range", node) from None
        raise self.ctx.error(
            ParserSyntaxError, f"cannot subscript {self.ctx.text(node.value)}", node
        )

    # --------------------------------------------------------------- calls
    def args_of(self, node: ast.Call) -> tuple[list[Arg], dict[str, Arg]]:
        pos: list[Arg] = []
        for a in node.args:
            if isinstance(a, ast.Starred):
                raise self.ctx.error(ParserSyntaxError, "*args is not supported", a)
            pos.append(Arg(self.hoist(self.eval(a), a), a))
        kw: dict[str, Arg] = {}
        for k in node.keywords:
            if k.arg is None:
                raise self.ctx.error(ParserSyntaxError, "**kwargs is not supported", k.value)
            kw[k.arg] = Arg(self.hoist(self.eval(k.value), k.value), k.value)
        return pos, kw

    def _Call(self, node: ast.Call) -> Any:
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "self"
        ):
            node, marked = scheduling.peel_no_dep(self, node)
            pos, kw = self.args_of(node)
            called = self.ctx.program.call(self.ctx, func.attr, pos, kw, node, self.sink)
            if marked:
                scheduling.mark_no_dep(self, called, pos, marked)
            return called
        target = self.eval(func)
        if target is MemRef:
            return memref.parse_call(self, node)
        if target is TileView:  # an annotation record (language/annots.py reads it)
            return annots.tile_view(self.ctx, *self.args_of(node), node)
        if target is TensorView:  # likewise, for pl.Tensor[...]
            return annots.tensor_view(self.ctx, *self.args_of(node), node)
        if callable(getattr(target, "pl_template", None)):  # @pl.inline, @pl.jit.* functions
            pos, kw = self.args_of(node)
            return self.ctx.program.call_template(self.ctx, target, pos, kw, node, self.sink)
        if isinstance(target, OpStub) and target.op_name in split_aiv.BOUNDARY_OPS \
                and target.namespace in ("", "tile"):  # the AIV lanes (language/split_aiv.py)
            return split_aiv.boundary_call(self, target.op_name, node)
        if isinstance(target, OpStub):
            pos, kw = self.args_of(node)
            if target.op_name == "cast" and target.namespace == "" and pos:
                if not isinstance(pos[0].value, Expr) or isinstance(pos[0].value.type, ScalarType):
                    return self.scalar_cast(pos, kw, node)
            return calls.op_call(self.ctx, target.namespace, target.op_name, pos, kw, node)
        if target in SUBMIT_FUNCTIONS:  # pl.submit / pl.spmd_submit (language/scheduling.py)
            return scheduling.parse_submit(self, target, node)
        if target is task_dummy:
            return scheduling.parse_task_dummy(self, node)
        if target is task_invalid:
            if node.args or node.keywords:
                raise self.ctx.error(ParserSyntaxError, "pl.system.task_invalid() takes no "
                                     "arguments", node)
            return scheduling.invalid_task_id(self.ctx.span(node))
        if isinstance(target, DslFunction):
            return self.dsl_call(target.name, node)
        if target is DynVar or getattr(target, "__name__", "") == "dynamic":
            raise self.ctx.error(
                ParserSyntaxError, "pl.dynamic(...) must be called outside the kernel", node,
                hint="create it at module level: M = pl.dynamic('M')",
            )
        if isinstance(target, JitFunction):  # a @pl.jit.extern / .host stub (Tier 3)
            raise target.error(self.ctx.span(node))
        raise self.ctx.error(
            ParserSyntaxError, f"'{self.ctx.text(func)}' cannot be called in kernel code", node
        )

    def dsl_call(self, name: str, node: ast.Call) -> Any:
        if name in ITERATORS:
            raise self.ctx.error(
                ParserSyntaxError, f"pl.{name}(...) is only valid as the iterator of a for loop",
                node,
            )
        if name in ("cond", "while_"):
            raise self.ctx.error(
                ParserSyntaxError,
                "pl.cond() can only be the first statement in a pl.while_() loop body"
                if name == "cond" else "pl.while_(...) is only valid as the iterator of a for loop",
                node,
                hint="for (x,) in pl.while_(init_values=(x0,)):\n    pl.cond(x < n)\n    "
                "x_next = pl.yield_(x + 1)",
            )
        if name == "yield_":
            raise self.ctx.error(
                ParserSyntaxError,
                "pl.yield_ must be the last statement of a loop body or an if arm",
                node,
            )
        if name == "func_attr":  # language/func_attrs.py reads the leading ones
            raise self.ctx.error(
                ParserSyntaxError, "pl.func_attr must appear before every other statement of "
                "the function body", node, hint="move it to the top of the body")
        pos, kw = self.args_of(node)
        if name in ("max", "min"):
            if len(pos) != 2 or kw:
                raise self.ctx.error(InvalidOperationError, f"pl.{name} takes (a, b)", node)
            for a in pos:
                if isinstance(a.value, Expr) and isinstance(a.value.type, (TileType, TensorType)):
                    raise self.ctx.error(
                        InvalidOperationError,
                        f"pl.{name} is the Scalar {name}imum, not a tile op",
                        node,
                        hint=f"use pl.{name}imum(a, b) elementwise or pl.row_{name}(x, tmp) "
                        "to reduce",
                    )
            return scalars.binop(self.ctx, name, pos[0].value, pos[1].value, node)
        if name == "const":
            return self.const(pos, kw, node)
        if name == "create_tensor":
            return create_tensor(self, pos, kw, node)
        if name == "static_assert":
            return self.static_assert(pos, node)
        if name == "dump_tag":
            return scheduling.dump_tag(self, pos, kw, node)
        if name == "no_dep":  # outside a kernel call's arguments: the tensor itself
            return scheduling.no_dep_value(self, pos, kw, node)
        if name == "static_print":
            shown = [a.value if not isinstance(a.value, Expr) else repr_expr(a.value) for a in pos]
            print(f"{self.ctx.span(node)}: static_print:", *shown)
            return None
        raise self.ctx.error(ParserSyntaxError, f"pl.{name} cannot be used here", node)

    def const(self, pos: list[Arg], kw: dict[str, Arg], node: ast.Call) -> Const:
        args = [a.value for a in pos] + [kw[k].value for k in ("value", "dtype") if k in kw]
        if len(args) != 2 or not scalars.is_number(args[0]) or not isinstance(args[1], DataType):
            raise self.ctx.error(
                InvalidOperationError, "pl.const takes (value, dtype) with a literal value", node
            )
        value, dtype = args
        if isinstance(value, float) and not dtype.is_float:
            raise self.ctx.error(
                ParserTypeError, f"pl.const({value!r}, pl.{dtype.name}): a float for an int dtype",
                node,
            )
        if dtype.is_float:
            scalars.check_float_fits(value, dtype, self.ctx.span(node))
            value = round_float(float(value), dtype.name)  # the constant its dtype holds
        elif dtype.kind == "bool":
            value = bool(value)
        return scalars.make_const(value, dtype, self.ctx.span(node))

    def scalar_cast(self, pos: list[Arg], kw: dict[str, Arg], node: ast.Call) -> Any:
        # One signature for tensors, tiles and Scalars: (input, target_type, mode="round").
        named = dict(zip(("input", "target_type", "mode"), pos[:3], strict=False))
        extra = [k for k in kw if k not in ("target_type", "mode") or k in named]
        if len(pos) > 3 or extra or ("target_type" not in named and "target_type" not in kw):
            raise self.ctx.error(
                InvalidOperationError,
                "pl.cast takes (input, target_type, mode='round')"
                + (f", but got the keyword {extra[0]}=" if extra else ""),
                node, hint="e.g. pl.cast(n, target_type=pl.FP32)",
            )
        named.update(kw)
        dtype = named["target_type"].value
        mode = named["mode"].value if "mode" in named else "round"
        mode = getattr(mode, "value", mode)
        if mode not in ("round", 2):
            raise self.ctx.error(
                InvalidOperationError,
                f"pl.cast on a Scalar accepts only the default mode, but got mode={mode!r}",
                node,
                hint="drop mode=; Scalar casts use C conversion (float -> int truncates)",
            )
        if not isinstance(dtype, DataType):
            raise self.ctx.error(
                InvalidOperationError, "pl.cast needs a target_type such as pl.FP32", node
            )
        value = pos[0].value
        if scalars.is_number(value):
            if isinstance(value, float) and not math.isfinite(value) and dtype.is_int:
                raise self.ctx.error(
                    ParserTypeError,
                    f"pl.cast({value!r}, pl.{dtype.name}): {value!r} has no {dtype.name} value",
                    node,
                    hint="cast a finite value; an infinity or NaN converts to no integer",
                )
            if dtype.is_float:
                return scalars.make_const(float(value), dtype, self.ctx.span(node))
            if dtype.kind == "bool":
                return scalars.make_const(bool(value), dtype, self.ctx.span(node))
            return scalars.make_const(int(value), dtype, self.ctx.span(node))
        expr = scalars.as_scalar_expr(value, self.ctx.span(node))
        if expr is None:
            raise self.ctx.error(InvalidOperationError, "pl.cast needs a Tile or a Scalar", node)
        return ScalarCast(expr, dtype, type=ScalarType(dtype), span=self.ctx.span(node))

    def static_assert(self, pos: list[Arg], node: ast.Call) -> None:
        if not pos:
            raise self.ctx.error(InvalidOperationError, "pl.static_assert(cond, msg)", node)
        cond = pos[0].value
        if isinstance(cond, Expr):
            raise self.ctx.error(
                ParserTypeError,
                "pl.static_assert needs a condition known at parse time, but got a run-time Scalar",
                pos[0].node,
            )
        if not cond:
            msg = pos[1].value if len(pos) > 1 else ""
            raise self.ctx.error(
                ParserTypeError, f"static_assert failed: {msg}" if msg else "static_assert failed",
                node,
            )
        return None


def repr_expr(expr: Expr) -> str:
    return f"<{type_str(expr.type)}>"

