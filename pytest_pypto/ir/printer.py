# SPDX-License-Identifier: Apache-2.0
"""A stable text form of the IR: readable listings and the compile cache's key.

Deterministic by construction: no ids, no addresses, no spans (moving a kernel in
its file must not change its key), dict-ordered functions, sorted attrs.  Anything
that changes meaning prints differently: types with memory spaces, valid shapes
and pads, parameter directions, every op argument including static attrs, loop
kinds and attrs, the function kind and a recorded Tier 3 construct.  Dynamic dims
print as `name@k`, k numbering distinct `pl.dynamic` objects in order of first
appearance, so two independent dims named alike stay distinct.
"""

from __future__ import annotations

import enum
from typing import Any

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.nodes import (
    Assign,
    BinOp,
    Break,
    Call,
    Compare,
    Const,
    DynDim,
    Expr,
    ExprStmt,
    For,
    FuncCall,
    Function,
    If,
    LoopJump,
    Program,
    Return,
    ScalarCast,
    Stmt,
    UnaryOp,
    Var,
    While,
    Yield,
)
from pytest_pypto.ir.types import (
    DynExpr,
    DynVar,
    HandleType,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
)

INDENT = "  "


class _Printer:
    def __init__(self) -> None:
        self.dyn: dict[int, str] = {}
        self.lines: list[str] = []

    # ---------------------------------------------------------------- atoms
    def dim(self, d: Any) -> str:
        if isinstance(d, DynExpr):
            return f"({self.dim(d.lhs)}{d.op}{self.dim(d.rhs)})"
        if isinstance(d, DynVar):
            key = id(d)
            if key not in self.dyn:
                self.dyn[key] = f"{d.name}@{len(self.dyn)}"
            return self.dyn[key]
        return str(d)

    def type(self, t: Type | None) -> str:
        if t is None:
            return "none"
        if isinstance(t, TensorType):
            return f"Tensor[[{', '.join(self.dim(d) for d in t.shape)}], {t.dtype.name}]"
        if isinstance(t, TileType):
            parts = [f"[{', '.join(map(str, t.shape))}]", t.dtype.name, t.space or "?"]
            if tuple(t.valid or ()) != t.shape:
                parts.append(
                    "valid=[" + ", ".join("?" if v is None else str(v) for v in t.valid or ()) + "]"
                )
            if t.pad is not None:
                parts.append(f"pad={t.pad}")
            if t.memref is not None:
                parts.append(self.memref(t.memref))
            return f"Tile[{', '.join(parts)}]"
        if isinstance(t, ScalarType):
            return f"Scalar[{t.dtype.name}]"
        if isinstance(t, TupleType):
            return f"Tuple[{', '.join(self.type(i) for i in t.items)}]"
        if isinstance(t, HandleType):
            return t.name
        return type(t).__name__

    def memref(self, b: Any) -> str:
        """A declared allocation as PyPTO spells it inline: ``MemRef("ub", slots=2)[i % 2]``."""
        slot = "" if b.index is None else f"[{b.index if isinstance(b.index, int) else self.expr(b.index)}]"
        return f"{b.declaration[len('pl.'):]}{slot}"

    def static(self, v: Any) -> str:
        if isinstance(v, Expr):
            return self.expr(v)
        if isinstance(v, DataType):
            return v.name
        if isinstance(v, DynVar):
            return self.dim(v)
        if isinstance(v, enum.Enum):
            return f"{type(v).__name__}.{v.name}"
        if isinstance(v, (tuple, list)):
            return "[" + ", ".join(self.static(i) for i in v) + "]"
        if isinstance(v, float):
            return repr(v)
        if isinstance(v, str):
            return repr(v)
        return repr(v)

    def expr(self, e: Any) -> str:
        if isinstance(e, Var):
            return e.name
        if isinstance(e, Const):
            dtype = e.type.dtype.name if isinstance(e.type, ScalarType) else self.type(e.type)
            return f"{self.static(e.value)}:{dtype}"
        if isinstance(e, DynDim):
            return f"dim({self.dim(e.var)})"
        if isinstance(e, Call):
            args = ", ".join(f"{k}={self.static(v)}" for k, v in e.args)
            return f"{e.op}({args})"
        if isinstance(e, FuncCall):
            launch = f" spmd({self.expr(e.blocks)})" if e.blocks is not None else ""
            return f"call @{e.callee}({', '.join(self.expr(a) for a in e.args)}){launch}"
        if isinstance(e, BinOp):
            if e.op in ("max", "min"):
                return f"{e.op}({self.expr(e.lhs)}, {self.expr(e.rhs)}):{self.type(e.type)}"
            return f"({self.expr(e.lhs)} {e.op} {self.expr(e.rhs)}):{self.type(e.type)}"
        if isinstance(e, Compare):
            return f"({self.expr(e.lhs)} {e.op} {self.expr(e.rhs)})"
        if isinstance(e, UnaryOp):
            return f"({e.op} {self.expr(e.operand)}):{self.type(e.type)}"
        if isinstance(e, ScalarCast):
            return f"cast({self.expr(e.operand)}, {self.static(e.dtype)})"
        if e is None:
            return "None"
        return self.static(e)

    def defn(self, v: Var) -> str:
        return f"{v.name}: {self.type(v.type)}"

    # ----------------------------------------------------------- statements
    def emit(self, depth: int, text: str) -> None:
        self.lines.append(INDENT * depth + text)

    def block(self, stmts: list[Stmt], depth: int) -> None:
        for s in stmts:
            self.stmt(s, depth)

    def stmt(self, s: Stmt, depth: int) -> None:
        if isinstance(s, Assign):
            targets = ", ".join(self.defn(t) for t in s.targets)
            ann = f"  # annotated {self.type(s.annotation)}" if s.annotation is not None else ""
            self.emit(depth, f"{targets} = {self.expr(s.value)}{ann}")
        elif isinstance(s, ExprStmt):
            self.emit(depth, self.expr(s.expr))
        elif isinstance(s, Yield):
            self.emit(depth, "yield " + ", ".join(self.expr(v) for v in s.values))
        elif isinstance(s, Return):
            self.emit(depth, "return " + ", ".join(self.expr(v) for v in s.values))
        elif isinstance(s, LoopJump):
            word = "break" if isinstance(s, Break) else "continue"
            self.emit(depth, word + "".join(f" {self.expr(v)}," for v in s.values))
        elif isinstance(s, For):
            attrs = "".join(f", {k}={self.static(s.attrs[k])}" for k in sorted(s.attrs))
            head = (
                f"for {self.defn(s.var)} in {s.kind}({self.expr(s.start)}, {self.expr(s.stop)}, "
                f"{self.expr(s.step)}{attrs})"
            )
            if isinstance(s, While):
                head = f"while {self.expr(s.cond)}"
            if s.carried:
                head += " carry (" + ", ".join(
                    f"{self.defn(v)} = {self.expr(init)}" for v, init in s.carried
                ) + ")"
            if s.results:
                head += " -> (" + ", ".join(self.defn(r) for r in s.results) + ")"
            self.emit(depth, head + ":")
            self.block(s.body, depth + 1)
        elif isinstance(s, If):
            head = f"if {self.expr(s.cond)}"
            if s.results:
                head += " -> (" + ", ".join(self.defn(r) for r in s.results) + ")"
            self.emit(depth, head + ":")
            self.block(s.then_body, depth + 1)
            self.emit(depth, "else:")
            self.block(s.else_body, depth + 1)
        else:
            self.emit(depth, f"<{type(s).__name__}>")

    def function(self, fn: Function) -> None:
        params = ", ".join(
            f"{p.name}: {p.direction.value} {self.type(p.type)}" for p in fn.params
        )
        rets = ", ".join(self.type(t) for t in fn.returns)
        flags = " strict_ssa" if fn.strict_ssa else ""
        self.emit(0, f"func @{fn.name} [{fn.kind}{flags}]({params}) -> ({rets}):")
        if fn.unsupported is not None:
            u = fn.unsupported
            self.emit(1, f"unsupported {u.construct!r}: {u.reason!r}")
        self.block(fn.body, 1)


def print_function(fn: Function) -> str:
    """The text of one function (dynamic dims numbered within it)."""
    p = _Printer()
    p.function(fn)
    return "\n".join(p.lines) + "\n"


def print_program(program: Program) -> str:
    """The text of a whole program: the compile cache hashes this."""
    p = _Printer()
    p.emit(0, f"program {program.name}")
    for fn in program.functions.values():
        p.function(fn)
    return "\n".join(p.lines) + "\n"
