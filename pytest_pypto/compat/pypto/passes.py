"""``pypto.passes`` (``from pypto import passes``): PyPTO's pass selections."""

from pytest_pypto.compat.selections import MemoryPlanner, PassDumpLevel

__all__ = ["MemoryPlanner", "PassDumpLevel"]
