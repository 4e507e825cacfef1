# SPDX-License-Identifier: Apache-2.0
"""This repository's own lint checks (loaded by lint/lint.toml's `modules`).

They guard rules of the toolchain: the op registry is complete, platform strings
are only split or assembled in pytest_pypto/arch.py, and arch capacities come from
the arch table rather than literals (docs/design/arch.md).
"""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from pytest_pypto.arch import ARCH_CHOICES, ARCH_SPECS, MODE_CHOICES
from pytest_pypto.lint.framework import CheckError, FileContext, ProjectContext, Violation, check

# ---------------------------------------------------------------------------
# op-registry


@check(
    "op-registry",
    scope="project",
    files=["pytest_pypto/**/*.py", "ut/**/*.py", "st/**/*.py"],
    markers=["guard"],
    hint="give the op a docstring, a type rule and numpy semantics (compute or execute) "
    "in its registry entry, and call it from a test under ut/ or st/",
    options={"registry": "pytest_pypto.ir.registry", "test_dirs": ["ut", "st"]},
)
def op_registry(ctx: ProjectContext) -> Iterator[Violation]:
    name = ctx.options["registry"]
    try:
        registry = importlib.import_module(name).REGISTRY
    except Exception as e:  # the registry is project code: any failure means "cannot check"
        raise CheckError(
            f"cannot import the op registry {name}.REGISTRY: {type(e).__name__}: {e}"
        ) from None
    dirs = tuple(d.rstrip("/") + "/" for d in ctx.options["test_dirs"])
    tests = "\n".join(text for _, text in ctx.texts(p for p in ctx.files if p.startswith(dirs)))
    where = _op_locator(ctx, name)
    for op_name in sorted(registry):
        op = registry[op_name]
        path, line = where(op_name, op)
        doc = getattr(op, "doc", None)
        if not isinstance(doc, str) or not doc.strip():
            yield Violation(path, line, f"op {op_name!r} has no docstring")
        if not callable(getattr(op, "type_rule", None)):
            yield Violation(path, line, f"op {op_name!r} has no type rule")
        if getattr(op, "compute", None) is None and getattr(op, "execute", None) is None:
            yield Violation(path, line, f"op {op_name!r} has no numpy semantics (compute/execute)")
        spellings = tuple(getattr(op, "spellings", ()) or ())
        needles = [f'"{op_name}"', f"'{op_name}'"]
        for sp in spellings:
            needles += [f"pl.{sp}("] if "." in sp else [f"pl.{sp}(", f"pl.tile.{sp}("]
        if not any(n in tests for n in needles):
            shown = ", ".join(needles)
            yield Violation(
                path,
                line,
                f"op {op_name!r} is not exercised by any test under "
                f"{'/, '.join(d.rstrip('/') for d in dirs)}/ (looked for {shown})",
            )


def _op_locator(ctx: ProjectContext, module: str) -> Callable[[str, Any], tuple[str, int]]:
    """Where to point at an op: the source of its rule/semantics, else its quoted name."""
    package_dir = "/".join(module.split(".")[:-1]) + "/"
    fallback = module.replace(".", "/") + ".py"
    sources = [(p, ctx.read_text(p)) for p in ctx.files if p.startswith(package_dir)]
    root = ctx.root.resolve()

    def where(op_name: str, op: Any) -> tuple[str, int]:
        for attr in ("compute", "execute", "type_rule"):
            fn = getattr(op, attr, None)
            while isinstance(fn, functools.partial):
                fn = fn.func
            try:
                file = Path(inspect.getsourcefile(fn) or "").resolve()  # type: ignore[arg-type]
                line = inspect.getsourcelines(fn)[1]  # type: ignore[arg-type]
                return file.relative_to(root).as_posix(), max(line, 1)
            except (TypeError, OSError, ValueError):
                continue
        for quoted in (f'"{op_name}"', f"'{op_name}'"):
            for path, text in sources:
                i = text.find(quoted)
                if i >= 0:
                    return path, text.count("\n", 0, i) + 1
        return fallback, 1

    return where


# ---------------------------------------------------------------------------
# platform-strings

_ARCH = set(ARCH_CHOICES)
_MODES = set(MODE_CHOICES)
_WORDS = _ARCH | _MODES
_WORD_ALT = "|".join(sorted(_WORDS, key=len, reverse=True))
_MODE_ALT = "|".join(sorted(_MODES))
_ARCH_ALT = "|".join(sorted(_ARCH, key=len, reverse=True))
_STARTS_WORD = re.compile(rf"^(?:{_WORD_ALT})(?![A-Za-z0-9_])")
_ENDS_WORD = re.compile(rf"(?<![A-Za-z0-9_])(?:{_WORD_ALT})$")
_FORMAT_ASSEMBLY = re.compile(
    rf"(?:\}}|%s)(?:{_MODE_ALT})(?![A-Za-z0-9_])|(?<![A-Za-z0-9_])(?:{_ARCH_ALT})(?:\{{|%s)"
)
_SPLIT_METHODS = {
    "replace",
    "endswith",
    "startswith",
    "removesuffix",
    "removeprefix",
    "rstrip",
    "lstrip",
    "strip",
    "split",
    "rsplit",
    "partition",
    "rpartition",
    "find",
    "rfind",
    "index",
    "rindex",
}
_RE_FUNCS = {"match", "fullmatch", "search", "compile", "split", "sub", "findall", "finditer"}
_PLATFORM_NAMES = ("plat", "cell")


def _word(node: ast.AST | None) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in _WORDS:
        return node.value
    if isinstance(node, ast.Tuple):
        for elt in node.elts:
            w = _word(elt)
            if w:
                return w
    return None


def _names_platform(node: ast.AST) -> bool:
    text = ast.unparse(node).lower()
    return any(n in text for n in _PLATFORM_NAMES)


def _neg_len(node: ast.AST | None) -> bool:
    """`-3`/`-7` (len of a mode) or `-len("sim")`."""
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        v = node.operand
        if isinstance(v, ast.Constant) and v.value in {len(m) for m in _MODES}:
            return True
        if isinstance(v, ast.Call) and isinstance(v.func, ast.Name) and v.func.id == "len":
            return bool(v.args) and _word(v.args[0]) is not None
    return False


def platform_string_uses(
    tree: ast.AST, nodes: Iterable[ast.AST] | None = None
) -> Iterator[tuple[int, str]]:
    """(line, what) for each place that splits or assembles a platform string
    (``nodes``: the tree's nodes in ast.walk order, when the caller has them listed)."""
    for node in ast.walk(tree) if nodes is None else nodes:
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            w = _word(node.left) or _word(node.right)
            if w:
                yield node.lineno, f"assembles a platform string with '+' ({w!r})"
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
            if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str):
                if _FORMAT_ASSEMBLY.search(node.left.value):
                    yield node.lineno, "assembles a platform string with '%'"
        elif isinstance(node, ast.JoinedStr):
            yield from _fstring(node)
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            attr, recv = node.func.attr, node.func.value
            arg = node.args[0] if node.args else None
            if attr in _SPLIT_METHODS and _word(arg):
                yield node.lineno, f"splits a platform string (.{attr}({_word(arg)!r}))"
            elif (
                attr == "format" and isinstance(recv, ast.Constant) and isinstance(recv.value, str)
            ):
                if _FORMAT_ASSEMBLY.search(recv.value):
                    yield node.lineno, "assembles a platform string with str.format"
            elif attr == "join" and node.args and isinstance(node.args[0], (ast.List, ast.Tuple)):
                if any(_word(e) for e in node.args[0].elts):
                    yield node.lineno, "assembles a platform string with str.join"
            elif (
                attr in _RE_FUNCS
                and isinstance(recv, ast.Name)
                and recv.id == "re"
                and isinstance(arg, ast.Constant)
                and isinstance(arg.value, str)
                and re.search(rf"(?:{_WORD_ALT})", arg.value)
            ):
                yield node.lineno, f"parses platform strings with a regex ({arg.value!r})"
        elif isinstance(node, ast.Compare) and _word(node.left):
            if any(isinstance(op, (ast.In, ast.NotIn)) for op in node.ops) and any(
                _names_platform(c) for c in node.comparators
            ):
                yield node.lineno, f"splits a platform string ({_word(node.left)!r} in ...)"
        elif isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice):
            s = node.slice
            if _neg_len(s.lower) or _neg_len(s.upper):
                if _names_platform(node.value) or any(
                    isinstance(b, ast.UnaryOp) and isinstance(b.operand, ast.Call)
                    for b in (s.lower, s.upper)
                ):
                    yield node.lineno, "splits a platform string by slicing off the mode"


def _fstring(node: ast.JoinedStr) -> Iterator[tuple[int, str]]:
    vals = node.values
    for i, v in enumerate(vals):
        prev = vals[i - 1] if i else None
        nxt = vals[i + 1] if i + 1 < len(vals) else None
        if isinstance(v, ast.Constant) and isinstance(v.value, str):
            if (isinstance(prev, ast.FormattedValue) and _STARTS_WORD.search(v.value)) or (
                isinstance(nxt, ast.FormattedValue) and _ENDS_WORD.search(v.value)
            ):
                yield node.lineno, "assembles a platform string in an f-string"
                return
        elif isinstance(v, ast.FormattedValue) and isinstance(nxt, ast.FormattedValue):
            a, b = ast.unparse(v.value).lower(), ast.unparse(nxt.value).lower()
            if "arch" in a and ("mode" in b or "sim" in b):
                yield node.lineno, "assembles a platform string in an f-string"
                return


@check(
    "platform-strings",
    files=["pytest_pypto/**/*.py"],
    exclude=["pytest_pypto/arch.py"],
    markers=["guard"],
    hint="platform strings are split and assembled only in pytest_pypto/arch.py: "
    "use arch.parse_platform(), arch.platform_string() or the PLATFORMS table",
)
def platform_strings(ctx: FileContext) -> Iterator[Violation]:
    if ctx.tree is None:
        return
    for line, what in platform_string_uses(ctx.tree, ctx.nodes):
        yield ctx.violation(line, what)


# ---------------------------------------------------------------------------
# arch-literals (docs/design/arch.md: capacities are read from the arch table)


def default_capacity_literals() -> list[int]:
    """The per-arch buffer capacities of 64 KiB and more, read from the arch table itself."""
    return sorted({v for s in ARCH_SPECS.values() for v in s.capacity.values() if v >= 65536})


@check(
    "arch-literals",
    files=["pytest_pypto/**/*.py"],
    exclude=["pytest_pypto/arch.py"],
    markers=["guard"],
    hint="read capacities from pytest_pypto.arch (spec(arch).capacity[...]) "
    "instead of hard-coding them (docs/design/arch.md)",
    options={"literals": []},
)
def arch_literals(ctx: FileContext) -> Iterator[Violation]:
    values = set(ctx.options["literals"] or default_capacity_literals())
    found: dict[int, int] = {}
    spelled = "|".join(_underscored(v) for v in sorted(values))
    for m in re.finditer(rf"(?<![\w.])(?:{spelled})(?![\w.])", ctx.text):
        n = ctx.text.count("\n", 0, m.start()) + 1
        found.setdefault(n, int(m.group().replace("_", "")))
    if ctx.tree is not None:
        for node in ctx.nodes:
            if isinstance(node, ast.Constant) and type(node.value) is int and node.value in values:
                found.setdefault(node.lineno, node.value)
    for line in sorted(found):
        yield ctx.violation(line, f"capacity literal {found[line]} outside pytest_pypto/arch.py")


def _underscored(value: int) -> str:
    """Regex for a decimal literal with optional `_` thousands separators."""
    digits = str(value)
    groups = []
    while digits:
        groups.insert(0, digits[-3:])
        digits = digits[:-3]
    return "_?".join(groups)
