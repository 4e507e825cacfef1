"""Every stand-in for a PyPTO class is a class (issue 24 item 3): isinstance, issubclass
and except work and never match; using it raises the Tier-3 error; the lint check
``compat-classes`` (lint/compat_checks.py) flags a stand-in that is not a class."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from types import ModuleType

import pytest

from pytest_pypto.compat.standins import tier3_class, tier3_name
from pytest_pypto.lint.framework import ProjectContext
from pytest_pypto.lint.manifest import _import

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

REPO = Path(__file__).resolve().parents[2]
TABLE = tomllib.loads((REPO / "lint" / "lint.toml").read_text())["checks"]["compat-classes"]
CLASSES = TABLE["classes"]


def _resolve(dotted: str) -> object:
    module, _, attr = f"pytest_pypto.compat.pypto.{dotted}".rpartition(".")
    return getattr(importlib.import_module(module), attr)


@pytest.mark.parametrize("dotted", CLASSES)
def test_every_pypto_class_is_a_class_here(dotted: str) -> None:
    cls = _resolve(dotted)
    assert isinstance(cls, type), f"pypto.{dotted} is {cls!r}"
    assert isinstance(object(), cls) is False
    assert issubclass(int, cls) is False


def test_the_distributed_program_classes_are_real_and_distinct_from_compiled_program() -> None:
    from pytest_pypto.compat.pypto.ir.compiled_program import CompiledProgram
    from pytest_pypto.compat.pypto.ir.distributed_compiled_program import (
        DistributedCompiledProgram,
        DistributedConfig,
    )

    assert not isinstance(object(), DistributedCompiledProgram)
    assert not issubclass(CompiledProgram, DistributedCompiledProgram)
    assert DistributedConfig(device_ids=[0, 1]).device_ids == [0, 1]  # distributed.md §2


def test_an_error_stand_in_works_in_except_and_does_not_catch_others() -> None:
    Boom = tier3_class("somewhere.BoomError", "a test feature", base=RuntimeError)
    assert issubclass(Boom, RuntimeError)
    with pytest.raises(ValueError):  # the except clause is valid and does not match
        try:
            raise ValueError("other")
        except Boom:
            pytest.fail("a stand-in error class caught an unrelated error")
    Plain = tier3_class("somewhere.Plain", "a test feature")
    with pytest.raises(TypeError):  # a plain stand-in in except: Python's own rule
        try:
            raise ValueError("other")
        except Plain:  # type: ignore[misc]
            pass


@pytest.fixture(scope="module")
def checks() -> ModuleType:
    return sys.modules[_import(REPO / "lint", "compat_checks.py")]


def _run(checks: ModuleType, classes: list[str], package: str) -> list[str]:
    spec = checks.compat_classes.lint_check
    ctx = ProjectContext(REPO, spec.id, {**spec.options, "classes": classes, "package": package})
    return [f"{v.path}:{v.line}: {v.message}" for v in checks.compat_classes(ctx)]


def test_lint_flags_a_stand_in_object_for_a_class(checks: ModuleType, tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    fake = ModuleType("fake_compat_pkg")
    fake.__file__ = str(REPO / "pytest_pypto" / "compat" / "standins.py")
    fake.Good = tier3_class("Good", "x")
    fake.Bad = tier3_name("Bad", "x")
    monkeypatch.setitem(sys.modules, "fake_compat_pkg", fake)
    found = _run(checks, ["Good", "Bad", "Missing"], "fake_compat_pkg")
    assert found == [
        "pytest_pypto/compat/standins.py:1: pypto.Bad is a class in PyPTO but a Tier3Name here "
        "(isinstance/issubclass/except with it raise TypeError)",
        "pytest_pypto/compat/standins.py:1: pypto.Missing is missing from the compat surface",
    ]
    assert _run(checks, CLASSES, "pytest_pypto.compat.pypto") == []
