# SPDX-License-Identifier: Apache-2.0
"""What invalidates a lint cache entry, and the glob fast path (docs/design/plugin.md §14).

A warm run reads one entry per check (keyed by every file's digest); these tests
pin that this shortcut never outlives the per-file truth: edits, deletions, a new
file, an edited check module, changed options and a new package version all rerun.
"""

from __future__ import annotations

import re
import textwrap

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import pytest_pypto
from pytest_pypto.lint import manifest as manifest_module
from pytest_pypto.lint.files import match, match_regex, select

BAD = 'import pytest\n\n\ndef test_it():\n    with pytest.raises(Exception):\n        int("x")\n'
GOOD = BAD.replace("Exception", "ValueError")
RAISES = "[checks.no-broad-raises]\n"


def project(pytester: pytest.Pytester, manifest: str, files: dict[str, str]) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\naddopts = '--strict-markers'\n")
    (pytester.path / "lint").mkdir(exist_ok=True)
    (pytester.path / "lint" / "lint.toml").write_text(textwrap.dedent(manifest))
    for name, text in files.items():
        path = pytester.path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def counts(result: pytest.RunResult) -> tuple[int, int]:
    m = re.search(r"pypto lint cache: (\d+) hits, (\d+) misses", result.stdout.str())
    assert m is not None, result.stdout.str()
    return int(m.group(1)), int(m.group(2))


def test_warm_run_keeps_every_files_violations(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES, {"a.py": BAD, "b.py": GOOD, "c.py": BAD})
    pytester.runpytest("lint").assert_outcomes(failed=1)
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)  # a hit replays the violations: still a failure
    assert counts(result) == (3, 0)
    result.stdout.fnmatch_lines(["a.py:5: *", "c.py:5: *", "2 violation(s) in 2 file(s)"])


def test_deleted_file_leaves_no_stale_violation(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES, {"a.py": GOOD, "b.py": BAD, "c.py": GOOD})
    pytester.runpytest("lint").assert_outcomes(failed=1)
    (pytester.path / "b.py").unlink()
    result = pytester.runpytest("lint")
    result.assert_outcomes(passed=1)
    assert counts(result) == (2, 0)  # the two remaining files' own entries


def test_new_file_misses_alone_and_edit_reruns_only_that_file(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES, {"a.py": GOOD, "b.py": GOOD})
    pytester.runpytest("lint").assert_outcomes(passed=1)
    (pytester.path / "n.py").write_text(BAD)
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    assert counts(result) == (2, 1)
    result.stdout.fnmatch_lines(["n.py:5: *"])
    (pytester.path / "a.py").write_text(BAD)
    result = pytester.runpytest("lint")
    assert counts(result) == (2, 1)
    result.stdout.fnmatch_lines(["a.py:5: *", "n.py:5: *"])


CHECK_MODULE = """\
from pytest_pypto.lint.framework import FileContext, check


@check("no-todo", files=["src/**"])
def no_todo(ctx: FileContext):
    for i, line in enumerate(ctx.lines, 1):
        if "TODO" in line:
            yield ctx.violation(i, "MESSAGE")
"""


def test_edited_check_module_invalidates_its_entries(pytester: pytest.Pytester) -> None:
    manifest = '[lint]\nmodules = ["local_checks.py"]\n[checks.no-todo]\n'
    files = {"src/a.py": "x = 1  # TODO\n", "src/b.py": "y = 2\n"}
    project(pytester, manifest, files)
    module = pytester.path / "lint" / "local_checks.py"
    module.write_text(CHECK_MODULE.replace("MESSAGE", "first wording"))
    result = pytester.runpytest_subprocess("lint")
    result.stdout.fnmatch_lines(["src/a.py:1: [no-todo] first wording"])
    assert counts(pytester.runpytest_subprocess("lint")) == (2, 0)
    module.write_text(CHECK_MODULE.replace("MESSAGE", "second wording"))
    result = pytester.runpytest_subprocess("lint")
    assert counts(result) == (0, 2)
    result.stdout.fnmatch_lines(["src/a.py:1: [no-todo] second wording"])
    assert "first wording" not in result.stdout.str()


def test_options_template_and_version_are_part_of_the_key(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    manifest = '[checks.license-header]\ntemplate = "header.txt"\nfiles = ["*.py"]\n'
    project(pytester, manifest, {"a.py": "# H1\nx = 1\n", "b.py": "# H1\ny = 2\n"})
    (pytester.path / "lint" / "header.txt").write_text("# H1\n")
    pytester.runpytest("lint").assert_outcomes(passed=1)
    assert counts(pytester.runpytest("lint")) == (2, 0)
    (pytester.path / "lint" / "header.txt").write_text("# H2\n")  # template file content
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    assert counts(result) == (0, 2)
    (pytester.path / "lint" / "lint.toml").write_text(manifest.replace('["*.py"]', '["a.py"]'))
    result = pytester.runpytest("lint")  # another file set is another option value
    assert counts(result) == (0, 1)
    monkeypatch.setattr(manifest_module, "__version__", pytest_pypto.__version__ + ".post999")
    assert counts(pytester.runpytest("lint")) == (0, 1)


# --- glob fast path ------------------------------------------------------------

_SEGMENT = st.sampled_from(
    ["a", "b", "lint", "dir", ".ci", "x", "a.py", "b.py", ".py", "c.p", "q.tar.gz", "dir.py"]
)
_PATH = st.lists(_SEGMENT, min_size=1, max_size=4).map("/".join)
_PATTERNS = [
    "*",
    "*.py",
    "/*.py",
    "*.tar.gz",
    "a.py",
    "/a.py",
    "lint/a.py",
    "dir/",
    "lint/**",
    "/lint/**",
    ".ci/**",
    "lint/**/*.py",
    "dir/**/*",
    "dir/**/**",
    "x/**.py",
    "**/*.py",
    "dir/a?.py",
    "x/[ab].py",
]


@settings(max_examples=400, deadline=None)
@given(path=_PATH, patterns=st.lists(st.sampled_from(_PATTERNS), max_size=4))
def test_string_fast_path_agrees_with_the_regex(path: str, patterns: list[str]) -> None:
    assert match(path, patterns) is match_regex(path, patterns)


def test_select_by_hand() -> None:
    files = ["a.py", "lint/a.py", "lint/x/b.py", "lint/x/b.pyc", ".ci/c.py", "dir.py", "README.md"]
    assert select(files, ["lint/**/*.py"], []) == ["lint/a.py", "lint/x/b.py"]
    assert select(files, ["*.py"], [".ci/**", "lint/**"]) == ["a.py", "dir.py"]
    assert select(files, ["*.md", "/a.py"], []) == ["a.py", "README.md"]
    assert select(files, [], []) == []
