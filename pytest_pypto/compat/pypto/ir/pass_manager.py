"""``pypto.ir.pass_manager``: the strategy enum and the pass manager."""

from pytest_pypto.compiler.passes import PassManager
from pytest_pypto.compiler.selections import OptimizationStrategy, PassDumpLevel

__all__ = ["OptimizationStrategy", "PassDumpLevel", "PassManager"]
