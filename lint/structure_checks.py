# SPDX-License-Identifier: Apache-2.0
"""The package's shape, checked (loaded by lint/lint.toml's `modules`).

`import-structure` keeps the layering of docs/design/README.md true as the code
moves: each folder ("room") of the package imports only the rooms below it, no
import circle spans two rooms, function-local imports are rare and each says why,
modules stay small, the harness stays a pytest-free library, PyPTO's flavour stays
in `compat/` (and the `runtimes/` adapters), and docstrings cite only files that
are in the repository.  Imports are read from the AST: module-level and
function-local ones, plus `importlib.import_module("literal")`, so a lazy string
cannot hide an edge; imports under `if TYPE_CHECKING:` are types only and ignored.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_pypto.lint.framework import ProjectContext, Violation, check

# room -> the rooms it may import (its own room always).  "base" is arch.py,
# config.py and _version.py; "face" is the package's __init__ (and __main__).
_BELOW_HARNESS = ("runtime", "compiler", "language", "ir", "base")
LAYERS: Mapping[str, tuple[str, ...]] = {
    "base": (),
    "ir": ("base",),
    "language": ("ir", "base"),
    "compiler": ("language", "ir", "base"),
    "runtime": ("ir", "base"),
    "harness": _BELOW_HARNESS,
    "lint": ("base",),
    "plugin": ("harness", "lint", *_BELOW_HARNESS),
    "compat": ("plugin", "harness", "lint", "runtimes", *_BELOW_HARNESS),
    "runtimes": ("compat", "plugin", "harness", *_BELOW_HARNESS),
    "face": ("compat", "plugin", "harness", "lint", "runtimes", *_BELOW_HARNESS),
}
BASE_MODULES = ("arch", "config", "_version")
FACE_MODULES = ("__main__",)
FLAVOUR_ROOMS = ("compat", "runtimes")  # where modules may be named after PyPTO
# A .md file, or a folder/file.py path; one followed by ':' is a location in an example
# (``tests/t.py::x``, ``--> tests/k.py:3:5``), not a citation.
_REF = re.compile(r"(?<![\w./-])((?:[\w.-]+/)*[\w.-]+\.md|(?:[\w.-]+/)+[\w.-]+\.py)\b(?!:)")
_URL = re.compile(r"\w+://\S+")


@dataclass
class _Import:
    target: str
    line: int
    local: bool  # inside a function body
    reason: bool  # a comment on its first line or the line above


@dataclass
class _Module:
    name: str
    path: str
    room: str
    lines: list[str]
    tree: ast.Module
    imports: list[_Import] = field(default_factory=list)


def room_of(module: str, package: str) -> str:
    """The room of a dotted module name inside `package`."""
    parts = module.split(".")[1:]
    if not parts or parts[0] in FACE_MODULES:
        return "face"
    if parts[0] in BASE_MODULES:
        return "base"
    return parts[0]


def _module_name(path: str, package: str) -> str | None:
    if not path.startswith(package + "/") or not path.endswith(".py"):
        return None
    dotted = path[:-3].replace("/", ".")
    return dotted[: -len(".__init__")] if dotted.endswith(".__init__") else dotted


def _type_checking(test: ast.expr) -> bool:
    return "TYPE_CHECKING" in ast.unparse(test)


def _targets(node: ast.AST, mod: _Module, names: set[str]) -> list[str]:
    """Internal modules an import statement (or import_module call) reaches."""
    if isinstance(node, ast.Import):
        raw = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
        base = node.module or ""
        if node.level:
            parts = mod.name.split(".")
            if not mod.path.endswith("__init__.py"):
                parts = parts[:-1]
            parts = parts[: len(parts) - (node.level - 1)]
            base = ".".join([*parts, base] if base else parts)
        raw = [f"{base}.{a.name}" if f"{base}.{a.name}" in names else base for a in node.names]
    else:  # importlib.import_module("...")
        raw = [node.args[0].value]  # type: ignore[attr-defined]
    out = []
    for name in raw:
        while name and name not in names:
            name = name.rpartition(".")[0]
        if name and name != mod.name and name not in out:
            out.append(name)
    return out


def _is_import_module(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call) or len(node.args) != 1:
        return False
    arg, fn = node.args[0], node.func
    name = fn.attr if isinstance(fn, ast.Attribute) else getattr(fn, "id", "")
    return name == "import_module" and isinstance(arg, ast.Constant) and isinstance(arg.value, str)


def _collect(mod: _Module, names: set[str]) -> None:
    def commented(line: int) -> bool:
        here = mod.lines[line - 1] if line <= len(mod.lines) else ""
        above = mod.lines[line - 2].strip() if line >= 2 else ""
        return "#" in here or above.startswith("#")

    def walk(node: ast.AST, local: bool) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and _type_checking(child.test):
                for sub in child.orelse:
                    walk(ast.Module(body=[sub], type_ignores=[]), local)
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)) or _is_import_module(child):
                for t in _targets(child, mod, names):
                    mod.imports.append(_Import(t, child.lineno, local, commented(child.lineno)))
            walk(child, local or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef,
                                                    ast.Lambda)))

    walk(mod.tree, False)


def _sccs(graph: Mapping[str, Sequence[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (iterative Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    found: list[list[str]] = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(graph[root]))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            for w in it:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(graph[w])))
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[v])
                if low[v] == index[v]:
                    comp = []
                    while True:
                        w = stack.pop()
                        on.discard(w)
                        comp.append(w)
                        if w == v:
                            break
                    if len(comp) > 1:
                        found.append(sorted(comp))
    return found


def _doc_refs(mod: _Module, exists: set[str]) -> Iterator[Violation]:
    """Docstrings that cite a .md file, or a folder/file.py path, the repo lacks."""
    for node in ast.walk(mod.tree):
        if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        body = node.body
        if not (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                and isinstance(body[0].value.value, str)):
            continue
        text = _URL.sub("", body[0].value.value)
        for match in _REF.finditer(text):
            ref = match.group(1).lstrip("./")
            if ref in exists or any(p.endswith("/" + ref) for p in exists):
                continue
            line = body[0].value.lineno + text.count("\n", 0, match.start())
            yield Violation(mod.path, line, f"docstring cites {ref}, which is not in the repository")


@check(
    "import-structure",
    scope="project",
    files=["**/*.py", "**/*.md"],
    markers=["guard"],
    hint="see docs/design/README.md (the rooms and the layering): import only from the rooms "
    "below, give a function-local import a '# lazy: <why>' comment or move it to module level",
    options={
        "package": "pytest_pypto",
        "max_lines": 600,
        "plugin_max_lines": 300,
        "max_local_share": 0.15,
    },
)
def import_structure(ctx: ProjectContext) -> Iterator[Violation]:
    package = ctx.options["package"]
    mods: dict[str, _Module] = {}
    for path in ctx.files:
        name = _module_name(path, package)
        if name is None:
            continue
        text = ctx.read_text(path)
        try:
            tree = ast.parse(text, filename=path)
        except SyntaxError as e:
            yield Violation(path, e.lineno or 1, f"cannot parse: {e.msg}")
            continue
        mods[name] = _Module(name, path, room_of(name, package), text.splitlines(), tree)
    names = set(mods)
    for mod in mods.values():
        _collect(mod, names)
    yield from _rooms(mods)
    yield from _circles(mods)
    yield from _local_imports(mods, ctx.options["max_local_share"])
    yield from _shapes(mods, ctx.options["max_lines"], ctx.options["plugin_max_lines"])
    exists = set(ctx.files)
    for mod in mods.values():
        yield from _doc_refs(mod, exists)


def _rooms(mods: Mapping[str, _Module]) -> Iterator[Violation]:
    for mod in mods.values():
        allowed = LAYERS.get(mod.room)
        if allowed is None:
            yield Violation(mod.path, 1, f"room {mod.room!r} is not in the layer table "
                            f"({', '.join(LAYERS)})")
            continue
        for imp in mod.imports:
            room = mods[imp.target].room
            if room != mod.room and room not in allowed:
                yield Violation(mod.path, imp.line, f"upward import: {mod.room}/ imports "
                                f"{imp.target} ({room}/); {mod.room}/ may import only "
                                f"{', '.join(allowed) or 'nothing of ours'}")


def _circles(mods: Mapping[str, _Module]) -> Iterator[Violation]:
    graph = {m: sorted({i.target for i in mod.imports}) for m, mod in mods.items()}
    for comp in _sccs(graph):
        rooms = sorted({mods[m].room for m in comp})
        if len(rooms) < 2:
            continue
        first = mods[comp[0]]
        line = next((i.line for i in first.imports if i.target in comp), 1)
        yield Violation(first.path, line, f"import circle across {', '.join(rooms)}: "
                        f"{' , '.join(comp)}")


def _local_imports(mods: Mapping[str, _Module], max_share: float) -> Iterator[Violation]:
    total = local = 0
    for mod in mods.values():
        for imp in mod.imports:
            total += 1
            if not imp.local:
                continue
            local += 1
            if not imp.reason:
                yield Violation(mod.path, imp.line, f"function-local import of {imp.target} "
                                "without a reason: move it to module level or say why "
                                "('# lazy: ...')")
    if total and local / total > max_share:
        face = next((m for m in mods.values() if m.room == "face"), None)
        yield Violation(face.path if face else "", 1, f"{local} of {total} internal imports "
                        f"({local / total:.0%}) are function-local; at most {max_share:.0%}")


def _shapes(mods: Mapping[str, _Module], max_lines: int, plugin_max: int) -> Iterator[Violation]:
    for mod in mods.values():
        limit = plugin_max if mod.room == "plugin" else max_lines
        if len(mod.lines) > limit:
            yield Violation(mod.path, limit + 1, f"{len(mod.lines)} lines; a {mod.room}/ "
                            f"module stays under {limit}: split it by concern")
        if mod.room == "harness":
            for node in mod.tree.body:
                if isinstance(node, (ast.Import, ast.ImportFrom)) and _names_pytest(node):
                    yield Violation(mod.path, node.lineno, "the harness is a pytest-free "
                                    "library: no pytest import at module level")
        if mod.room not in FLAVOUR_ROOMS and "pypto" in ".".join(mod.name.split(".")[1:]):
            yield Violation(mod.path, 1, f"{mod.name} is named after PyPTO: PyPTO's "
                            f"flavour lives in {' or '.join(FLAVOUR_ROOMS)}/")


def _names_pytest(node: ast.Import | ast.ImportFrom) -> bool:
    roots = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
    return any(r.split(".")[0] in ("pytest", "_pytest") for r in roots)
