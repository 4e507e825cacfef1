"""IR nodes: expressions, statements, functions and programs, each with a source span.

Nodes are plain mutable dataclasses: the parser builds them, compiler passes
rewrite them (on a copy, `ir.clone`), codegen walks them.  Every node that can be
blamed for an error carries a `Span` into the user's kernel source.

Conventions shared by the parser, the passes and codegen:

* `Call.op` is a registry op name ("tile.add", "tile.load"...).  `Call.args` is an
  ordered tuple of (param name, value) following the op's `ParamSpec`s: value
  params hold an `Expr`; static params hold a plain Python constant (int, float,
  bool, str, None, `DataType`, tuple of those); index-list params hold a tuple
  whose items are ints or `Expr`s (loop-variable offsets).
* Scalar arithmetic is `BinOp`/`Compare`/`UnaryOp`; tiles have no operators.
* Loops and ifs that carry values list them explicitly (`For.carried`,
  `For.results`, `If.results`) and end their bodies with a `Yield`, whether the
  user wrote `pl.yield_` or just rebound a name (the parser makes it explicit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.ir.types import Direction, Type


@dataclass(frozen=True)
class Span:
    """A position in the user's source: file, 1-based line, 1-based column."""

    file: str
    line: int
    col: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}"


class Node:
    """Base of IR nodes."""

    span: Span | None


# ---------------------------------------------------------------- expressions


@dataclass(eq=False)
class Expr(Node):
    type: Type | None = field(default=None, kw_only=True)
    span: Span | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Var(Expr):
    """A named SSA value (parameters, assignment targets, loop variables)."""

    name: str


@dataclass(eq=False)
class Const(Expr):
    """A literal: int -> INDEX, float -> FP32, bool -> BOOL, or `pl.const(v, dtype)`."""

    value: int | float | bool


@dataclass(eq=False)
class DynDim(Expr):
    """A dynamic dimension (`pl.dynamic("M")`) used as a Scalar[INDEX] value in a body."""

    var: Any  # DynVar


@dataclass(eq=False)
class Call(Expr):
    """A registry op applied to its arguments (see module docstring for `args`)."""

    op: str
    args: tuple[tuple[str, Any], ...] = ()

    def arg(self, name: str, default: Any = None) -> Any:
        for key, value in self.args:
            if key == name:
                return value
        return default

    def set_arg(self, name: str, value: Any) -> None:
        items = [(k, value if k == name else v) for k, v in self.args]
        if all(k != name for k, _ in self.args):
            items.append((name, value))
        self.args = tuple(items)


@dataclass(eq=False)
class FuncCall(Expr):
    """`self.f(args...)`: from Orchestration each such call is one task.

    `blocks` (an INDEX Scalar expression) makes it one `pl.spmd(n)` launch: n tasks
    of the same kernel and arguments, block i reading i from `pl.get_block_idx()`.
    """

    callee: str
    args: tuple[Expr, ...] = ()
    blocks: Expr | None = None
    # Explicit scheduling (docs/design/scheduling.md §2-§4): TaskId expressions this task
    # waits for (`deps=`), whether the call also yields its TaskId (`pl.submit`, `as tid`:
    # the result tuple ends with a Scalar[TASK_ID]), whether it sits in a
    # `pl.manual_scope` (no automatic dependencies), and a dispatch predicate
    # ``(tensor, indices, op, target)``.
    deps: tuple[Expr, ...] = ()
    task_id: bool = False
    manual: bool = False
    predicate: tuple[Any, ...] | None = None
    no_dep: tuple[int, ...] = ()  # argument positions left out of automatic tracking
    dumps: tuple[int, ...] = ()  # argument positions of the selective dump (dumps=, dump_tag)


@dataclass(eq=False)
class BinOp(Expr):
    """Scalar arithmetic: + - * / // % << >>, and the scalar `max`/`min`."""

    op: str
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class Compare(Expr):
    """Scalar comparison == != < <= > >= (result BOOL)."""

    op: str
    lhs: Expr
    rhs: Expr


@dataclass(eq=False)
class UnaryOp(Expr):
    """Scalar negation (`-x`) or logical `not`."""

    op: str
    operand: Expr


@dataclass(eq=False)
class ScalarCast(Expr):
    """`pl.cast(s, dtype)` on a Scalar: C conversion semantics (float -> int truncates)."""

    operand: Expr
    dtype: Any  # DataType


# ----------------------------------------------------------------- statements


@dataclass(eq=False)
class Stmt(Node):
    span: Span | None = field(default=None, kw_only=True)


@dataclass(eq=False)
class Assign(Stmt):
    """`targets = value`; several targets unpack a tuple result positionally."""

    targets: tuple[Var, ...]
    value: Expr
    annotation: Type | None = None


@dataclass(eq=False)
class ExprStmt(Stmt):
    """An expression evaluated for its effect (e.g. `pl.store(...)` without rebinding)."""

    expr: Expr


@dataclass(eq=False)
class Yield(Stmt):
    """Values carried out of a loop iteration or an if arm (always the last statement)."""

    values: tuple[Expr, ...] = ()


@dataclass(eq=False)
class For(Stmt):
    """`for var in pl.range/parallel/unroll/pipeline(start, stop, step)`.

    `carried` pairs each iteration variable with its initial value; the body ends
    with a `Yield` of the next values; `results` receive the final values.
    """

    var: Var
    start: Expr
    stop: Expr
    step: Expr
    body: list[Stmt]
    carried: tuple[tuple[Var, Expr], ...] = ()
    results: tuple[Var, ...] = ()
    kind: str = "range"
    attrs: dict[str, Any] = field(default_factory=dict)


@dataclass(eq=False)
class While(For):
    """`while cond:` / `for (x,) in pl.while_(init_values=...)` with `pl.cond(...)`.

    The condition is carried: `cond` is one of the iteration variables (a BOOL), its
    initial value computed before the loop and its next one before each `Yield`
    (and each `Continue`), so the loop needs no statements of its own to test it.
    `var`, `start`, `stop` and `step` are unused placeholders (kind "while").
    """

    cond: Var | None = None


@dataclass(eq=False)
class LoopJump(Stmt):
    """`break` / `continue`: assigns `values` to the innermost loop's iteration
    variables (its carried names' current values), then leaves the iteration."""

    values: tuple[Expr, ...] = ()


@dataclass(eq=False)
class Break(LoopJump):
    """`break`: the loop's results are `values`."""


@dataclass(eq=False)
class Continue(LoopJump):
    """`continue`: the next iteration starts from `values`."""


@dataclass(eq=False)
class If(Stmt):
    """`if cond: ... else: ...`; both arms end with a `Yield` when `results` is non-empty."""

    cond: Expr
    then_body: list[Stmt]
    else_body: list[Stmt]
    results: tuple[Var, ...] = ()


@dataclass(eq=False)
class Return(Stmt):
    values: tuple[Expr, ...] = ()


# ------------------------------------------------------------------ functions


@dataclass(eq=False)
class Param(Node):
    name: str
    type: Type
    direction: Direction
    span: Span | None = None


@dataclass(eq=False)
class Unsupported:
    """The first Tier 3 construct met in a function: compiling raises for it
    (docs/design/language.md §22)."""

    construct: str
    reason: str
    span: Span | None


@dataclass(eq=False)
class Function(Node):
    name: str
    kind: str  # "InCore", "Orchestration", "Opaque" (FunctionType names)
    params: list[Param]
    returns: tuple[Type, ...]
    body: list[Stmt]
    span: Span | None = None
    strict_ssa: bool = False
    unsupported: Unsupported | None = None
    # A hand-written cross-core kernel's role and attrs= ({"core": "aic" | "aiv", ...};
    # language/cross_core.py); empty for every other function.
    attrs: dict = field(default_factory=dict)

    def __repr__(self) -> str:  # short: tracebacks and --showlocals print it
        return f"<Function {self.name} ({self.kind}): {len(self.params)} params>"


@dataclass(eq=False)
class Program(Node):
    """A parsed `@pl.program` class: its functions in source order."""

    name: str
    functions: dict[str, Function]
    file: str
    span: Span | None = None
    source_lines: tuple[str, ...] = ()  # the whole file, for diagnostics' snippets

    def __repr__(self) -> str:  # short: the dataclass repr would print the whole file
        count = len(self.functions)
        names = ", ".join(self.functions)
        return f"<Program {self.name}: {count} function{'s' if count != 1 else ''} ({names})>"
