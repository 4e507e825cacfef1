"""``pypto.ir.distributed_compiled_program``: Tier 3 (distributed execution)."""

from pytest_pypto.compat.standins import tier3_name

DistributedConfig = tier3_name("ir.DistributedConfig", "distributed execution")
DistributedCompiledProgram = tier3_name("ir.DistributedCompiledProgram", "distributed execution")

__all__ = ["DistributedCompiledProgram", "DistributedConfig"]
