# SPDX-License-Identifier: Apache-2.0
"""Functions defined outside a program class: `@pl.inline` and `@pl.function` on a
module-level function.

Their bodies are parsed where kernel code calls them (language/funcalls.py), from the
`Template` each hands out; calling one from plain Python fails loudly.
"""

from __future__ import annotations

import functools
from typing import Any

from pytest_pypto.language.surface import FunctionType, Level, NotRunnable
from pytest_pypto.language.templates import Template, enclosing_locals, function_template

__all__ = ["InlineFunction", "StandaloneFunction", "function", "inline"]


class InlineFunction:
    """`@pl.inline`: a function whose body is spliced wherever kernel code calls it."""

    def __init__(self, fn: Any, what: str = "@pl.inline") -> None:
        functools.update_wrapper(self, fn)
        self._func = fn
        self._what = what
        self._template: Template | None = None
        self._enclosing = enclosing_locals(fn)  # a kernel factory's parameters

    def pl_template(self) -> Template:
        if self._template is None:
            self._template = function_template(
                self._func, "Inline", self._what, self._enclosing
            )
        return self._template

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        raise NotRunnable(
            f"{self._what} function '{self.__name__}' is kernel code: kernels that call it "
            "are parsed, it is never called from Python"
        )

    def __repr__(self) -> str:
        return f"<{self._what} function {self.__name__!r}>"


class StandaloneFunction(InlineFunction):
    """`@pl.function(type=...)` on a module-level function: a program calls it by name.

    It joins the calling program as its kind says (an InCore kernel called from
    orchestration is a task; Inline, Opaque and InCore-from-InCore calls are spliced).
    """

    def __init__(self, fn: Any, kind: Any, *, strict_ssa: bool = False,
                 options: dict[str, Any] | None = None) -> None:
        super().__init__(fn, "@pl.function")
        self._kind = getattr(kind, "value", str(kind))
        self._strict_ssa = strict_ssa
        self._options = dict(options or {})

    def pl_template(self) -> Template:
        if self._template is None:
            template = function_template(self._func, self._kind, self._what, self._enclosing)
            template.strict_ssa = self._strict_ssa
            template.extra.update(self._options)
            self._template = template
        return self._template


def inline(fn: Any) -> InlineFunction:
    """`@pl.inline`: splice this function's body at every call site in kernel code."""
    return InlineFunction(fn)


def function(
    fn: Any = None,
    *,
    type: FunctionType = FunctionType.Opaque,  # noqa: A002 - PyPTO's keyword
    strict_ssa: bool = False,
    **kwargs: Any,
) -> Any:
    """`@pl.function(type=...)`: marks a method of a `@pl.program` class.

    The parser reads the decorator from the source; at Python level the method is
    returned unchanged.  A module-level function (no ``self``) becomes a
    `StandaloneFunction` that programs call by name.
    """

    def mark(f: Any) -> Any:
        code = getattr(f, "__code__", None)
        if code is None or code.co_varnames[: code.co_argcount][:1] == ("self",):
            return f
        if kwargs.get("level") is Level.HOST:  # a host SubWorker runs as Python
            return f
        return StandaloneFunction(f, type, strict_ssa=strict_ssa, options=kwargs)

    if fn is not None and callable(fn):
        return mark(fn)
    return mark
