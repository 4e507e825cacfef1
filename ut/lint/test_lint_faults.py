# SPDX-License-Identifier: Apache-2.0
"""Faults in a lint setup are designed errors, never crashes, silent passes or "no tests ran".

Each reproducer comes from fault injection: a bad glob, a mistyped option, a
`lint.toml` that is a directory, a Python file that does not parse.
"""

from __future__ import annotations

import re
import sys
import textwrap
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from lint_kit import project

from pytest_pypto.lint import manifest as manifest_mod
from pytest_pypto.lint.files import GlobError, glob_problem, match
from pytest_pypto.lint.framework import FileContext, Option, UnparsableFile, check
from pytest_pypto.lint.options import describe, mismatch

REPO = Path(__file__).resolve().parents[2]
GOOD = "import pytest\n\n\ndef test_it():\n    with pytest.raises(ValueError):\n        int('x')\n"


def lit(text: str) -> str:
    """`text` as an fnmatch pattern matching itself."""
    return "".join(f"[{c}]" if c in "[]*?" else c for c in text)


def assert_designed_error(result: pytest.RunResult, *parts: tuple[str, ...]) -> None:
    """Exit status 1 with error items (not a pass, not exit 5), no traceback, and for each
    of `parts` an output line containing its literal pieces in order."""
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*" + "*".join(lit(p) for p in pieces) + "*" for pieces in parts])
    out = result.stdout.str()
    assert "Traceback" not in out
    assert "re.error" not in out and "AttributeError" not in out and "TypeError" not in out


# --- 1. a bad glob -------------------------------------------------------------

BAD_GLOBS = [
    ("src/[abc", "'[' at column 5 is never closed by ']'"),
    ("src/[z-a]", "bad character range z-a"),
    ("src/[]x]", "empty character class '[]' at column 5"),
    ("", "an empty pattern matches no file"),
]


@pytest.mark.parametrize("key", ["files", "exclude"])
@pytest.mark.parametrize(("pattern", "why"), BAD_GLOBS)
def test_bad_glob_is_an_error_naming_check_option_pattern_and_why(
    pytester: pytest.Pytester, key: str, pattern: str, why: str
) -> None:
    manifest = f'[checks.no-broad-raises]\n{key} = ["*.py", "{pattern}"]\n[checks.english-only]\n'
    project(pytester, manifest, {"src/a.py": GOOD})
    result = pytester.runpytest("lint")
    result.assert_outcomes(passed=1, errors=1)  # the other check still runs
    assert_designed_error(
        result,
        (
            f"lint/lint.toml [checks.no-broad-raises]: option '{key}' = ",
            f"'{pattern}' is not a usable glob: {why}",
        ),
    )


def test_bad_glob_is_an_error_item_when_split_per_file(pytester: pytest.Pytester) -> None:
    project(pytester, '[checks.no-broad-raises]\nfiles = ["src/[z-a]"]\n', {"src/a.py": GOOD})
    result = pytester.runpytest("lint", "--pypto-lint-split=file")
    result.assert_outcomes(errors=1)
    assert_designed_error(result, ("option 'files' = ", "'src/[z-a]' is not a usable glob"))


@pytest.mark.parametrize(
    ("pattern", "why"),
    [
        ("src/[abc", "never closed"),
        ("src/[z-a]", "bad character range"),
        ("[!]", "empty character class"),
        ("[^]", "empty character class"),
        ("/", "empty pattern"),
    ],
)
def test_glob_problem_says_why(pattern: str, why: str) -> None:
    problem = glob_problem(pattern)
    assert problem is not None and why in problem


@pytest.mark.parametrize("pattern", ["src/[ab].py", "x/[!b].py", "[[]x", "a/**/*.py", "x/[.&].py"])
def test_good_globs_have_no_problem(pattern: str) -> None:
    assert glob_problem(pattern) is None


def test_class_brackets_are_literal_inside_a_class() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # was: FutureWarning "Possible nested set"
        assert match("q/[z", ["q/[[]z"]) is True
    assert match("a.py", ["[.].py"]) is False
    assert match("b.py", ["[^b].py"]) is False  # ^ negates, like !


def test_matcher_raises_a_designed_error_for_a_bad_glob_that_slipped_through() -> None:
    with pytest.raises(GlobError, match=r"'src/\[z-a\]': bad character range z-a"):
        match("src/a", ["src/[z-a]"])


def test_a_check_declaring_a_bad_default_glob_fails_at_registration() -> None:
    with pytest.raises(ValueError, match=r"'bad-glob': files glob 'src/\[z-a\]' is not usable"):
        check("bad-glob", files=["src/[z-a]"])
    with pytest.raises(ValueError, match=r"'bad-glob': exclude must be a list of globs"):
        check("bad-glob", exclude="*.py")  # type: ignore[arg-type]


# --- 2. mistyped options ------------------------------------------------------

RANGES_FAULTS = [
    ('"0-127"', "must be a list of strings or [integer, integer] pairs, got '0-127' (a string)"),
    ("[[1]]", "got [[1]]: ranges[0] is [1] (a list of 1 item), expected a string or a [integer"),
    ('[["a", "b"]]', "got [['a', 'b']]: ranges[0] is ['a', 'b'] (a list of 2 items), expected"),
    ("[[5, 1]]", "= [[5, 1]]: [5, 1] is an empty range (0x5 > 0x1)"),
    ('["zz"]', "= ['zz']: 'zz' is not a code point or range"),
    ("[[0, 1114112]]", "[0, 1114112] is outside the Unicode code points"),
    ("[[true, 5]]", "ranges[0] is [true, 5] (a list of 2 items)"),
]


@pytest.mark.parametrize(("value", "message"), RANGES_FAULTS)
def test_mistyped_ranges_is_an_error(pytester: pytest.Pytester, value: str, message: str) -> None:
    project(pytester, f"[checks.english-only]\nranges = {value}\n", {"a.txt": "ok\n"})
    result = pytester.runpytest("lint")
    result.assert_outcomes(errors=1)
    assert_designed_error(
        result, ("lint/lint.toml [checks.english-only]: option 'ranges'", message)
    )


def test_ranges_accept_integer_pairs(pytester: pytest.Pytester) -> None:
    project(
        pytester,
        "[checks.english-only]\nranges = [[9, 13], [32, 126]]\n",
        {"a.txt": "ok\n", "b.txt": "a \u2014 b\n"},
    )
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["b.txt:1: [[]english-only[]] non-English character*U+2014*"])
    (pytester.path / "b.txt").write_text("a - b\n")
    pytester.runpytest("lint").assert_outcomes(passed=1)


# Every option of every built-in check, plus the options every check table has:
# (check, option, a wrong value in TOML, the message's expected-type part).
BUILTIN_CHECKS = ("license-header", "english-only", "no-broad-raises")
OPTION_FAULTS = [
    ("license-header", "template", "5", "must be a string, got 5 (an integer)"),
    ("license-header", "allow_empty", '"yes"', "must be a boolean (true or false), got 'yes'"),
    ("english-only", "ranges", '"0-127"', "must be a list of strings or [integer, integer] pairs"),
    *[
        (cid, key, value, msg)
        for cid in BUILTIN_CHECKS
        for key, value, msg in [
            ("files", '"*.py"', "must be a list of strings, got '*.py' (a string)"),
            ("exclude", "[1]", "must be a list of strings, got [1]: exclude[0] is 1 (an integer)"),
            ("markers", '"style"', "must be a list of strings, got 'style' (a string)"),
            ("markers", '["Bad Name"]', "= ['Bad Name']: 'Bad Name': a marker name is lowercase"),
            ("hint", "3", "must be a string, got 3 (an integer)"),
            ("enabled", '"no"', "must be a boolean (true or false), got 'no' (a string)"),
        ]
    ],
]


@pytest.mark.parametrize(("cid", "key", "value", "message"), OPTION_FAULTS)
def test_every_builtin_option_is_type_checked(
    pytester: pytest.Pytester, cid: str, key: str, value: str, message: str
) -> None:
    extra = '\ntemplate = "h.txt"' if cid == "license-header" and key != "template" else ""
    project(pytester, f"[checks.{cid}]\n{key} = {value}{extra}\n", {"lint/h.txt": "# h\n"})
    result = pytester.runpytest("lint")
    result.assert_outcomes(errors=1)
    assert_designed_error(result, (f"lint/lint.toml [checks.{cid}]: option '{key}' {message}",))


def test_the_option_fault_table_covers_every_builtin_option() -> None:
    known = manifest_mod.known_checks(REPO / "lint", [])
    for cid in BUILTIN_CHECKS:
        schema = known[cid].schema
        assert all(isinstance(opt, Option) for opt in schema.values())
        covered = {key for c, key, _, _ in OPTION_FAULTS if c == cid}
        assert covered == set(schema) | set(manifest_mod.COMMON), cid


def test_every_problem_of_a_table_is_reported_at_once(pytester: pytest.Pytester) -> None:
    manifest = '[checks.license-header]\ntemplate = 5\nallow_empty = "yes"\ncolour = 1\n'
    project(pytester, manifest)
    result = pytester.runpytest("lint")
    result.assert_outcomes(errors=1)
    assert_designed_error(
        result,
        ("[checks.license-header]: option 'template' must be a string",),
        ("[checks.license-header]: option 'allow_empty' must be a boolean",),
        ("[checks.license-header]: unknown option 'colour'; valid options: allow_empty, ",),
    )


@pytest.mark.parametrize(
    ("lint_table", "message"),
    [
        ('modules = "pypto_checks.py"', "*[[]lint[]]: option 'modules' must be a list of strings*"),
        ("modules = [1]", "*modules[[]0[]] is 1 (an integer), expected a string*"),
        ("module = []", "*[[]lint[]]: unknown option(s) 'module'; valid options: modules*"),
    ],
)
def test_lint_table_options_are_checked(
    pytester: pytest.Pytester, lint_table: str, message: str
) -> None:
    project(pytester, f"[lint]\n{lint_table}\n[checks.no-broad-raises]\n")
    result = pytester.runpytest("lint")
    assert result.ret == pytest.ExitCode.INTERRUPTED  # a collection error
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([message])


def test_downstream_option_types_declared_and_inferred(pytester: pytest.Pytester) -> None:
    checks = textwrap.dedent(
        """
        from pytest_pypto.lint.framework import Option, check

        @check("opts", files=["*.py"], options={
            "limit": Option(3, int), "names": ["a"], "anything": None, "ratio": 0.5,
        })
        def opts(ctx):
            return []
        """
    )
    manifest = (
        '[lint]\nmodules = ["c.py"]\n[checks.opts]\n'
        'limit = 1.5\nnames = ["a", 2]\nratio = "x"\nanything = {a = 1}\n'
    )
    project(pytester, manifest, {"lint/c.py": checks})
    result = pytester.runpytest("lint")
    result.assert_outcomes(errors=1)
    assert_designed_error(
        result,
        ("option 'limit' must be an integer, got 1.5 (a number)",),
        ("option 'names' must be a list of strings, got ['a', 2]: names[1] is 2 (an integer)",),
        ("option 'ratio' must be a number, got 'x' (a string)",),
    )
    assert "'anything'" not in result.stdout.str()  # a None default accepts any value
    (pytester.path / "lint" / "lint.toml").write_text(
        '[lint]\nmodules = ["c.py"]\n[checks.opts]\nlimit = 2\nnames = []\nratio = 1\n'
    )
    pytester.runpytest("lint").assert_outcomes(passed=1)  # an integer is a number


@pytest.mark.parametrize(
    ("tp", "good", "bad", "text"),
    [
        (str, "x", 1, "a string"),
        (bool, True, 1, "a boolean (true or false)"),
        (int, 1, True, "an integer"),
        (float, 1, "1", "a number"),
        (list[str], ["a"], ["a", 1], "a list of strings"),
        (tuple[int, int], [1, 2], [1, 2, 3], "a [integer, integer] pair"),
        (str | list[int], [1], [[1]], "a string or a list of integers"),
        (dict, {"a": 1}, [], "a table"),
    ],
)
def test_option_types(tp: Any, good: Any, bad: Any, text: str) -> None:
    assert describe(tp) == text
    assert mismatch(good, tp) is None
    assert mismatch(bad, tp) is not None


def test_a_declared_type_is_checked_against_its_default_when_declared() -> None:
    with pytest.raises(ValueError, match=r"option default 'x' is not an integer"):
        Option("x", int)
    with pytest.raises(TypeError, match=r"unsupported lint option type"):
        Option({}, Mapping[str, int])
    with pytest.raises(ValueError, match=r"file option 'tpl' is not among its options"):
        check("bad-file-option", file_options=["tpl"])


# --- 3. lint.toml that is a directory ------------------------------------------


def test_manifest_directory_is_a_collection_error(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    (pytester.path / "lint" / "lint.toml").mkdir(parents=True)
    for args in (["lint"], ["lint/lint.toml"], ["."]):
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.INTERRUPTED, args  # not 5, "no tests ran"
        result.assert_outcomes(errors=1)
        result.stdout.fnmatch_lines(
            [f"*{pytester.path / 'lint' / 'lint.toml'}: the lint manifest is a directory*"]
        )
        assert "no tests ran" not in result.stdout.str()


def test_manifest_directory_is_an_error_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makepyprojecttoml("[tool.pytest.ini_options]\n")
    (pytester.path / "lint" / "lint.toml").mkdir(parents=True)
    result = pytester.runpytest("lint", "-n", "2")
    assert result.ret not in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED)
    result.stdout.fnmatch_lines(["*lint.toml: the lint manifest is a directory*"])


def test_load_refuses_a_manifest_that_is_not_a_file(tmp_path: Path) -> None:
    (tmp_path / "lint.toml").mkdir()
    with pytest.raises(manifest_mod.ManifestError, match=r"lint\.toml: the lint manifest is a dir"):
        manifest_mod.load(tmp_path / "lint.toml")


# --- 4. Python files that do not parse -----------------------------------------

UNPARSABLE = {
    "with_raises.py": "import pytest\n\ndef f(:\n    pytest.raises(Exception)\n",
    "no_raises.py": "x = 1\ny = (\n",
}


def test_no_broad_raises_reports_an_unparsable_file(pytester: pytest.Pytester) -> None:
    project(pytester, "[checks.no-broad-raises]\n", {"ok.py": GOOD, **UNPARSABLE})
    for _ in range(2):  # cold, then from the cache: the violation is cached like any other
        result = pytester.runpytest("lint")
        result.assert_outcomes(failed=1)
        assert result.ret == pytest.ExitCode.TESTS_FAILED
        result.stdout.fnmatch_lines(
            [
                "no_raises.py:2: [[]no-broad-raises[]] cannot parse: '(' was never closed*",
                "with_raises.py:3: [[]no-broad-raises[]] cannot parse: invalid syntax*",
                "2 violation(s) in 2 file(s)",
                "hint: *",
                "hint: a file that does not parse as Python cannot be checked; fix it first",
            ]
        )
    result.stdout.fnmatch_lines(["pypto lint cache: 3 hits, 0 misses"])
    for name in UNPARSABLE:
        (pytester.path / name).write_text(GOOD)
    pytester.runpytest("lint").assert_outcomes(passed=1)


def test_project_ast_checks_report_an_unparsable_file(pytester: pytest.Pytester) -> None:
    repo_checks = REPO / "lint" / "pypto_checks.py"
    manifest = (
        f'[lint]\nmodules = ["{repo_checks}"]\n'
        '[checks.platform-strings]\nfiles = ["*.py"]\n'
        '[checks.arch-literals]\nfiles = ["*.py"]\nliterals = [65536]\n'
    )
    project(pytester, manifest, {"ok.py": "x = 1\n", "bad.py": "n = 65536\ndef f(:\n"})
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=2)
    out = result.stdout.str()
    for cid in ("platform-strings", "arch-literals"):
        assert re.search(rf"^bad\.py:2: \[{cid}\] cannot parse: invalid syntax", out, re.M), cid
    assert "ok.py" not in out


def test_a_check_that_swallows_the_parse_error_still_reports_it(pytester: pytest.Pytester) -> None:
    checks = textwrap.dedent(
        """
        from pytest_pypto.lint.framework import check

        @check("careless", files=["*.py"])
        def careless(ctx):
            try:
                ctx.tree
            except Exception:
                return
            yield from ()

        @check("old-style", files=["*.py"])
        def old_style(ctx):
            if ctx.tree is None:  # the pre-UnparsableFile idiom: never true now
                return
            yield from ()
        """
    )
    manifest = '[lint]\nmodules = ["c.py"]\n[checks.careless]\n[checks.old-style]\n'
    project(pytester, manifest, {"lint/c.py": checks, "bad.py": "def f(:\n"})
    result = pytester.runpytest("lint")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["bad.py:1: [[]careless[]] cannot parse: invalid syntax*"])
    result.stdout.fnmatch_lines(["bad.py:1: [[]old-style[]] cannot parse: invalid syntax*"])


@pytest.mark.parametrize(
    ("data", "line", "why"),
    [
        (b"def f(:\n", 1, "invalid syntax (column 7)"),
        (b"x = 1\ny = 2\nz = '\0'\n", 3, "null bytes"),
        (b"x = 1\n" + b"(" * 300 + b")" * 300 + b"\n", 2, "too many nested parentheses"),
        (b"# -*- coding: nope -*-\nx = 1\n", 1, "unknown encoding: nope"),
    ],
)
def test_tree_of_an_unparsable_file(tmp_path: Path, data: bytes, line: int, why: str) -> None:
    ctx = FileContext(tmp_path, "c", {}, path="a.py", _data=data)
    for _ in range(2):  # parsed once, raised on every access
        with pytest.raises(UnparsableFile) as info:
            ctx.tree  # noqa: B018
        assert info.value.line == line
        assert why in info.value.why
    assert ctx.parse_error is not None
    assert ctx.parse_error.violation().message.startswith("cannot parse: ")


def test_the_python_version_is_part_of_the_cache_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "lint.toml").write_text("[checks.no-broad-raises]\n")
    (en,) = manifest_mod.load(tmp_path / "lint.toml").checks
    key = en.config_key
    monkeypatch.setattr(sys, "version_info", (sys.version_info[0], sys.version_info[1] + 1))
    other = en.config_key
    monkeypatch.undo()
    assert other != key
    assert en.config_key == key
