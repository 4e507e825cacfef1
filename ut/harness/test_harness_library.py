"""The harness is a library: it loads without pytest, never imports the plugin or the
compat layer, and decides tolerances in one place (harness/tolerance.py)."""

from __future__ import annotations

import json
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest

from pytest_pypto.config import RunConfig
from pytest_pypto.harness import context, tolerance
from pytest_pypto.harness.settings import Settings

CODE = """
import importlib, json, pkgutil, sys
sys.modules["pytest"] = None  # any import of pytest now fails
sys.modules["_pytest"] = None
import pytest_pypto.harness as harness
names = sorted(m.name for m in pkgutil.iter_modules(harness.__path__))
for name in names:
    importlib.import_module("pytest_pypto.harness." + name)
print(json.dumps([names, sorted(sys.modules)]))
"""


def test_every_harness_module_imports_without_pytest() -> None:
    out = subprocess.run(
        [sys.executable, "-c", CODE], check=True, capture_output=True, text=True
    ).stdout
    names, modules = json.loads(out)
    assert {"runner", "dispatch", "jit", "context", "compiling"} <= set(names)
    upward = [m for m in modules if m.startswith(("pytest_pypto.plugin", "pytest_pypto.compat"))]
    assert upward == []


def _case(rtol=None, atol=None, config=None):
    return SimpleNamespace(rtol=rtol, atol=atol, config=config, get_name=lambda: "C")


def test_case_tolerance_precedence_and_completion() -> None:
    cell = RunConfig(rtol=1e-3, atol=1e-3)
    assert tolerance.case_tolerance(_case(1e-1, 2e-1, cell), cell) == (1e-1, 2e-1)
    own = RunConfig(rtol=1e-4, atol=1e-4)
    assert tolerance.case_tolerance(_case(config=own), cell) == (1e-4, 1e-4)
    assert tolerance.case_tolerance(_case(), cell) == (1e-3, 1e-3)
    assert tolerance.case_tolerance(_case(), RunConfig()) == (None, None)
    with pytest.raises(ValueError, match="give both or neither"):
        tolerance.case_tolerance(_case(rtol=1e-2), cell)
    own.atol = None  # a case tuned one half later: the other comes from the dtype
    pair = tolerance.case_tolerance(_case(config=own), cell)
    half = np.zeros(2, np.float16)
    assert tolerance.complete(pair, half, half) == (1e-4, 1e-3)
    assert tolerance.complete((None, None), half, half) == (None, None)


def test_assert_close_pair_is_both_or_neither() -> None:
    a = np.zeros(2, np.float32)
    assert tolerance.explicit(None, None, a, a.astype(np.float16)) == (1e-3, 1e-3)
    assert tolerance.explicit(1, 2, a, a) == (1.0, 2.0)
    with pytest.raises(ValueError, match="give both rtol and atol"):
        tolerance.explicit(1e-3, None, a, a)


def test_the_session_context_stack_and_its_default_config() -> None:
    outer = context.current()  # this suite's own session, when the plugin bound one
    settings = Settings(archs=("a5",), isolate=True, save_kernels=True)
    session = context.SessionContext(settings, cache_factory=lambda: "cache", skip=pytest.skip)
    context.bind(session)
    try:
        assert context.current() is session
        config = session.default_config()
        assert (config.platform, config.runtime, config.save_kernels_dir) == (
            "a5sim", "isolated", None)
        assert session.cache() == "cache"
    finally:
        context.unbind(session)
    assert context.current() is outer
    kept = context.run_config(settings, "a5", seed=3, keep_dir="/k", isolate=True)
    assert (kept.seed, kept.save_kernels_dir, kept.runtime) == (3, "/k", None)
