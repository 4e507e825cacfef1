"""``simpler_setup.torch_interop``: torch tensors as runtime tensor arguments, on the
simulator (docs/design/distributed.md §8).

``make_tensor_arg(worker, tensor)`` (or ``make_tensor_arg(tensor)``) gives the
`simpler.task_interface.Tensor` naming a CPU torch tensor's memory (no copy);
``torch_dtype_to_datatype`` maps a torch dtype to the runtime's ``DataType``.
A multi-chip run passes every host torch tensor argument of a chip dispatch through
``make_tensor_arg`` (compat/pypto/runtime/distributed_runner.py).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.compat.simpler.task_interface import DataType, Tensor

__all__ = ["make_tensor_arg", "torch_dtype_to_datatype"]


def torch_dtype_to_datatype(dt: Any) -> DataType:
    """The ``DataType`` of torch dtype ``dt`` (KeyError: none)."""
    name = str(dt).rsplit(".", 1)[-1].upper()
    return DataType[name]


def make_tensor_arg(worker: Any, tensor: Any = None) -> Tensor:
    """The tensor argument naming ``tensor``'s memory (``worker``: the worker it is for;
    the one-argument form takes the tensor alone)."""
    if tensor is None:
        worker, tensor = None, worker
    del worker
    if type(tensor).__module__.split(".", 1)[0] != "torch" or not hasattr(tensor, "device"):
        raise TypeError(f"make_tensor_arg takes a torch.Tensor, got {type(tensor).__name__}")
    if tensor.device.type != "cpu":
        raise ValueError(f"make_tensor_arg takes a CPU tensor, got one on {tensor.device}")
    try:
        torch_dtype_to_datatype(tensor.dtype)
    except KeyError:
        raise ValueError(f"Unsupported tensor dtype for Tensor: {tensor.dtype}") from None
    return Tensor(tensor)
