# SPDX-License-Identifier: Apache-2.0
"""Chip scopes written inline in a host orchestrator (docs/design/distributed.md §2).

``with pl.at(level=pl.Level.CHIP, role=pl.Role.Orchestrator):`` inside a host
orchestrator is chip code: its body becomes a chip orchestration of its own,
``<host>_chip_orch_<k>`` (k counts the host's chip scopes), whose parameters are the
names the body reads from the host (typed by the host's annotations: its parameters,
or ``x: pl.Tensor[...] = ...`` assignments) and whose return values are the names it
assigns and the host reads afterwards.  The host itself runs as Python with each scope
replaced by the dispatch ``outs = self.<host>_chip_orch_<k>(ins...)`` (no ``device=``:
the dispatches go round-robin over the ranks).

A tensor the scope writes with ``pl.assemble`` becomes an ``InOut`` parameter unless the
host declares it ``Out``.  A value the host reads after the scope must be such a
written tensor (``out = pl.assemble(buf, ...)``): a chip hands results back only in
the tensors it is given.
"""

from __future__ import annotations

import ast
import copy
from typing import Any

from pytest_pypto.ir.errors import ParserTypeError
from pytest_pypto.language import surface
from pytest_pypto.language.context import FunctionContext, Header
from pytest_pypto.language.expressions import ExprParser

__all__ = ["outline_chip_scopes"]


def outline_chip_scopes(parser: Any, name: str, header: Header) -> ast.FunctionDef | None:
    """Outline host ``name``'s chip scopes into headers of ``parser`` (parsed as
    Orchestration functions with the rest); the host's rewritten definition, or None when
    it has no chip scope."""
    node = header.node
    ctx = parser.context(name, False, set())
    found = [w for w in ast.walk(node) if isinstance(w, ast.With) and _chip_pl(ctx, w) is not None]
    if not found:
        return None
    types = _declared_types(node)
    rewritten = copy.deepcopy(node)
    rewritten.decorator_list = []
    scopes = [w for w in ast.walk(rewritten) if isinstance(w, ast.With)
              and _chip_pl(ctx, w) is not None]
    replacements: dict[int, ast.stmt] = {}
    interfaces = _interfaces(rewritten, scopes)
    for k, scope in enumerate(scopes):
        outlined = f"{name}_chip_orch_{k}"
        inputs, outputs = interfaces[k]
        fn = _orchestration(ctx, outlined, scope, inputs, outputs, types)
        for out, target in _assembled(scope).items():  # an output is the tensor it names
            if out in outputs and out not in types and target in types:
                types[out] = _plain(types[target])
        parser.headers[outlined] = parser.header(fn)
        replacements[id(scope)] = _dispatch(outlined, scope, inputs, outputs)
    _Replace(replacements).visit(rewritten)
    ast.fix_missing_locations(rewritten)
    return rewritten


def _chip_pl(ctx: FunctionContext, node: ast.With) -> ast.expr | None:
    """The ``pl`` expression of ``with pl.at(level=<CHIP>, ...)``; None for other withs."""
    if len(node.items) != 1:
        return None
    call = node.items[0].context_expr
    if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
            and call.func.attr == "at"):
        return None
    for kw in call.keywords:
        if kw.arg == "level":
            level = ExprParser(ctx, {}).eval(kw.value)
            return call.func.value if level is surface.Level.CHIP else None
    return None


def _declared_types(node: ast.FunctionDef) -> dict[str, ast.expr]:
    """name -> annotation: the host's parameters and annotated assignments."""
    found = {a.arg: a.annotation for a in node.args.args if a.annotation is not None}
    for stmt in ast.walk(node):
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            found.setdefault(stmt.target.id, stmt.annotation)
    return found


def _names(nodes: list[ast.stmt], kind: type) -> list[str]:
    seen: list[str] = []
    for stmt in nodes:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Name) and isinstance(n.ctx, kind) and n.id not in seen:
                seen.append(n.id)
    return seen


def _interfaces(host: ast.FunctionDef,
                scopes: list[ast.With]) -> list[tuple[list[str], list[str]]]:
    """(inputs, outputs) of each scope: the names it reads from the host, and the names
    it assigns that the host (or a later scope, as an input) reads after it."""
    inside = {id(n) for scope in scopes for s in scope.body for n in ast.walk(s)}
    outside = [n for n in ast.walk(host) if id(n) not in inside]
    host_names = {a.arg for a in host.args.args} | set(_names(host.body, ast.Store))
    inputs = []
    for scope in scopes:
        assigned = set(_names(scope.body, ast.Store))
        inputs.append([n for n in _names(scope.body, ast.Load)
                       if n in host_names and n not in assigned and n != "self"])
    found = []
    for k, scope in enumerate(scopes):
        later = {n.id for n in outside if isinstance(n, ast.Name)
                 and isinstance(n.ctx, ast.Load) and n.lineno > scope.end_lineno}
        later.update(n for ins in inputs[k + 1:] for n in ins)
        found.append((inputs[k], [n for n in _names(scope.body, ast.Store) if n in later]))
    return found


def _assembled(scope: ast.With) -> dict[str, str]:
    """name assigned in ``scope`` -> the tensor it is ``pl.assemble``d into; and every
    assembled tensor -> itself."""
    written: dict[str, str] = {}
    for n in ast.walk(scope):
        value = n.value if isinstance(n, (ast.Assign, ast.Expr)) else None
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) \
                and value.func.attr == "assemble" and value.args \
                and isinstance(value.args[0], ast.Name):
            target = value.args[0].id
            written[target] = target
            if isinstance(n, ast.Assign) and len(n.targets) == 1 \
                    and isinstance(n.targets[0], ast.Name):
                written[n.targets[0].id] = target
    return written


def _plain(annotation: ast.expr) -> ast.expr:
    """``annotation`` without its ``pl.Out[...]`` / ``pl.InOut[...]``."""
    return annotation.slice if _direction(annotation) else annotation  # type: ignore[attr-defined]


def _direction(annotation: ast.expr) -> str | None:
    if isinstance(annotation, ast.Subscript) and isinstance(annotation.value, ast.Attribute) \
            and annotation.value.attr in ("Out", "InOut"):
        return annotation.value.attr
    return None


def _orchestration(ctx: FunctionContext, name: str, scope: ast.With, inputs: list[str],
                   outputs: list[str], types: dict[str, ast.expr]) -> ast.FunctionDef:
    pl = scope.items[0].context_expr.func.value  # type: ignore[attr-defined]
    written = _assembled(scope)
    params = [ast.arg("self")]
    for name_in in inputs:
        note = types.get(name_in)
        if note is None:
            raise ctx.error(
                ParserTypeError, f"the chip scope reads '{name_in}', whose type the host "
                "orchestrator does not declare", scope,
                hint=f"annotate it where the host makes it: {name_in}: pl.Tensor[[...], dtype] "
                "= ...")
        note = copy.deepcopy(note)
        if name_in in written.values() and _direction(note) is None:
            note = ast.Subscript(ast.Attribute(copy.deepcopy(pl), "InOut", ast.Load()), note,
                                 ast.Load())
        params.append(ast.arg(name_in, note))
    returned = []
    for out in outputs:
        if written.get(out) not in inputs:
            raise ctx.error(
                ParserTypeError, f"the host reads '{out}' after the chip scope, but the scope "
                "does not write it into a tensor the host passes in", scope,
                hint=f"{out} = pl.assemble(<host tensor>, ...) inside the scope")
        returned.append(ast.Name(out, ast.Load()))
    body = list(scope.body)
    if returned:
        value = returned[0] if len(returned) == 1 else ast.Tuple(returned, ast.Load())
        body.append(ast.Return(value))
    decorator = ast.Call(
        ast.Attribute(copy.deepcopy(pl), "function", ast.Load()), [],
        [ast.keyword("type", ast.Attribute(ast.Attribute(copy.deepcopy(pl), "FunctionType",
                                                         ast.Load()),
                                           "Orchestration", ast.Load()))])
    fn = ast.FunctionDef(name=name, body=body, decorator_list=[decorator], returns=None,
                         args=ast.arguments(posonlyargs=[], args=params, vararg=None,
                                            kwonlyargs=[], kw_defaults=[], kwarg=None,
                                            defaults=[]))
    for n in ast.walk(fn):
        if not hasattr(n, "lineno"):
            ast.copy_location(n, scope)
    return fn


def _dispatch(name: str, scope: ast.With, inputs: list[str],
              outputs: list[str]) -> ast.stmt:
    """``outs = self.<name>(inputs...)`` at the scope's place."""
    call = ast.Call(ast.Attribute(ast.Name("self", ast.Load()), name, ast.Load()),
                    [ast.Name(n, ast.Load()) for n in inputs], [])
    if not outputs:
        stmt: ast.stmt = ast.Expr(call)
    else:
        target: ast.expr = ast.Name(outputs[0], ast.Store()) if len(outputs) == 1 else \
            ast.Tuple([ast.Name(o, ast.Store()) for o in outputs], ast.Store())
        stmt = ast.Assign([target], call)
    for n in ast.walk(stmt):
        ast.copy_location(n, scope)
    return stmt


class _Replace(ast.NodeTransformer):
    def __init__(self, by: dict[int, ast.stmt]) -> None:
        self.by = by

    def visit_With(self, node: ast.With) -> Any:
        if id(node) in self.by:
            return self.by[id(node)]
        return self.generic_visit(node)
