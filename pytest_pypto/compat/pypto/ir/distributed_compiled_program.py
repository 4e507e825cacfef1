"""``pypto.ir.distributed_compiled_program``: multi-chip programs on simulated devices
(docs/design/distributed.md §2; the classes live in pytest_pypto/harness/distributed_program.py)."""

from pytest_pypto.compat.pypto.runtime.distributed_runner import CompletedRun
from pytest_pypto.harness.distributed_program import (
    DistributedCompiledProgram,
    DistributedConfig,
    PreparedProgram,
    compile_jit_host,
)

__all__ = ["CompletedRun", "DistributedCompiledProgram", "DistributedConfig", "PreparedProgram",
           "compile_jit_host"]
