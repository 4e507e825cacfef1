# SPDX-License-Identifier: Apache-2.0
"""Functions parsed from outside a `@pl.program` class: `@pl.inline` and `@pl.jit` bodies.

A `Template` is a plain Python function's `def` read from its file (kept at its
real line numbers, so diagnostics point at the user's lines) together with the
namespace its body resolves names in (the function's globals overlaid with its
closure cells, docs/design/language.md §7).  Its parameters may be generic (a bare `pl.Tensor`,
or unannotated for an inline function): the parser specialises the body per call
site from the argument types (language/funcalls.py).

`specialize_body` is PyPTO's JIT rewrite of a body once its parameter types are
known: ``x.shape`` / ``x.shape[i]`` / ``x.dtype`` of a parameter become constants
(a dynamic dim stays its `pl.dynamic` object), ``x.bind_dynamic(...)`` statements
are dropped, and scalar parameters given a value read as that value.
"""

from __future__ import annotations

import ast
import copy
import inspect
import sys
from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.ir.types import TensorType, TileType, Type
from pytest_pypto.language.context import SourceMap
from pytest_pypto.language.sources import current_lines, source_of

__all__ = ["Template", "function_template", "specialize_body", "with_self"]


@dataclass(eq=False)
class Template:
    """One function body the parser may specialise, splice or add to a program."""

    name: str
    kind: str  # a FunctionType value: "Inline", "InCore", "Opaque", "Orchestration"
    node: ast.FunctionDef  # the user's def, without `self`
    source: SourceMap
    namespace: dict[str, Any]
    origin: Any = None  # the Python object it was made from (for messages)
    strict_ssa: bool = False
    extra: dict[str, Any] = field(default_factory=dict)  # options (e.g. jit level=)


# file -> (the linecache lines the index was built from, {first line: FunctionDef})
_DEFS: dict[str, tuple[list[str], dict[int, ast.FunctionDef]]] = {}


def _defs_of(file: str) -> tuple[list[str], dict[int, ast.FunctionDef]] | None:
    lines = current_lines(file)
    if not lines:
        return None
    cached = _DEFS.get(file)
    if cached is not None and cached[0] is lines:
        return cached
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError:
        return None
    defs: dict[int, ast.FunctionDef] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef):
            first = min([d.lineno for d in node.decorator_list] + [node.lineno])
            defs.setdefault(first, node)
            defs.setdefault(node.lineno, node)
    _DEFS[file] = (lines, defs)
    return _DEFS[file]


def enclosing_locals(fn: Any, depth: int = 12) -> dict[str, Any]:
    """A snapshot of the locals of the function whose body defines ``fn`` (called while
    ``fn`` is being decorated; {} for a module-level ``fn``).

    Python resolves a nested function's annotations in that enclosing scope when the
    ``def`` runs, and such names (``n`` in ``x: pl.Tensor[[n, 64], pl.FP32]`` inside a
    kernel factory ``make(n)``) are no closure cells of ``fn``: the parser, which reads
    annotations from the source later, needs them from here.  The defining frame is
    the nearest caller whose code holds ``fn``'s code object among its constants.
    """
    code = getattr(fn, "__code__", None)
    frame = sys._getframe(1)
    for _ in range(depth):
        if frame is None or code is None:
            break
        if code in frame.f_code.co_consts:
            if frame.f_code.co_flags & inspect.CO_OPTIMIZED:  # a function body
                return dict(frame.f_locals)
            break  # a module or class body: its names are globals (or the class's own)
        frame = frame.f_back
    return {}


def namespace_of(fn: Any, enclosing: dict[str, Any] | None = None) -> dict[str, Any]:
    """What the body of ``fn`` resolves names in, as Python would: its globals, then
    the enclosing function's locals (`enclosing_locals`), then its closure cells."""
    namespace = dict(getattr(fn, "__globals__", {}))
    namespace.update(enclosing or {})
    code = fn.__code__
    for name, cell in zip(code.co_freevars, fn.__closure__ or ()):
        try:
            namespace[name] = cell.cell_contents
        except ValueError:  # an empty cell: the name is not bound yet
            pass
    return namespace


def function_template(
    fn: Any, kind: str, what: str, enclosing: dict[str, Any] | None = None
) -> Template:
    """The `Template` of the Python function ``fn`` (``what``: the decorator, for messages;
    ``enclosing``: `enclosing_locals` taken when it was decorated)."""
    code = getattr(fn, "__code__", None)
    if code is None:
        raise TypeError(f"{what} decorates a Python function, not {fn!r}")
    file = code.co_filename
    found = _defs_of(file)
    node = found[1].get(code.co_firstlineno) if found is not None else None
    if node is not None and node.name == fn.__name__:
        lines = found[0]  # type: ignore[index]
        source = SourceMap(file, 1, 0, tuple(line.rstrip("\n") for line in lines))
    else:
        _, node, source = source_of(fn, ast.FunctionDef, what, "function", "function", file)
    return Template(fn.__name__, kind, node, source, namespace_of(fn, enclosing), origin=fn)


def with_self(node: ast.FunctionDef) -> ast.FunctionDef:
    """A shallow copy of ``node`` taking `self` first, as a program method does."""
    out = copy.copy(node)
    out.args = copy.copy(node.args)
    this = ast.arg("self")
    ast.copy_location(this, node)
    out.args.args = [this, *node.args.args]
    return out


def _mentions(node: ast.FunctionDef, names: set[str]) -> bool:
    """Whether the body reads ``p.shape`` / ``p.dtype`` / ``p.bind_dynamic`` or a name of ``names``."""
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and n.attr in ("shape", "dtype", "bind_dynamic"):
            return True
        if isinstance(n, ast.Name) and n.id in names:
            return True
    return False


def _bound_in_body(node: ast.FunctionDef) -> set[str]:
    return {
        n.id for stmt in node.body for n in ast.walk(stmt)
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


class _Specializer(ast.NodeTransformer):
    def __init__(self, types: dict[str, Type], constants: dict[str, Any],
                 namespace: dict[str, Any]) -> None:
        self.types = types
        self.constants = constants
        self.namespace = namespace

    def _value(self, value: Any, like: ast.AST) -> ast.expr:
        if isinstance(value, (tuple, list)):
            out: ast.expr = ast.Tuple([self._value(v, like) for v in value], ast.Load())
        elif isinstance(value, (bool, int, float, str)) or value is None:
            out = ast.Constant(value)
        else:  # a dtype or a pl.dynamic dim: through a hidden name of the namespace
            key = f"__pl_jit_{type(value).__name__}_{id(value)}"
            self.namespace[key] = value
            out = ast.Name(key, ast.Load())
        return ast.fix_missing_locations(ast.copy_location(out, like))

    def _shaped(self, node: ast.expr) -> Type | None:
        if isinstance(node, ast.Name):
            t = self.types.get(node.id)
            if isinstance(t, (TensorType, TileType)):
                return t
        return None

    def visit_Attribute(self, node: ast.Attribute) -> ast.expr:
        t = self._shaped(node.value)
        if t is not None and node.attr == "shape":
            return self._value(tuple(t.shape), node)  # type: ignore[union-attr]
        if t is not None and node.attr == "dtype":
            return self._value(t.dtype, node)  # type: ignore[union-attr]
        return self.generic_visit(node)  # type: ignore[return-value]

    def visit_Name(self, node: ast.Name) -> ast.expr:
        if isinstance(node.ctx, ast.Load) and node.id in self.constants:
            return self._value(self.constants[node.id], node)
        return node

    def visit_Expr(self, node: ast.Expr) -> ast.stmt | None:
        call = node.value
        if (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "bind_dynamic"
            and self._shaped(call.func.value) is not None
        ):
            return ast.copy_location(ast.Pass(), node)  # its dims are in the parameter type
        return self.generic_visit(node)  # type: ignore[return-value]


def specialize_body(
    node: ast.FunctionDef,
    types: dict[str, Type],
    namespace: dict[str, Any],
    constants: dict[str, Any] | None = None,
) -> tuple[ast.FunctionDef, dict[str, Any]]:
    """``node`` with its parameters' shapes, dtypes and given scalar values folded in.

    Returns the (possibly unchanged) def and the namespace its body resolves in.
    Names the body rebinds are never replaced (a rebound scalar is a variable).
    """
    constants = dict(constants or {})
    for name in _bound_in_body(node):
        constants.pop(name, None)
    if not _mentions(node, set(constants)):
        return node, namespace
    out_namespace = dict(namespace)
    out = copy.deepcopy(node)
    spec = _Specializer(types, constants, out_namespace)
    out.body = [spec.visit(stmt) for stmt in out.body]
    out.body = [s for s in out.body if s is not None] or [ast.copy_location(ast.Pass(), node)]
    return out, out_namespace
