"""A stand-in of PyPTO's public surface, for the PyPTO adapter's tests only.

``pypto/`` here is a package named ``pypto`` with just what the adapter uses
(`pytest_pypto.runtimes.pypto` lists it and where in PyPTO it was read):
``__version__``, ``language`` (pytest-pypto's own language), ``backend.BackendType``,
``ir.compile`` returning a callable ``CompiledProgram``, ``runtime.RunConfig``.
Compiling and running delegate to our compiler and numpy simulator, so adapter
runs compute real results.  `installed` puts it on ``sys.path`` for one test.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import ModuleType

import pytest

HERE = Path(__file__).resolve().parent


def _drop_pypto_modules() -> dict[str, ModuleType]:
    dropped = {}
    for name in list(sys.modules):
        if name == "pypto" or name.startswith("pypto."):
            dropped[name] = sys.modules.pop(name)
    return dropped


@contextmanager
def installed(monkeypatch: pytest.MonkeyPatch, version: str | None = None) -> Iterator[ModuleType]:
    """The stand-in imported as ``pypto`` (``version`` overrides its ``__version__``);
    whatever ``pypto`` modules were loaded before come back afterwards."""
    before = _drop_pypto_modules()
    monkeypatch.syspath_prepend(str(HERE))
    try:
        module = importlib.import_module("pypto")
        if version is not None:
            monkeypatch.setattr(module, "__version__", version)
        yield module
    finally:
        _drop_pypto_modules()
        sys.modules.update(before)
