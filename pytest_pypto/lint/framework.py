# SPDX-License-Identifier: Apache-2.0
"""The check API: `@check`, `Violation`, the two check contexts and the check tables.

A check is a plain function so that writing one costs a few lines; everything a
check needs (file bytes, text, ast, options) comes from its context, which is what
lets the framework cache results by content.
"""

from __future__ import annotations

import ast
import hashlib
import inspect
import os
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any, NamedTuple

from pytest_pypto.lint.files import FileSet, glob_problem
from pytest_pypto.lint.options import Option, as_option

SCOPES = ("file", "project")
_ID_RE = re.compile(r"^[a-z][a-z0-9]*(?:[-_][a-z0-9]+)*$")


class Violation(NamedTuple):
    """One finding: printed as `path:line: [check] message`."""

    path: str
    line: int
    message: str


class CheckError(Exception):
    """Raised by a check that cannot do its job (say, an input fails to import).

    Reported as an error item carrying just this message: never a pass, never cached.
    """


class UnparsableFile(Exception):
    """`FileContext.tree` of a file that is not valid Python.

    The runner turns it into the violation `path:LINE: [check] cannot parse: why`
    (even when the check catches it), so no check passes a file it could not read.
    """

    def __init__(self, path: str, line: int, why: str) -> None:
        super().__init__(f"{path}:{line}: cannot parse: {why}")
        self.path = path
        self.line = line
        self.why = why

    def violation(self) -> Violation:
        return Violation(self.path, self.line, f"cannot parse: {self.why}")


CheckFn = Callable[[Any], Iterable[Violation]]


class CheckSpec:
    """A registered check: its function plus the defaults a manifest may override.

    Immutable once made.  A plain class rather than a dataclass: this module loads
    in every lint run, and generating dataclass methods costs more than a warm run's
    cache lookups.
    """

    __slots__ = (
        "id",
        "fn",
        "scope",
        "files",
        "exclude",
        "markers",
        "hint",
        "options",
        "file_options",
        "schema",
        "_source_digest",
    )
    id: str
    fn: CheckFn
    scope: str
    files: tuple[str, ...]
    exclude: tuple[str, ...]
    markers: tuple[str, ...]
    hint: str
    options: Mapping[str, Any]
    file_options: tuple[str, ...]
    schema: Mapping[str, Option]

    def __init__(
        self,
        id: str,
        fn: CheckFn,
        scope: str,
        files: tuple[str, ...],
        exclude: tuple[str, ...],
        markers: tuple[str, ...],
        hint: str,
        options: Mapping[str, Any],
        file_options: tuple[str, ...],
        schema: Mapping[str, Option] | None = None,
    ) -> None:
        """`options` maps names to defaults; `schema` declares their types (by default,
        the type of each default)."""
        if schema is None:
            schema = {k: as_option(v) for k, v in options.items()}
        values = (id, fn, scope, files, exclude, markers, hint, options, file_options, schema, None)
        for name, value in zip(self.__slots__, values):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"CheckSpec is immutable (cannot set {name!r})")

    def __repr__(self) -> str:
        return f"CheckSpec(id={self.id!r}, scope={self.scope!r}, fn={self.fn.__qualname__})"

    @property
    def marker(self) -> str:
        """The check's own marker (and `-k` keyword): the id in snake_case."""
        return snake(self.id)

    @property
    def source_digest(self) -> str:
        """Digest of the module defining the check, so editing a check invalidates its cache
        (computed once per spec: a re-imported module makes a new spec)."""
        d = self._source_digest
        if d is None:
            h = hashlib.blake2b(digest_size=16)
            h.update(f"{self.fn.__module__}:{self.fn.__qualname__}".encode())
            h.update(module_source_bytes(self.fn))
            d = h.hexdigest()
            object.__setattr__(self, "_source_digest", d)
        return d


def module_source_bytes(fn: Callable[..., Any]) -> bytes:
    """The bytes of the source file defining `fn` (CheckSpec.source_digest caches the digest).

    The module's `__file__` is used when it is a `.py` file (the common case, and no
    `inspect` machinery); otherwise inspect finds the source, else the function's
    own source text stands in.
    """
    module = sys.modules.get(fn.__module__)
    file = getattr(module, "__file__", None)
    if not (isinstance(file, str) and file.endswith(".py")):
        try:
            file = inspect.getsourcefile(fn)
        except TypeError:
            file = None
    if file:
        try:
            return _file_bytes(os.path.abspath(file))
        except OSError:
            pass
    try:
        return inspect.getsource(fn).encode()
    except (OSError, TypeError):
        return f"{fn.__module__}:{fn.__qualname__}:<no source>".encode()


def _file_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def snake(name: str) -> str:
    """`no-broad-raises` -> `no_broad_raises` (the marker and `-k` spelling of an id)."""
    return name.replace("-", "_")


# Checks by defining module: a manifest sees built-ins, entry points and its own
# modules, so two projects may define the same id without clashing.
_BY_MODULE: dict[str, dict[str, CheckSpec]] = {}


def check(
    id: str,
    *,
    files: Sequence[str] = ("*",),
    exclude: Sequence[str] = (),
    markers: Sequence[str] = (),
    hint: str = "",
    scope: str | None = None,
    options: Mapping[str, Any] | None = None,
    file_options: Sequence[str] = (),
) -> Callable[[CheckFn], CheckFn]:
    """Register `fn` as lint check `id`.

    `files`/`exclude` are globs relative to the project root (a pattern without
    `/` matches the file name anywhere).  `scope` is "file" (called once per
    matching file with a FileContext) or "project" (called once with a
    ProjectContext); when omitted it is read from the first parameter's
    annotation.  `options` maps option names to an `Option(default, type, ...)`
    (or to a bare default, which declares the default's type); the manifest may set
    them, and a value of the wrong type is the check's error item, never a crash in
    the check.  `file_options` name string options whose value is a path relative
    to the manifest: the file's content is part of the cache key.
    """
    if not is_id(id):
        raise ValueError(f"lint check id {id!r} must be lowercase words joined by '-' or '_'")
    for key, globs in (("files", files), ("exclude", exclude)):
        if isinstance(globs, str):
            raise ValueError(f"lint check {id!r}: {key} must be a list of globs, not a string")
        for g in globs:
            why = glob_problem(g)
            if why:
                raise ValueError(f"lint check {id!r}: {key} glob {g!r} is not usable: {why}")
    schema = {k: as_option(v) for k, v in (options or {}).items()}
    for key in file_options:
        if key not in schema:
            raise ValueError(f"lint check {id!r}: file option {key!r} is not among its options")

    def register(fn: CheckFn) -> CheckFn:
        sc = scope or _scope_from_annotation(fn)
        if sc not in SCOPES:
            raise ValueError(f"lint check {id!r}: scope must be one of {SCOPES}, got {sc!r}")
        for name in markers:
            if not is_id(name):
                raise ValueError(f"lint check {id!r}: bad marker name {name!r}")
        spec = CheckSpec(
            id=id,
            fn=fn,
            scope=sc,
            files=tuple(files),
            exclude=tuple(exclude),
            markers=tuple(snake(m) for m in markers),
            hint=hint,
            options={k: o.default for k, o in schema.items()},
            file_options=tuple(file_options),
            schema=schema,
        )
        _BY_MODULE.setdefault(fn.__module__, {})[id] = spec
        fn.lint_check = spec  # type: ignore[attr-defined]
        return fn

    return register


def is_id(name: object) -> bool:
    """Whether `name` is a valid check id or marker name (lowercase words joined by - or _)."""
    return isinstance(name, str) and _ID_RE.match(name) is not None


def _scope_from_annotation(fn: CheckFn) -> str:
    params = list(inspect.signature(fn).parameters.values())
    if params:
        ann = params[0].annotation
        name = ann if isinstance(ann, str) else getattr(ann, "__name__", "")
        if "ProjectContext" in name:
            return "project"
    return "file"


def checks_of(module: str) -> dict[str, CheckSpec]:
    """The checks registered by one (already imported) module."""
    return dict(_BY_MODULE.get(module, {}))


# ---------------------------------------------------------------------------
# Contexts


class _Base:
    """Plain classes, not dataclasses, for the same import-cost reason as CheckSpec."""

    def __init__(
        self,
        root: Path,
        check_id: str,
        options: Mapping[str, Any],
        option_texts: Mapping[str, str] | None = None,
    ) -> None:
        self.root = root
        self.check_id = check_id
        self.options = options
        self.option_texts: Mapping[str, str] = {} if option_texts is None else option_texts

    def __repr__(self) -> str:
        return f"{type(self).__name__}(check_id={self.check_id!r}, root={str(self.root)!r})"

    def option_text(self, name: str) -> str:
        """Content of a file option (e.g. the license template), read by the framework."""
        return self.option_texts[name]


class FileContext(_Base):
    """What a per-file check sees: one file, read lazily and shared across checks.

    Under the runner, ``shared`` is the session's FileSet: the bytes, the tree and
    the node list come from it, so a file is read and parsed once per session
    however many checks look at it (checks only read them: never modify the tree).
    """

    def __init__(
        self,
        root: Path,
        check_id: str,
        options: Mapping[str, Any],
        option_texts: Mapping[str, str] | None = None,
        path: str = "",
        _data: bytes | None = None,
        shared: FileSet | None = None,
    ) -> None:
        super().__init__(root, check_id, options, option_texts)
        self.path = path
        self._data = _data
        self._shared = shared
        self._tree: ast.Module | None = None
        self._nodes: list[ast.AST] | None = None
        # Set once `tree` found the file unparsable (the runner reports it).
        self.parse_error: UnparsableFile | None = None

    @property
    def data(self) -> bytes:
        if self._data is None:
            if self._shared is not None:
                self._data = self._shared.data(self.path)
            else:
                self._data = (self.root / self.path).read_bytes()
        return self._data

    @cached_property
    def text(self) -> str:
        """The file decoded as UTF-8 (undecodable bytes replaced)."""
        return self.data.decode("utf-8", errors="replace")

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @property
    def tree(self) -> ast.Module:
        """The parsed module (parsed once per context; under the runner, once per session).

        On a file that is not valid Python this raises UnparsableFile, which the
        runner reports as the violation `path:LINE: [check] cannot parse: why`; so
        use it on Python files only, and there is no "cannot parse" case to handle.
        """
        if self._tree is None:
            if self.parse_error is None:
                self._tree, self.parse_error = self._parsed()
            if self.parse_error is not None:
                err = self.parse_error
                raise UnparsableFile(err.path, err.line, err.why)
        assert self._tree is not None
        return self._tree

    @property
    def nodes(self) -> list[ast.AST]:
        """Every node of `tree`, in `ast.walk` order, listed once (and, under the
        runner, once per session): checks iterate this list instead of walking again."""
        if self._nodes is None:
            tree = self.tree
            entry = self._shared.parsed.get(self.path) if self._shared is not None else None
            if entry is None or entry[0] is not tree:
                self._nodes = list(ast.walk(tree))
            else:
                if entry[2] is None:
                    entry[2] = list(ast.walk(tree))
                self._nodes = entry[2]
        return self._nodes

    def _parsed(self) -> tuple[ast.Module | None, UnparsableFile | None]:
        """Parse the file, or take the session's parse of it: [tree, error, nodes]."""
        if self._shared is None:
            return _parse(self.data, self.path)
        entry = self._shared.parsed.get(self.path)
        if entry is None:
            entry = self._shared.parsed[self.path] = [*_parse(self.data, self.path), None]
        return entry[0], entry[1]

    def violation(self, line: int, message: str) -> Violation:
        return Violation(self.path, line, message)


def _parse(data: bytes, path: str) -> tuple[ast.Module | None, UnparsableFile | None]:
    try:
        return ast.parse(data, filename=path), None
    except (SyntaxError, ValueError) as e:  # ValueError: null bytes, some Pythons
        lineno = getattr(e, "lineno", None)
        offset = getattr(e, "offset", None)
        why = getattr(e, "msg", None) or str(e) or "invalid syntax"
        nul = data.find(b"\0")
        if not lineno and nul >= 0:  # "source code string cannot contain null bytes"
            lineno = data.count(b"\n", 0, nul) + 1
            offset = nul - (data.rfind(b"\n", 0, nul) + 1) + 1
        line = lineno or 1
        if offset and offset > 0:
            why += f" (column {offset})"
    except (RecursionError, MemoryError):
        line, why = 1, "too deeply nested for the Python parser"
    return None, UnparsableFile(path, line, why)


class ProjectContext(_Base):
    """What a whole-project check sees: every matching file of the project."""

    def __init__(
        self,
        root: Path,
        check_id: str,
        options: Mapping[str, Any],
        option_texts: Mapping[str, str] | None = None,
        files: Sequence[str] = (),
        shared: FileSet | None = None,
    ) -> None:
        super().__init__(root, check_id, options, option_texts)
        self.files = files
        self._shared = shared  # the session's FileSet (bytes read once per session)

    def read_text(self, path: str) -> str:
        if self._shared is not None:
            return self._shared.data(path).decode("utf-8", errors="replace")
        return (self.root / path).read_bytes().decode("utf-8", errors="replace")

    def texts(self, paths: Iterable[str] | None = None) -> Iterator[tuple[str, str]]:
        for p in self.files if paths is None else paths:
            yield p, self.read_text(p)
