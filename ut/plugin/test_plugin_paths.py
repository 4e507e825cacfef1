"""--pypto-kernels-dir / --pypto-cache-dir that cannot work: one usage error at configure.

Before: a kernels dir that was a file gave ~100 lines of INTERNALERROR from the first
test that kept an artifact (saved, dumped or failing).  Rules: plugin/paths.py.
"""

from __future__ import annotations

import re
from pathlib import Path

import numpy  # noqa: F401  (loaded before in-process pytester runs, which cannot reload it)
import pytest
from readme_kit import TWICE_PROGRAM, TWICE_TESTS

from pytest_pypto.plugin.paths import kept_name

KERNEL_TESTS = TWICE_TESTS

# /sys refuses mkdir even to root (EPERM): a directory that cannot be created.
UNCREATABLE = "/sys/pypto-d4-no-such-dir/kept"


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makepyfile(test_k=KERNEL_TESTS)
    (pytester.path / "afile").write_text("a regular file\n")
    return pytester


def _usage_error(result: pytest.RunResult) -> str:
    """The one error line of a usage error (and nothing that looks like a crash)."""
    out = result.stdout.str() + result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, out
    assert "INTERNALERROR" not in out and "Traceback" not in out, out
    (line,) = [ln for ln in result.stderr.lines if ln.startswith("ERROR:")]
    return line


@pytest.mark.parametrize(
    ("args", "option", "value", "why"),
    [
        # the three ways a kernels dir is written: failing tests, save-kernels, dump-passes
        ([], "kernels-dir", "afile", "{root}/afile is a file, not a directory"),
        (
            ["--pypto-save-kernels"],
            "kernels-dir",
            "afile",
            "{root}/afile is a file, not a directory",
        ),
        (
            ["--pypto-dump-passes"],
            "kernels-dir",
            "afile/sub",
            "{root}/afile is a file, so no directory can be created under it",
        ),
        (
            ["--pypto-save-kernels"],
            "kernels-dir",
            UNCREATABLE,
            "it cannot be created or written (PermissionError: ",
        ),
        ([], "cache-dir", "afile", "{root}/afile is a file, not a directory"),
        ([], "cache-dir", "afile/sub", "{root}/afile is a file, so no directory can be created"),
        (["--pypto-no-cache"], "cache-dir", "afile", "{root}/afile is a file, not a directory"),
        ([], "cache-dir", UNCREATABLE, "it cannot be created or written (PermissionError: "),
    ],
)
def test_unusable_path_is_one_usage_error(
    project: pytest.Pytester, args: list[str], option: str, value: str, why: str
) -> None:
    result = project.runpytest(f"--pypto-{option}", value, *args)
    line = _usage_error(result)
    expected = (
        f"ERROR: --pypto-{option}: cannot use {value!r} (from the command line): "
        + why.format(root=project.path)
    )
    assert line.startswith(expected), line
    assert line.endswith(f"(relative paths are taken from the rootdir {project.path}).")
    assert not list(project.path.glob("afile*/**")), "nothing created under the file"


def test_the_message_says_where_the_value_came_from(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_KERNELS_DIR", "afile")
    line = _usage_error(project.runpytest())
    assert line.startswith(
        "ERROR: --pypto-kernels-dir: cannot use 'afile' (from environment variable "
        "PYPTO_KERNELS_DIR): "
    ), line
    monkeypatch.delenv("PYPTO_KERNELS_DIR")
    project.makeini("[pytest]\npypto_cache_dir = afile/x\n")
    line = _usage_error(project.runpytest())
    assert "--pypto-cache-dir: cannot use 'afile/x' (from ini key pypto_cache_dir)" in line


def test_compat_spelling_is_checked_too(project: pytest.Pytester) -> None:
    line = _usage_error(project.runpytest("-p", "pytest_pypto.compat", "--kernels-dir", "afile"))
    assert "--pypto-kernels-dir: cannot use 'afile'" in line


def test_uncreatable_kernels_dir_only_warns_when_only_failures_write(
    project: pytest.Pytester,
) -> None:
    # Without save/dump only failing tests write there: the run goes on, they keep nothing.
    result = project.runpytest(f"--pypto-kernels-dir={UNCREATABLE}", "-W", "default")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    assert out.count(f"--pypto-kernels-dir '{UNCREATABLE}': it cannot be created") == 1, out
    assert "failing tests will keep no artifacts" in out
    assert "artifacts kept in" not in out
    assert "MismatchError" in out  # the failure itself is reported as usual


def test_a_passing_run_creates_no_kernels_dir(project: pytest.Pytester) -> None:
    result = project.runpytest("--pypto-kernels-dir=new/a/b", "-k", "good")
    result.assert_outcomes(passed=1, deselected=1)
    assert not (project.path / "new").exists()  # probed, then removed again
    failing = project.runpytest("--pypto-kernels-dir=new/a/b", "-k", "bad")
    failing.assert_outcomes(failed=1, deselected=1)
    kept = project.path / "new" / "a" / "b" / kept_name("test_k.py::test_bad[a2a3sim]")
    assert (kept / "kernel_config.json").is_file()
    assert f"artifacts kept in: {kept}" in failing.stdout.str()


def test_kernels_dir_lost_during_the_run_is_named_not_a_crash(project: pytest.Pytester) -> None:
    # Configure found it usable; it turns into a file before the failing test keeps.
    project.makeconftest(
        """
        def pytest_sessionstart(session):
            (session.config.rootpath / "kd").write_text("now a file")
        """
    )
    result = project.runpytest("--pypto-kernels-dir=kd", "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    out = result.stdout.str()
    assert "INTERNALERROR" not in out
    match = re.search(r"artifacts not kept: (\S+): (\w+Error)", out)
    assert match is not None, out
    assert Path(match.group(1)).parent == project.path / "kd"
    assert match.group(2) in ("NotADirectoryError", "FileExistsError")
    assert "a2a3sim: 1 failed: mismatch" in out  # still classified as what it was


COLLIDING = TWICE_PROGRAM + """
import pytest

@pytest.mark.parametrize("tag", ["a b", "a_b", "a/b", "a__b"])
def test_t(pypto_runner, pypto_rng, tag):
    x = pypto_rng.standard_normal((16, 16), dtype=np.float32)
    out = np.empty((16, 16), np.float32)
    pypto_runner.run(Twice, x, out)
    pytest_pypto.assert_close(out, 3 * x)  # wrong on purpose: every test fails and keeps
"""


def test_kept_names_are_distinct_for_ids_that_sanitize_alike() -> None:
    """Issue 26 item 5: ``[a b]``, ``[a_b]``, ``[a/b]`` once shared one kept directory."""
    ids = [f"t.py::test_t[{tag}]" for tag in ("a b", "a_b", "a/b", "a__b", "a[b", "a]b")]
    ids += ["a_b/c.py::t", "a/b_c.py::t", "x" * 300, "x" * 301]
    names = [kept_name(i) for i in ids]
    assert len(set(names)) == len(ids), names
    for name in names:  # one readable path component, not too long for a file system
        assert re.fullmatch(r"[\w.\-]+", name) and len(name) <= 120, name
    assert names[0].startswith("t.py_test_t_a_b-"), names[0]  # still readable
    assert kept_name(ids[0]) == names[0]  # stable: a rerun keeps in the same place


def test_failing_tests_with_ids_that_sanitize_alike_keep_apart(project: pytest.Pytester) -> None:
    project.makepyfile(test_c=COLLIDING)
    result = project.runpytest("test_c.py", "--pypto-kernels-dir=kd")
    result.assert_outcomes(failed=4)
    kept = set(re.findall(r"artifacts kept in: (\S+)", result.stdout.str()))
    assert len(kept) == 4, kept
    assert sorted(p.name for p in (project.path / "kd").iterdir()) == sorted(
        Path(k).name for k in kept
    )
