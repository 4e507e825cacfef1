"""Array boundary of the harness: numpy inside, torch tensors accepted at the edges.

torch is never imported here unless a torch tensor is handed in (so it is never
required); everything past this boundary is a numpy array.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["is_torch", "to_numpy", "torch_to_numpy", "torch_view"]


def is_torch(value: Any) -> bool:
    """Whether ``value`` is a torch tensor (checked without importing torch)."""
    return type(value).__module__.split(".")[0] == "torch"


def torch_to_numpy(tensor: Any) -> np.ndarray:
    """A numpy copy of a torch tensor in its own dtype (bf16 and fp8 bit for bit, as
    ml_dtypes types)."""
    return torch_view(tensor.detach().cpu().contiguous()).copy()


def to_numpy(value: Any, dtype: Any = None) -> np.ndarray:
    """``value`` (array, scalar, nested list or torch tensor) as an ndarray of ``dtype``."""
    array = torch_to_numpy(value) if is_torch(value) else np.asarray(value)
    if dtype is not None and array.dtype != dtype:
        array = array.astype(dtype)
    return array


def torch_view(tensor: Any) -> np.ndarray:
    """A numpy array sharing a CPU torch tensor's memory (bf16 and fp8 through their
    bits), so a kernel's Out/InOut results land in the caller's tensor in place."""
    import torch  # lazy: torch is optional, imported only when a tensor is handed in

    t = tensor.detach()
    if t.device.type != "cpu":
        raise TypeError(f"a {t.device.type} torch tensor: pass CPU tensors to the simulator")
    name = str(t.dtype).removeprefix("torch.")
    if name == "bfloat16" or name.startswith("float8"):
        import ml_dtypes  # lazy: only for bf16/fp8 torch tensors

        bits = torch.int16 if name == "bfloat16" else torch.uint8
        return t.view(bits).numpy().view(getattr(ml_dtypes, name))
    return t.numpy()
