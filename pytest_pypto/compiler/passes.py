"""A small pass manager: named passes `(program, ctx) -> program` run in order.

The context carries what every pass needs (the arch table, the op registry, the
entry) and what passes hand to codegen (core classes, inserted moves, cast
chains, memory maps), so codegen never re-derives a decision a check made.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_pypto.arch import ArchSpec
from pytest_pypto.compiler.walk import ExprMemo, expressions_fixed
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import CompileError, PyptoWarning, render
from pytest_pypto.ir.registry import OpSpec


@dataclass
class MoveRecord:
    """A `tile.move` in a kernel: inserted by the compiler or written by the user."""

    line: int
    var: str
    src: str
    dst: str
    inserted: bool
    route: str | None = None  # "via GM" / "direct" for cross-core transfers in mix kernels


@dataclass
class KernelFacts:
    """What the passes decided about one InCore function, for codegen and listings."""

    core_type: str = "aiv"
    moves: list[MoveRecord] = field(default_factory=list)
    casts: list[tuple[int, str, tuple[str, ...]]] = field(default_factory=list)  # line, var, chain
    buffers: list[Any] = field(default_factory=list)  # capacity.Buffer, with offsets
    peak: dict[str, int] = field(default_factory=dict)


@dataclass
class PassContext:
    arch: ArchSpec
    registry: Mapping[str, OpSpec]
    source_lines: tuple[str, ...] = ()
    entry: str | None = None
    assembler_plans_memory: bool = False  # RunConfig's switch (compiler/memref_slots.py)
    # AutoL0 may pick two accumulators that alternate (compiler/auto_tile_l0.py)
    l0c_double_buffer: bool = False
    kernels: dict[str, KernelFacts] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    # id() of the window calls whose type rules check_types_for_arch already ran with the
    # loop bounds and no warning: check_bounds would run the same rules on the same input.
    bounds_checked: set[int] = field(default_factory=set)
    # How many window calls check_types_for_arch did not put in ``bounds_checked`` (None:
    # it has not run, so check_bounds walks every kernel).
    unbounded_windows: int | None = None
    # walk.stmt_expr_list's memo while the IR's expressions are fixed (Pass.keeps_exprs)
    expr_memo: ExprMemo = field(default_factory=dict)
    # set by a `Pass.reports_rewrites` pass when it rewrote an expression or a body
    exprs_rewritten: bool = False

    def op(self, call: n.Call) -> OpSpec:
        """The registry entry of a call; a CompileError if the op is unknown."""
        try:
            return self.registry[call.op]
        except KeyError:
            raise CompileError(
                f"unknown op {call.op!r}", call.span, arch=self.arch.name,
                hint="the op registry has no entry of that name",
            ) from None

    def facts(self, fn_name: str) -> KernelFacts:
        got = self.kernels.get(fn_name)
        if got is None:  # (setdefault would build a KernelFacts on every call)
            got = self.kernels[fn_name] = KernelFacts()
        return got

    def __repr__(self) -> str:  # short: tracebacks and --showlocals print it
        return f"<PassContext {self.arch.name}: {len(self.kernels)} kernels decided>"

    def source_line(self, span: n.Span | None) -> str | None:
        if span is None or not self.source_lines or not 0 < span.line <= len(self.source_lines):
            return None
        return self.source_lines[span.line - 1].rstrip("\n")

    def warn(self, message: str, span: n.Span | None, hint: str | None = None) -> None:
        """Emit a PyptoWarning rendered like an error (and remember it)."""
        text = render(message, span, hint=hint, level="warning", source_line=self.source_line(span))
        self.warnings.append(text)
        warnings.warn(text, PyptoWarning, stacklevel=3)


PassFn = Callable[[n.Program, PassContext], n.Program]


@dataclass(frozen=True)
class Pass:
    """A named pass.  ``keeps_exprs``: it rewrites no statement's expressions (it may
    set static arguments), so consecutive such passes share one memo of them.
    ``reports_rewrites``: it rewrites only sometimes (most programs have nothing for
    it to do) and then sets ``ctx.exprs_rewritten``; it runs with the memo, so it must
    read a statement's expressions before it rewrites them, never after, and the memo
    is emptied only when it did rewrite (else the passes around it share one)."""

    name: str
    run: PassFn
    keeps_exprs: bool = False
    reports_rewrites: bool = False


class PassManager:
    """Runs passes in order; optionally dumps the IR after each one."""

    def __init__(self, passes: list[Pass]) -> None:
        self.passes = list(passes)

    @property
    def names(self) -> list[str]:
        return [p.name for p in self.passes]

    def run(
        self,
        program: n.Program,
        ctx: PassContext,
        *,
        dump_dir: Path | None = None,
        printer: Callable[[n.Program], str] | None = None,
    ) -> n.Program:
        for index, p in enumerate(self.passes, start=1):
            if p.keeps_exprs:
                with expressions_fixed(ctx.expr_memo):
                    program = p.run(program, ctx)
            elif p.reports_rewrites:
                ctx.exprs_rewritten = False
                with expressions_fixed(ctx.expr_memo):
                    program = p.run(program, ctx)
                if ctx.exprs_rewritten:
                    ctx.expr_memo.clear()  # what it rewrote is walked afresh later
            else:
                ctx.expr_memo.clear()  # what this pass rewrites is walked afresh later
                program = p.run(program, ctx)
            if dump_dir is not None and printer is not None:
                dump_dir.mkdir(parents=True, exist_ok=True)
                (dump_dir / f"{index:02d}_{p.name}.txt").write_text(printer(program))
        return program
