"""``pypto.ir.distributed_compiled_program``: Tier 3 (distributed execution)."""

from pytest_pypto.compat.standins import tier3_class

DistributedConfig = tier3_class("ir.DistributedConfig", "distributed execution")
DistributedCompiledProgram = tier3_class("ir.DistributedCompiledProgram", "distributed execution")

__all__ = ["DistributedCompiledProgram", "DistributedConfig"]
