# SPDX-License-Identifier: Apache-2.0
"""The IR written back in the ``pl`` DSL's own Python syntax (docs/design/checks.md §7a).

For people and for tests that read a program's structure after the passes: a
``@pl.program`` class whose functions are ``@pl.function``s, annotated assignments
``x: pl.Tile[[M, N], pl.FP32, pl.Mem.Mat] = pl.tile.load(...)``, loops written as
``for i, (acc,) in pl.pipeline(start, stop, step, stage=F, init_values=(...),
attrs={...}):`` (``pl.range(stop)`` when the loop starts at 0 with step 1), branches with
their merged values and ``pl.yield_`` at the end of a carrying body.  The machine form
that keys the cache is ir/printer.py; this one is not parsed back.
"""

from __future__ import annotations

import enum
from typing import Any

from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.types import (
    DynExpr,
    DynVar,
    HandleType,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
)

INDENT = "    "
_BINOPS = {"max": "pl.max", "min": "pl.min"}


def _dim(d: Any) -> str:
    if isinstance(d, DynExpr):
        return f"({_dim(d.lhs)} {d.op} {_dim(d.rhs)})"
    if isinstance(d, DynVar):
        return d.name
    return str(d)


def _shape(dims: Any) -> str:
    return "[" + ", ".join(_dim(d) for d in dims) + "]"


def type_text(t: Any) -> str:
    """A type as its DSL annotation."""
    if isinstance(t, TensorType):
        return f"pl.Tensor[{_shape(t.shape)}, pl.{t.dtype.name}]"
    if isinstance(t, TileType):
        space = f", pl.Mem.{t.space}" if t.space else ""
        return f"pl.Tile[{_shape(t.shape)}, pl.{t.dtype.name}{space}]"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    if isinstance(t, TupleType):
        return "tuple[" + ", ".join(type_text(i) for i in t.items) + "]"
    if isinstance(t, HandleType):
        return f"pl.{t.name}"
    return "Any"


def _value(v: Any) -> str:
    """A static argument or an expression."""
    if isinstance(v, n.Expr):
        return expr_text(v)
    if isinstance(v, DataType):
        return f"pl.{v.name}"
    if isinstance(v, DynVar | DynExpr):
        return _dim(v)
    if isinstance(v, enum.Enum):
        return f"pl.{type(v).__name__}.{v.name}"
    if isinstance(v, tuple | list):
        return "[" + ", ".join(_value(i) for i in v) + "]"
    if isinstance(v, str):
        return f'"{v}"'
    return repr(v)


def expr_text(e: Any) -> str:
    if isinstance(e, n.Var):
        return e.name
    if isinstance(e, n.Const):
        return repr(e.value)
    if isinstance(e, n.DynDim):
        return _dim(e.var)
    if isinstance(e, n.Call):
        return f"pl.{_spelled(e.op)}({_call_args(e)})"
    if isinstance(e, n.FuncCall):
        return f"self.{e.callee}(" + ", ".join(expr_text(a) for a in e.args) + ")"
    if isinstance(e, n.BinOp):
        if e.op in _BINOPS:
            return f"{_BINOPS[e.op]}({expr_text(e.lhs)}, {expr_text(e.rhs)})"
        return f"({expr_text(e.lhs)} {e.op} {expr_text(e.rhs)})"
    if isinstance(e, n.Compare):
        return f"{expr_text(e.lhs)} {e.op} {expr_text(e.rhs)}"
    if isinstance(e, n.UnaryOp):
        return f"({e.op} {expr_text(e.operand)})"
    if isinstance(e, n.ScalarCast):
        return f"pl.cast({expr_text(e.operand)}, {_value(e.dtype)})"
    return _value(e)


def _spelled(op: str) -> str:
    """How a program spells ``op``: its namespaced PyPTO name for an op reachable only as
    `pl.system.X` / `pl.prefetch.X`, else the op's own name."""
    from pytest_pypto.ir.registry import REGISTRY  # lazy: the registry loads every op module

    spec = REGISTRY.get(op)
    named = [s for s in (spec.spellings if spec else ()) if s.split(".")[0] in _NAMESPACES]
    return named[0] if named and len(named) == len(spec.spellings) else op


_NAMESPACES = ("system", "prefetch")


def _call_args(call: n.Call) -> str:
    """Leading expression arguments by position, the rest by keyword; unset ones left out."""
    parts: list[str] = []
    positional = True
    for key, v in call.args:
        if v is None:
            positional = False
            continue
        if positional and isinstance(v, n.Expr | tuple | list):
            parts.append(_value(v))
        else:
            positional = False
            text = f"pl.Mem.{v}" if key == "target_memory" and isinstance(v, str) else _value(v)
            parts.append(f"{key}={text}")
    return ", ".join(parts)


def _loop_head(s: n.For) -> str:
    zero = isinstance(s.start, n.Const) and s.start.value == 0
    one = isinstance(s.step, n.Const) and s.step.value == 1
    if zero and one:
        bounds = [s.stop]
    elif one:
        bounds = [s.start, s.stop]
    else:
        bounds = [s.start, s.stop, s.step]
    args = [expr_text(b) for b in bounds]
    attrs = dict(s.attrs)
    if s.kind == "pipeline":
        args.append(f"stage={attrs.pop('stage', 1)}")
    if s.carried:
        inits = ", ".join(expr_text(init) for _, init in s.carried)
        args.append(f"init_values=({inits},)" if len(s.carried) == 1 else
                    f"init_values=({inits})")
    if attrs:
        args.append("attrs={" + ", ".join(
            f'"{k}": {_value(attrs[k])}' for k in sorted(attrs)) + "}")
    target = s.var.name
    if s.carried:
        target += ", (" + ", ".join(v.name for v, _ in s.carried) + \
            ("," if len(s.carried) == 1 else "") + ")"
    kind = s.kind if s.kind in ("range", "parallel", "unroll", "pipeline") else "range"
    return f"for {target} in pl.{kind}({', '.join(args)}):"


class _Writer:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, stmts: list[n.Stmt], depth: int, results: tuple[n.Var, ...] = ()) -> None:
        if not stmts:
            self.emit(depth, "pass")
        for s in stmts:
            self.stmt(s, depth, results)

    def stmt(self, s: n.Stmt, depth: int, results: tuple[n.Var, ...]) -> None:
        if isinstance(s, n.Assign):
            if len(s.targets) == 1:
                t = s.targets[0]
                self.emit(depth, f"{t.name}: {type_text(t.type)} = {expr_text(s.value)}")
            else:
                names = ", ".join(t.name for t in s.targets)
                self.emit(depth, f"{names} = {expr_text(s.value)}")
        elif isinstance(s, n.ExprStmt):
            self.emit(depth, expr_text(s.expr))
        elif isinstance(s, n.Yield):
            values = ", ".join(expr_text(v) for v in s.values)
            names = ", ".join(r.name for r in results)
            self.emit(depth, f"{names} = pl.yield_({values})" if names else f"pl.yield_({values})")
        elif isinstance(s, n.Return):
            self.emit(depth, "return " + ", ".join(expr_text(v) for v in s.values))
        elif isinstance(s, n.LoopJump):
            self.emit(depth, "break" if isinstance(s, n.Break) else "continue")
        elif isinstance(s, n.While):
            inits = ", ".join(expr_text(init) for _, init in s.carried)
            names = ", ".join(v.name for v, _ in s.carried)
            self.emit(depth, f"for ({names},) in pl.while_(init_values=({inits},)):")
            self.emit(depth + 1, f"pl.cond({expr_text(s.cond)})")
            self.block(s.body, depth + 1, s.results)
        elif isinstance(s, n.For):
            self.emit(depth, _loop_head(s))
            self.block(s.body, depth + 1, s.results)
        elif isinstance(s, n.If):
            self.emit(depth, f"if {expr_text(s.cond)}:")
            self.block(s.then_body, depth + 1, s.results)
            self.emit(depth, "else:")
            self.block(s.else_body, depth + 1, s.results)
        else:
            self.emit(depth, f"# {type(s).__name__}")

    def function(self, fn: n.Function, depth: int) -> None:
        self.emit(depth, f"@pl.function(type=pl.FunctionType.{fn.kind})")
        params = ["self"]
        for p in fn.params:
            ann = type_text(p.type)
            if p.direction.value in ("Out", "InOut"):
                ann = f"pl.{p.direction.value}[{ann}]"
            params.append(f"{p.name}: {ann}")
        rets = ", ".join(type_text(t) for t in fn.returns)
        if len(fn.returns) > 1:
            rets = f"tuple[{rets}]"
        self.emit(depth, f"def {fn.name}({', '.join(params)}) -> {rets or 'None'}:")
        self.block(fn.body, depth + 1)


def python_print(node: n.Program | n.Function) -> str:
    """``node`` (a program or one function) in the DSL's Python syntax."""
    w = _Writer()
    if isinstance(node, n.Function):
        w.function(node, 0)
    else:
        w.emit(0, "@pl.program")
        w.emit(0, f"class {node.name}:")
        for fn in node.functions.values():
            w.function(fn, 1)
    return "\n".join(w.lines) + "\n"
