"""``pypto.runtime``: run/compile entry points, RunConfig, specs; hardware workers.

``ChipWorker``, ``Worker``, ``DistributedWorker`` and the other hardware/distributed
names import fine and raise the Tier-3 "not supported by the bundled toolchain"
error when used.
"""

from pytest_pypto.compat.pypto.runtime.distributed_runner import DistributedWorker
from pytest_pypto.compat.pypto.runtime.runner import (
    RunConfig,
    RunResult,
    compile_program,
    run,
)
from pytest_pypto.compat.pypto.runtime.tensor_spec import ScalarSpec, TensorSpec
from pytest_pypto.compat.selections import configure_log
from pytest_pypto.compat.standins import tier3_name

ChipWorker = tier3_name("runtime.ChipWorker", "on-chip workers")
Worker = tier3_name("runtime.Worker", "on-chip workers")
StackedDeviceTensor = tier3_name("runtime.StackedDeviceTensor", "distributed execution")
DeviceTensor = tier3_name("runtime.DeviceTensor", "device-resident tensors")
benchmark = tier3_name("runtime.benchmark", "on-device benchmarking")
ensure_pto_isa_root = tier3_name("runtime.ensure_pto_isa_root", "the PTO-ISA toolchain")

__all__ = [
    "ChipWorker",
    "DeviceTensor",
    "DistributedWorker",
    "RunConfig",
    "RunResult",
    "ScalarSpec",
    "StackedDeviceTensor",
    "TensorSpec",
    "Worker",
    "benchmark",
    "compile_program",
    "configure_log",
    "ensure_pto_isa_root",
    "run",
]
