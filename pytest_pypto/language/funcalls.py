# SPDX-License-Identifier: Apache-2.0
"""`self.f(args...)`: calls between functions of a program (DSL.md §1.3).

Arity, and per argument the kind, dtype, rank and static dims are checked against
the callee's signature; `pl.dynamic` dims of the callee unify with the actual dims
(one DynVar binds one dim across all parameters), and the callee's return types
are specialized with those bindings.
"""

from __future__ import annotations

import ast
from typing import Any

from pytest_pypto.ir.errors import InvalidOperationError, ParserTypeError
from pytest_pypto.ir.nodes import Expr, FuncCall, Param
from pytest_pypto.ir.types import DynVar, ScalarType, TensorType, TupleType, Type, type_str
from pytest_pypto.language import scalars
from pytest_pypto.language.calls import Arg
from pytest_pypto.language.context import FunctionContext


def _subst(t: Type, binding: dict[DynVar, Any]) -> Type:
    if isinstance(t, TensorType):
        return TensorType(tuple(binding.get(d, d) if isinstance(d, DynVar) else d
                                for d in t.shape), t.dtype)
    if isinstance(t, TupleType):
        return TupleType(tuple(_subst(i, binding) for i in t.items))
    return t


def check_call(
    ctx: FunctionContext, name: str, params: list[Param], returns: tuple[Type, ...],
    pos: list[Arg], kw: dict[str, Arg], node: ast.Call,
) -> FuncCall:
    """A typed FuncCall, after checking the arguments against ``params``."""
    display = f"self.{name}(...)"
    if len(pos) > len(params):
        raise ctx.error(
            InvalidOperationError,
            f"{display} takes {len(params)} arguments, but {len(pos)} were given",
            node,
        )
    bound: list[Arg | None] = list(pos) + [None] * (len(params) - len(pos))
    index = {p.name: i for i, p in enumerate(params)}
    for key, arg in kw.items():
        if key not in index:
            raise ctx.error(
                InvalidOperationError, f"{display} has no parameter '{key}'", arg.node
            )
        if bound[index[key]] is not None:
            raise ctx.error(InvalidOperationError, f"{display} got two values for '{key}'",
                            arg.node)
        bound[index[key]] = arg
    missing = [p.name for p, a in zip(params, bound) if a is None]
    if missing:
        raise ctx.error(
            InvalidOperationError,
            f"{display} takes {len(params)} arguments; missing {', '.join(map(repr, missing))}",
            node,
        )
    binding: dict[DynVar, Any] = {}
    bound_by: dict[DynVar, str] = {}
    args: list[Expr] = []
    for i, (p, arg) in enumerate(zip(params, bound)):
        assert arg is not None
        where = f"argument '{p.name}' of {display} (position {i})"
        args.append(_check_arg(ctx, p, arg, where, binding, bound_by))
    types = tuple(_subst(t, binding) for t in returns)
    result: Type | None = None
    if len(types) == 1:
        result = types[0]
    elif types:
        result = TupleType(types)
    return FuncCall(name, tuple(args), type=result, span=ctx.span(node))


def _check_arg(
    ctx: FunctionContext, p: Param, arg: Arg, where: str,
    binding: dict[DynVar, Any], bound_by: dict[DynVar, str],
) -> Expr:
    value, node = arg.value, arg.node
    if isinstance(p.type, ScalarType):
        want = p.type.dtype
        if scalars.is_number(value) and not isinstance(value, bool):
            if isinstance(value, float) and not want.is_float:
                raise ctx.error(
                    ParserTypeError, f"{where} is Scalar[{want.name}], but got the float {value!r}",
                    node,
                )
            value = float(value) if want.is_float else value
            return scalars.make_const(value, want, ctx.span(node))
        expr = scalars.as_scalar_expr(value, ctx.span(node))
        if expr is None:
            raise ctx.error(ParserTypeError, f"{where} must be a Scalar, but got {_show(value)}",
                            node)
        got = expr.type.dtype  # type: ignore[union-attr]
        if got is not want:
            raise ctx.error(
                ParserTypeError, f"{where} is Scalar[{want.name}], but got Scalar[{got.name}]",
                node, hint=f"pl.cast({ctx.text(node)}, pl.{want.name})",
            )
        return expr
    assert isinstance(p.type, TensorType)
    if not (isinstance(value, Expr) and isinstance(value.type, TensorType)):
        raise ctx.error(ParserTypeError, f"{where} must be a Tensor, but got {_show(value)}", node)
    got_t: TensorType = value.type
    if got_t.dtype is not p.type.dtype:
        raise ctx.error(
            ParserTypeError,
            f"{where} has dtype {got_t.dtype.name}, but '{p.name}' is declared "
            f"{p.type.dtype.name}",
            node,
        )
    if got_t.rank != p.type.rank:
        raise ctx.error(
            ParserTypeError,
            f"{where} is rank {got_t.rank}, but '{p.name}' is declared rank {p.type.rank}",
            node,
        )
    for d, (want_d, got_d) in enumerate(zip(p.type.shape, got_t.shape)):
        if isinstance(want_d, DynVar):
            prev = binding.get(want_d)
            if prev is None:
                binding[want_d] = got_d
                bound_by[want_d] = p.name
            elif isinstance(prev, int) and isinstance(got_d, int) and prev != got_d:
                raise ctx.error(
                    ParserTypeError,
                    f"pl.dynamic dim {want_d.name} binds to {prev} (argument "
                    f"'{bound_by[want_d]}') and to {got_d} ({where}, dimension {d})",
                    node,
                )
        elif isinstance(got_d, int) and want_d != got_d:
            raise ctx.error(
                ParserTypeError,
                f"{where} has {got_d} in dimension {d}, but '{p.name}' is declared "
                f"{type_str(p.type)}",
                node,
            )
    return value


def _show(value: Any) -> str:
    return type_str(value.type) if isinstance(value, Expr) else repr(value)
