# SPDX-License-Identifier: Apache-2.0
"""The `pl.at(...)` / `pl.spmd(...)` line of a region, validated as PyPTO's parser does.

PyPTO reads these arguments from the AST: `name_hint=` must be a string literal
identifier, `optimizations=` an inline list of `pl.split(pl.SplitMode.X)` /
`pl.cross_core_slot(slot_num=N)` entries, the boolean hints boolean literals.
`level=` other than CORE_GROUP, `deps=`, `no_dep_args=`, `dumps=` and `as tid`
are Tier 3 (recorded; compiling raises).  The accepted optimizations are recorded
in `RegionOptions` and change no numerics.
"""

from __future__ import annotations

import ast
import keyword
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.errors import ParserSyntaxError, ParserTypeError
from pytest_pypto.language import surface
from pytest_pypto.language.context import Tier3Hit

if TYPE_CHECKING:
    from pytest_pypto.language.statements import BodyParser

EXPLICIT_DEPS = "tier 3: explicit task dependencies"
_AT_KEYWORDS = ("level", "role", "optimizations", "deps", "no_dep_args", "dumps",
                "allow_early_resolve", "name_hint", "windowize")


@dataclass
class RegionOptions:
    """What a pl.at / pl.spmd line asks of the outlined kernel (recorded, no numeric effect)."""

    name_hint: str = ""
    split: str | None = None  # pl.SplitMode member name
    slot_num: int | None = None  # pl.cross_core_slot(slot_num=N)
    # Explicit scheduling (language/scheduling.py): the deps= / predicate= expressions
    # (parsed when the region's call is made) and the no_dep_args= tensor names.
    deps: ast.expr | None = None
    predicate: ast.expr | None = None
    no_dep_args: tuple[str, ...] = ()
    dumps: ast.expr | None = None  # the dumps= tensor list (language/scheduling.py)


def region_kind(bp: BodyParser, stmt: ast.With) -> Any:
    """`surface.at` / `surface.spmd` when ``stmt`` opens a region, else None.

    Every context manager's callee is evaluated, so a Tier 3 one (pl.manual_scope...)
    is recorded exactly as before."""
    found = None
    for item in stmt.items:
        expr = item.context_expr
        func = bp.ep.eval(expr.func if isinstance(expr, ast.Call) else expr)
        if any(func is f for f in surface.REGION_FUNCTIONS):
            found = func
    if found is None:
        return None
    ctx = bp.ctx
    if len(stmt.items) != 1:
        raise ctx.error(
            ParserSyntaxError,
            f"with pl.{found.name}(...) must be the only context manager of its with statement",
            stmt, hint=f"write one with pl.{found.name}(...): per region",
        )
    item = stmt.items[0]
    if not isinstance(item.context_expr, ast.Call):
        raise ctx.error(
            ParserSyntaxError, f"pl.{found.name} must be called: with pl.{found.name}(...):",
            item.context_expr,
        )
    return found


def at_options(bp: BodyParser, call: ast.Call) -> RegionOptions:
    """Validate a pl.at(...) call as PyPTO's parser does; Tier 3 keywords are recorded."""
    ctx = bp.ctx
    if len(call.args) > 2:
        raise ctx.error(
            ParserSyntaxError,
            f"pl.at() takes at most 2 positional arguments (level, role), got {len(call.args)}",
            call, hint="with pl.at(level=pl.Level.CORE_GROUP):",
        )
    given: dict[str, ast.expr] = {}
    for name, node in zip(("level", "role"), call.args):
        given[name] = node
    for kw in call.keywords:
        if kw.arg is None:
            raise ctx.error(ParserSyntaxError, "pl.at() does not take **kwargs", kw.value)
        if kw.arg not in _AT_KEYWORDS:
            raise ctx.error(
                ParserSyntaxError, f"Unknown keyword argument '{kw.arg}' in pl.at()", kw.value,
                hint=f"pl.at() takes: {', '.join(_AT_KEYWORDS)}",
            )
        if kw.arg in given:
            raise ctx.error(
                ParserSyntaxError, f"pl.at() got multiple values for argument '{kw.arg}'", kw.value
            )
        given[kw.arg] = kw.value
    level_node = given.get("level")
    if level_node is None:
        raise ctx.error(
            ParserSyntaxError, "pl.at() requires a level argument", call,
            hint="with pl.at(level=pl.Level.CORE_GROUP):",
        )
    level = bp.ep.eval(level_node)
    if not isinstance(level, surface.Level):
        raise ctx.error(
            ParserTypeError, f"pl.at() level must be a pl.Level member, got {ctx.text(level_node)}",
            level_node, hint="level=pl.Level.CORE_GROUP",
        )
    if level is not surface.Level.CORE_GROUP:
        raise Tier3Hit(f"pl.at(level=pl.Level.{level.name})",
                       "tier 3: hierarchy levels other than CORE_GROUP", level_node)
    if "role" in given:
        raise ctx.error(
            ParserSyntaxError, "role= is not supported with level=pl.Level.CORE_GROUP",
            given["role"], hint="drop role= (a CORE_GROUP region has no role)",
        )
    for name in ("allow_early_resolve", "windowize"):
        if name in given:
            bool_literal(bp, given[name], f"pl.at() {name}")
    options = RegionOptions(deps=given.get("deps"), dumps=given.get("dumps"))
    if "no_dep_args" in given:
        options.no_dep_args = no_dep_names(bp, given["no_dep_args"])
    if "name_hint" in given:
        options.name_hint = name_hint(bp, given["name_hint"], "pl.at()")
    if "optimizations" in given:
        optimizations(bp, given["optimizations"], "pl.at", options)
    return options


def no_dep_names(bp: BodyParser, node: ast.expr) -> tuple[str, ...]:
    """`no_dep_args=[t1, t2]`: bare names of tensors visible here."""
    ctx = bp.ctx
    hint = "no_dep_args=[scratch] (tensor names; TaskIds go in deps=)"
    if not isinstance(node, (ast.List, ast.Tuple)):
        raise ctx.error(ParserSyntaxError, "pl.at() no_dep_args= takes a list of tensor names",
                        node, hint=hint)
    names = []
    for elt in node.elts:
        value = bp.ep.eval(elt) if isinstance(elt, ast.Name) else None
        if not isinstance(elt, ast.Name) or getattr(getattr(value, "type", None), "kind",
                                                     None) != "Tensor":
            raise ctx.error(ParserTypeError, f"pl.at() no_dep_args= entries must be bare tensor "
                            f"names, got '{ctx.text(elt)}'", elt, hint=hint)
        names.append(elt.id)
    return tuple(names)


def bool_literal(bp: BodyParser, node: ast.expr, what: str) -> bool:
    if not (isinstance(node, ast.Constant) and isinstance(node.value, bool)):
        raise bp.ctx.error(
            ParserSyntaxError, f"{what} must be a boolean literal (True/False)", node
        )
    return node.value


def name_hint(bp: BodyParser, node: ast.expr, owner: str) -> str:
    """A name_hint= value: a string literal that is a valid, non-keyword identifier."""
    if not (isinstance(node, ast.Constant) and isinstance(node.value, str)):
        raise bp.ctx.error(
            ParserSyntaxError, f"{owner} 'name_hint' argument must be a string literal", node,
            hint='name_hint="my_kernel"',
        )
    hint = node.value
    if hint and (not hint.isidentifier() or keyword.iskeyword(hint)):
        raise bp.ctx.error(
            ParserSyntaxError,
            f"{owner} 'name_hint' must be a valid non-keyword identifier, got {hint!r}", node,
            hint='name_hint="my_kernel"',
        )
    return hint


def optimizations(bp: BodyParser, node: ast.expr, owner: str, options: RegionOptions) -> None:
    """`optimizations=[pl.split(pl.SplitMode.X), pl.cross_core_slot(slot_num=N)]`."""
    ctx = bp.ctx
    entry_hint = "each entry is pl.split(pl.SplitMode.X) or pl.cross_core_slot(slot_num=N)"
    if not isinstance(node, ast.List):
        raise ctx.error(
            ParserSyntaxError, f"{owner}(optimizations=...) must be a list literal", node,
            hint="optimizations=[pl.split(pl.SplitMode.UP_DOWN)]",
        )
    seen: set[str] = set()
    for entry in node.elts:
        func = bp.ep.eval(entry.func) if isinstance(entry, ast.Call) else None
        if func is not surface.split and func is not surface.cross_core_slot:
            raise ctx.error(
                ParserSyntaxError, f"Unsupported entry in {owner}(optimizations=[...])", entry,
                hint=entry_hint,
            )
        assert isinstance(entry, ast.Call)
        if func.name in seen:
            raise ctx.error(
                ParserSyntaxError, f"Duplicate 'pl.{func.name}(...)' in optimizations=[...]", entry
            )
        seen.add(func.name)
        if func is surface.split:
            _split_entry(bp, entry, options)
        else:
            _slot_entry(bp, entry, options)


def _split_entry(bp: BodyParser, entry: ast.Call, options: RegionOptions) -> None:
    ctx = bp.ctx
    for kw in entry.keywords:
        if kw.arg != "slot_num":
            raise ctx.error(
                ParserSyntaxError, f"Unknown keyword argument '{kw.arg}' in pl.split()", kw.value,
                hint="pl.split(pl.SplitMode.UP_DOWN)",
            )
        options.slot_num = _slot_num(bp, kw.value, "pl.split(slot_num=...)")
    if len(entry.args) != 1:
        raise ctx.error(
            ParserSyntaxError,
            f"pl.split() takes exactly 1 positional argument, got {len(entry.args)}", entry,
            hint="pl.split(pl.SplitMode.UP_DOWN)",
        )
    mode = bp.ep.eval(entry.args[0])
    if not isinstance(mode, surface.SplitMode):
        raise ctx.error(
            ParserTypeError, f"pl.split() takes a pl.SplitMode member, got {ctx.text(entry.args[0])}",
            entry.args[0], hint="one of " + ", ".join(f"pl.SplitMode.{m.name}" for m in surface.SplitMode),
        )
    options.split = mode.name


def _slot_entry(bp: BodyParser, entry: ast.Call, options: RegionOptions) -> None:
    ctx = bp.ctx
    hint = "pl.cross_core_slot(slot_num=4)"
    if entry.args:
        raise ctx.error(
            ParserSyntaxError, "pl.cross_core_slot() takes no positional arguments", entry, hint=hint
        )
    value = None
    for kw in entry.keywords:
        if kw.arg != "slot_num":
            raise ctx.error(
                ParserSyntaxError, f"Unknown keyword argument '{kw.arg}' in pl.cross_core_slot()",
                kw.value, hint=hint,
            )
        value = _slot_num(bp, kw.value, "pl.cross_core_slot(slot_num=...)")
    if value is None:
        raise ctx.error(
            ParserSyntaxError, "pl.cross_core_slot() requires the slot_num= keyword argument",
            entry, hint=hint,
        )
    options.slot_num = value


def _slot_num(bp: BodyParser, node: ast.expr, what: str) -> int:
    if not (isinstance(node, ast.Constant) and type(node.value) is int):
        raise bp.ctx.error(ParserSyntaxError, f"{what} must be an integer literal", node)
    if node.value <= 0:
        raise bp.ctx.error(ParserSyntaxError, f"{what} must be positive, got {node.value}", node)
    return node.value
