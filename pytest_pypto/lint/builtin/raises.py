# SPDX-License-Identifier: Apache-2.0
"""no-broad-raises: `pytest.raises(Exception)` passes on any bug, so name the exception.

Resolved on the ast, so aliases count: `import pytest as pt`, `from pytest import
raises as r`, `builtins.Exception`, `E = Exception`, tuples and names bound to
tuples (`BROAD = (ValueError, Exception)`).
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator, Sequence

from pytest_pypto.lint.framework import FileContext, Violation, check

BROAD = ("Exception", "BaseException")


class _Aliases:
    """Names bound (anywhere in the module) to pytest, pytest.raises, builtins, broad types."""

    def __init__(self, tree: ast.AST, nodes: Iterable[ast.AST] | None = None) -> None:
        self.pytest: set[str] = set()
        self.raises: set[str] = set()
        self.builtins: set[str] = set()
        self.broad: dict[str, str] = {name: name for name in BROAD}
        self.values: dict[str, ast.expr] = {}
        assigns: list[tuple[str, ast.expr]] = []
        for node in ast.walk(tree) if nodes is None else nodes:
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.name == "pytest":
                        self.pytest.add(a.asname or "pytest")
                    elif a.name == "builtins":
                        self.builtins.add(a.asname or "builtins")
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                for a in node.names:
                    if node.module == "pytest" and a.name == "raises":
                        self.raises.add(a.asname or a.name)
                    elif node.module == "builtins" and a.name in BROAD:
                        self.broad[a.asname or a.name] = a.name
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and node.value is not None:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    if isinstance(t, ast.Name):
                        assigns.append((t.id, node.value))
        for _ in range(3):  # follow short alias chains: r = pytest.raises; r2 = r
            for name, value in assigns:
                if self.is_raises(value):
                    self.raises.add(name)
                elif isinstance(value, (ast.Tuple, ast.List, ast.Name, ast.Attribute)):
                    self.values.setdefault(name, value)

    def is_raises(self, func: ast.expr) -> bool:
        if isinstance(func, ast.Name):
            return func.id in self.raises
        return (
            isinstance(func, ast.Attribute)
            and func.attr == "raises"
            and isinstance(func.value, ast.Name)
            and func.value.id in self.pytest
        )

    def broad_in(self, expr: ast.expr | None, depth: int = 0) -> str | None:
        """The broad exception `expr` names (directly or inside a tuple), if any."""
        if expr is None or depth > 8:
            return None
        if isinstance(expr, ast.Name):
            if expr.id in self.broad:
                return self.broad[expr.id]
            return self.broad_in(self.values.get(expr.id), depth + 1)
        if isinstance(expr, ast.Attribute):
            if (
                expr.attr in BROAD
                and isinstance(expr.value, ast.Name)
                and expr.value.id in self.builtins
            ):
                return expr.attr
            return None
        if isinstance(expr, (ast.Tuple, ast.List, ast.Set)):
            for elt in expr.elts:
                found = self.broad_in(elt, depth + 1)
                if found:
                    return found
        if isinstance(expr, ast.Starred):
            return self.broad_in(expr.value, depth + 1)
        return None


def broad_raises(
    tree: ast.AST, nodes: Sequence[ast.AST] | None = None
) -> Iterator[tuple[int, str]]:
    """(line, exception name) of every pytest.raises call given a broad exception
    (``nodes``: the tree's nodes in ast.walk order, when the caller has them listed)."""
    if nodes is None:
        nodes = list(ast.walk(tree))
    aliases = _Aliases(tree, nodes)
    if not (aliases.pytest or aliases.raises):
        return
    for node in nodes:
        if isinstance(node, ast.Call) and aliases.is_raises(node.func):
            arg = node.args[0] if node.args else None
            for kw in node.keywords:
                if kw.arg == "expected_exception":
                    arg = kw.value
            found = aliases.broad_in(arg)
            if found:
                yield node.lineno, found


@check(
    "no-broad-raises",
    files=["*.py"],
    markers=["hygiene"],
    hint="name the exception the code is meant to raise (e.g. pytest.raises(ValueError, "
    "match=...)); a broad one also passes on typos and unrelated bugs",
)
def no_broad_raises(ctx: FileContext) -> Iterator[Violation]:
    tree = ctx.tree  # first: a file that does not parse is reported, never passed
    if b"raises" not in ctx.data:
        return
    for line, name in broad_raises(tree, ctx.nodes):
        yield ctx.violation(line, f"pytest.raises({name}) catches any error")
