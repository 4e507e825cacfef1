# SPDX-License-Identifier: Apache-2.0
"""Declared option types: what each check option must be, checked where the manifest is read.

A check declares an option as `Option(default, type, validate=...)`; a manifest value
of the wrong shape then becomes the check's error item, naming the check, the
option, the expected type and the value given, instead of a crash deep inside the
check.  Types are annotations over what TOML can spell::

    str  int  float  bool  Any  list[str]  tuple[int, int]  str | tuple[int, int]

(`float` accepts integers too; a TOML array stands for a list or a tuple.)  A plain
default instead of an Option declares the type of the default: `"x"` a string, `3`
an integer, `["a"]` a list of strings, `[]` a list of anything, `None` anything.
"""

from __future__ import annotations

import types
import typing
from collections.abc import Callable
from typing import Any

_UNIONS = tuple(u for u in (typing.Union, getattr(types, "UnionType", None)) if u is not None)
_SCALARS: dict[Any, tuple[str, str]] = {
    str: ("a string", "strings"),
    int: ("an integer", "integers"),
    float: ("a number", "numbers"),
    bool: ("a boolean (true or false)", "booleans"),
}
_SHORT = {str: "string", int: "integer", float: "number", bool: "boolean"}


class Option:
    """One check option: its default, its declared type and an optional value check.

    `validate(value)` runs after the type matches and raises ValueError with a
    message for a person (say, `[5, 1] is an empty range`); its return value is
    ignored.  A `None` default means the option has no default (the check reads
    None unless the manifest sets it).
    """

    __slots__ = ("default", "type", "validate", "doc")

    def __init__(
        self,
        default: Any,
        type: Any = None,
        *,
        validate: Callable[[Any], object] | None = None,
        doc: str = "",
    ) -> None:
        self.type = infer_type(default) if type is None else type
        describe(self.type)  # an annotation this module cannot check fails at registration
        if default is not None and mismatch(default, self.type) is not None:
            raise ValueError(
                f"option default {show(default)} is not {describe(self.type)} (its declared type)"
            )
        self.default = default
        self.validate = validate
        self.doc = doc

    def __repr__(self) -> str:
        return f"Option({self.default!r}, {describe(self.type)!r})"

    def problem(self, name: str, value: Any) -> str | None:
        """Why `value` cannot be option `name`, for a person; None when it can."""
        found = mismatch(value, self.type, name)
        if found is not None:
            where, tp, part = found
            msg = f"option {name!r} must be {describe(self.type)}, got {show(value)}"
            if where == name:
                return f"{msg} ({kind(value)})"
            return f"{msg}: {where} is {show(part)} ({kind(part)}), expected {describe(tp)}"
        if self.validate is not None:
            try:
                self.validate(value)
            except ValueError as e:
                return f"option {name!r} = {show(value)}: {e}"
        return None


def as_option(value: Any) -> Option:
    """An Option as is; a plain default as an Option declaring the default's type."""
    return value if isinstance(value, Option) else Option(value)


def infer_type(default: Any) -> Any:
    """The type a plain default declares (see the module docstring)."""
    if default is None:
        return Any
    if isinstance(default, (list, tuple)):
        kinds = {infer_type(x) for x in default}
        item = kinds.pop() if len(kinds) == 1 else Any
        return list[item] if item in _SCALARS else list[Any]
    return type(default)


def mismatch(value: Any, tp: Any, where: str = "value") -> tuple[str, Any, Any] | None:
    """The innermost part of `value` that is not of type `tp`: (where, its type, the part)."""
    if tp is Any:
        return None
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _UNIONS:
        if any(mismatch(value, a) is None for a in args):
            return None
        return where, tp, value
    if origin is list:
        if not isinstance(value, (list, tuple)):
            return where, tp, value
        for i, item in enumerate(value):
            found = mismatch(item, args[0] if args else Any, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if origin is tuple:
        variadic = len(args) == 2 and args[1] is Ellipsis
        if not isinstance(value, (list, tuple)) or (not variadic and len(value) != len(args)):
            return where, tp, value
        for i, item in enumerate(value):
            found = mismatch(item, args[0] if variadic else args[i], f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if tp is bool or isinstance(value, bool):
        return None if tp is bool and isinstance(value, bool) else (where, tp, value)
    if tp is float:
        return None if isinstance(value, (int, float)) else (where, tp, value)
    if tp is dict:
        return None if isinstance(value, dict) else (where, tp, value)
    return None if isinstance(value, tp) else (where, tp, value)


def describe(tp: Any) -> str:
    """`list[str]` -> 'a list of strings' (raises TypeError for an unsupported annotation)."""
    return _describe(tp, plural=False)


def _describe(tp: Any, plural: bool) -> str:
    if tp is Any:
        return "anything" if plural else "any value"
    if tp in _SCALARS:
        return _SCALARS[tp][plural]
    origin = typing.get_origin(tp)
    args = typing.get_args(tp)
    if origin in _UNIONS:
        return " or ".join(_describe(a, plural) for a in args)
    if origin is list:
        inner = _describe(args[0], True) if args else "anything"
        return f"lists of {inner}" if plural else f"a list of {inner}"
    if origin is tuple:
        if len(args) == 2 and args[1] is Ellipsis:
            return _describe(list[args[0]], plural)  # type: ignore[valid-type]
        shape = "[" + ", ".join(_short(a) for a in args) + "]"
        noun = {2: "pair", 3: "triple"}.get(len(args), "list")
        return f"{shape} {noun}s" if plural else f"{_article(shape)} {shape} {noun}"
    if tp is dict:
        return "tables" if plural else "a table"
    if isinstance(tp, type):
        return f"{tp.__name__} values" if plural else f"{_article(tp.__name__)} {tp.__name__}"
    raise TypeError(f"unsupported lint option type {tp!r}")


def _short(tp: Any) -> str:
    if tp in _SHORT:
        return _SHORT[tp]
    return _describe(tp, plural=False)


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeio" else "a"


def kind(value: Any) -> str:
    """What TOML calls `value`: 'a string', 'an integer', 'a list', 'a table'..."""
    if isinstance(value, bool):
        return "a boolean"
    for tp in (str, int, float):
        if isinstance(value, tp):
            return _SCALARS[tp][0]
    if isinstance(value, (list, tuple)):
        return f"a list of {len(value)} item{'s' if len(value) != 1 else ''}"
    if isinstance(value, dict):
        return "a table"
    name = type(value).__name__
    return f"{_article(name)} {name}"


def show(value: Any, limit: int = 120) -> str:
    """`value` spelled as in the manifest (TOML booleans and tables), shortened when long."""
    text = _show(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _show(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_show(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_show(v)}" for k, v in value.items()) + "}"
    return repr(value)
