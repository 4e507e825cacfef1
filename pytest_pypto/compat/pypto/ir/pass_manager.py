"""``pypto.ir.pass_manager``: the strategy enum and the pass manager."""

from pytest_pypto.compat.selections import OptimizationStrategy, PassDumpLevel
from pytest_pypto.compiler.passes import PassManager

__all__ = ["OptimizationStrategy", "PassDumpLevel", "PassManager"]
