# SPDX-License-Identifier: Apache-2.0
"""The pytest nodes: a collected manifest and one item per check (or per check x file).

A check runs in the item's setup so that a tool problem (crash, unknown check, bad
option) is reported as an ERROR, and only real violations fail in the call phase.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import pytest_pypto.lint.manifest as manifest_mod
from pytest_pypto.lint.cache import LintCache
from pytest_pypto.lint.files import FileSet, GlobError
from pytest_pypto.lint.manifest import Enabled
from pytest_pypto.lint.runner import CheckCrashed, Result, files_for, release_shared, run
from pytest_pypto.lint.split import split_mode

_STATE = pytest.StashKey[dict[str, Any]]()
HITS = "pypto_lint_cache_hits"
MISSES = "pypto_lint_cache_misses"


def _state(config: pytest.Config) -> dict[str, Any]:
    st = config.stash.get(_STATE, None)
    if st is None:
        st = {}
        config.stash[_STATE] = st
    return st


def fileset(config: pytest.Config) -> FileSet:
    """The session's file set (computed once per process)."""
    st = _state(config)
    if "fileset" not in st:
        st["fileset"] = FileSet(config.rootpath)
    return st["fileset"]


def lint_cache(config: pytest.Config) -> LintCache:
    st = _state(config)
    if "cache" not in st:
        cache = getattr(config, "cache", None)
        st["cache"] = LintCache(cache.mkdir("pypto-lint") if cache is not None else None)
    return st["cache"]


def register_marker(config: pytest.Config, name: str, doc: str) -> None:
    """Register a marker unless it already is, so `--strict-markers` accepts it."""
    names = {line.split(":", 1)[0].split("(", 1)[0].strip() for line in config.getini("markers")}
    if name not in names:
        config.addinivalue_line("markers", f"{name}: {doc}")


_UNPARSABLE = "cannot parse: "  # framework.UnparsableFile's violations


class LintFailure(Exception):
    """Violations found; the message is the whole report."""


class LintManifest(pytest.File):
    """`lint/lint.toml`: yields one LintItem per enabled check."""

    def collect(self) -> Iterator[LintItem]:
        try:
            man = manifest_mod.load(self.path)
        except manifest_mod.ManifestError as e:
            raise self.CollectError(str(e)) from None
        split = split_mode(self.config)
        for en in man.checks:
            if en.spec is not None:
                register_marker(self.config, en.spec.marker, f"lint check {en.id}")
                for group in en.markers:
                    register_marker(self.config, group, "group of lint checks")
            if (
                en.error is not None
                or en.spec is None
                or en.spec.scope == "project"
                or split != "file"
            ):
                yield LintItem.from_parent(self, name=en.id, enabled=en)
                continue
            try:
                paths = files_for(en, fileset(self.config))
            except GlobError as e:
                raise self.CollectError(f"lint check {en.id!r}: {e}") from None
            if not paths:
                yield LintItem.from_parent(self, name=en.id, enabled=en, paths=[])
            for path in paths:
                yield LintItem.from_parent(self, name=f"{en.id}[{path}]", enabled=en, paths=[path])


class NotAManifest(getattr(pytest, "Directory", pytest.Collector)):  # type: ignore[misc]
    """A directory named lint.toml: a collection error naming it, not a silent "no tests"."""

    def collect(self) -> Iterator[pytest.Item]:
        raise self.CollectError(
            f"{self.path}: the lint manifest is a directory; it must be a TOML file "
            "(remove the directory, or rename it)"
        )


class LintItem(pytest.Item):
    """One lint check (over all its files, or one file with --pypto-lint-split=file)."""

    def __init__(self, *, enabled: Enabled, paths: Sequence[str] | None = None, **kw: Any) -> None:
        super().__init__(**kw)
        self.enabled = enabled
        self.paths = paths
        self.result: Result | None = None
        self.add_marker("lint")
        if enabled.spec is not None:
            for group in enabled.markers:
                self.add_marker(group)
            self.add_marker(enabled.spec.marker)
        self.extra_keyword_matches.add(enabled.id.replace("-", "_"))

    def setup(self) -> None:
        en = self.enabled
        if en.error is not None:
            pytest.fail(en.error, pytrace=False)
        problem = None
        try:
            self.result = run(en, fileset(self.config), lint_cache(self.config), self.paths)
        except (CheckCrashed, GlobError) as e:
            problem = str(e) if isinstance(e, CheckCrashed) else f"lint check {en.id!r}: {e}"
        except OSError as e:
            problem = f"lint check {en.id!r} could not read its input: {e}"
        if problem is not None:  # outside the except: no chained "during handling" noise
            pytest.fail(problem, pytrace=False)
        assert self.result is not None
        self.user_properties.append((HITS, self.result.hits))
        self.user_properties.append((MISSES, self.result.misses))

    def release_shared_parses(self) -> None:
        """Drop the session's shared trees (hooks.pytest_runtest_teardown calls this
        after the last of consecutive lint items)."""
        st = self.config.stash.get(_STATE, None)
        if st is not None and "fileset" in st:
            release_shared(st["fileset"])

    def runtest(self) -> None:
        assert self.result is not None
        if self.result.violations:
            raise LintFailure(self._report(self.result))

    def _report(self, result: Result) -> str:
        vs = sorted(set(result.violations), key=lambda v: (v.path, v.line, v.message))
        lines = [f"{v.path}:{v.line}: [{self.enabled.id}] {v.message}" for v in vs]
        files = len({v.path for v in vs})
        lines.append(f"{len(vs)} violation(s) in {files} file(s)")
        if self.enabled.hint:
            lines.append(f"hint: {self.enabled.hint}")
        if any(v.message.startswith(_UNPARSABLE) for v in vs):
            lines.append(
                "hint: a file that does not parse as Python cannot be checked; fix it first"
            )
        return "\n".join(lines)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, LintFailure):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int | None, str]:
        return self.path, None, f"lint check {self.name}"
