# SPDX-License-Identifier: Apache-2.0
"""pytest hooks of the lint stage: the split option, markers, manifest collection, summary.

Loaded in every pytest run, so only the stdlib, pytest (already loaded) and
`lint.split` are imported here; the lint framework loads when a `lint.toml` is
actually collected.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_pypto.lint.split import split_mode

MANIFEST_NAME = "lint.toml"
# Built-in checks' own markers, registered up front so `-m` works before collection.
BUILTIN_MARKERS = {
    "license_header": "lint check license-header: files start with the manifest's template",
    "english_only": "lint check english-only: text stays within the allowed character ranges",
    "no_broad_raises": "lint check no-broad-raises: no pytest.raises(Exception/BaseException)",
    "hygiene": "group of lint checks: repository hygiene (built-in checks)",
}
_HITS = "pypto_lint_cache_hits"
_MISSES = "pypto_lint_cache_misses"


def pytest_addoption(parser: Any) -> None:
    group = parser.getgroup("pypto", "pytest-pypto")
    group.addoption(
        "--pypto-lint-split",
        dest="pypto_lint_split",
        default=None,
        metavar="check|file",
        help="lint items: one per check (default) or one per (check, file). "
        "Env PYPTO_LINT_SPLIT, ini pypto_lint_split.",
    )
    parser.addini("pypto_lint_split", "lint items: one per 'check' (default) or per 'file'")


def pytest_configure(config: Any) -> None:
    split_mode(config)  # validate early: a bad value is a usage error, exit status 4
    config.addinivalue_line("markers", "lint: a lint check collected from a lint.toml manifest")
    for name, doc in BUILTIN_MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {doc}")
    config.pluginmanager.register(_CacheStats(), "pypto-lint-cache-stats")


def pytest_collect_file(file_path: Path, parent: Any) -> Any:
    if file_path.name != MANIFEST_NAME:
        return None
    from pytest_pypto.lint.items import LintManifest  # lazy: plugin import cost

    return LintManifest.from_parent(parent, path=file_path)


@pytest.hookimpl(optionalhook=True)  # pytest >= 8 (older ones never call it)
def pytest_collect_directory(path: Path, parent: Any) -> Any:
    """A directory named lint.toml is a mistake to report, not a place to look for tests."""
    if path.name != MANIFEST_NAME:
        return None
    from pytest_pypto.lint.items import NotAManifest  # lazy: plugin import cost

    return NotAManifest.from_parent(parent, path=path)


def pytest_runtest_teardown(item: Any, nextitem: Any) -> None:
    """After the last of a run of lint items, drop the trees they shared (hundreds of
    files' worth); a later lint item of the session parses its files again."""
    release = getattr(item, "release_shared_parses", None)
    if release is not None and not hasattr(nextitem, "release_shared_parses"):
        release()


class _CacheStats:
    """Sums lint cache hits/misses from reports (under xdist: every worker's reports)."""

    def __init__(self) -> None:
        self.hits = 0
        self.misses = 0

    def pytest_runtest_logreport(self, report: Any) -> None:
        if report.when != "call" and not (report.when == "setup" and report.failed):
            return
        props = dict(p for p in report.user_properties if len(p) == 2)
        if _HITS in props:
            self.hits += int(props[_HITS])
            self.misses += int(props.get(_MISSES, 0))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.hits or self.misses:
            terminalreporter.write_line(f"pypto lint cache: {self.hits} hits, {self.misses} misses")
