# SPDX-License-Identifier: Apache-2.0
"""`clone_program`: a structural copy of a program for the compiler passes to rewrite.

The passes rewrite statements and expressions in place (flattening calls, inserting
moves, fixing tile types), so the compiler works on a copy and the user's program
object is never changed.  `copy.deepcopy` made that copy generically: a memo entry,
a `__reduce_ex__` round trip and a reconstructed object for every type, span, dtype,
DynVar and string of the tree, 10-12% of the in-process unit suite.

Only IR nodes (and the lists, dicts and tuples holding them) are mutable, so only
they are copied.  Everything else is immutable and shared with the original: types
(frozen dataclasses; the compiler makes new ones with `with_`), spans, DynVars,
dtypes, enums and Python constants.  Sharing is also what makes a DynVar one
dimension: its identity is its meaning, and a copy keeps the user's objects.
A node reached twice in the original is one node in the copy (as with deepcopy),
so identity-keyed bookkeeping in the passes sees the same topology.
"""

from __future__ import annotations

import copy
import dataclasses
import enum
from collections.abc import Callable
from typing import Any

from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.memref import MemRefBinding
from pytest_pypto.ir.types import DynVar, Type

# Values shared as they are: immutable by construction (frozen dataclasses, constants).
# MemRefBinding is frozen; its Expr index is read by the passes, never rewritten.
_SHARED: tuple[type, ...] = (
    str, int, float, bool, complex, bytes, type(None), type(Ellipsis), range, slice,
    n.Span, Type, DynVar, DataType, enum.Enum, MemRefBinding, frozenset, type,
)

# Fields shared without a look at their items: a program's source text (a tuple of str,
# hundreds of lines, that the item-by-item tuple copy would walk only to share it).
_SHARED_FIELDS: dict[type, frozenset[str]] = {n.Program: frozenset({"source_lines"})}

_Copier = Callable[[Any, dict[int, Any]], Any]
# Fields copied by a copier of their own: a Call's (name, value) argument pairs, the
# most numerous tuples of the IR (`_copy_pairs`, the pair level inlined).
_FIELD_COPIERS: dict[type, dict[str, str]] = {n.Call: {"args": "copy_pairs"}}
_copiers: dict[type, _Copier] = {}  # exact class -> how to copy its instances


def clone_program(program: n.Program) -> n.Program:
    """A copy of ``program`` whose nodes, bodies and argument tuples are new objects;
    changing any node of the copy leaves ``program`` as it was."""
    return _clone(program, {})


def clone_node(node: n.Node) -> n.Node:
    """A copy of one node (a function, a statement, an expression) and all beneath it."""
    return _clone(node, {})


def _clone(value: Any, memo: dict[int, Any]) -> Any:
    copier = _copiers.get(value.__class__) or _learn(value.__class__)
    return copier(value, memo)


def _learn(cls: type) -> _Copier:
    copier = _copiers[cls] = _copier_for(cls)
    return copier


def _copier_for(cls: type) -> _Copier:
    if issubclass(cls, (n.Node, n.Unsupported)) and not _has_slots(cls):
        return _node_copier(cls)
    if cls is tuple:
        return _copy_tuple
    if cls is list:
        return _copy_list
    if cls is dict:
        return _copy_dict
    if issubclass(cls, _SHARED):
        return _share
    return _deepcopy  # anything else: the generic copy, so nothing mutable is ever shared


def _has_slots(cls: type) -> bool:
    return any("__slots__" in vars(k) for k in cls.__mro__ if k is not object)


def _share(value: Any, memo: dict[int, Any]) -> Any:
    return value


def _deepcopy(value: Any, memo: dict[int, Any]) -> Any:
    key = id(value)
    got = memo.get(key)
    if got is None:
        got = memo[key] = copy.deepcopy(value)
    return got


def _copy_node(node: Any, memo: dict[int, Any]) -> Any:
    key = id(node)
    got = memo.get(key)
    if got is not None:
        return got
    new = object.__new__(node.__class__)
    memo[key] = new
    fields = {}
    copiers = _copiers
    for name, value in node.__dict__.items():
        copier = copiers.get(value.__class__) or _learn(value.__class__)
        fields[name] = value if copier is _share else copier(value, memo)
    new.__dict__ = fields
    return new


def _node_copier(cls: type) -> _Copier:
    """`_copy_node` unrolled over a dataclass's fields (one compiled function per class:
    no loop over the instance dict).  The copy's fields are set as attributes, in field
    order, as the dataclass's ``__init__`` sets them: the copy then keeps its values in
    the instance (no separate ``__dict__`` object to allocate, and none for the garbage
    collector to walk while the artifact keeps the IR alive).  An instance whose
    attributes are not exactly the fields takes the general `_copy_node`."""
    names = tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()
    frozen = dataclasses.is_dataclass(cls) and cls.__dataclass_params__.frozen  # type: ignore[attr-defined]
    if not names or frozen or not all(name.isidentifier() for name in names):
        return _copy_node
    lines = [
        "def copy(node, memo):",
        "    key = id(node)",
        "    got = memo.get(key)",
        "    if got is not None:",
        "        return got",
        "    d = node.__dict__",
        "    if d.keys() != fields:",
        "        return _copy_node(node, memo)",
        "    new = memo[key] = new_object(cls)",
    ]
    shared = _SHARED_FIELDS.get(cls, frozenset())
    own = _FIELD_COPIERS.get(cls, {})
    for i, name in enumerate(names):
        if name in shared:
            lines.append(f"    f{i} = d[{name!r}]")
            continue
        if name in own:
            lines.append(f"    f{i} = {own[name]}(d[{name!r}], memo)")
            continue
        lines += [
            f"    v = d[{name!r}]",
            "    c = get(v.__class__) or learn(v.__class__)",
            f"    f{i} = v if c is share else c(v, memo)",
        ]
    lines += [f"    new.{name} = f{i}" for i, name in enumerate(names)]
    lines.append("    return new")
    scope: dict[str, Any] = {
        "fields": frozenset(names), "cls": cls, "new_object": object.__new__,
        "get": _copiers.get, "learn": _learn, "share": _share, "_copy_node": _copy_node,
        "copy_pairs": _copy_pairs,
    }
    exec(compile("\n".join(lines), f"<clone of {cls.__name__}>", "exec"), scope)  # noqa: S102
    return scope["copy"]


def _copy_tuple(items: tuple[Any, ...], memo: dict[int, Any]) -> tuple[Any, ...]:
    """A tuple of constants is itself shared; one holding nodes is rebuilt."""
    copiers = _copiers
    if len(items) == 2:  # a Call's (name, value) argument pairs: most tuples of the IR
        a, b = items
        copier = copiers.get(a.__class__) or _learn(a.__class__)
        new_a = a if copier is _share else copier(a, memo)
        copier = copiers.get(b.__class__) or _learn(b.__class__)
        new_b = b if copier is _share else copier(b, memo)
        return items if new_a is a and new_b is b else (new_a, new_b)
    out = []
    changed = False
    for item in items:
        copier = copiers.get(item.__class__) or _learn(item.__class__)
        if copier is _share:
            out.append(item)
        else:
            got = copier(item, memo)
            out.append(got)
            changed = changed or got is not item
    return tuple(out) if changed else items


def _copy_pairs(items: Any, memo: dict[int, Any]) -> Any:
    """`_copy_tuple` of a Call's ``(name, value)`` pairs with the pair level inlined: a
    pair is rebuilt only around a copied node, the tuple only when a pair was."""
    if items.__class__ is not tuple:
        return _clone(items, memo)
    copiers = _copiers
    out = []
    changed = False
    for pair in items:
        if pair.__class__ is tuple and len(pair) == 2 and pair[0].__class__ is str:
            value = pair[1]
            copier = copiers.get(value.__class__) or _learn(value.__class__)
            if copier is not _share:
                new = copier(value, memo)
                if new is not value:
                    pair = (pair[0], new)
                    changed = True
        else:
            new_pair = _clone(pair, memo)
            changed = changed or new_pair is not pair
            pair = new_pair
        out.append(pair)
    return tuple(out) if changed else items


def _copy_list(items: list[Any], memo: dict[int, Any]) -> list[Any]:
    key = id(items)
    got = memo.get(key)
    if got is None:
        got = memo[key] = []
        copiers = _copiers
        for item in items:
            copier = copiers.get(item.__class__) or _learn(item.__class__)
            got.append(item if copier is _share else copier(item, memo))
    return got


def _copy_dict(items: dict[Any, Any], memo: dict[int, Any]) -> dict[Any, Any]:
    key = id(items)
    got = memo.get(key)
    if got is None:
        got = memo[key] = {}
        for k, v in items.items():
            got[k] = _clone(v, memo)
    return got


__all__ = ["clone_node", "clone_program"]
