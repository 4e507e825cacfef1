"""``pypto.pypto_core``: the names tests import from PyPTO's C++ core module."""

from pytest_pypto.compat.pypto.pypto_core import passes

__all__ = ["passes"]
