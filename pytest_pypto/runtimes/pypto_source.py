# SPDX-License-Identifier: Apache-2.0
"""Rebuild a parsed `@pl.program` with another `pl`: the class statement, executed again.

The harness hands the PyPTO adapter *our* `Program` (the test module imported
`pytest_pypto.language`).  PyPTO's compiler needs PyPTO's program object, which
only its own ``@pl.program`` builds, from the class source.  So the class
statement (decorators included) is read back from the file our parser read, and
executed again in the names it saw when it was first decorated (module globals
and the enclosing function's locals, `language.parser.program_namespace`), with
every DSL object in them swapped for the other language's object of the same
name (``pl`` itself, ``pl.FP32`` held in a local, ...).

The class is executed from a synthetic source file registered in `linecache`
(the standard protocol: ``(size, None, lines, name)``), padded with blank lines
so line numbers are the user's, and dedented so the class is at top level: a
decorator that finds its class source with `inspect` (qualified name before
CPython 3.13, ``__firstlineno__`` after) finds it whatever the original nesting.

Limits (documented in the README): DSL helpers defined outside the class with our
language (``pl.inline`` functions, templates) are not rebuilt; names bound through
a module attribute path (``pytest_pypto.language.FP32``) are not swapped.
"""

from __future__ import annotations
import __future__

import ast
import itertools
import linecache
import os
import sys
import textwrap
import types
from typing import Any

from pytest_pypto.language.parser import program_namespace
from pytest_pypto.language.sources import current_lines, statement_lines

__all__ = ["RebuildError", "rebuild_program", "swap_names"]

# Plain values are never swapped, even when the language exports an equal one.
_PLAIN = (int, float, complex, str, bytes, bool, type(None), range, slice)
_counter = itertools.count()
_FUTURE_ANNOTATIONS = __future__.annotations


class RebuildError(Exception):
    """The class source of a program could not be found or executed again."""


def rebuild_program(program: Any, language: types.ModuleType) -> Any:
    """The object ``language``'s ``@pl.program`` builds from ``program``'s class source."""
    file, name = program.file, program.name
    line = program.span.line if program.span is not None else None
    start, text = _class_source(file, name, line)
    namespace = program_namespace(program)
    if namespace is None:
        namespace = _module_globals(file)
    if namespace is None:
        raise RebuildError(
            f"cannot rebuild program '{name}': the names it was defined with are unknown "
            f"(no module of {file} is imported)"
        )
    ours = sys.modules["pytest_pypto.language"]
    names = swap_names(namespace, _object_map(ours, language))
    module_name = f"_pypto_rebuilt_{next(_counter)}"
    synthetic = f"{file} [{name}, rebuilt]"
    lines = ["\n"] * (start - 1) + text.splitlines(keepends=True)
    linecache.cache[synthetic] = (sum(map(len, lines)), None, lines, synthetic)
    module = types.ModuleType(module_name)
    module.__dict__.update(names)
    module.__dict__.update(__name__=module_name, __file__=synthetic)
    module.__dict__.pop("__spec__", None)
    module.__dict__.pop("__loader__", None)
    module.__dict__.pop(name, None)
    # The class runs under the file's own `from __future__ import annotations`, if any.
    flags = _FUTURE_ANNOTATIONS.compiler_flag if names.get("annotations") is _FUTURE_ANNOTATIONS else 0
    sys.modules[module_name] = module
    try:
        code = compile("".join(lines), synthetic, "exec", flags=flags, dont_inherit=True)
        exec(code, module.__dict__)  # noqa: S102
    finally:
        sys.modules.pop(module_name, None)
    if name not in module.__dict__:
        raise RebuildError(f"re-executing the class statement of '{name}' bound no '{name}'")
    return module.__dict__[name]


def _class_source(file: str, name: str, line: int | None) -> tuple[int, str]:
    """(first line, dedented text) of the class statement ``name`` at ``line`` of ``file``."""
    lines = current_lines(file)
    if not lines:
        raise RebuildError(f"cannot rebuild program '{name}': its source file {file} is unreadable")
    try:
        tree = ast.parse("".join(lines))
    except SyntaxError as exc:
        raise RebuildError(f"cannot rebuild program '{name}': {file} does not parse ({exc})") from None
    candidates = [
        node for node in ast.walk(tree)
        if isinstance(node, ast.ClassDef) and node.name == name
    ]
    exact = [node for node in candidates if node.lineno == line]
    found = exact or candidates[:1]
    if not found:
        raise RebuildError(f"cannot rebuild program '{name}': no class '{name}' in {file}")
    start, end = statement_lines(found[0])
    return start, textwrap.dedent("".join(lines[start - 1:end]))


def _module_globals(file: str) -> dict[str, Any] | None:
    """The globals of the imported module whose source is ``file`` (None: none is)."""
    for module in list(sys.modules.values()):
        path = getattr(module, "__file__", None)
        if not path:
            continue
        try:
            if os.path.samefile(path, file):
                return dict(vars(module))
        except OSError:
            continue
    return None


def _object_map(ours: types.ModuleType, theirs: types.ModuleType) -> dict[int, Any]:
    """id(our object) -> their object of the same name: the module, its public names,
    and one level of members of its classes (``pl.MemorySpace.Vec``)."""
    mapping: dict[int, Any] = {id(ours): theirs}
    compat = sys.modules.get("pytest_pypto.compat.pypto")
    real_top = sys.modules.get(theirs.__name__.partition(".")[0])
    if compat is not None and real_top is not None:
        mapping[id(compat)] = real_top
    for attr in dir(ours):
        if attr.startswith("_") or not hasattr(theirs, attr):
            continue
        mine, other = getattr(ours, attr), getattr(theirs, attr)
        if isinstance(mine, _PLAIN) or mine is other:
            continue
        mapping.setdefault(id(mine), other)
        if isinstance(mine, type):
            for member in vars(mine):
                if member.startswith("_") or not hasattr(other, member):
                    continue
                value = getattr(mine, member, None)
                if value is not None and not isinstance(value, _PLAIN) and not callable(value):
                    mapping.setdefault(id(value), getattr(other, member))
    return mapping


def swap_names(namespace: dict[str, Any], mapping: dict[int, Any], depth: int = 3) -> dict[str, Any]:
    """A copy of ``namespace`` with every mapped object replaced (inside lists, tuples
    and dicts too, ``depth`` levels deep)."""
    return {key: _swap(value, mapping, depth) for key, value in namespace.items()}


def _swap(value: Any, mapping: dict[int, Any], depth: int) -> Any:
    if isinstance(value, _PLAIN):
        return value
    hit = mapping.get(id(value), _MISSING)
    if hit is not _MISSING:
        return hit
    if depth <= 0:
        return value
    if type(value) in (list, tuple):
        items = [_swap(v, mapping, depth - 1) for v in value]
        if all(a is b for a, b in zip(items, value)):
            return value
        return type(value)(items)
    if type(value) is dict:
        swapped = {k: _swap(v, mapping, depth - 1) for k, v in value.items()}
        if all(swapped[k] is value[k] for k in value):
            return value
        return swapped
    return value


_MISSING = object()
