"""``pypto.runtime``: run/compile entry points, RunConfig, specs, the single-chip
worker surface and the benchmark (docs/design/plugin.md §16).

``ChipWorker``, ``DeviceTensor``, ``execute_compiled`` and ``benchmark`` run on the
simulator, so does ``DistributedWorker`` on simulated cards
(docs/design/distributed.md §8); the low-level distributed runner functions and the
PTO-ISA toolchain import fine and raise the Tier-3 "not supported by the bundled
toolchain" error when used.
"""

from pytest_pypto.compat.pypto.runtime.bench import (
    BenchmarkStats,
    TraceInvocation,
    TraceSpan,
    benchmark,
)
from pytest_pypto.compat.pypto.runtime.device_tensor import DeviceTensor, StackedDeviceTensor
from pytest_pypto.compat.pypto.runtime.distributed_runner import (
    DistributedRunHandle,
    DistributedWorker,
    execute_distributed_compiled,
)
from pytest_pypto.compat.pypto.runtime.log_config import configure_log, log_level
from pytest_pypto.compat.pypto.runtime.pto_isa import ensure_pto_isa_root, pto_isa_include_dir
from pytest_pypto.compat.pypto.runtime.runner import (
    RunConfig,
    RunResult,
    compile_program,
    execute_compiled,
    run,
)
from pytest_pypto.compat.pypto.runtime.runtime_base import Worker
from pytest_pypto.compat.pypto.runtime.tensor_spec import ScalarSpec, TensorSpec
from pytest_pypto.compat.pypto.runtime.worker import ChipWorker, RegistrationHandle

__all__ = [
    "BenchmarkStats",
    "ChipWorker",
    "DeviceTensor",
    "DistributedRunHandle",
    "DistributedWorker",
    "RegistrationHandle",
    "RunConfig",
    "RunResult",
    "ScalarSpec",
    "StackedDeviceTensor",
    "TensorSpec",
    "TraceInvocation",
    "TraceSpan",
    "Worker",
    "benchmark",
    "compile_program",
    "configure_log",
    "ensure_pto_isa_root",
    "execute_compiled",
    "execute_distributed_compiled",
    "log_level",
    "pto_isa_include_dir",
    "run",
]
