"""A test's seed does not depend on the directory pytest is started from
(harness/seeding.py: the seed key), and the printed repro command reproduces it."""

from __future__ import annotations

import hashlib
import re
import shlex
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy  # noqa: F401  (loaded before in-process pytester runs, which cannot reload it)
import pytest
from readme_kit import TWICE_PROGRAM

from pytest_pypto.harness.seeding import project_root, seed_key

SEEDED = """
def test_s(pypto_config, pypto_rng):
    pass
"""


def _expected(base: int, key: str) -> int:
    """The seed of ``key``, computed here: sha256 of "base NUL key", top 63 bits."""
    return int.from_bytes(hashlib.sha256(f"{base}\0{key}".encode()).digest()[:8], "big") >> 1


def _seeds(pytester: pytest.Pytester, cwd: Path, *args: str) -> dict[str, int]:
    """Run from ``cwd``; {junit name of the test: its recorded pypto_seed}."""
    xml = pytester.path / f"junit-{len(list(pytester.path.glob('junit-*')))}.xml"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(cwd)
        result = pytester.runpytest(*args, f"--junitxml={xml}", "-p", "no:cacheprovider")
    assert result.ret == 0, result.stdout.str()
    out = {}
    for case in ET.parse(xml).iter("testcase"):
        (seed,) = [p.get("value") for p in case.iter("property") if p.get("name") == "pypto_seed"]
        out[f"{case.get('classname')}::{case.get('name')}"] = int(seed)
    return out


@pytest.mark.parametrize(
    ("marker", "key"),
    [
        # no project marker: the file's name and the test's name
        (None, "test_s.py::test_s[a2a3sim]"),
        # a project root pytest does not use as rootdir: the path from it
        (".git", "tests/test_s.py::test_s[a2a3sim]"),
        # an ini file fixes the rootdir, hence the node id: the node id, as always
        ("pytest.ini", "tests/test_s.py::test_s[a2a3sim]"),
    ],
)
def test_seed_is_the_same_from_any_invocation_directory(
    pytester: pytest.Pytester, marker: str | None, key: str
) -> None:
    project = pytester.path / "proj"
    tests = project / "tests"
    tests.mkdir(parents=True)
    (tests / "test_s.py").write_text(SEEDED)
    if marker == ".git":
        (project / ".git").mkdir()
    elif marker is not None:
        (project / marker).write_text("[pytest]\n")
    from_root = _seeds(pytester, project, "tests")
    from_tests = _seeds(pytester, tests)
    by_path = _seeds(pytester, pytester.path, str(tests / "test_s.py"))
    seeds = {*from_root.values(), *from_tests.values(), *by_path.values()}
    assert seeds == {_expected(0, key)}, (from_root, from_tests, by_path)
    if marker != "pytest.ini":  # without an ini the node ids really differ
        assert len({*from_root, *from_tests}) == 2, (from_root, from_tests)
    assert _seeds(pytester, tests, "--pypto-seed=5") != from_tests  # the base still counts


KERNEL_TESTS = TWICE_PROGRAM + """
def test_bad(pypto_runner, pypto_rng):
    x = pypto_rng.standard_normal((16, 16), dtype=np.float32)
    out = np.empty((16, 16), np.float32)
    pypto_runner.run(Twice, x, out)
    pytest_pypto.assert_close(out, 3 * x)
"""


def _junit_seed(xml: Path) -> int:
    (seed,) = [p.get("value") for p in ET.parse(xml).iter("property")
               if p.get("name") == "pypto_seed"]  # fmt: skip
    return int(seed)


def test_the_repro_command_reproduces_the_seed(pytester: pytest.Pytester) -> None:
    tests = pytester.path / "proj" / "tests"
    tests.mkdir(parents=True)
    (tests / "test_k.py").write_text(KERNEL_TESTS)
    elsewhere = pytester.path / "elsewhere"
    elsewhere.mkdir()
    xml = pytester.path / "first.xml"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(elsewhere)  # started from a directory that is not the rootdir
        first = pytester.runpytest(str(tests / "test_k.py"), f"--junitxml={xml}")
    first.assert_outcomes(failed=1)
    text = first.stdout.str()
    seed = _junit_seed(xml)
    assert f"seed: {seed} (base seed 0)" in text
    failures = text.split("short test summary info")[0]  # CI=true repeats it in the summary
    (command,) = re.findall(r"reproduce: (cd .*)$", failures, re.M)
    cd, rest = command.split(" && ", 1)
    argv = shlex.split(rest)
    assert argv[0] == "pytest"
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(shlex.split(cd)[1])
        again = pytester.runpytest(*argv[1:], f"--junitxml={pytester.path / 'again.xml'}")
    again.assert_outcomes(failed=1)
    assert _junit_seed(pytester.path / "again.xml") == seed
    assert seed == _expected(0, "test_k.py::test_bad[a2a3sim]")  # no project marker


def test_seed_key_rules(tmp_path: Path) -> None:
    project = tmp_path / "p"
    (project / "src" / "tests").mkdir(parents=True)
    (project / "setup.cfg").write_text("")
    test_file = project / "src" / "tests" / "test_a.py"
    assert project_root(test_file.parent) == project
    # without an ini file: from the project root, whatever the node id's prefix
    for nodeid in ("src/tests/test_a.py::T::t[a5sim]", "test_a.py::T::t[a5sim]"):
        key = seed_key(nodeid, test_file, project / "src", has_inifile=False)
        assert key == "src/tests/test_a.py::T::t[a5sim]"
    # an ini file: the node id, when the file is under the rootdir
    assert seed_key("tests/test_a.py::t", test_file, project / "src", has_inifile=True) == (
        "tests/test_a.py::t"
    )
    # ... and the project-root rule when it is not (a file given from outside the rootdir)
    outside = seed_key("../../p/src/tests/test_a.py::t", test_file, tmp_path / "x",
                       has_inifile=True)  # fmt: skip
    assert outside == "src/tests/test_a.py::t"
    assert seed_key("weird-id", None, project, has_inifile=False) == "weird-id"
