"""``pypto.pypto_core.passes``: the memory planner selection (accepted, no effect here)."""

from pytest_pypto.compat.selections import MemoryPlanner, PassDumpLevel

__all__ = ["MemoryPlanner", "PassDumpLevel"]
