"""``pypto.runtime.device_tensor``: tensors resident in a worker's (simulated) memory."""

from pytest_pypto.compat.device import DeviceTensor, StackedDeviceTensor

__all__ = ["DeviceTensor", "StackedDeviceTensor"]
