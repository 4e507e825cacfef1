"""``pypto.runtime.runtime_base``: the worker base class."""

from pytest_pypto.compat.device import Worker

__all__ = ["Worker"]
