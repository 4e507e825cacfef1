"""``pypto.pypto_core``: the names tests import from PyPTO's C++ core module."""

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.pypto_core import passes
from pytest_pypto.compat.selections import LogLevel

__all__ = ["LogLevel", "ir", "passes"]
