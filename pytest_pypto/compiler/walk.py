"""Traversal helpers over IR bodies: every pass walks statements the same way.

Passes see statements in program order (pre-order, loop and if bodies inline),
which is also the order liveness and bounds reasoning use.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import Any

from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.types import TensorType, TileType, Type


def iter_stmts(body: list[n.Stmt]) -> Iterator[n.Stmt]:
    """Every statement of a body, nested bodies included, in program order."""
    out: list[n.Stmt] = []
    _collect_stmts(body, out)
    return iter(out)


def _collect_stmts(body: list[n.Stmt], out: list[n.Stmt]) -> None:
    for stmt in body:
        out.append(stmt)
        t = type(stmt)
        if t is n.For or t is n.While:
            _collect_stmts(stmt.body, out)
        elif t is n.If:
            _collect_stmts(stmt.then_body, out)
            _collect_stmts(stmt.else_body, out)


def child_bodies(stmt: n.Stmt) -> list[list[n.Stmt]]:
    if isinstance(stmt, n.For):
        return [stmt.body]
    if isinstance(stmt, n.If):
        return [stmt.then_body, stmt.else_body]
    return []


def stmt_exprs(stmt: n.Stmt) -> list[n.Expr]:
    """The expressions a statement evaluates itself (not those of nested bodies)."""
    if isinstance(stmt, n.Assign):
        return [stmt.value]
    if isinstance(stmt, n.ExprStmt):
        return [stmt.expr]
    if isinstance(stmt, (n.Yield, n.Return, n.LoopJump)):
        return list(stmt.values)
    if isinstance(stmt, n.For):
        return [stmt.start, stmt.stop, stmt.step, *(init for _, init in stmt.carried)]
    if isinstance(stmt, n.If):
        return [stmt.cond]
    return []


def arg_exprs(value: Any) -> Iterator[n.Expr]:
    """Expressions inside one Call argument (a value, or an index list's items)."""
    if isinstance(value, n.Expr):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from arg_exprs(item)


def expr_children(expr: n.Expr) -> list[n.Expr]:
    if isinstance(expr, n.Call):
        return [e for _, v in expr.args for e in arg_exprs(v)]
    if isinstance(expr, n.FuncCall):
        if expr.deps or expr.predicate:  # explicit scheduling reads these too
            extra = [*expr.deps, *(expr.predicate[:2] if expr.predicate else ())]
            return [*expr.args, *(e for v in extra for e in arg_exprs(v))]
        return list(expr.args)
    if isinstance(expr, (n.BinOp, n.Compare)):
        return [expr.lhs, expr.rhs]
    if isinstance(expr, n.UnaryOp):
        return [expr.operand]
    if isinstance(expr, n.ScalarCast):
        return [expr.operand]
    return []


# Expression node types without sub-expressions (the common leaves, dispatched by type).
_LEAVES = frozenset({n.Var, n.Const, n.DynDim})
_STATIC = frozenset({int, float, bool, str, type(None)})  # Call arguments holding no Expr


def _collect_arg(value: Any, out: list[n.Expr]) -> None:
    """`arg_exprs` of one Call argument, each expanded by `_collect_expr`."""
    if isinstance(value, n.Expr):
        _collect_expr(value, out)
    elif isinstance(value, (tuple, list)):
        for item in value:
            if type(item) is not int:
                _collect_arg(item, out)


def _collect_expr(expr: n.Expr, out: list[n.Expr]) -> None:
    """Append ``expr``'s sub-expressions, operands first, then ``expr`` (`iter_exprs`)."""
    t = type(expr)
    if t in _LEAVES:
        pass
    elif t is n.Call:
        for _, v in expr.args:
            tv = type(v)
            if tv in _LEAVES:
                out.append(v)
            elif tv in _STATIC:
                pass
            elif isinstance(v, n.Expr):
                _collect_expr(v, out)
            elif isinstance(v, (tuple, list)):
                _collect_arg(v, out)
    elif t is n.BinOp or t is n.Compare:
        _collect_expr(expr.lhs, out)
        _collect_expr(expr.rhs, out)
    elif t is n.UnaryOp or t is n.ScalarCast:
        _collect_expr(expr.operand, out)
    else:  # FuncCall, or a type this table does not know: the general rule
        for child in expr_children(expr):
            _collect_expr(child, out)
    out.append(expr)


def expr_list(expr: n.Expr) -> list[n.Expr]:
    """`iter_exprs` as a list (one recursive walk, no generator per level)."""
    out: list[n.Expr] = []
    _collect_expr(expr, out)
    return out


def iter_exprs(expr: n.Expr) -> Iterator[n.Expr]:
    """An expression and all its sub-expressions, operands first (evaluation order)."""
    return iter(expr_list(expr))


# id(stmt) -> (stmt, its expressions); id(body) -> (body, its iter_calls pairs)
ExprMemo = dict[int, tuple[Any, list[Any]]]
_MEMO: contextvars.ContextVar[ExprMemo | None] = contextvars.ContextVar(
    "pypto_expr_memo", default=None)


class expressions_fixed:  # noqa: N801  (used as a function: ``with expressions_fixed(m):``)
    """Within: no statement's expressions and no body change, so `stmt_expr_list` (and
    `iter_calls` per body) answer once and then from ``memo`` (the passes after
    memory-space inference and codegen read one statement's expressions many times).
    Only code that rewrites no expression and no body may run inside; a new statement
    object is simply walked and added.  (A class, not a generator context manager: it
    is entered once per pass.)"""

    __slots__ = ("_memo", "_token")

    def __init__(self, memo: ExprMemo) -> None:
        self._memo = memo

    def __enter__(self) -> None:
        self._token = _MEMO.set(self._memo)

    def __exit__(self, *exc: object) -> None:
        _MEMO.reset(self._token)


def stmt_expr_list(stmt: n.Stmt) -> list[n.Expr]:
    """Every expression a statement evaluates itself, sub-expressions included: the
    concatenation of `iter_exprs` over `stmt_exprs` (nested bodies excluded).  The
    caller must not change the list (it may be the memo's, `expressions_fixed`)."""
    memo = _MEMO.get()
    if memo is not None:
        got = memo.get(id(stmt))
        if got is not None and got[0] is stmt:
            return got[1]
    out: list[n.Expr] = []
    t = type(stmt)
    if t is n.Assign:  # the common statements without `stmt_exprs`'s list (no subclasses)
        _collect_expr(stmt.value, out)
    elif t is n.ExprStmt:
        _collect_expr(stmt.expr, out)
    else:
        for top in stmt_exprs(stmt):
            _collect_expr(top, out)
    if memo is not None:
        memo[id(stmt)] = (stmt, out)
    return out


def iter_calls(body: list[n.Stmt]) -> Iterator[tuple[n.Stmt, n.Expr]]:
    """(statement, Call or FuncCall) pairs of a whole body, in evaluation order."""
    memo = _MEMO.get()
    if memo is not None:  # bodies are fixed too while expressions are (expressions_fixed)
        got = memo.get(id(body))
        if got is not None and got[0] is body:
            return iter(got[1])  # type: ignore[arg-type]
    out: list[tuple[n.Stmt, n.Expr]] = []
    for stmt in iter_stmts(body):
        for e in stmt_expr_list(stmt):
            t = type(e)
            if t is n.Call or t is n.FuncCall:
                out.append((stmt, e))
    if memo is not None:
        memo[id(body)] = (body, out)  # type: ignore[assignment]
    return iter(out)


def used_names(expr: n.Expr) -> list[str]:
    return [e.name for e in expr_list(expr) if type(e) is n.Var]


def stmt_uses(stmt: n.Stmt) -> list[str]:
    """Names a statement reads itself (nested bodies excluded)."""
    return [e.name for e in stmt_expr_list(stmt) if type(e) is n.Var]


def all_names(fn: n.Function) -> set[str]:
    """Every variable name a function mentions (to make fresh names)."""
    names = {p.name for p in fn.params}
    for stmt in iter_stmts(fn.body):
        if isinstance(stmt, n.Assign):
            names.update(t.name for t in stmt.targets)
        if isinstance(stmt, n.For):
            names.add(stmt.var.name)
            names.update(v.name for v, _ in stmt.carried)
            names.update(v.name for v in stmt.results)
        if isinstance(stmt, n.If):
            names.update(v.name for v in stmt.results)
        names.update(stmt_uses(stmt))
    return names


_ABSENT = object()  # Scope: a name removed in this scope (or not found)


class Scope:
    """What ``dict(env)`` gives a nested body, without copying ``env``.

    Reads fall through to the enclosing env (a dict or a Scope); writes and removals
    stay in this scope.  The passes give each loop body and if arm its own env; as
    copies, a kernel with thousands of sequential ifs or loops copied an env of
    thousands of names for each one (quadratic), where a lookup here costs the
    nesting depth.  The enclosing env must not change while the scope is in use
    (every pass finishes a nested body before it touches the outer env again).
    """

    __slots__ = ("_own", "_outer")

    def __init__(self, outer: Any) -> None:
        self._own: dict[str, Any] = {}
        self._outer = outer

    def get(self, key: str, default: Any = None) -> Any:
        value = self._own.get(key, _ABSENT)
        if value is _ABSENT:
            if key in self._own:  # removed here
                return default
            return self._outer.get(key, default)
        return value

    def __contains__(self, key: object) -> bool:
        return self.get(key, _ABSENT) is not _ABSENT  # type: ignore[arg-type]

    def __getitem__(self, key: str) -> Any:
        value = self.get(key, _ABSENT)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._own[key] = value

    def pop(self, key: str, default: Any = None) -> Any:
        value = self.get(key, _ABSENT)
        self._own[key] = _ABSENT
        return default if value is _ABSENT else value


class NameGen:
    """Fresh, readable variable names that collide with nothing in the function."""

    def __init__(self, taken: set[str] | Callable[[], set[str]]) -> None:
        # A callable (``lambda: all_names(fn)``) is called on the first `fresh`: most
        # functions never need a fresh name, and collecting every name walks them all.
        self._taken: set[str] | None = None if callable(taken) else set(taken)
        self._source = taken if callable(taken) else None
        self._next: dict[str, int] = {}  # base -> first suffix not yet known to be taken

    @property
    def taken(self) -> set[str]:
        if self._taken is None:
            assert self._source is not None
            self._taken = set(self._source())
        return self._taken

    def fresh(self, base: str) -> str:
        base = base.rstrip("_0123456789") or "t"
        i = self._next.get(base, 1)  # smaller suffixes were taken (and `taken` only grows)
        while f"{base}_{i}" in self.taken:
            i += 1
        name = f"{base}_{i}"
        self._next[base] = i + 1
        self.taken.add(name)
        return name


def rewrite_bodies(fn: n.Function, visit: Callable[[list[n.Stmt]], list[n.Stmt]]) -> None:
    """Apply ``visit`` to every statement list of a function, innermost first."""

    def go(body: list[n.Stmt]) -> list[n.Stmt]:
        for stmt in body:
            if isinstance(stmt, n.For):
                stmt.body = go(stmt.body)
            elif isinstance(stmt, n.If):
                stmt.then_body = go(stmt.then_body)
                stmt.else_body = go(stmt.else_body)
        return visit(body)

    fn.body = go(fn.body)


def is_tile(t: Type | None) -> bool:
    return isinstance(t, TileType)


def is_tensor(t: Type | None) -> bool:
    return isinstance(t, TensorType)


def space_name(value: Any) -> str | None:
    """A memory space as its table name, whether given as a MemorySpace or a string."""
    if value is None:
        return None
    return getattr(value, "value", value)


def stmt_line(stmt: n.Node) -> int:
    return stmt.span.line if stmt.span else 0
