"""``pypto.runtime.bench``: `benchmark` on the simulator (host wall-clock, labelled)."""

from pytest_pypto.compat.execution import BenchmarkStats, benchmark
from pytest_pypto.compat.standins import tier3_class

TraceSpan = tier3_class("runtime.TraceSpan", "on-device [STRACE] timing spans")
TraceInvocation = tier3_class("runtime.TraceInvocation", "on-device [STRACE] timing spans")

__all__ = ["BenchmarkStats", "TraceInvocation", "TraceSpan", "benchmark"]
