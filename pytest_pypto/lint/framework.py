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
    ) -> None:
        values = (id, fn, scope, files, exclude, markers, hint, options, file_options, None)
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
    annotation.  `options` maps option names to defaults; the manifest may set
    them.  `file_options` name options whose value is a path relative to the
    manifest: the file's content is part of the cache key.
    """
    if not _ID_RE.match(id):
        raise ValueError(f"lint check id {id!r} must be lowercase words joined by '-' or '_'")

    def register(fn: CheckFn) -> CheckFn:
        sc = scope or _scope_from_annotation(fn)
        if sc not in SCOPES:
            raise ValueError(f"lint check {id!r}: scope must be one of {SCOPES}, got {sc!r}")
        for name in markers:
            if not _ID_RE.match(name):
                raise ValueError(f"lint check {id!r}: bad marker name {name!r}")
        spec = CheckSpec(
            id=id,
            fn=fn,
            scope=sc,
            files=tuple(files),
            exclude=tuple(exclude),
            markers=tuple(snake(m) for m in markers),
            hint=hint,
            options=dict(options or {}),
            file_options=tuple(file_options),
        )
        _BY_MODULE.setdefault(fn.__module__, {})[id] = spec
        fn.lint_check = spec  # type: ignore[attr-defined]
        return fn

    return register


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
    """What a per-file check sees: one file, read lazily and shared across checks."""

    def __init__(
        self,
        root: Path,
        check_id: str,
        options: Mapping[str, Any],
        option_texts: Mapping[str, str] | None = None,
        path: str = "",
        _data: bytes | None = None,
    ) -> None:
        super().__init__(root, check_id, options, option_texts)
        self.path = path
        self._data = _data

    @property
    def data(self) -> bytes:
        if self._data is None:
            self._data = (self.root / self.path).read_bytes()
        return self._data

    @cached_property
    def text(self) -> str:
        """The file decoded as UTF-8 (undecodable bytes replaced)."""
        return self.data.decode("utf-8", errors="replace")

    @cached_property
    def lines(self) -> list[str]:
        return self.text.splitlines()

    @cached_property
    def tree(self) -> ast.Module | None:
        """The parsed module, or None when the file is not valid Python."""
        try:
            return ast.parse(self.data, filename=self.path)
        except (SyntaxError, ValueError):
            return None

    def violation(self, line: int, message: str) -> Violation:
        return Violation(self.path, line, message)


class ProjectContext(_Base):
    """What a whole-project check sees: every matching file of the project."""

    def __init__(
        self,
        root: Path,
        check_id: str,
        options: Mapping[str, Any],
        option_texts: Mapping[str, str] | None = None,
        files: Sequence[str] = (),
    ) -> None:
        super().__init__(root, check_id, options, option_texts)
        self.files = files

    def read_text(self, path: str) -> str:
        return (self.root / path).read_bytes().decode("utf-8", errors="replace")

    def texts(self, paths: Iterable[str] | None = None) -> Iterator[tuple[str, str]]:
        for p in self.files if paths is None else paths:
            yield p, self.read_text(p)
