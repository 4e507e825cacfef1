"""``simpler.task_interface``: the argument and call-config types of PyPTO's runtime
backend, on the simulator (docs/design/distributed.md §8).

``TaskArgs`` is the argument pack of one task of a hand-written level-3 orchestration
(``simpler.worker.Worker(level=3)``): tensors first (each a `Tensor` made by
``simpler_setup.torch_interop.make_tensor_arg`` with a `TensorArgType` tag), then
scalars.  A `Tensor` names host memory, it holds no copy.
"""

from __future__ import annotations

import enum
from typing import Any

from pytest_pypto.harness.subworkers import TensorArg
from pytest_pypto.ir.runtime_facade import CallConfig, ChipCallable

__all__ = ["CallConfig", "ChipCallable", "DataType", "TaskArgs", "Tensor", "TensorArgType"]


class DataType(enum.IntEnum):
    """A tensor argument's element type."""

    FLOAT32 = 0
    FLOAT16 = 1
    BFLOAT16 = 2
    INT8 = 3
    INT16 = 4
    INT32 = 5
    INT64 = 6
    UINT8 = 7
    UINT16 = 8
    UINT32 = 9


class TensorArgType(enum.IntEnum):
    """How a task uses a tensor argument (what orders it after the tasks before it)."""

    INPUT = 0
    OUTPUT = 1
    INOUT = 2
    OUTPUT_EXISTING = 3
    NO_DEP = 4


class Tensor(TensorArg):
    """A tensor argument: the host memory it names, its shape and element type."""

    __slots__ = ()

    @property
    def dtype(self) -> DataType:  # type: ignore[override]
        return DataType[TensorArg.dtype.fget(self)]  # type: ignore[attr-defined]


class TaskArgs:
    """One task's arguments: tensors (with their tags), then scalars."""

    def __init__(self) -> None:
        self._tensors: list[Tensor] = []
        self._tags: list[TensorArgType] = []
        self._scalars: list[Any] = []

    def add_tensor(self, t: Tensor, tag: TensorArgType = TensorArgType.INPUT) -> None:
        if not isinstance(t, TensorArg):
            raise TypeError(f"TaskArgs.add_tensor takes a Tensor (simpler_setup.torch_interop"
                            f".make_tensor_arg), got {type(t).__name__}")
        if self._scalars:
            raise ValueError("TaskArgs: every tensor must be added before the first scalar")
        self._tensors.append(t)
        self._tags.append(TensorArgType(tag))

    def add_scalar(self, s: Any) -> None:
        self._scalars.append(s)

    def tensor(self, i: int) -> Tensor:
        return self._tensors[i]

    def tag(self, i: int) -> TensorArgType:
        return self._tags[i]

    def scalar(self, i: int) -> Any:
        return self._scalars[i]

    def tensor_count(self) -> int:
        return len(self._tensors)

    def scalar_count(self) -> int:
        return len(self._scalars)

    def clear(self) -> None:
        self._tensors.clear()
        self._tags.clear()
        self._scalars.clear()

    def __len__(self) -> int:
        return len(self._tensors) + len(self._scalars)

    def values(self) -> list[Any]:
        """The arguments as a call passes them: the tensors' memory, then the scalars."""
        return [t.value for t in self._tensors] + list(self._scalars)

    def __repr__(self) -> str:
        return f"<TaskArgs {self.tensor_count()} tensor(s), {self.scalar_count()} scalar(s)>"
