"""Stand-in ``pypto`` (tests only): the surface the PyPTO adapter calls, over our toolchain."""

from __future__ import annotations

import sys

import pytest_pypto.language as language

sys.modules[__name__ + ".language"] = language

from pypto import backend, ir, runtime  # noqa: E402

__version__ = "0.1.0"

__all__ = ["backend", "ir", "language", "runtime"]
