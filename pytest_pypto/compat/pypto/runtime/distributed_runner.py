"""``pypto.runtime.distributed_runner``: Tier 3 (distributed execution)."""

from pytest_pypto.compat.standins import tier3_name

DistributedWorker = tier3_name("runtime.DistributedWorker", "distributed execution")
DistributedRunHandle = tier3_name("runtime.DistributedRunHandle", "distributed execution")
execute_distributed_compiled = tier3_name(
    "runtime.execute_distributed_compiled", "distributed execution"
)

__all__ = ["DistributedRunHandle", "DistributedWorker", "execute_distributed_compiled"]
