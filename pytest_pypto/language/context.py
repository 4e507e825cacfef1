# SPDX-License-Identifier: Apache-2.0
"""Parse state shared by the parser modules: spans, errors, names, the environment.

Spans map AST positions of the dedented class source back to the user's file: the
line is offset by the class's first line, the column by the dedent width (and ast's
UTF-8 byte columns are turned into character columns).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.ir.errors import ParserError
from pytest_pypto.ir.nodes import Param, Span, Unsupported
from pytest_pypto.ir.types import Type


class Tier3Hit(Exception):
    """Internal: a Tier 3 construct was met; the function records it and stops parsing."""

    def __init__(self, construct: str, reason: str, node: ast.AST | None) -> None:
        super().__init__(construct)
        self.construct = construct
        self.reason = reason
        self.node = node


@dataclass
class Unavailable:
    """An env entry for a name that exists but may not be used here (with why)."""

    message: str
    hint: str | None = None


@dataclass
class SourceMap:
    """Where the parsed class source sits in the user's file."""

    file: str
    first_line: int  # file line of the parsed source's line 1
    indent: int  # characters removed by dedent
    file_lines: tuple[str, ...]

    def span(self, node: ast.AST | None) -> Span | None:
        if node is None or not hasattr(node, "lineno"):
            return None
        line = self.first_line + node.lineno - 1
        byte_col = node.col_offset + self.indent
        text = self.file_lines[line - 1] if 0 < line <= len(self.file_lines) else ""
        if text.isascii():  # one byte per character
            col = min(byte_col, len(text))
        else:
            col = len(text.encode("utf-8")[:byte_col].decode("utf-8", errors="ignore"))
        return Span(self.file, line, col + 1)

    def line_of(self, node: ast.AST) -> int:
        return self.first_line + getattr(node, "lineno", 1) - 1


@dataclass
class Namer:
    """Unique SSA names within one function: the user's name first, then name_1, name_2..."""

    taken: set[str] = field(default_factory=set)
    # base -> the suffix fresh(base) last returned; every smaller one was taken then
    # and `taken` only grows, so the search resumes there (a name rebound 16k times
    # would otherwise rescan t_1 ... t_16000 on every rebinding).
    _next: dict[str, int] = field(default_factory=dict, repr=False)

    def fresh(self, base: str) -> str:
        n = self._next.get(base, 0)
        name = f"{base}_{n}" if n else base
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self._next[base] = n
        self.taken.add(name)
        return name


class FunctionContext:
    """Per-function parse state: source map, closure namespace, names, signatures."""

    def __init__(
        self,
        source: SourceMap,
        namespace: dict[str, Any],
        function_name: str,
        program: Any,
        strict_ssa: bool,
        local_names: set[str],
    ) -> None:
        self.source = source
        self.namespace = namespace
        self.function_name = function_name
        self.program = program  # the ProgramParser (signatures of sibling functions)
        self.strict_ssa = strict_ssa
        self.local_names = local_names  # every name the body binds (shadows closures)
        self.namer = Namer()
        self.expr_depth = 0  # ExprParser.eval nesting (expressions.MAX_EXPR_DEPTH)
        self.expr_root: ast.AST | None = None  # the outermost expression being evaluated
        self.block_depth = 0  # BodyParser.block nesting (statements.MAX_BLOCK_DEPTH)
        self.loops: list[Any] = []  # enclosing loops, innermost last (loops.LoopFrame)
        # (block, index) per enclosing block: the statement being parsed is block[index],
        # so what runs after it is block[index + 1:] at every level (loops.used_later).
        self.continuations: list[tuple[list[ast.stmt], int]] = []
        self.last_loads: dict[int, tuple[list[ast.stmt], Any]] = {}  # loops._block_uses
        # One dynamic dim per Scalar Var used as a dim (subscripts.create_tensor).
        self.scalar_dims: dict[int, tuple[Any, Any]] = {}

    def span(self, node: ast.AST | None) -> Span | None:
        return self.source.span(node)

    def error(
        self, cls: type[ParserError], message: str, node: ast.AST | None, hint: str | None = None
    ) -> ParserError:
        """Build (not raise) a parser error pointing at ``node``."""
        return cls(message, self.span(node), hint=hint)

    def text(self, node: ast.AST) -> str:
        """The source text of a node (for hints)."""
        try:
            return ast.unparse(node)
        except Exception:  # pragma: no cover - unparse handles every parsed node
            return "..."

    def written(self, node: ast.AST) -> str:
        """A node's text as the user wrote it (whitespace runs collapsed), else `text`.

        Read from the file by the node's positions, so it needs no recursion over the
        node: a 500-term chain renders as well as `a + b`.
        """
        src = self.source
        try:
            first = src.first_line + node.lineno - 1  # type: ignore[attr-defined]
            last = src.first_line + node.end_lineno - 1  # type: ignore[attr-defined]
            lines = [line.encode("utf-8") for line in src.file_lines[first - 1:last]]
            if len(lines) != last - first + 1 or not lines:
                return self.text(node)
            lines[-1] = lines[-1][: node.end_col_offset + src.indent]  # type: ignore[attr-defined]
            lines[0] = lines[0][node.col_offset + src.indent:]  # type: ignore[attr-defined]
            return " ".join(b" ".join(lines).decode("utf-8").split())
        except (AttributeError, TypeError, UnicodeDecodeError):
            return self.text(node)


def assigned_names(stmts: list[ast.stmt]) -> list[str]:
    """Names a block (re)binds, in first-assignment order; loop variables excluded."""
    names: list[str] = []

    def add(target: ast.expr) -> None:
        if isinstance(target, ast.Name):
            if target.id not in names:
                names.append(target.id)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for elt in target.elts:
                add(elt)
        elif isinstance(target, ast.Subscript) and isinstance(target.value, ast.Name):
            add(target.value)

    def walk(block: list[ast.stmt]) -> None:
        for stmt in block:
            if isinstance(stmt, ast.Assign):
                for t in stmt.targets:
                    add(t)
            elif isinstance(stmt, (ast.AnnAssign, ast.AugAssign)):
                add(stmt.target)
            elif isinstance(stmt, (ast.For, ast.While)):
                walk(stmt.body)
                walk(stmt.orelse)
            elif isinstance(stmt, ast.If):
                walk(stmt.body)
                walk(stmt.orelse)
            elif isinstance(stmt, ast.With):
                walk(stmt.body)

    walk(stmts)
    return names


def all_bound_names(fn: ast.FunctionDef) -> set[str]:
    """Every name a function binds anywhere (params, targets, loop variables)."""
    names = {a.arg for a in fn.args.args}
    # ast.walk's generators dominate parsing time; the same traversal, inlined.
    stack: list[ast.AST] = [fn]
    push, pop, name_t, store_t, node_t = stack.append, stack.pop, ast.Name, ast.Store, ast.AST
    while stack:
        node = pop()
        if type(node) is name_t:
            if type(node.ctx) is store_t:  # type: ignore[attr-defined]
                names.add(node.id)  # type: ignore[attr-defined]
            continue
        for field_name in node._fields:
            value = getattr(node, field_name, None)
            if type(value) is list:
                for item in value:
                    if isinstance(item, node_t):
                        push(item)
            elif isinstance(value, node_t):
                push(value)
    return names


@dataclass
class Header:
    """A function's signature, parsed before any body."""

    node: ast.FunctionDef
    kind: str = "Opaque"
    strict_ssa: bool = False
    params: list[Param] = field(default_factory=list)
    returns: tuple[Type, ...] | None = None  # None: not annotated
    unsupported: Unsupported | None = None
    decorated: bool = False  # carries @pl.function
    # A function from outside the class (language/templates.py): where its body is
    # and what it resolves names in; None: the program's.
    source: SourceMap | None = None
    namespace: dict[str, Any] | None = None
    open_params: bool = False  # parameters may be unannotated / bare pl.Tensor (inlined)
    attrs: dict[str, Any] = field(default_factory=dict)  # a cross-core kernel's attrs= (cross_core.py)
    auto_scope: bool = True  # False: the body places its AUTO pl.scope()s (scheduling.py)
    role: str | None = None  # a host function's pl.Role name (distributed_host.py)
