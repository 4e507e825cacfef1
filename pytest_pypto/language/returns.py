# SPDX-License-Identifier: Apache-2.0
"""`return` inside `if` arms (docs/design/language.md §17).

A function body may leave early: ``if c: ...; return a`` followed by more statements.
Before the body is parsed, its statements are reshaped so that every `return` ends a
path: the statements after such an `if` move into the arms that do not return, then
each `return v` becomes an assignment to a hidden name and one `return` of that name
ends the body.  The `if` then merges the returned values like any rebound name.  A
`return` inside a loop body is refused at its line.
"""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING

from pytest_pypto.ir.errors import ParserSyntaxError

if TYPE_CHECKING:
    from pytest_pypto.language.context import FunctionContext

__all__ = ["lift"]


def _returns_inside(stmts: list[ast.stmt]) -> bool:
    """Whether a `return` sits in an `if` arm among ``stmts`` (not in nested defs)."""
    for s in stmts:
        if isinstance(s, ast.If) and (_returns_inside(s.body) or _returns_inside(s.orelse)
                                      or _any_return(s.body + s.orelse)):
            return True
    return False


def _any_return(stmts: list[ast.stmt]) -> bool:
    return any(isinstance(s, ast.Return) for s in stmts)


def _always_returns(stmts: list[ast.stmt]) -> bool:
    if not stmts:
        return False
    last = stmts[-1]
    if isinstance(last, ast.Return):
        return True
    return isinstance(last, ast.If) and _always_returns(last.body) \
        and _always_returns(last.orelse)


def _check_loops(ctx: FunctionContext, stmts: list[ast.stmt]) -> None:
    for s in stmts:
        if isinstance(s, (ast.For, ast.While)):
            for sub in ast.walk(s):
                if isinstance(sub, ast.Return):
                    raise ctx.error(
                        ParserSyntaxError,
                        "return inside a loop body is not supported: a kernel leaves a "
                        "loop with break", sub,
                        hint="break out of the loop and return after it",
                    )
        if isinstance(s, ast.If):
            _check_loops(ctx, s.body)
            _check_loops(ctx, s.orelse)
        elif isinstance(s, ast.With):
            _check_loops(ctx, s.body)


def _merge(ctx: FunctionContext, stmts: list[ast.stmt]) -> list[ast.stmt]:
    """``stmts`` with every `return` at the end of a path."""
    out: list[ast.stmt] = []
    for i, s in enumerate(stmts):
        rest = stmts[i + 1:]
        if isinstance(s, ast.Return):
            if rest:
                raise ctx.error(
                    ParserSyntaxError, "this statement is unreachable: it follows a return "
                    "in the same block", rest[0], hint="remove it",
                )
            out.append(s)
            return out
        if isinstance(s, ast.If) and (_any_return(s.body + s.orelse)
                                      or _returns_inside(s.body + s.orelse)):
            body = s.body if _always_returns(s.body) else s.body + rest
            orelse = s.orelse if _always_returns(s.orelse) else s.orelse + copy.deepcopy(rest)
            new = ast.If(test=s.test, body=_merge(ctx, body), orelse=_merge(ctx, orelse))
            out.append(ast.copy_location(new, s))
            return out
        out.append(s)
    return out


def _returns(stmts: list[ast.stmt]) -> list[ast.Return]:
    found: list[ast.Return] = []
    for s in stmts:
        if isinstance(s, ast.Return):
            found.append(s)
        elif isinstance(s, ast.If):
            found += _returns(s.body) + _returns(s.orelse)
    return found


def _rewrite(stmts: list[ast.stmt], names: list[str]) -> list[ast.stmt]:
    """Tail returns become assignments to ``names`` (a bare `pass` when there are none)."""
    if not stmts:
        return stmts
    last = stmts[-1]
    if isinstance(last, ast.Return):
        if not names:
            new: ast.stmt = ast.Pass()
        else:
            value = last.value
            target: ast.expr = ast.Name(id=names[0], ctx=ast.Store()) if len(names) == 1 \
                else ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Store()) for n in names],
                               ctx=ast.Store())
            new = ast.Assign(targets=[target], value=value)
            ast.copy_location(target, last)
            for elt in getattr(target, "elts", ()):
                ast.copy_location(elt, last)
        return stmts[:-1] + [ast.copy_location(new, last)]
    if isinstance(last, ast.If):
        new_if = ast.If(test=last.test, body=_rewrite(last.body, names) or [ast.Pass()],
                        orelse=_rewrite(last.orelse, names))
        return stmts[:-1] + [ast.copy_location(new_if, last)]
    return stmts


def _arity(ret: ast.Return) -> int:
    if ret.value is None:
        return 0
    return len(ret.value.elts) if isinstance(ret.value, ast.Tuple) else 1


def lift(ctx: FunctionContext, stmts: list[ast.stmt]) -> list[ast.stmt]:
    """A function body whose returns inside `if` arms are made one final `return`."""
    _check_loops(ctx, stmts)
    if not _returns_inside(stmts):
        return stmts
    merged = _merge(ctx, stmts)
    rets = _returns(merged)
    arity = {_arity(r) for r in rets}
    if 0 in arity and len(arity) > 1:
        bad = next(r for r in rets if r.value is None)
        raise ctx.error(ParserSyntaxError, "this return gives no value, but another return "
                        "of the function does", bad, hint="return a value on every path")
    count = max(arity)
    if count and not _always_returns(merged):
        raise ctx.error(ParserSyntaxError, "a path through this if reaches the end of the "
                        "function without a return", merged[-1],
                        hint="end every path with return <value>")
    names = []
    for k in range(count):
        name, n = f"ret{k}", 0
        while name in ctx.local_names:
            n += 1
            name = f"ret{k}_{n}"
        ctx.local_names.add(name)
        names.append(name)
    body = _rewrite(merged, names)
    if not names:
        return body
    first = rets[0]
    value: ast.expr = ast.Name(id=names[0], ctx=ast.Load()) if count == 1 else \
        ast.Tuple(elts=[ast.Name(id=n, ctx=ast.Load()) for n in names], ctx=ast.Load())
    for node in [value, *getattr(value, "elts", ())]:
        ast.copy_location(node, first)
    return body + [ast.copy_location(ast.Return(value=value), first)]
