# SPDX-License-Identifier: Apache-2.0
"""`pl.MemRef`: an allocation of the author's own, optionally split into slots.

PyPTO's forms (and what they mean here)::

    scratch = pl.MemRef()               # one allocation, named after its variable
    l0c = pl.MemRef(slots=2)            # two equal slots of one allocation
    pl.MemRef("ub", slots=2)            # named explicitly (also inline in annotations)

    t: pl.Tile[[64, 64], pl.FP32, l0c[i % 2], pl.Mem.Acc] = pl.tile.matmul(a, b)

A slot index is an integer index expression, constant or run-time.  The parser
checks what PyPTO's parser checks (a memory space is required next to a memref,
a single-slot allocation cannot be subscripted, a constant index must be in
range, one declaration has one name) and records a `MemRefBinding` on the
annotation's TileType; compiler/memref_slots.py applies the memory planners'
rules.  ``pl.MemRef(base, offset, size)`` is the resolved form PyPTO's IR printer
emits after address assignment: the bundled toolchain assigns no addresses, so
using it in an annotation is refused with a pointer to the declared form.
"""

from __future__ import annotations

import ast
from typing import Any

from pytest_pypto.ir.errors import ParserTypeError
from pytest_pypto.ir.memref import MemRefBinding
from pytest_pypto.ir.nodes import Const, Expr
from pytest_pypto.ir.types import ScalarType
from pytest_pypto.language import scalars
from pytest_pypto.language.context import FunctionContext

_DECLARED_FORM = 'declare pl.MemRef() / pl.MemRef("name", slots=N) instead'


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


class MemRef:
    """`pl.MemRef(...)`: a declared allocation (see the module docstring).

    ``pl.MemRef()`` / ``pl.MemRef(slots=N)`` take the name of the variable they are
    bound to; ``pl.MemRef("name", slots=N)`` names the allocation itself.  Any other
    positional form (``base, byte_offset, size`` or PyPTO's legacy address forms)
    is a resolved address, kept only so that such a module still imports.
    """

    def __init__(self, *args: Any, slots: int = 1, slot: Any = None, span: Any = None) -> None:
        if not _positive_int(slots):
            raise ValueError(f"pl.MemRef(slots={slots!r}): slots must be a positive integer")
        self.slots = slots
        self.name: str | None = None
        self.resolved = len(args) > 1
        self.inline = False  # written inside kernel code: identified by its name alone
        self.args = args
        if len(args) == 1:
            if not isinstance(args[0], str) or not args[0]:
                raise ValueError(
                    f"pl.MemRef({args[0]!r}): a declared allocation's name must be a non-empty "
                    'string, e.g. pl.MemRef("scratch")'
                )
            self.name = args[0]

    def __getitem__(self, slot: Any) -> MemRefSlot:
        """``decl[k]`` in plain Python (kernel code is parsed, see `parse_subscript`)."""
        if not isinstance(slot, int) or isinstance(slot, bool):
            raise TypeError(f"a pl.MemRef slot index must be an int, got {slot!r}")
        if self.slots <= 1:
            raise IndexError("this pl.MemRef was declared with a single slot")
        if not 0 <= slot < self.slots:
            raise IndexError(
                f"slot index {slot} is out of range for a pl.MemRef of {self.slots} slot(s)"
            )
        return MemRefSlot(self, slot)

    def __repr__(self) -> str:
        if self.resolved:
            return f"pl.MemRef{self.args!r}"
        name = f"{self.name!r}" if self.name else ""
        slots = f"{', ' if name else ''}slots={self.slots}" if self.slots != 1 else ""
        return f"pl.MemRef({name}{slots})"


class MemRefSlot:
    """``decl[k]`` evaluated by Python (outside kernel code): a constant slot."""

    def __init__(self, decl: MemRef, index: int) -> None:
        self.decl = decl
        self.index = index

    def __repr__(self) -> str:
        return f"{self.decl!r}[{self.index}]"


class MemRefType:
    """PyPTO's sentinel annotation of a bare MemRef variable in printed IR (no values)."""


def is_memref(value: Any) -> bool:
    """True for what a Tile annotation may carry as its memref argument."""
    return isinstance(value, (MemRef, MemRefSlot, MemRefBinding))


# ------------------------------------------------------------------ kernel code


def parse_call(ep: Any, node: ast.Call) -> MemRef:
    """``pl.MemRef("name", slots=N)`` written inside kernel code (an annotation, usually)."""
    ctx: FunctionContext = ep.ctx
    slots = 1
    for kw in node.keywords:
        if kw.arg == "slots":
            value = ep.eval(kw.value)
            if not _positive_int(value):
                raise ctx.error(
                    ParserTypeError,
                    f"slots must be a positive integer literal, got {ctx.text(kw.value)}",
                    kw.value, hint='use pl.MemRef("scratch", slots=2)',
                )
            slots = value
        elif kw.arg not in ("span", "slot"):
            raise ctx.error(
                ParserTypeError, f"pl.MemRef() got an unexpected keyword '{kw.arg}'", kw.value,
                hint='use pl.MemRef("scratch", slots=2)',
            )
    args = [ep.eval(a) for a in node.args]
    if len(args) == 1 and not (isinstance(args[0], str) and args[0]):
        raise ctx.error(
            ParserTypeError,
            "A declared allocation's name must be a non-empty string literal, got "
            f"{ctx.text(node.args[0])}",
            node.args[0], hint='use pl.MemRef("scratch")',
        )
    if len(args) == 0:
        raise ctx.error(
            ParserTypeError,
            "an unnamed pl.MemRef() inside kernel code has no variable to be named after",
            node, hint='name it: pl.MemRef("scratch", slots=2)',
        )
    if len(args) == 1:
        decl = MemRef(args[0], slots=slots)
    else:
        decl = MemRef.__new__(MemRef)
        decl.slots, decl.name, decl.resolved, decl.args = slots, None, True, tuple(args)
    decl.inline = True
    return decl


def parse_subscript(ep: Any, decl: MemRef, node: ast.Subscript) -> MemRefBinding:
    """``decl[index]`` in kernel code: one slot of a multi-slot declared allocation."""
    ctx: FunctionContext = ep.ctx
    name = _alloc_name(ctx, decl, node.value, node)
    if decl.slots <= 1:
        raise ctx.error(
            ParserTypeError,
            f"'{name}' was declared with a single slot, so it cannot be subscripted",
            node,
            hint=f"declare it as pl.MemRef(slots=N) to subscript it, or reference '{name}' "
            "without a subscript",
        )
    index = _slot_index(ep, name, node.slice)
    if isinstance(index, int) and not 0 <= index < decl.slots:
        raise ctx.error(
            ParserTypeError,
            f"Slot index {index} is out of range for '{name}', declared with {decl.slots} "
            "slot(s)",
            node, hint=f"subscript within [0, {decl.slots}), or declare more slots",
        )
    return MemRefBinding(name, decl.slots, index, ctx.span(node))


def _slot_index(ep: Any, name: str, node: ast.expr) -> int | Expr:
    """The slot index: an int when known while parsing, else an integer Scalar Expr."""
    ctx: FunctionContext = ep.ctx
    value = ep.hoist(ep.eval(node), node)
    if isinstance(value, Const) and isinstance(value.type, ScalarType) \
            and value.type.dtype.is_int:
        value = value.value
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    expr = None if scalars.is_number(value) else scalars.as_scalar_expr(value, ctx.span(node))
    if expr is None or not expr.type.dtype.is_int:  # type: ignore[union-attr]
        got = (f"Scalar[{expr.type.dtype.name}]" if expr is not None  # type: ignore[union-attr]
               else repr(value))
        raise ctx.error(
            ParserTypeError,
            f"the slot index of '{name}' must be an integer Scalar, but got {got}",
            node, hint=f"index it with an integer expression, e.g. {name}[i % 2]",
        )
    return expr


def binding(ctx: FunctionContext, value: Any, node: ast.AST | None) -> MemRefBinding:
    """The `MemRefBinding` a Tile annotation's memref argument stands for."""
    if isinstance(value, MemRefBinding):
        return value
    decl = value.decl if isinstance(value, MemRefSlot) else value
    if decl.resolved:
        raise ctx.error(
            ParserTypeError,
            f"{decl!r} is a resolved address (the form PyPTO prints after memory planning); "
            "the bundled toolchain plans no addresses",
            node, hint=_DECLARED_FORM,
        )
    slot = isinstance(value, MemRefSlot)  # `decl[k]` evaluated by Python: the name is decl's
    name = _alloc_name(ctx, decl, None if slot else node, node)
    index = value.index if slot else None
    return MemRefBinding(name, decl.slots, index, ctx.span(node))


def _alloc_name(
    ctx: FunctionContext, decl: MemRef, name_node: ast.AST | None, node: ast.AST | None
) -> str:
    """The allocation's name, keeping declarations and names one-to-one in a function.

    An unnamed declaration is named after the variable it is reached through; one
    declaration reached through two names, or two declarations claiming one name,
    would silently be two allocations (or one), so both are refused as PyPTO does.
    A ``pl.MemRef("name")`` written in kernel code is identified by its name alone.
    """
    if decl.resolved:
        raise ctx.error(
            ParserTypeError,
            f"{decl!r} is a resolved address (the form PyPTO prints after memory planning); "
            "the bundled toolchain plans no addresses",
            node, hint=_DECLARED_FORM,
        )
    if decl.inline:
        assert decl.name is not None
        return decl.name
    name = decl.name
    if name is None:
        if isinstance(name_node, ast.Name):
            name = name_node.id
        else:
            bound = sorted(k for k, v in ctx.namespace.items() if v is decl)
            if not bound:
                raise ctx.error(
                    ParserTypeError,
                    "an unnamed pl.MemRef() takes the name of the variable it is bound to, "
                    "but this one is bound to none",
                    node, hint='name it explicitly: pl.MemRef("scratch", slots=2)',
                )
            name = bound[0]
    names: dict[int, tuple[MemRef, str]] = ctx.__dict__.setdefault("memref_names", {})
    owners: dict[str, MemRef] = ctx.__dict__.setdefault("memref_owners", {})
    seen = names.setdefault(id(decl), (decl, name))[1]
    if seen != name:
        raise ctx.error(
            ParserTypeError,
            f"Declared allocation '{seen}' is also referenced as '{name}'",
            node,
            hint=f"an unnamed pl.MemRef() is named after its variable, so aliasing it "
            f"('{name} = {seen}') is ambiguous: reference it as '{seen}', declare a separate "
            'pl.MemRef(), or name it explicitly with pl.MemRef("...")',
        )
    owner = owners.setdefault(name, decl)
    if owner is not decl:
        raise ctx.error(
            ParserTypeError,
            f"Two separate pl.MemRef() declarations both resolve to the name '{name}'",
            node,
            hint="declared allocations are identified by name within a function: give one "
            'of them an explicit name with pl.MemRef("...")',
        )
    return name
