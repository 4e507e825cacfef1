"""``pypto.pypto_core.passes``: the memory planner selection (accepted, no effect here) and the
AutoL0 tile chooser (``passes.l0_tile_chooser``)."""

from pytest_pypto.compat.pypto.pypto_core import l0_tile_chooser
from pytest_pypto.compat.selections import MemoryPlanner, PassDumpLevel

__all__ = ["MemoryPlanner", "PassDumpLevel", "l0_tile_chooser"]
