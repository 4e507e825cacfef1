# SPDX-License-Identifier: Apache-2.0
"""A module-level `@pl.program` that failed to parse: the error waits until the program is used.

Raising at import time would turn one bad kernel into a collection error hiding
every other test of the file.  So `@pl.program` at module level keeps the parse
error in a `DeferredProgram`, and whoever consumes the program (the compiler, the
compile cache, the IR printer, any attribute a consumer reads) raises it then:
same type, same message pointing at the user's line, same notes.  Programs built
inside functions are not deferred; the caller sees the error where it happens.
"""

from __future__ import annotations

import copy
from typing import NoReturn

__all__ = ["DeferredProgram"]


class DeferredProgram:
    """Stands in for the `Program` of class ``class_name`` whose parse raised ``error``.

    Consumers call `error()` and raise what it returns (one frame, theirs); every
    other public attribute access raises the same error, so code that does not
    know about deferral (``program.functions``, ``print_program``) fails with the
    user's diagnostic rather than an AttributeError.
    """

    __slots__ = ("_class_name", "_error", "__weakref__")

    def __init__(self, class_name: str, error: BaseException) -> None:
        self._class_name = class_name
        self._error = error.with_traceback(None)  # frees the decoration-time frames

    @property
    def class_name(self) -> str:
        """The name of the decorated class (``name`` itself raises, like every use)."""
        return self._class_name

    def error(self) -> BaseException:
        """A fresh copy of the parse error, ready to raise.

        A copy, not the original: the harness appends notes (platform, seed) and a
        failure class to what it catches, and a program used on several cells must
        not accumulate the notes of all of them.
        """
        original = self._error
        try:
            fresh = copy.copy(original)
        except Exception:  # noqa: BLE001  (an exception type copy cannot rebuild)
            return original
        if type(fresh) is not type(original) or str(fresh) != str(original):
            return original
        notes = getattr(fresh, "__notes__", None)
        if isinstance(notes, list):
            fresh.__notes__ = list(notes)
        fresh.__cause__ = original.__cause__
        fresh.__context__ = original.__context__
        fresh.__suppress_context__ = original.__suppress_context__
        return fresh

    def __getattr__(self, name: str) -> NoReturn:
        __tracebackhide__ = True  # pytest shows the user's line, not this one
        if name.startswith("_"):
            # Inert for introspection (pytest's fixture scan, copy, pickle probes).
            raise AttributeError(name)
        raise self.error()

    def __repr__(self) -> str:
        where = getattr(self._error, "span", None)
        at = f" at {where.file}:{where.line}" if where is not None else ""
        return (
            f"<pl.program {self._class_name}: failed to parse "
            f"({type(self._error).__name__}{at})>"
        )
