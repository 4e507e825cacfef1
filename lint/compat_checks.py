# SPDX-License-Identifier: Apache-2.0
"""Checks of PyPTO's flavour (loaded by lint/lint.toml's `modules`).

`compat-classes`: every name of the compat surface that PyPTO defines as a class is
a class here too, so ``isinstance``, ``issubclass`` and ``except`` with it work (a
stand-in for a feature the bundled toolchain leaves out is made by
``pytest_pypto.compat.standins.tier3_class``, never an object).  Which names those are
is the ``classes`` table in lint/lint.toml (read from PyPTO's sources when the name
was added; PyPTO itself is not needed to run the check).
"""

from __future__ import annotations

import ast
import importlib
from collections.abc import Iterator
from pathlib import Path

from pytest_pypto.lint.framework import CheckError, ProjectContext, Violation, check

ROOT_PACKAGE = "pytest_pypto.compat.pypto"


@check(
    "compat-classes",
    scope="project",
    files=["pytest_pypto/**/*.py", "lint/lint.toml"],  # compat re-exports the whole package
    markers=["guard"],
    hint="make the stand-in a class: pytest_pypto.compat.standins.tier3_class(name, reason) "
    "(base=Exception for an error class), or a real class",
    options={"classes": [], "package": ROOT_PACKAGE},
)
def compat_classes(ctx: ProjectContext) -> Iterator[Violation]:
    names = ctx.options["classes"]
    if not names:
        raise CheckError("compat-classes needs its `classes` table in lint/lint.toml")
    package = ctx.options["package"]
    for dotted in names:
        module_name, _, attr = f"{package}.{dotted}".rpartition(".")
        try:
            module = importlib.import_module(module_name)
        except Exception as e:  # project code: any failure means "cannot check"
            raise CheckError(f"cannot import {module_name}: {type(e).__name__}: {e}") from None
        path, line = _where(ctx, module, attr)
        if not hasattr(module, attr):
            yield Violation(path, line, f"pypto.{dotted} is missing from the compat surface")
            continue
        value = getattr(module, attr)
        if not isinstance(value, type):
            yield Violation(
                path, line,
                f"pypto.{dotted} is a class in PyPTO but a {type(value).__name__} here "
                f"(isinstance/issubclass/except with it raise TypeError)",
            )


def _where(ctx: ProjectContext, module: object, attr: str) -> tuple[str, int]:
    """The module's file (relative to the project) and the line binding ``attr``."""
    file = getattr(module, "__file__", None)
    if file is None:
        return "lint/lint.toml", 1
    try:
        rel = Path(file).resolve().relative_to(ctx.root.resolve()).as_posix()
    except ValueError:
        return "lint/lint.toml", 1
    try:
        tree = ast.parse(ctx.read_text(rel))
    except (OSError, SyntaxError, KeyError):
        return rel, 1
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == attr for t in node.targets
        ):
            return rel, node.lineno
        if isinstance(node, (ast.ClassDef, ast.FunctionDef)) and node.name == attr:
            return rel, node.lineno
        if isinstance(node, ast.ImportFrom) and any(
            (a.asname or a.name) == attr for a in node.names
        ):
            return rel, node.lineno
    return rel, 1
