"""``pypto.runtime.distributed_runner``: Tier 3 (distributed execution)."""

from pytest_pypto.compat.device import Worker
from pytest_pypto.compat.standins import tier3_class, tier3_name

_WHY = "distributed execution"

DistributedWorker = tier3_class("runtime.DistributedWorker", _WHY, base=Worker)
DistributedRunHandle = tier3_class("runtime.DistributedRunHandle", _WHY)
execute_distributed_compiled = tier3_name("runtime.execute_distributed_compiled", _WHY)
execute_distributed = tier3_name("runtime.execute_distributed", _WHY)
_tensor_from_continuous = tier3_name("runtime.distributed_runner._tensor_from_continuous", _WHY)

__all__ = [
    "DistributedRunHandle",
    "DistributedWorker",
    "execute_distributed",
    "execute_distributed_compiled",
]
