"""``pypto.runtime.worker``: the single-chip worker, on the simulator."""

from pytest_pypto.compat.device import ChipWorker, RegistrationHandle

__all__ = ["ChipWorker", "RegistrationHandle"]
