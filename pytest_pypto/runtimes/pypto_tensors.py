# SPDX-License-Identifier: Apache-2.0
"""The array boundary of the PyPTO adapter: numpy in, torch tensors to PyPTO, numpy back.

PyPTO's ``CompiledProgram`` takes torch tensors for tensor parameters and Python
scalars for scalar ones.  Tensors are made from C-contiguous *copies* of the
caller's arrays (torch.from_numpy shares memory, and PyPTO writes results into
the tensors it is given), so the caller's arrays change only in `copy_back`.
bf16 and fp8 arrays (ml_dtypes) cross through their bits, as the harness does.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_pypto.harness.tensors import is_torch, torch_view

__all__ = ["copy_back", "is_array", "to_pypto"]

# ml_dtypes dtype name -> (integer carrier of the same width, torch dtype name).
_BIT_CARRIED = {
    "bfloat16": (np.int16, "bfloat16"),
    "float8_e4m3fn": (np.uint8, "float8_e4m3fn"),
    "float8_e5m2": (np.uint8, "float8_e5m2"),
    "float8_e8m0fnu": (np.uint8, "float8_e8m0fnu"),
}


def is_array(value: Any) -> bool:
    return isinstance(value, np.ndarray) or is_torch(value)


def to_pypto(value: Any) -> Any:
    """A torch tensor holding a copy of ``value`` (an array), or ``value`` as a Python
    scalar (numpy scalars included)."""
    import torch  # lazy: torch is optional

    if is_torch(value):
        return value.detach().clone()
    if isinstance(value, np.generic):
        return value.item()
    if not isinstance(value, np.ndarray):
        return value
    data = np.array(value, order="C", copy=True)
    carried = _BIT_CARRIED.get(data.dtype.name)
    if carried is None:
        return torch.from_numpy(data)
    bits, torch_name = carried
    return torch.from_numpy(data.view(bits)).view(getattr(torch, torch_name))


def copy_back(caller: Any, tensor: Any) -> None:
    """Write the result ``tensor`` into the caller's array (numpy or torch) in place."""
    if is_torch(caller):
        caller.copy_(tensor)
        return
    np.copyto(caller, torch_view(tensor.detach().cpu().contiguous()).reshape(caller.shape))
