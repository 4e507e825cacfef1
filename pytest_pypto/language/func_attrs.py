# SPDX-License-Identifier: Apache-2.0
"""`pl.func_attr({...})`: a function's attributes, declared first in its body
(docs/design/language.md §23).

Every `pl.func_attr` call precedes the body's other statements (a docstring may come
first); calls merge, and a key declared twice (in two calls, one dict, or the decorator's
``attrs=`` and a call) is an error naming it.  Keys are string literals; a bare name as a
value is a parameter of the function (its `Param`), anything else a Python constant.
``auto_scope`` and ``external_source`` stay on the decorator (they are read before the
body), and ``core`` is the toolchain's own (a cross-core kernel's role).  An AIC / AIV /
Group function takes the keys its ``attrs=`` takes (language/cross_core.py); on any other
function the attributes are compiler hints recorded in ``Function.attrs``: the simulated
program computes the same with or without them.
"""

from __future__ import annotations

import ast
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.errors import ParserSyntaxError
from pytest_pypto.language import cross_core, surface

if TYPE_CHECKING:
    from pytest_pypto.language.context import Header
    from pytest_pypto.language.statements import BodyParser

__all__ = ["prologue"]

_DECORATOR_ONLY = ("auto_scope", "external_source", "core")


def _is_func_attr(bp: BodyParser, stmt: ast.stmt) -> bool:
    if not (isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Call)):
        return False
    try:
        return bp.ep.eval(stmt.value.func) is surface.func_attr
    except Exception:  # noqa: BLE001 - not ours: the statement's own parse reports it
        return False


def prologue(bp: BodyParser, header: Header) -> list[ast.stmt]:
    """Read the leading `pl.func_attr` calls of ``header``'s body into ``bp.ctx.attrs``
    (the decorator's attrs merged with them); the rest of the body."""
    body = list(header.node.body)
    start = 1 if body and isinstance(body[0], ast.Expr) and isinstance(
        getattr(body[0], "value", None), ast.Constant) and isinstance(body[0].value.value, str) \
        else 0
    end = start
    while end < len(body) and _is_func_attr(bp, body[end]):
        end += 1
    if end == start:
        return body
    attrs = dict(header.attrs)
    for stmt in body[start:end]:
        _declare(bp, header, stmt.value, attrs)  # type: ignore[attr-defined]
    bp.ctx.attrs = attrs
    return body[:start] + body[end:]


def _declare(bp: BodyParser, header: Header, call: ast.Call, attrs: dict[str, Any]) -> None:
    ctx = bp.ctx
    if call.keywords or len(call.args) != 1:
        raise ctx.error(ParserSyntaxError, "pl.func_attr takes exactly one positional dict "
                        "argument", call, hint='pl.func_attr({"key": value})')
    node = call.args[0]
    if not isinstance(node, ast.Dict):
        raise ctx.error(ParserSyntaxError, "pl.func_attr's argument must be a dict literal",
                        node, hint='pl.func_attr({"key": value})')
    seen: set[str] = set()
    for key_node, value_node in zip(node.keys, node.values):
        if not (isinstance(key_node, ast.Constant) and isinstance(key_node.value, str)):
            raise ctx.error(ParserSyntaxError, "a pl.func_attr key must be a string literal",
                            key_node or node, hint='pl.func_attr({"key": value})')
        key = key_node.value
        if key in _DECORATOR_ONLY:
            raise ctx.error(
                ParserSyntaxError, f"'{key}' cannot be set with pl.func_attr"
                + (": it is read before the body; give it to @pl.function(...)"
                   if key != "core" else ": the function type sets it"), key_node)
        if key in attrs or key in seen:
            raise ctx.error(ParserSyntaxError, f"Duplicate function attribute '{key}': each "
                            "attribute may be declared only once.", key_node)
        seen.add(key)
        if cross_core.is_cross_core(header):
            one = ast.copy_location(ast.Dict([key_node], [value_node]), node)
            record = SimpleNamespace(attrs=attrs, kind=header.kind)
            cross_core.function_attrs(ctx, bp.ep, one, record)  # type: ignore[arg-type]
            continue
        attrs[key] = _value(bp, header, value_node)


def _value(bp: BodyParser, header: Header, node: ast.expr) -> Any:
    if isinstance(node, ast.Name):
        for p in header.params:
            if p.name == node.id:
                return p
        raise bp.ctx.error(
            ParserSyntaxError, f"pl.func_attr value '{node.id}' names no parameter of "
            f"'{header.node.name}': a bare name is always a parameter", node,
            hint="write a Python constant as a literal")
    value = bp.ep.eval(node)
    return value.name if isinstance(value, surface.SplitMode) else value
