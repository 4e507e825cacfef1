"""``pypto.runtime.tensor_spec``: PyPTO's runtime specs.

`TensorSpec` here is the runtime API's record, not the test harness's: ``dtype`` stays
what the caller gave (a torch dtype; PyPTO code maps it itself, ``{torch.bfloat16:
DataType.BF16}[spec.dtype]``), and `TensorSpec.create_tensor` builds the torch tensor:
zeros without ``init_value``, a number fills, a tensor is converted, torch's four
factories are called with ``(shape, dtype=...)``, any other callable with no arguments
and its result converted.  `ScalarSpec` is the harness's (name, value, ctype).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_pypto.compat.cases import ScalarSpec

__all__ = ["ScalarSpec", "TensorSpec"]

_FACTORIES = ("randn", "rand", "zeros", "ones")


@dataclass
class TensorSpec:
    """``TensorSpec(name, shape, dtype, init_value=None, is_output=False)``."""

    name: str
    shape: list[int]
    dtype: Any
    init_value: Any = None
    is_output: bool = False

    def create_tensor(self) -> Any:
        """The torch tensor this spec describes."""
        import torch  # lazy: torch is optional (the torch extra)

        init, shape = self.init_value, list(self.shape)
        if init is None:
            return torch.zeros(shape, dtype=self.dtype)
        if isinstance(init, (bool, int, float)):
            return torch.full(shape, init, dtype=self.dtype)
        if isinstance(init, torch.Tensor):
            return init.to(dtype=self.dtype)
        if callable(init):
            name = getattr(init, "__name__", None)
            if name in _FACTORIES and getattr(torch, name, None) is init:
                return init(shape, dtype=self.dtype)
            return torch.as_tensor(init(), dtype=self.dtype)
        raise TypeError(
            f"TensorSpec {self.name!r}: init_value of type {type(init).__name__} is not "
            "supported (None, a number, a torch tensor or a callable)"
        )
