"""PyPTO's ``pypto`` package surface, at PyPTO's module paths (the compat import rule).

``from pypto.<path> import <names>`` becomes ``from pytest_pypto.compat.pypto.<path>
import <names>``.  Every module under here is a thin re-export of pytest_pypto's own
objects; no logic lives here.  ``language`` is pytest_pypto's language module itself
(registered under this path, so ``import pytest_pypto.compat.pypto.language as pl``
and ``import pytest_pypto.language as pl`` give the same module; so is its
``distributed``, PyPTO's ``pld``).
"""

from __future__ import annotations

import sys

import pytest_pypto.language as language
import pytest_pypto.language.distributed as distributed
from pytest_pypto.compat.pypto import backend, ir, passes, runtime
from pytest_pypto.compat.selections import LogLevel

sys.modules[__name__ + ".language"] = language
sys.modules[__name__ + ".language.distributed"] = distributed  # `pld`: one module, one state

__all__ = ["LogLevel", "backend", "ir", "language", "passes", "runtime"]
