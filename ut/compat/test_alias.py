"""--pypto-alias: ``import pypto...`` resolves to pytest_pypto.compat.pypto (zero-edit mode)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

import pytest_pypto.compat.pypto as compat_pypto
import pytest_pypto.language.parser as real_parser
from pytest_pypto.compat import alias

ACTIVE = "pypto alias: active (import pypto -> pytest_pypto.compat.pypto)"

# A test module written the PyPTO way: it imports pypto, not pytest_pypto.
PYPTO_STYLE = """
import pypto.language as pl
from pypto import language

import pytest_pypto.compat.pypto.language as compat_pl


def test_same_module():
    assert pl is language is compat_pl
    assert pl.FP32 is compat_pl.FP32
"""


def test_alias_resolves_pypto_to_the_compat_modules(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pypto_style=PYPTO_STYLE)
    result = pytester.runpytest("--pypto-alias")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([ACTIVE])


def test_without_alias_pypto_does_not_import(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_pypto_style=PYPTO_STYLE)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ModuleNotFoundError: No module named 'pypto'*"])
    assert "pypto alias" not in result.stdout.str()


@pytest.mark.parametrize("source", ["env", "ini", "pyproject"])
def test_env_and_ini_enable_the_alias(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, source: str
) -> None:
    if source == "env":
        monkeypatch.setenv("PYPTO_ALIAS", "1")
    elif source == "ini":
        pytester.makeini("[pytest]\npypto_alias = 1\n")
    else:
        pytester.makepyprojecttoml('[tool.pytest.ini_options]\npypto_alias = "true"\n')
    pytester.makepyfile(test_pypto_style=PYPTO_STYLE)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([ACTIVE])


def test_env_off_value_keeps_the_alias_off(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_ALIAS", "0")
    pytester.makepyfile(test_pypto_style=PYPTO_STYLE)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert "pypto alias" not in result.stdout.str()


def test_bad_env_value_is_a_usage_error(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYPTO_ALIAS", "maybe")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert (
        "--pypto-alias: invalid value 'maybe' (from environment variable PYPTO_ALIAS): "
        "not a boolean" in err
    )
    assert "Traceback" not in err + result.stdout.str()


FAKE_PYPTO = 'WHO = "the real one"\n'
SEES_REAL = """
import pypto


def test_real():
    assert pypto.WHO == "the real one"
    assert "pytest_pypto" not in pypto.__file__
"""


def test_a_real_pypto_is_not_shadowed(pytester: pytest.Pytester) -> None:
    pytester.mkpydir("pypto").joinpath("__init__.py").write_text(FAKE_PYPTO)
    pytester.syspathinsert()
    pytester.makepyfile(test_real=SEES_REAL)
    result = pytester.runpytest("--pypto-alias")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            f"pypto alias: requested but a real PyPTO is installed at "
            f"{pytester.path / 'pypto'}; not aliasing"
        ]
    )
    assert ACTIVE not in result.stdout.str()


def test_a_real_pypto_found_only_at_collection_still_wins(pytester: pytest.Pytester) -> None:
    """The fake package is reachable only once collection puts the rootdir on sys.path
    (after configure installed the finder): the finder defers to it."""
    pytester.mkpydir("pypto").joinpath("__init__.py").write_text(FAKE_PYPTO)
    pytester.makepyfile(test_real=SEES_REAL)
    result = pytester.runpytest("--pypto-alias")
    result.assert_outcomes(passed=1)


def test_a_bad_submodule_names_itself(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_missing="""
        import pytest


        def test_missing():
            with pytest.raises(ModuleNotFoundError) as info:
                import pypto.nonexistent  # noqa: F401
            assert info.value.name == "pypto.nonexistent"
            assert "No module named 'pypto.nonexistent'" in str(info.value)
            assert "compat surface has no module" in str(info.value)
        """,
        test_missing_at_import="import pypto.nonexistent\n",
    )
    result = pytester.runpytest("--pypto-alias", "--continue-on-collection-errors")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*ModuleNotFoundError: No module named 'pypto.nonexistent': *compat surface*"]
    )


def test_xdist_workers_alias_too(pytester: pytest.Pytester) -> None:
    body = PYPTO_STYLE + (
        "\n\ndef test_in_a_worker():\n"
        "    import os\n\n"
        "    assert os.environ['PYTEST_XDIST_WORKER'].startswith('gw')\n"
    )
    pytester.makepyfile(test_one=body, test_two=body)
    result = pytester.runpytest("--pypto-alias", "-n", "2", "-p", "xdist")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([ACTIVE])


RUNNER_TEST = """
def test_fixture(test_runner, test_config):
    assert type(test_runner).__name__ == "TestRunner"
    assert type(test_config).__name__ == "RunConfig"
"""


def test_alias_alone_provides_the_compat_fixtures(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fixture=RUNNER_TEST)
    result = pytester.runpytest("--pypto-alias", "--pypto-arch=all", "-v")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines_random(
        [
            "*test_fixture.py::test_fixture[[]a2a3sim[]] PASSED*",
            "*test_fixture.py::test_fixture[[]a5sim[]] PASSED*",
        ]
    )
    without = pytester.runpytest()
    without.assert_outcomes(errors=1)
    without.stdout.fnmatch_lines(["*fixture 'test_runner' not found*"])


def test_alias_covers_a_conftest_that_imports_pypto(pytester: pytest.Pytester) -> None:
    # PyPTO's own conftest imports pypto; the alias must be there before it loads.
    pytester.makeconftest("from pypto.runtime.runner import RunConfig\nCONF = RunConfig\n")
    pytester.makepyfile(
        test_c="""
        import conftest
        from pypto.runtime import RunConfig

        def test_same():
            assert conftest.CONF is RunConfig
        """
    )
    pytester.runpytest("--pypto-alias").assert_outcomes(passed=1)
    failed = pytester.runpytest()
    assert failed.ret != 0
    failed.stderr.fnmatch_lines(["*No module named 'pypto'*"])


def test_alias_alone_accepts_pyptos_option_spellings(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_o="""
        def test_cell(test_config):
            assert test_config.platform == "a5sim"
        """
    )
    result = pytester.runpytest("--pypto-alias", "--platform", "a5sim", "-v")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_cell[[]a5sim[]] PASSED*"])


def test_alias_with_the_conftest_line_registers_the_plugin_once(
    pytester: pytest.Pytester,
) -> None:
    """pluggy refuses a second plugin under one name, so a pass means one registration."""
    pytester.makeconftest('pytest_plugins = ["pytest_pypto.compat"]\n')
    pytester.makepyfile(test_fixture=RUNNER_TEST)
    result = pytester.runpytest("--pypto-alias")
    result.assert_outcomes(passed=1)


def test_loading_the_compat_plugin_warns_nothing(pytester: pytest.Pytester) -> None:
    """A fresh process (in-process runs see every module already imported)."""
    pytester.makepyfile(test_fixture=RUNNER_TEST)
    result = pytester.runpytest_subprocess("--pypto-alias", "-W", "error::pytest.PytestWarning")
    result.assert_outcomes(passed=1)
    assert "Warning" not in result.stdout.str() + result.stderr.str()


# --- in-process: install / uninstall -------------------------------------------------


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch) -> object:
    """No alias finder and no pypto* module in sys: everything restored afterwards."""
    monkeypatch.setattr(
        sys, "meta_path", [f for f in sys.meta_path if not isinstance(f, alias._AliasFinder)]
    )
    monkeypatch.setattr(alias, "_finder", None)
    for name in [n for n in sys.modules if n == "pypto" or n.startswith("pypto.")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    alias.uninstall()


def _pypto_modules() -> list[str]:
    return sorted(n for n in sys.modules if n == "pypto" or n.startswith("pypto."))


@pytest.mark.usefixtures("isolated")
def test_install_and_uninstall_are_idempotent() -> None:
    assert not alias.active()
    assert alias.install() is True
    assert alias.install() is False  # already active: no second finder
    finders = [f for f in sys.meta_path if isinstance(f, alias._AliasFinder)]
    assert len(finders) == 1 and sys.meta_path[0] is finders[0]
    assert alias.active()

    language = importlib.import_module("pypto.language")
    assert language is compat_pypto.language
    assert sys.modules["pypto"] is compat_pypto
    assert _pypto_modules() == ["pypto", "pypto.language"]

    alias.uninstall()
    alias.uninstall()
    assert not alias.active()
    assert not any(isinstance(f, alias._AliasFinder) for f in sys.meta_path)
    assert _pypto_modules() == []
    assert sys.modules["pytest_pypto.compat.pypto"] is compat_pypto  # targets stay
    with pytest.raises(ModuleNotFoundError):
        importlib.import_module("pypto")


@pytest.mark.usefixtures("isolated")
def test_uninstall_leaves_entries_it_did_not_add() -> None:
    alias.install()
    importlib.import_module("pypto")
    stranger = type(sys)("pypto.stranger")
    sys.modules["pypto.stranger"] = stranger
    alias.uninstall()
    assert sys.modules.pop("pypto.stranger") is stranger
    assert "pypto" not in sys.modules


@pytest.mark.usefixtures("isolated")
def test_submodules_map_through_the_real_module() -> None:
    """pypto.language is pytest_pypto.language, so its submodules are not loaded twice."""
    alias.install()
    assert importlib.import_module("pypto.language.parser") is real_parser
    with pytest.raises(ModuleNotFoundError, match="compat surface has no module") as info:
        importlib.import_module("pypto.no_such_module")
    assert info.value.name == "pypto.no_such_module"


@pytest.mark.usefixtures("isolated")
def test_install_refuses_when_a_real_pypto_is_importable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pypto").mkdir()
    (tmp_path / "pypto" / "__init__.py").write_text(FAKE_PYPTO)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert alias.real_pypto() == str(tmp_path / "pypto")
    assert alias.install() is False
    assert not alias.active()


@pytest.mark.usefixtures("isolated")
def test_a_bare_pypto_directory_is_not_an_installation(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "pypto").mkdir()  # no __init__.py: a namespace package, e.g. a data dir
    monkeypatch.syspath_prepend(str(tmp_path))
    assert alias.real_pypto() is None
    assert alias.install() is True
    assert importlib.import_module("pypto") is compat_pypto


@pytest.mark.usefixtures("isolated")
def test_unconfigure_removes_the_finder(pytester: pytest.Pytester) -> None:
    """A programmatic run (pytest.main) leaves no finder behind in its process."""
    config = pytester.parseconfigure("--pypto-alias")
    assert alias.active()
    assert config.pluginmanager.get_plugin("pytest_pypto.compat") is not None
    config._ensure_unconfigure()
    assert not alias.active()
