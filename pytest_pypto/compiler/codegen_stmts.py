# SPDX-License-Identifier: Apache-2.0
"""Python codegen, shared part: names, constants, scalar expressions and statements.

`Emitter` turns the DSL's statements (assignments, `pl.range`/`while` loops with
carried values, `if` with results, break/continue, return) and scalar expressions into
Python lines, recording per line the user statement it comes from (``SPANS``) and the
Scalars it reads (``SCALARS``); `compiler.codegen` subclasses it for kernels (op calls
through ``bind``) and the orchestration (``rt`` calls).  Scalar arithmetic keeps the
DSL's semantics: int `/` truncates toward zero, `//` and `%` floor, FP32 steps round.
"""

from __future__ import annotations

import enum
import keyword
import math
import re
from typing import Any

from pytest_pypto.compiler.walk import stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import CompileError
from pytest_pypto.ir.types import DynExpr, DynVar, ScalarType, TensorType

RESERVED = frozenset({"make", "bind", "rt", "range", "int", "float", "bool", "max", "min", "abs"})
UNARY = {"-": "-", "neg": "-", "USub": "-", "not": "not ", "Not": "not ", "~": "~", "Invert": "~"}


def _identifier(name: str) -> str:
    """A valid Python identifier made from a user name, avoiding the helpers' names."""
    # an ASCII identifier has no \W character: the common case skips the regex
    base = name if name.isascii() and name.isidentifier() else re.sub(r"\W", "_", name) or "v"
    if base[0].isdigit() or base.startswith("_") or keyword.iskeyword(base) or base in RESERVED:
        base = "v_" + base.lstrip("_")
    return base


_BASES: dict[str, str] = {}  # user name -> `_identifier(name)`


class Names:
    """User names -> distinct, valid Python identifiers that avoid the helpers' names."""

    def __init__(self) -> None:
        self.map: dict[str, str] = {}
        self.used: set[str] = set()

    def __call__(self, name: str) -> str:
        got = self.map.get(name)
        return got if got is not None else self.fresh(name, name)

    def fresh(self, key: str, name: str) -> str:
        """The identifier of ``key``, made from ``name`` the first time ``key`` is seen."""
        got = self.map.get(key)
        if got is not None:
            return got
        base = _BASES.get(name)
        if base is None:
            base = _identifier(name)
            if len(_BASES) < 8192:  # (user names: a bounded memo across compiles)
                _BASES[name] = base
        candidate, i = base, 1
        while candidate in self.used:
            i += 1
            candidate = f"{base}_{i}"
        self.used.add(candidate)
        self.map[key] = candidate
        return candidate


def py_const(value: Any, dtypes: set[str]) -> str:
    """A static value as Python source (DataTypes by their imported name)."""
    if type(value) is int or type(value) is str:
        return repr(value)
    if isinstance(value, DataType):
        dtypes.add(value.name)
        return value.name
    if isinstance(value, enum.Enum):
        return repr(value.value if isinstance(value.value, str) and value.name == value.value else value.name)
    if isinstance(value, float):
        if math.isnan(value):
            return "float('nan')"
        if math.isinf(value):
            return "float('inf')" if value > 0 else "float('-inf')"
        return repr(value)
    if isinstance(value, (tuple, list)):
        items = [py_const(v, dtypes) for v in value]
        return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
    return repr(value)


_PLAIN = frozenset({int, float, bool, str, type(None)})  # static values: py_const


class Emitter:
    """Shared statement and scalar-expression emission; subclasses emit op calls."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.spans: list[n.Span | None] = []  # per line of ``lines``: the user statement
        self.scalars: list[tuple[tuple[str, str], ...]] = []  # per line: Scalars it reads
        self.span: n.Span | None = None
        self.reads: tuple[tuple[str, str], ...] = ()
        self.names = Names()
        self.dtypes: set[str] = set()
        self.dyn_sources: dict[DynVar, tuple[str, int]] = {}  # -> (param local, axis)
        self.dyn_used: dict[DynVar, str] = {}  # DynVars read in the body -> their local
        self.loop_vars: list[tuple[n.Var, ...]] = []  # enclosing loops' iteration variables

    def emit(self, depth: int, text: str) -> None:
        self.lines.append("    " * depth + text)
        self.spans.append(self.span)
        self.scalars.append(self.reads)

    def bind_params(self, fn: n.Function) -> list[str]:
        """Parameter locals, and where each dynamic dim of their shapes can be read."""
        params = []
        for p in fn.params:
            local = self.names(p.name)
            params.append(local)
            if isinstance(p.type, TensorType):
                for axis, d in enumerate(p.type.shape):
                    if isinstance(d, DynVar) and d not in self.dyn_sources:
                        self.dyn_sources[d] = (local, axis)
        return params

    def dyn_local(self, d: DynVar, span: n.Span | None = None) -> str:
        local = self.dyn_used.get(d)
        if local is None and d not in self.dyn_sources and isinstance(d, DynExpr):
            parts = [p if isinstance(p, int) else self.dyn_local(p, span) for p in (d.lhs, d.rhs)]
            return f"({parts[0]} {d.op} {parts[1]})"  # a composite dim from its parts
        if local is None:
            if d not in self.dyn_sources and not self.solve_dyn(d):
                raise CompileError(
                    f"dynamic dimension '{d.name}' is used as a value, but no tensor parameter "
                    f"of this function has it in its shape",
                    span or self.span,
                    hint=f"pass a tensor whose annotation uses {d.name}, or use a Scalar "
                    "parameter for the value",
                )
            local = self.names.fresh(f"\0dyn{d.uid}", d.name)
            self.dyn_used[d] = local
        return local

    def solve_dyn(self, d: DynVar) -> bool:
        """Read ``d`` off a parameter dim ``d * k``, ``d + k`` or ``d - k`` (PyPTO's
        composite dims) when no parameter dim is ``d`` itself."""
        for e, (local, axis) in list(self.dyn_sources.items()):
            if not isinstance(e, DynExpr) or e.op not in ("*", "+", "-"):
                continue
            for var, k, var_left in ((e.lhs, e.rhs, True), (e.rhs, e.lhs, False)):
                if var is d and isinstance(k, int) and not (e.op == "*" and k == 0):
                    src = self.dyn_binding(local, axis)
                    if e.op == "*":
                        code = f"{src} // {k}"
                    elif e.op == "+":
                        code = f"{src} - {k}"
                    else:
                        code = f"{src} + {k}" if var_left else f"{k} - {src}"
                    self.dyn_sources[d] = (f"({code})", -1)
                    return True
        return False

    def dyn_binding(self, local: str, axis: int) -> str:
        """Source of one dynamic dim read from a parameter (kernels: numpy views)."""
        return f"{local}.shape[{axis}]"

    def prepend_dyn_bindings(self, depth: int, span: n.Span | None) -> None:
        """Bind the dynamic dims the body used, at the top of the function."""
        lines = [
            "    " * depth + f"{local} = {self._dyn_source(d)}"
            for d, local in self.dyn_used.items()
        ]
        self.lines[:0] = lines
        self.spans[:0] = [span] * len(lines)
        self.scalars[:0] = [()] * len(lines)

    def _dyn_source(self, d: DynVar) -> str:
        local, axis = self.dyn_sources[d]
        return local if axis == -1 else self.dyn_binding(local, axis)  # -1: solve_dyn's code

    def tables(self, first_line: int) -> list[str]:
        """The trailing ``SPANS``/``SCALARS`` tables; ``first_line``: the module line of
        ``lines[0]``."""
        spans, scalars = [], []
        shown: dict[int, str] = {}  # id(span or reads) -> its repr: lines of one statement share them
        for i, (span, reads) in enumerate(zip(self.spans, self.scalars)):
            if span is not None:
                text = shown.get(id(span))
                if text is None:
                    text = shown[id(span)] = repr((span.file, span.line, span.col))
                spans.append(f"    {first_line + i}: {text},")
            if reads:
                text = shown.get(id(reads))
                if text is None:
                    text = shown[id(reads)] = repr(reads)
                scalars.append(f"    {first_line + i}: {text},")
        return ["SPANS = {", *spans, "}", "SCALARS = {", *scalars, "}", ""]

    # ---- expressions
    def expr(self, e: Any) -> str:
        t = type(e)  # the common node types first, by exact type (no subclasses exist)
        if t is n.Var:  # (a known name straight from the map: most reads)
            return self.names.map.get(e.name) or self.names(e.name)
        if t is n.Call or t is n.FuncCall:
            return self.call(e)
        if t is n.Const:
            return py_const(e.value, self.dtypes)
        if t is tuple or t is list:  # an index list
            items = [self.expr(v) for v in e]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        if t in _PLAIN:
            return py_const(e, self.dtypes)
        return self._expr(e)

    def _expr(self, e: Any) -> str:
        if isinstance(e, n.Var):
            return self.names(e.name)
        if isinstance(e, n.DynDim):
            return self.dyn_local(e.var, e.span)
        if isinstance(e, DynVar):
            return self.dyn_local(e)
        if isinstance(e, n.Const):
            return py_const(e.value, self.dtypes)
        if isinstance(e, (n.Call, n.FuncCall)):
            return self.call(e)
        if isinstance(e, n.BinOp):
            a, b = self.expr(e.lhs), self.expr(e.rhs)
            if e.op in ("max", "min"):
                return f"{e.op}({a}, {b})"
            if e.op == "/":
                category = _category(e)
                if category == "float":
                    return _rounded(e, f"({a} / {b})")
                return f"_idiv({a}, {b})" if category == "int" else f"_div({a}, {b})"
            return _rounded(e, f"({a} {e.op} {b})")
        if isinstance(e, n.Compare):
            return f"({self.expr(e.lhs)} {e.op} {self.expr(e.rhs)})"
        if isinstance(e, n.UnaryOp):
            return f"({UNARY.get(e.op, e.op)}{self.expr(e.operand)})"
        if isinstance(e, n.ScalarCast):
            dt = e.dtype
            if dt.is_float:
                return f"_round_float(float({self.expr(e.operand)}), {dt.name!r})"
            conv = "bool" if dt.name == "BOOL" else "int"
            return f"{conv}({self.expr(e.operand)})"
        if isinstance(e, (tuple, list)):
            items = [self.expr(v) for v in e]
            return "(" + ", ".join(items) + ("," if len(items) == 1 else "") + ")"
        return py_const(e, self.dtypes)

    def call(self, e: n.Expr) -> str:
        raise NotImplementedError

    # ---- statements
    def body(self, stmts: list[n.Stmt], depth: int, yield_to: tuple[n.Var, ...] = ()) -> None:
        start = len(self.lines)
        for s in stmts:
            saved = self.span, self.reads
            self.span, self.reads = _user_span(s) or self.span, self.scalar_reads(s)
            self.stmt(s, depth, yield_to)
            self.after_stmt(s, depth)
            self.span, self.reads = saved
        if len(self.lines) == start:
            self.emit(depth, "pass")

    def after_stmt(self, s: n.Stmt, depth: int) -> None:
        """Hook run after each statement's lines (kernels drop dead tiles here)."""

    def stmt(self, s: n.Stmt, depth: int, yield_to: tuple[n.Var, ...]) -> None:
        if isinstance(s, n.Assign):
            ts = s.targets
            targets = self.names(ts[0].name) if len(ts) == 1 else ", ".join(
                [self.names(t.name) for t in ts])
            self.emit(depth, f"{targets} = {self.expr(s.value)}")
        elif isinstance(s, n.ExprStmt):
            self.emit(depth, self.expr(s.expr))
        elif isinstance(s, n.Yield):
            if yield_to:
                lhs = ", ".join(self.names(v.name) for v in yield_to)
                rhs = ", ".join(self.expr(v) for v in s.values)
                self.emit(depth, f"{lhs} = {rhs}")
        elif isinstance(s, n.For):
            for var, init in s.carried:
                self.emit(depth, f"{self.names(var.name)} = {self.expr(init)}")
            if isinstance(s, n.While):
                self.emit(depth, f"while {self.expr(s.cond)}:")
            else:
                bounds = f"{self.expr(s.start)}, {self.expr(s.stop)}, {self.expr(s.step)}"
                self.emit(depth, f"for {self.names(s.var.name)} in range({bounds}):")
            iter_vars = tuple(v for v, _ in s.carried)
            self.loop_vars.append(iter_vars)
            self.body(s.body, depth + 1, iter_vars)
            self.loop_vars.pop()
            for res, (var, _) in zip(s.results, s.carried):
                self.emit(depth, f"{self.names(res.name)} = {self.names(var.name)}")
        elif isinstance(s, n.LoopJump):
            targets = self.loop_vars[-1] if self.loop_vars else ()
            if targets and s.values:
                lhs = ", ".join(self.names(v.name) for v in targets)
                self.emit(depth, f"{lhs} = {', '.join(self.expr(v) for v in s.values)}")
            self.emit(depth, "break" if isinstance(s, n.Break) else "continue")
        elif isinstance(s, n.If):
            self.emit(depth, f"if {self.expr(s.cond)}:")
            self.body(s.then_body, depth + 1, s.results)
            if s.else_body:
                self.emit(depth, "else:")
                self.body(s.else_body, depth + 1, s.results)
        elif isinstance(s, n.Return):
            items = [self.expr(v) for v in s.values]
            self.emit(depth, "return (" + ", ".join(items) + ("," if len(items) == 1 else "") + ")")


    def scalar_reads(self, s: n.Stmt) -> tuple[tuple[str, str], ...]:
        """(user name, local) of the Scalars and dynamic dims statement ``s`` reads."""
        seen: dict[str, str] = {}
        for e in stmt_expr_list(s):
            t = type(e)
            if t is n.Var:
                if isinstance(e.type, ScalarType):
                    seen.setdefault(e.name, self.names(e.name))
            elif t is n.DynDim and e.var in self.dyn_sources:
                seen.setdefault(e.var.name, self.dyn_local(e.var, e.span))
        return tuple(seen.items()) if seen else ()


def _user_span(s: n.Stmt) -> n.Span | None:
    """Where a statement's error should point: its value's call when it has one."""
    value = s.value if isinstance(s, n.Assign) else s.expr if isinstance(s, n.ExprStmt) else None
    return getattr(value, "span", None) or s.span


def _rounded(e: n.BinOp, code: str) -> str:
    """An FP32 Scalar operation's result rounded to FP32 (docs/design/language.md §19: each step of
    an
    FP32 expression is FP32, not the host's float64).  FP16/BF16-typed expressions (a
    literal adopts the Scalar's dtype) keep float64 steps: whether the generated code
    promotes them to FP32 as C++ does is an open contract question."""
    t = e.type
    if isinstance(t, ScalarType) and t.dtype.name == "FP32" and e.op not in ("max", "min"):
        return f"_round_float({code}, 'FP32')"
    return code


def _category(e: n.BinOp) -> str | None:
    for t in (e.type, e.lhs.type, e.rhs.type):
        if isinstance(t, ScalarType):
            return "float" if t.dtype.is_float else "int"
    consts = [x.value for x in (e.lhs, e.rhs) if isinstance(x, n.Const)]
    if any(isinstance(c, float) for c in consts):
        return "float"
    return None
