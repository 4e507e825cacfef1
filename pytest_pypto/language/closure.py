# SPDX-License-Identifier: Apache-2.0
"""Closure constants (docs/design/language.md §7): what a kernel body may capture from its caller.

Names not bound in the body resolve against the caller frame's globals overlaid
with its locals.  Numbers, bools, strings, dtypes, enum members, dynamic dims and
tuples/lists of those fold to constants; modules and the `pl.*` surface objects
are namespaces the parser looks into.  Anything else (arrays, functions, foreign
classes) cannot be folded and must be passed as a parameter.
"""

from __future__ import annotations

import ast
import builtins
import enum
import numbers
import types
from collections.abc import Callable
from typing import Any

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.types import DynVar
from pytest_pypto.language.context import FunctionContext, Tier3Hit
from pytest_pypto.language.surface import Unsupported
from pytest_pypto.language.unsupported import unsupported_message

_MISSING = object()


def is_constant(value: Any) -> bool:
    """True for values that fold to compile-time constants."""
    if isinstance(value, (bool, int, float, str, DataType, enum.Enum, DynVar)) or value is None:
        return True
    if isinstance(value, (tuple, list)):
        return all(is_constant(v) for v in value)
    return False


def is_surface(value: Any) -> bool:
    """Namespaces and `pl.*` objects the parser resolves by identity."""
    if isinstance(value, types.ModuleType):
        return True
    if value is tuple:
        return True
    if isinstance(value, type):
        return value.__module__.startswith("pytest_pypto.")
    if isinstance(value, types.FunctionType):
        return value.__module__.startswith("pytest_pypto.language")
    return type(value).__module__.startswith("pytest_pypto.language")


def normalize(value: Any) -> Any:
    """numpy scalars and other registered numbers become plain Python numbers."""
    if isinstance(value, (bool, int, float)):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, list):
        return [normalize(v) for v in value]
    if isinstance(value, tuple):
        return tuple(normalize(v) for v in value)
    return value


# Types every instance of which check_value returns unchanged: plain constants,
# modules, and (added on first sight by `_passes_by_type`) enum members, dynamic
# dims and `pl.*` surface objects.  A set lookup instead of the full checks: the
# parser looks up `pl`, `pl.FP32`, `pl.add`... thousands of times per file.
_PASS_TYPES: set[type] = {bool, int, float, str, type(None), types.ModuleType}


def _passes_by_type(t: type) -> bool:
    """True if the checks below accept every instance of ``t`` as itself."""
    if issubclass(t, (Unsupported, DataType, numbers.Number, list, tuple, type)):
        return False  # rejected, value-dependent, or normalized
    if issubclass(t, (types.FunctionType, types.ModuleType)):
        return False  # judged by the value's own module
    return issubclass(t, (enum.Enum, DynVar)) or t.__module__.startswith("pytest_pypto.language")


def check_value(
    ctx: FunctionContext, value: Any, what: str | Callable[[], str], node: ast.AST
) -> Any:
    """Validate a captured (or looked-up) value; returns its folded form.

    ``what`` names the value in the error message; a callable is only called for
    the error (rendering the source of an attribute chain costs more than the check).
    """
    if type(value) in _PASS_TYPES:
        return value
    if type(value) is DataType and value.tier != 3:
        return value
    if isinstance(value, Unsupported):
        raise_unsupported(ctx, value, node)
    if isinstance(value, DataType) and value.tier == 3:
        raise Tier3Hit(
            f"pl.{value.name}", "dtypes without a faithful numpy format", node
        )
    value = normalize(value)
    if is_constant(value) or is_surface(value):
        if _passes_by_type(type(value)):
            _PASS_TYPES.add(type(value))
        return value
    if callable(what):
        what = what()
    raise ctx.error(
        ParserTypeError,
        f"captured value {what} (a {type(value).__name__}) cannot be folded; "
        "pass it as a parameter",
        node,
        hint="kernels capture only ints, floats, bools, dtypes, enum members and "
        "tuples/lists of those",
    )


def raise_unsupported(ctx: FunctionContext, marker: Unsupported, node: ast.AST) -> None:
    """Tier 3: record (via Tier3Hit); otherwise a parse error naming the construct."""
    if marker.tier == 3:
        raise Tier3Hit(f"pl.{marker.name}", f"tier 3: {marker.reason}", node)
    raise ctx.error(
        InvalidOperationError,
        unsupported_message(marker),
        node,
        hint="this program needs a PyPTO installation; mark the test @pytest.mark.pypto_onboard",
    )


def lookup(ctx: FunctionContext, name: str, node: ast.AST) -> Any:
    """Resolve a free name of the body against the closure namespace."""
    if name in ctx.local_names:
        raise ctx.error(
            ParserSyntaxError,
            f"'{name}' is used before it is assigned in function '{ctx.function_name}'",
            node,
            hint=f"assign '{name}' before this line, or rename the local variable "
            "that shadows the captured value",
        )
    value = ctx.namespace.get(name, _MISSING)
    if value is _MISSING:
        value = getattr(builtins, name, _MISSING)
        if value is tuple:
            return value
        if value is _MISSING:
            raise ctx.error(
                ParserSyntaxError,
                f"name '{name}' is not defined",
                node,
                hint="define it at module level (or in the function that applies "
                "@pl.program) before the class",
            )
        if name in ("min", "max"):
            raise ctx.error(
                ParserTypeError,
                f"the builtin {name}() cannot be used in kernel code",
                node,
                hint=f"use pl.{name}(a, b) for Scalars, or pl.{name}imum / pl.row_{name} for tiles",
            )
    return check_value(ctx, value, f"'{name}'", node)
