# SPDX-License-Identifier: Apache-2.0
"""Lint checks as pytest items, end to end through pytester (docs/design/plugin.md §14)."""

from __future__ import annotations

import json
import re
import subprocess
import textwrap

import pytest
from lint_kit import project

BAD = """\
import pytest


def test_it():
    with pytest.raises(Exception):
        int("x")
"""
GOOD = BAD.replace("Exception", "ValueError")
HEADER = "# SPDX-License-Identifier: Apache-2.0\n"


RAISES = "[checks.no-broad-raises]\n"


def test_violation_fails_with_path_line_and_hint(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES, {"pkg/test_x.py": BAD})
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*lint check no-broad-raises*",
            "pkg/test_x.py:5: [no-broad-raises] pytest.raises(Exception) catches any error",
            "1 violation(s) in 1 file(s)",
            "hint: name the exception*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
    assert "def runtest" not in result.stdout.str()


def test_fix_passes_rerun_hits_cache_and_edit_invalidates(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES, {"a.py": GOOD, "b.py": BAD})
    pytester.runpytest("lint").assert_outcomes(failed=1)
    (pytester.path / "b.py").write_text(GOOD)  # fix it
    result = pytester.runpytest("lint", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pypto lint cache: 1 hits, 1 misses"])
    result = pytester.runpytest("lint", "-v")  # warm: a hit is a pass, not a skip
    result.stdout.fnmatch_lines(["lint/lint.toml::no-broad-raises PASSED*"])
    result.stdout.fnmatch_lines(["pypto lint cache: 2 hits, 0 misses"])
    assert "SKIPPED" not in result.stdout.str()
    (pytester.path / "a.py").write_text(BAD)  # an edit invalidates that file's entry only
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["a.py:5: *", "pypto lint cache: 1 hits, 1 misses"])
    pytester.runpytest("lint", "--cache-clear").stdout.fnmatch_lines(
        ["pypto lint cache: 0 hits, 2 misses"]
    )


def test_xdist_writes_whole_entries_and_sums_counts(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES + "[checks.english-only]\n", {f"m{i}.py": GOOD for i in range(12)})
    # The controller runs in this process, its two workers are fresh processes.
    first = pytester.runpytest("lint", "-n", "2")
    first.assert_outcomes(passed=2)
    entries = list((pytester.path / ".pytest_cache").rglob("*.json"))
    lint_entries = [p for p in entries if "pypto-lint" in p.parts]
    assert len(lint_entries) >= 12
    for p in lint_entries:
        assert json.loads(p.read_text())["violations"] == []
    assert not [p for p in (pytester.path / ".pytest_cache").rglob(".tmp-*")]
    cold = re.search(r"pypto lint cache: 0 hits, (\d+) misses", first.stdout.str())
    assert cold is not None
    # english-only sees every text file, no-broad-raises the .py files: > 2 x 12 entries
    assert int(cold.group(1)) > 24
    result = pytester.runpytest("lint", "-n", "2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([f"pypto lint cache: {cold.group(1)} hits, 0 misses"])


def test_markers_and_keywords_select(pytester: pytest.Pytester) -> None:
    manifest = RAISES + '[checks.english-only]\nmarkers = ["style"]\n'
    project(pytester, manifest, {"test_plain.py": "def test_plain():\n    pass\n"})
    args = [".", "--collect-only", "-q"]

    def ids(*extra: str) -> set[str]:
        out = pytester.runpytest(*args, *extra).stdout.lines
        return {line for line in out if "::" in line}

    lint_ids = {"lint/lint.toml::no-broad-raises", "lint/lint.toml::english-only"}
    assert ids() == lint_ids | {"test_plain.py::test_plain"}
    assert ids("-m", "lint") == lint_ids
    assert ids("-m", "not lint") == {"test_plain.py::test_plain"}
    assert ids("-k", "no-broad-raises") == {"lint/lint.toml::no-broad-raises"}
    assert ids("-k", "no_broad_raises") == {"lint/lint.toml::no-broad-raises"}
    assert ids("-m", "english_only") == {"lint/lint.toml::english-only"}
    assert ids("-m", "style") == {"lint/lint.toml::english-only"}
    assert ids("-m", "hygiene") == lint_ids
    pytester.runpytest("lint", "--strict-markers").assert_outcomes(passed=2)


def test_only_a_collected_manifest_lints(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES, {"ut/test_ok.py": "def test_ok():\n    pass\n", "bad.py": BAD})
    pytester.runpytest("ut").assert_outcomes(passed=1)


def test_unknown_check_is_an_error_and_others_still_run(pytester: pytest.Pytester) -> None:
    project(pytester, RAISES + "[checks.no-such-check]\n", {"a.py": GOOD})
    result = pytester.runpytest("lint")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*unknown lint check 'no-such-check'*known checks:*"])


def test_bad_option_is_an_error(pytester: pytest.Pytester) -> None:
    project(
        pytester, '[checks.english-only]\ncolour = 1\n[checks.no-broad-raises]\nfiles = "*.py"\n'
    )
    result = pytester.runpytest("lint")
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        [
            "*lint/lint.toml [[]checks.english-only[]]: unknown option 'colour'; valid options:*",
            "*[[]checks.no-broad-raises[]]: option 'files' must be a list of strings, "
            "got '[*].py' (a string)",
        ]
    )


def test_crashing_check_is_an_error_never_cached(pytester: pytest.Pytester) -> None:
    checks = textwrap.dedent(
        """
        from pytest_pypto.lint.framework import check

        @check("boom", files=["*.py"])
        def boom(ctx):
            raise RuntimeError("check bug")
            yield
        """
    )
    project(
        pytester,
        '[lint]\nmodules = ["boom_checks.py"]\n[checks.boom]\n',
        {"a.py": GOOD, "lint/boom_checks.py": checks},
    )
    for _ in range(2):
        result = pytester.runpytest("lint")
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(
            ["*lint check 'boom' crashed on a.py:*", "*RuntimeError: check bug"]
        )


def test_downstream_module_by_name_and_project_scope(pytester: pytest.Pytester) -> None:
    checks = textwrap.dedent(
        """
        from pytest_pypto.lint.framework import ProjectContext, Violation, check

        @check("has-readme", files=["*.md"], markers=["docs"], hint="add a README.md")
        def has_readme(ctx: ProjectContext):
            if "README.md" not in ctx.files:
                yield Violation("README.md", 1, "missing")
        """
    )
    manifest = '[lint]\nmodules = ["myproj_checks"]\n[checks.has-readme]\n'
    project(pytester, manifest, {"lint/myproj_checks.py": checks})
    result = pytester.runpytest("lint", "-m", "docs")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["README.md:1: [has-readme] missing", "hint: add a README.md"])
    (pytester.path / "README.md").write_text("# hi\n")
    result = pytester.runpytest("lint")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["pypto lint cache: 0 hits, 1 misses"])
    pytester.runpytest("lint").stdout.fnmatch_lines(["pypto lint cache: 1 hits, 0 misses"])


def test_bad_manifest_and_bad_module_are_collection_errors(pytester: pytest.Pytester) -> None:
    project(pytester, "[checks.english-only\n")
    result = pytester.runpytest("lint")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*lint.toml: cannot read the lint manifest*"])
    project(pytester, '[lint]\nmodules = ["not_there"]\n')
    result = pytester.runpytest("lint")
    assert result.ret != 0
    result.stdout.fnmatch_lines(["*cannot import lint check module 'not_there'*"])


def test_split_per_file(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    project(pytester, RAISES, {"a.py": GOOD, "b.py": BAD})
    result = pytester.runpytest("lint", "--pypto-lint-split=file", "-v")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "lint/lint.toml::no-broad-raises[[]a.py[]] PASSED*",
            "lint/lint.toml::no-broad-raises[[]b.py[]] FAILED*",
        ]
    )
    monkeypatch.setenv("PYPTO_LINT_SPLIT", "file")
    pytester.runpytest("lint").assert_outcomes(passed=1, failed=1)
    monkeypatch.delenv("PYPTO_LINT_SPLIT")
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\npypto_lint_split = 'file'\n")
    pytester.runpytest("lint").assert_outcomes(passed=1, failed=1)
    pytester.runpytest("lint", "--pypto-lint-split=check").assert_outcomes(failed=1)
    result = pytester.runpytest("lint", "--pypto-lint-split=dir")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--pypto-lint-split: invalid value 'dir'; choose from check, file*"]
    )


def test_op_registry_that_does_not_import_is_an_error(pytester: pytest.Pytester) -> None:
    from pathlib import Path

    repo_checks = Path(__file__).resolve().parents[2] / "lint" / "pypto_checks.py"
    project(
        pytester,
        f'[lint]\nmodules = ["{repo_checks}"]\n'
        '[checks.op-registry]\nregistry = "nowhere_pkg.registry"\n',
    )
    result = pytester.runpytest("lint")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*'op-registry' could not run: cannot import the op registry nowhere_pkg.registry*"]
    )


def test_git_ignored_files_are_not_linted(pytester: pytest.Pytester) -> None:
    # git is a requirement of this repository's checkout, so no skip when it is missing.
    project(pytester, RAISES, {"kept.py": BAD, "gen/out.py": BAD})
    (pytester.path / ".gitignore").write_text("gen/\n.pytest_cache/\n")
    subprocess.run(["git", "init", "-q"], cwd=pytester.path, check=True)
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["kept.py:5: *"])
    assert "gen/out.py" not in result.stdout.str()
