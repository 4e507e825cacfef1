# SPDX-License-Identifier: Apache-2.0
"""Reading `lint/lint.toml`: which checks run, on which files, with which options.

Schema::

    [lint]
    modules = ["myproj_checks", "local_checks.py"]  # import names, or .py paths
                                                    # relative to this manifest
    [checks.<check-id>]          # one table per enabled check
    files = ["src/**/*.py"]      # optional: replace the check's default globs
    exclude = ["src/gen/**"]     # optional: added to the check's excludes
    markers = ["style"]          # optional: extra group markers
    hint = "..."                 # optional: replace the check's hint
    enabled = false              # optional: keep the table but skip the check
    <option> = <value>           # the check's own options

Problems with one check (unknown id, unknown option, an option of the wrong type
or value, a bad glob) become that check's error item, naming the check, the option
and the value; problems with the whole manifest (bad TOML, a module that fails to
import, a `lint.toml` that is not a file) are collection errors.
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

try:
    import tomllib
except ModuleNotFoundError:  # pragma: no cover - Python 3.10 ships it as tomli
    import tomli as tomllib

from pytest_pypto._version import __version__
from pytest_pypto.lint.cache import digest
from pytest_pypto.lint.files import glob_problem
from pytest_pypto.lint.framework import CheckSpec, checks_of, is_id
from pytest_pypto.lint.options import Option

BUILTIN_MODULES = (
    "pytest_pypto.lint.builtin.license",
    "pytest_pypto.lint.builtin.english",
    "pytest_pypto.lint.builtin.raises",
)
ENTRY_POINT_GROUP = "pytest_pypto.lint_checks"


def _globs(patterns: Sequence[str]) -> None:
    bad = [f"{p!r} is not a usable glob: {why}" for p in patterns if (why := glob_problem(p))]
    if bad:
        raise ValueError("; ".join(bad))


def _marker_names(names: Sequence[str]) -> None:
    bad = [n for n in names if not is_id(n)]
    if bad:
        shown = ", ".join(repr(n) for n in bad)
        raise ValueError(f"{shown}: a marker name is lowercase words joined by '-' or '_'")


# The options every [checks.<id>] table may set, besides the check's own.
COMMON: dict[str, Option] = {
    "files": Option(None, list[str], validate=_globs, doc="replaces the check's globs"),
    "exclude": Option(None, list[str], validate=_globs, doc="added to the check's excludes"),
    "markers": Option(None, list[str], validate=_marker_names, doc="extra group markers"),
    "hint": Option(None, str, doc="replaces the check's hint"),
    "enabled": Option(True, bool, doc="false keeps the table but skips the check"),
}
# The [lint] table.
LINT: dict[str, Option] = {
    "modules": Option([], list[str], doc="check modules: import names or .py paths"),
}


class ManifestError(Exception):
    """The manifest as a whole cannot be used; the message says why, for a person."""


class Enabled:
    """One check as configured by the manifest (or the reason it cannot run).

    A plain class (like framework.CheckSpec): no dataclass generation on every run.
    """

    def __init__(self, id: str) -> None:
        self.id = id
        self.spec: CheckSpec | None = None
        self.files: tuple[str, ...] = ()
        self.exclude: tuple[str, ...] = ()
        self.markers: tuple[str, ...] = ()
        self.hint = ""
        self.options: dict[str, Any] = {}
        self.option_texts: dict[str, str] = {}
        self.error: str | None = None

    def __repr__(self) -> str:
        return f"Enabled(id={self.id!r}, error={self.error!r})"

    @property
    def config_key(self) -> str:
        """Digest of what, besides the inputs, the check's result depends on."""
        assert self.spec is not None
        return digest(
            __version__,
            # ast-based results (and "cannot parse") depend on the Python grammar
            f"py{sys.version_info[0]}.{sys.version_info[1]}",
            self.spec.source_digest,
            json.dumps(self.options, sort_keys=True, default=str),
            json.dumps(self.option_texts, sort_keys=True),
            json.dumps([self.files, self.exclude]),
        )


class Manifest:
    def __init__(self, path: Path, checks: list[Enabled]) -> None:
        self.path = path
        self.checks = checks


def load(path: Path) -> Manifest:
    """Parse and resolve a manifest; raises ManifestError for whole-manifest problems."""
    if not path.is_file():
        what = "a directory" if path.is_dir() else "missing or not a regular file"
        raise ManifestError(f"{path}: the lint manifest is {what}; it must be a TOML file")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ManifestError(f"{path}: cannot read the lint manifest: {e}") from None
    lint = data.get("lint", {})
    tables = data.get("checks", {})
    unknown_top = set(data) - {"lint", "checks"}
    if unknown_top:
        raise ManifestError(
            f"{path}: unknown table(s) {sorted(unknown_top)}; expected [lint] and [checks.<id>]"
        )
    if not isinstance(lint, dict) or not isinstance(tables, dict):
        raise ManifestError(f"{path}: [lint] and [checks.<id>] must be tables")
    unknown = sorted(set(lint) - set(LINT))
    if unknown:
        raise ManifestError(
            f"{path}: [lint]: unknown option(s) {', '.join(map(repr, unknown))}; "
            f"valid options: {', '.join(sorted(LINT))}"
        )
    for key, opt in LINT.items():
        problem = opt.problem(key, lint.get(key, opt.default))
        if problem:
            raise ManifestError(f"{path}: [lint]: {problem}")
    modules = lint.get("modules", [])
    known = known_checks(path.parent, modules)
    checks = []
    for cid, table in tables.items():
        en = _resolve(path, cid, table, known)
        if en is not None:
            checks.append(en)
    return Manifest(path, checks)


def known_checks(base: Path, modules: list[str]) -> dict[str, CheckSpec]:
    """Built-ins, then entry points, then the manifest's modules (later ones win)."""
    known: dict[str, CheckSpec] = {}
    for mod in BUILTIN_MODULES:
        importlib.import_module(mod)
        known.update(checks_of(mod))
    known.update(_entry_point_checks())
    own: dict[str, CheckSpec] = {}
    for entry in modules:
        for cid, spec in checks_of(_import(base, entry)).items():
            if cid in own and own[cid].fn is not spec.fn:
                raise ManifestError(f"check id {cid!r} is defined twice in the manifest's modules")
            own[cid] = spec
    known.update(own)
    return known


def _entry_point_checks() -> dict[str, CheckSpec]:
    from importlib.metadata import entry_points  # lazy: costly, read once per manifest

    found: dict[str, CheckSpec] = {}
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        try:
            obj = ep.load()
        except Exception as e:
            raise ManifestError(
                f"entry point {ep.name!r} ({ep.value}) in group {ENTRY_POINT_GROUP!r} "
                f"failed to load: {type(e).__name__}: {e}"
            ) from None
        spec = getattr(obj, "lint_check", None)
        if spec is not None:
            found[spec.id] = spec
        else:
            found.update(checks_of(getattr(obj, "__name__", ep.value.split(":")[0])))
    return found


def _import(base: Path, entry: str) -> str:
    """Import a check module; returns its module name."""
    try:
        if entry.endswith(".py") or "/" in entry:
            file = (base / entry).resolve()
            name = f"_pypto_lint_{digest(str(file))[:10]}_{file.stem}"
            if name not in sys.modules:
                spec = importlib.util.spec_from_file_location(name, file)
                if spec is None or spec.loader is None or not file.is_file():
                    raise FileNotFoundError(f"no such file: {file}")
                module = importlib.util.module_from_spec(spec)
                sys.modules[name] = module
                try:
                    spec.loader.exec_module(module)
                except BaseException:
                    del sys.modules[name]
                    raise
            return name
        sys.path.insert(0, str(base))
        try:
            return importlib.import_module(entry).__name__
        finally:
            sys.path.remove(str(base))
    except Exception as e:
        raise ManifestError(
            f"cannot import lint check module {entry!r} named in {base / 'lint.toml'}: "
            f"{type(e).__name__}: {e}"
        ) from None


def _resolve(path: Path, cid: str, table: Any, known: Mapping[str, CheckSpec]) -> Enabled | None:
    en = Enabled(id=cid)
    where = f"{path.parent.name}/{path.name} [checks.{cid}]"
    if not isinstance(table, dict):
        en.error = f"{where} must be a table"
        return en
    spec = known.get(cid)
    if spec is None:
        names = ", ".join(sorted(known)) or "none"
        en.error = f"unknown lint check {cid!r} in {path}; known checks: {names}"
        return en
    if table.get("enabled", True) is False:
        return None
    en.spec = spec
    problems = []
    for key, value in table.items():
        opt = COMMON.get(key) or spec.schema.get(key)
        if opt is None:
            valid = ", ".join(sorted(set(COMMON) | set(spec.schema)))
            problems.append(f"unknown option {key!r}; valid options: {valid}")
            continue
        problem = opt.problem(key, value)
        if problem:
            problems.append(problem)
    if problems:  # every problem at once, one line each
        en.error = "\n".join(f"{where}: {p}" for p in problems)
        return en
    en.files = tuple(table.get("files", spec.files))
    en.exclude = spec.exclude + tuple(table.get("exclude", ()))
    en.markers = spec.markers + tuple(m.replace("-", "_") for m in table.get("markers", ()))
    en.hint = table.get("hint", spec.hint)
    options = dict(spec.options)
    options.update((k, v) for k, v in table.items() if k not in COMMON)
    en.options = options
    for key in spec.file_options:
        rel = options.get(key)
        if not rel or not isinstance(rel, str):
            en.error = f"{where}: option {key!r} (a file relative to {path.name}) is required"
            return en
        try:
            en.option_texts[key] = (path.parent / rel).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            en.error = f"{where}: cannot read {key} file {rel!r}: {e}"
            return en
    return en
