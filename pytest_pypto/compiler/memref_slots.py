# SPDX-License-Identifier: Apache-2.0
"""Declared allocations (`pl.MemRef`) against PyPTO's memory-planner rules.

The simulator gives every tile its own array, so a binding changes no numbers;
what it can change is whether PyPTO compiles the program at all.  This pass
refuses what PyPTO refuses, at the binding's line:

* every planner: references to one allocation agree on its slot count and memory
  space; two tiles on the same constant slot are not live at the same time;
* when the assembler plans the addresses (``RunConfig.assembler_plans_memory``, set by
  PyPTO's ``memory_planner=PTOAS``): a single-slot declaration
  is refused; a multi-slot one must lower to one ptoas multi-buffer region, which
  needs every binding to select a slot, at most 16 uniform slots (shape, dtype,
  memory space, static and equal valid shapes) in Vec, Mat or Acc, no slot
  carried out of a loop or an if, and at most one slot selected per loop body
  (ptoas 0.54 guards only the first slot of an iteration).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.walk import iter_stmts, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import CompileError
from pytest_pypto.ir.memref import MemRefBinding
from pytest_pypto.ir.types import TileType

MAX_PTOAS_SLOTS = 16
PTOAS_SPACES = ("Vec", "Mat", "Acc")


@dataclass
class Bound:
    """One annotated assignment that binds a tile to a declared allocation."""

    var: n.Var
    binding: MemRefBinding
    space: str | None
    type: TileType  # the value's type (shape, dtype, valid region)
    loop: int | None  # id of the innermost enclosing loop body, None outside loops
    point: int  # pre-order statement number
    span: n.Span | None


def check_memref_slots(program: n.Program, ctx: PassContext) -> n.Program:
    """Refuse the declared allocations PyPTO refuses (module docstring); IR unchanged."""
    ptoas = ctx.assembler_plans_memory
    for fn in program.functions.values():
        if not _declares_memrefs(fn.body):
            continue  # no declared allocation (most functions): nothing to check
        walk = _Walk()
        walk.body(fn.body, None)
        if not walk.bound:
            continue
        _check_agreement(walk.bound, ctx)
        _check_same_slot_overlap(walk, ctx)
        if ptoas:
            _check_ptoas(walk, ctx)
    return program


def _declares_memrefs(body: list[n.Stmt]) -> bool:
    """Whether any assignment of ``body`` (nested bodies included) declares an allocation
    (a ``pl.MemRef`` on its annotation): what `_Walk` records as `Bound`s."""
    for s in iter_stmts(body):
        if type(s) is n.Assign and s.annotation is not None \
                and getattr(s.annotation, "memref", None) is not None:
            return True
    return False


class _Walk:
    """Numbers statements in pre-order; records bindings, uses, loops and phi sources."""

    def __init__(self) -> None:
        self.point = 0
        self.bound: list[Bound] = []
        self.last_use: dict[str, int] = {}
        self.loop_end: dict[int, int] = {}  # id(For) -> last point of its body
        self.loops_of_use: dict[str, list[int]] = {}  # var name -> ids of loops using it
        self.def_loops: dict[str, list[int]] = {}  # var name -> loops enclosing its def
        self.phi_sources: set[str] = set()  # names carried out of a loop / an if
        self._stack: list[int] = []

    def body(self, stmts: list[n.Stmt], loop: int | None) -> None:
        for s in stmts:
            self.point += 1
            here = self.point
            self._uses(s, here)
            if isinstance(s, n.Assign):
                for t in s.targets:
                    self.def_loops[t.name] = list(self._stack)
                b = getattr(s.annotation, "memref", None)
                if b is not None and len(s.targets) == 1 and isinstance(s.value, n.Call):
                    var = s.targets[0]
                    vtype = var.type if isinstance(var.type, TileType) else s.annotation
                    space = s.annotation.space or getattr(vtype, "space", None)  # type: ignore[union-attr]
                    self.bound.append(Bound(var, b, space, vtype, loop, here,
                                            b.span or s.span))
            elif isinstance(s, n.Yield):
                self.phi_sources.update(v.name for v in s.values if isinstance(v, n.Var))
            if isinstance(s, n.For):
                self.phi_sources.update(i.name for _, i in s.carried if isinstance(i, n.Var))
                for v, _ in s.carried:
                    self.def_loops[v.name] = [*self._stack, id(s)]
                self._stack.append(id(s))
                self.body(s.body, id(s))
                self._stack.pop()
                self.loop_end[id(s)] = self.point
            elif isinstance(s, n.If):
                self.body(s.then_body, loop)
                self.body(s.else_body, loop)

    def _uses(self, s: n.Stmt, here: int) -> None:
        for e in stmt_expr_list(s):
            if type(e) is n.Var:
                self.last_use[e.name] = here
                self.loops_of_use.setdefault(e.name, []).extend(self._stack)

    def live_range(self, b: Bound) -> tuple[int, int]:
        """[definition, last use]; a use in a loop the definition is outside of lasts
        to that loop's end (the value is read again by every iteration)."""
        name = b.var.name
        end = max(b.point, self.last_use.get(name, b.point))
        inside = set(self.def_loops.get(name, ()))
        for loop in self.loops_of_use.get(name, ()):
            if loop not in inside:
                end = max(end, self.loop_end.get(loop, end))
        return b.point, end


def _fail(ctx: PassContext, message: str, span: n.Span | None, hint: str | None = None) -> None:
    raise CompileError(message, span, hint=hint, arch=ctx.arch.name)


def _check_agreement(bound: list[Bound], ctx: PassContext) -> None:
    first: dict[str, Bound] = {}
    for b in bound:
        ref = first.setdefault(b.binding.name, b)
        name = b.binding.name
        if b.binding.slots != ref.binding.slots:
            _fail(ctx, f"References to the declared allocation '{name}' disagree on how many "
                       f"slots it has ({ref.binding.slots} vs {b.binding.slots}); one "
                       "declaration has one slot count", b.span,
                  hint=f"declare it once (e.g. {name} = pl.MemRef(slots={ref.binding.slots})) "
                       "and reference that declaration")
        if ref.space and b.space and b.space != ref.space:
            _fail(ctx, f"Tiles bound to the declared allocation '{name}' must all live in the "
                       f"same memory space, but '{b.var.name}' is {b.space} while the "
                       f"allocation is already {ref.space}", b.span,
                  hint="declare a separate allocation for each memory space")


def _check_same_slot_overlap(walk: _Walk, ctx: PassContext) -> None:
    """Two tiles on one constant slot must not be live together (PyPTO's MemoryReuse)."""
    by_slot: dict[tuple[str, int | None], list[tuple[int, int, Bound]]] = {}
    for b in walk.bound:
        if b.binding.index is not None and b.binding.static_index is None:
            continue  # a run-time slot: no static slot to attribute the tile to
        start, end = walk.live_range(b)
        by_slot.setdefault((b.binding.name, b.binding.static_index), []).append((start, end, b))
    for (name, _), members in by_slot.items():
        members.sort(key=lambda m: m[0])
        for (s0, e0, prev), (s1, e1, cur) in zip(members, members[1:]):
            if e0 > s1:
                _fail(ctx, f"Tiles '{prev.var.name}' and '{cur.var.name}' are both bound to the "
                           f"same slot of the declared allocation '{name}' but are live at the "
                           f"same time ({prev.var.name}: [{s0}, {e0}], {cur.var.name}: "
                           f"[{s1}, {e1}]); sharing one slot would overwrite data that is "
                           "still needed", cur.span,
                      hint="put them on different slots, declare separate allocations, or "
                           "bind only tiles whose lifetimes do not overlap")


def _check_ptoas(walk: _Walk, ctx: PassContext) -> None:
    groups: dict[str, list[Bound]] = {}
    for b in walk.bound:
        groups.setdefault(b.binding.name, []).append(b)
    for name, members in groups.items():
        first = members[0]
        slots = first.binding.slots
        if slots <= 1:
            _fail(ctx, f'A single-slot declared allocation (pl.MemRef("{name}")) is not '
                       "supported under memory_planner=PTOAS: ptoas owns memory planning and "
                       "would be free to coalesce the allocations you separated", first.span,
                  hint="declare it with pl.MemRef(slots=N), or compile with the default PyPTO "
                       "memory planner")
        blocker = next(_blockers(walk, members), None)
        if blocker is not None:
            _fail(ctx, f"The declared allocation '{first.binding.declaration}' cannot be lowered "
                       f"to a ptoas multi-buffer region because {blocker}. Under "
                       "memory_planner=PTOAS the slots have no other way to stay apart",
                  first.span,
                  hint="adjust the declaration, or compile with the default PyPTO memory "
                       "planner (MemoryPlanner.PYPTO)")


def _blockers(walk: _Walk, members: list[Bound]) -> Iterator[str]:
    """Why the allocation's bindings cannot be one ptoas region, first reason first."""
    selecting = [b for b in members if b.binding.selects_slot]
    ref = selecting[0] if selecting else members[0]
    per_loop: dict[int, int] = {}
    for b in members:
        if b.loop is not None and b.binding.selects_slot:
            per_loop[b.loop] = per_loop.get(b.loop, 0) + 1
    colive = any(count > 1 for count in per_loop.values())
    for b in members:
        if not b.binding.selects_slot:
            yield f"tile '{b.var.name}' binds it without selecting a slot"
        elif b.binding.slots > MAX_PTOAS_SLOTS:
            yield (f"ptoas supports 2 to {MAX_PTOAS_SLOTS} slots, and it declares "
                   f"{b.binding.slots}")
        elif (b.type.shape, b.type.dtype, b.space) != (ref.type.shape, ref.type.dtype, ref.space):
            yield "its slots hold differently shaped tiles, and ptoas slots are uniform"
        elif None in (b.type.valid or ()) or None in (ref.type.valid or ()):
            offender = b if None in (b.type.valid or ()) else ref
            yield (f"tile '{offender.var.name}' has a runtime valid shape, and a region "
                   "declares one static extent for all its slots")
        elif tuple(b.type.valid or ()) != tuple(ref.type.valid or ()):
            shown = ["x".join(map(str, t.type.valid or ())) for t in (ref, b)]
            yield (f"its slots declare different valid shapes ({shown[0]} and {shown[1]}), and "
                   "a region declares one valid extent for all of them")
        elif b.space not in PTOAS_SPACES:
            yield "ptoas multi-buffer covers the Vec, Mat and Acc memory spaces only"
        elif b.var.name in walk.phi_sources:
            yield "one of its slots is carried out of an if or a loop as a phi"
        elif colive:
            yield ("two of its slots are live at once inside a loop, and ptoas guards only the "
                   "first slot selected in an iteration — the second would be read while the "
                   "next iteration overwrites it (ptoas 0.54). Take one slot per iteration, "
                   "which is the shape the region form accelerates")
