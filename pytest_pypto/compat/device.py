"""PyPTO's single-chip worker surface on the simulator (docs/design/plugin.md §16).

``ChipWorker`` is PyPTO's handle on one device; ``alloc_tensor`` puts a tensor in its
memory once (a `DeviceTensor`) and later runs read it there.  On the simulator
"device memory" is host memory the worker owns: each allocation is one numpy byte
buffer, its address is the ``data_ptr``, ``copy_to``/``copy_from`` move bytes between
it and a host address, and a `DeviceTensor` handed to a `CompiledProgram` call (or to
a registered handle) is read and written in place through a numpy view of it, so no
copy happens on entry or exit, as on the device.

What differs from hardware: there is no dlopen, so ``aicpu_dlopen_count`` counts
the first dispatch of each distinct registered program (what a dlopen would be);
``runtime`` and ``enable_sdma`` are recorded only; every platform the simulator runs
is accepted and an onboard platform fails where its run is dispatched.
"""

from __future__ import annotations

import abc
import ctypes
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.harness.tensors import to_numpy, torch_view

__all__ = [
    "ChipWorker",
    "DeviceTensor",
    "RegistrationHandle",
    "StackedDeviceTensor",
    "Worker",
    "numpy_dtype",
]

DEFAULT_RUNTIME = "tensormap_and_ringbuffer"


def numpy_dtype(dtype: Any) -> np.dtype:
    """The numpy dtype of a torch dtype (bf16/fp8 as ml_dtypes types) or a numpy one."""
    if type(dtype).__module__.split(".")[0] == "torch":
        import torch  # lazy: torch is optional; a torch dtype was given, so it is loaded

        return torch_view(torch.empty(0, dtype=dtype)).dtype
    return np.dtype(dtype)


def _check_shape(shape: Sequence[int], what: str) -> tuple[int, ...]:
    dims = tuple(shape)
    if not dims:
        raise ValueError(f"{what} must be non-empty")
    for d in dims:
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"{what} must contain ints, got {dims!r}")
        if d <= 0:
            raise ValueError(f"{what} must be all positive, got {dims}")
    return dims


class _Buffer:
    """One device allocation: a numpy byte buffer; ``base`` is its address."""

    def __init__(self, nbytes: int) -> None:
        self.array = np.zeros(max(int(nbytes), 1), dtype=np.uint8)
        self.nbytes = int(nbytes)
        self.base = int(self.array.ctypes.data)

    def view(self, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
        count = int(np.prod(shape))
        return self.array[: count * dtype.itemsize].view(dtype).reshape(shape)


class DeviceTensor:
    """PyPTO's handle to a tensor resident on a worker: ``data_ptr``, ``shape``,
    ``dtype`` (a torch dtype, or a numpy one without torch) and the owning buffer.

    Passed where a tensor argument goes, it is read and written in place (numpy's
    array interface exposes its memory)."""

    __slots__ = ("buffer", "data_ptr", "dtype", "shape")

    def __init__(self, data_ptr: int, shape: Sequence[int], dtype: Any, *,
                 buffer: Any = None) -> None:
        if isinstance(data_ptr, bool) or not isinstance(data_ptr, int) or data_ptr <= 0:
            raise ValueError(f"DeviceTensor.data_ptr must be a positive int, got {data_ptr!r}")
        dims = _check_shape(shape, "DeviceTensor.shape")
        if buffer is not None and getattr(buffer, "base", None) != data_ptr:
            raise ValueError("DeviceTensor.buffer does not start at data_ptr")
        for name, value in (("data_ptr", data_ptr), ("shape", dims), ("dtype", dtype),
                            ("buffer", buffer)):
            object.__setattr__(self, name, value)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError(f"DeviceTensor is immutable (cannot set {name!r})")

    @property
    def nbytes(self) -> int:
        """Bytes the tensor covers."""
        return int(np.prod(self.shape)) * numpy_dtype(self.dtype).itemsize

    @property
    def __array_interface__(self) -> dict[str, Any]:
        if not isinstance(self.buffer, _Buffer):
            raise TypeError(
                "this DeviceTensor has no buffer of a worker (make it with "
                "ChipWorker.alloc_tensor), so it cannot be passed to a run"
            )
        return self.buffer.view(self.shape, numpy_dtype(self.dtype)).__array_interface__

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeviceTensor):
            return NotImplemented
        return (self.data_ptr, self.shape, self.dtype) == (other.data_ptr, other.shape,
                                                           other.dtype)

    def __hash__(self) -> int:
        return hash((self.data_ptr, self.shape))

    def __repr__(self) -> str:
        return f"DeviceTensor(data_ptr=0x{self.data_ptr:x}, shape={self.shape}, dtype={self.dtype})"


class StackedDeviceTensor:
    """PyPTO's ``[B, *tail]`` tensor whose B shards live on (possibly) different
    workers; ``x[i]`` (or ``x[i, ...]``) is shard i.  Only distributed programs take
    one, and those are not supported here: this class exists for the code that builds
    and inspects it."""

    def __init__(self, shards: Sequence[DeviceTensor], full_shape: Sequence[int],
                 worker_ids: Sequence[int]) -> None:
        shards, full, workers = tuple(shards), tuple(full_shape), tuple(worker_ids)
        if len(full) < 2:
            raise ValueError(f"StackedDeviceTensor.full_shape needs rank >= 2, got {full}")
        if len(shards) != full[0] or len(workers) != full[0]:
            raise ValueError(
                f"StackedDeviceTensor of shape {full} needs {full[0]} shards and worker ids, "
                f"got {len(shards)} and {len(workers)}"
            )
        if len(set(workers)) != len(workers):
            raise ValueError(f"StackedDeviceTensor.worker_ids must be distinct, got {workers}")
        for i, shard in enumerate(shards):
            if not isinstance(shard, DeviceTensor):
                raise TypeError(f"shard {i} must be a DeviceTensor, got {type(shard).__name__}")
            if shard.shape != full[1:] or shard.dtype != shards[0].dtype:
                raise ValueError(
                    f"shard {i} is {shard.shape} {shard.dtype}; every shard must be "
                    f"{full[1:]} {shards[0].dtype}"
                )
        self.shards, self.full_shape, self.worker_ids = shards, full, workers

    @property
    def shape(self) -> tuple[int, ...]:
        return self.full_shape

    @property
    def dtype(self) -> Any:
        return self.shards[0].dtype

    def __getitem__(self, index: Any) -> DeviceTensor:
        rank = index[0] if isinstance(index, tuple) and index else index
        if isinstance(rank, bool) or not isinstance(rank, int):
            raise TypeError(f"StackedDeviceTensor's leading index must be an int, got {rank!r}")
        if not 0 <= rank < len(self.shards):
            raise IndexError(f"shard index {rank} out of range [0, {len(self.shards)})")
        return self.shards[rank]

    def __repr__(self) -> str:
        return (f"StackedDeviceTensor(full_shape={self.full_shape}, "
                f"worker_ids={self.worker_ids}, dtype={self.dtype})")


class Worker(abc.ABC):
    """PyPTO's worker base: device memory, tensor lifetime and dispatch."""

    def __init__(self) -> None:
        self._owned_tensors: set[DeviceTensor] = set()

    @abc.abstractmethod
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int: ...

    @abc.abstractmethod
    def free(self, ptr: int, *, worker_id: int = 0) -> None: ...

    @abc.abstractmethod
    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int, *,
                worker_id: int = 0) -> None: ...

    @abc.abstractmethod
    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int, *,
                  worker_id: int = 0) -> None: ...

    @abc.abstractmethod
    def run(self, compiled: Any, *args: Any, config: Any = None) -> Any: ...

    @abc.abstractmethod
    def register(self, compiled: Any) -> RegistrationHandle: ...

    def alloc_tensor(self, shape: Sequence[int], dtype: Any, *, init: Any = None,
                     worker_id: int = 0) -> DeviceTensor:
        """A new tensor in this worker's memory (zeros, or ``init``'s data, which must
        have exactly this shape and dtype); freed by `free_tensor` or `close`."""
        dims = _check_shape(shape, "alloc_tensor shape")
        np_dtype = numpy_dtype(dtype)
        host = None
        if init is not None:
            host = np.ascontiguousarray(to_numpy(init))
            if tuple(host.shape) != dims or host.dtype != np_dtype:
                raise ValueError(
                    f"alloc_tensor: init is {tuple(host.shape)} {host.dtype}, the tensor is "
                    f"{dims} {np_dtype}"
                )
        nbytes = int(np.prod(dims)) * np_dtype.itemsize
        ptr = self.malloc(nbytes, worker_id=worker_id)
        try:
            if host is not None:
                self.copy_to(ptr, host.ctypes.data, nbytes, worker_id=worker_id)
            tensor = DeviceTensor(ptr, dims, dtype, buffer=self._buffer_for_ptr(ptr))
        except BaseException:
            self.free(ptr, worker_id=worker_id)
            raise
        self._owned_tensors.add(tensor)
        return tensor

    def free_tensor(self, t: DeviceTensor, *, worker_id: int = 0) -> None:
        """Free a tensor made by `alloc_tensor` of this worker."""
        if t not in self._owned_tensors:
            raise ValueError(f"{t!r} is not a live tensor of this worker")
        self._owned_tensors.discard(t)
        self.free(t.data_ptr, worker_id=worker_id)

    def _buffer_for_ptr(self, ptr: int) -> Any:
        return None

    def _close_owned_tensors(self) -> None:
        for t in list(self._owned_tensors):
            self.free_tensor(t)


_ENTERED: list[ChipWorker] = []  # workers inside a `with` block, innermost last


class ChipWorker(Worker):
    """PyPTO's single-chip worker, on the simulator (module docstring)."""

    def __init__(self, config: RunConfig | None = None, *, level: int = 2,
                 runtime: str = DEFAULT_RUNTIME, enable_sdma: bool = False,
                 auto_init: bool | None = None) -> None:
        if level != 2:
            raise ValueError(f"ChipWorker only supports level=2; got level={level}")
        super().__init__()
        self._config = config if config is not None else RunConfig()
        self._level, self._runtime, self._enable_sdma = level, runtime, bool(enable_sdma)
        self._buffers: dict[int, _Buffer] = {}
        self._dispatched: set[int] = set()  # ids of programs dispatched once (the "dlopen")
        self._registered: dict[int, Any] = {}
        self._handles: list[RegistrationHandle] = []
        self._ids = itertools.count(1)
        self._initialized = False
        if auto_init is None or auto_init:
            self.init()

    # lifecycle
    def init(self) -> None:
        """Make the worker usable (idempotent)."""
        self._initialized = True

    def close(self) -> None:
        """Free every tensor it still owns and close its handles (idempotent)."""
        if not self._initialized:
            return
        self._close_owned_tensors()
        for handle in self._handles:
            handle._closed = True
        self._handles.clear()
        self._registered.clear()
        self._buffers.clear()
        self._initialized = False

    def __enter__(self) -> ChipWorker:
        self.init()
        _ENTERED.append(self)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self in _ENTERED:
            _ENTERED.remove(self)
        self.close()

    @classmethod
    def current(cls, *args: Any, **kwargs: Any) -> ChipWorker | None:
        """The innermost worker entered with ``with`` (None outside one)."""
        return _ENTERED[-1] if _ENTERED else None

    def _require_ready(self, op: str) -> None:
        if not self._initialized:
            raise RuntimeError(f"ChipWorker.{op}() on a closed worker; call init() first")

    # properties
    level = property(lambda self: self._level)
    platform = property(lambda self: self._config.platform)
    device_id = property(lambda self: self._config.device_id)
    runtime = property(lambda self: self._runtime)
    initialized = property(lambda self: self._initialized)

    @property
    def aicpu_dlopen_count(self) -> int:
        """Distinct programs dispatched so far (each would be dlopened once)."""
        return len(self._dispatched)

    @property
    def host_dlopen_count(self) -> int:
        return len(self._dispatched)

    # memory
    def malloc(self, nbytes: int, *, worker_id: int = 0) -> int:
        self._require_ready("malloc")
        if isinstance(nbytes, bool) or not isinstance(nbytes, int) or nbytes <= 0:
            raise ValueError(f"malloc needs a positive byte count, got {nbytes!r}")
        buffer = _Buffer(nbytes)
        self._buffers[buffer.base] = buffer
        return buffer.base

    def free(self, ptr: int, *, worker_id: int = 0) -> None:
        self._require_ready("free")
        if self._buffers.pop(ptr, None) is None:
            raise ValueError(f"free(0x{ptr:x}): not an allocation of this worker")

    def _buffer_for_ptr(self, ptr: int) -> _Buffer:
        return self._buffers[ptr]

    def _device_range(self, ptr: int, nbytes: int, op: str) -> None:
        for base, buffer in self._buffers.items():
            if base <= ptr and ptr + nbytes <= base + buffer.nbytes:
                return
        raise ValueError(
            f"{op}: [0x{ptr:x}, +{nbytes}) is not inside an allocation of this worker"
        )

    def copy_to(self, dst_dev_ptr: int, src_host_ptr: int, nbytes: int, *,
                worker_id: int = 0) -> None:
        """Host -> device: ``nbytes`` from the host address into this worker's memory."""
        self._require_ready("copy_to")
        self._device_range(dst_dev_ptr, nbytes, "copy_to")
        ctypes.memmove(dst_dev_ptr, src_host_ptr, nbytes)

    def copy_from(self, dst_host_ptr: int, src_dev_ptr: int, nbytes: int, *,
                  worker_id: int = 0) -> None:
        """Device -> host: ``nbytes`` of this worker's memory to the host address."""
        self._require_ready("copy_from")
        self._device_range(src_dev_ptr, nbytes, "copy_from")
        ctypes.memmove(dst_host_ptr, src_dev_ptr, nbytes)

    # dispatch
    def run(self, compiled: Any, *args: Any, config: Any = None) -> Any:
        """Run ``compiled`` with ``args`` (torch/numpy tensors, this worker's
        DeviceTensors, scalars) on this worker's platform; PyPTO's call conventions."""
        self._require_ready("run")
        for arg in args:
            if isinstance(arg, DeviceTensor) and arg not in self._owned_tensors:
                raise ValueError(f"{arg!r} is not a live tensor of this worker")
        result = compiled(*args, config=config if config is not None else self._config)
        self._dispatched.add(id(compiled))
        return result

    def register(self, compiled: Any) -> RegistrationHandle:
        """A handle that runs ``compiled`` on this worker when called."""
        self._require_ready("register")
        handle = RegistrationHandle(self, compiled, next(self._ids))
        self._registered[handle.cid] = compiled
        self._handles.append(handle)
        return handle


class RegistrationHandle:
    """A program registered on a worker: call it with the program's arguments."""

    __test__ = False

    def __init__(self, worker: ChipWorker, compiled: Any, cid: int) -> None:
        self._worker, self._compiled, self._cid, self._closed = worker, compiled, cid, False

    cid = property(lambda self: self._cid)
    compiled = property(lambda self: self._compiled)
    closed = property(lambda self: self._closed)

    def __call__(self, *args: Any, config: Any = None) -> Any:
        if self._closed:
            raise RuntimeError("this registration handle is closed (unregistered, or its "
                               "worker was closed)")
        return self._worker.run(self._compiled, *args, config=config)

    def unregister(self) -> None:
        self._closed = True
        self._worker._registered.pop(self._cid, None)

    def __enter__(self) -> RegistrationHandle:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.unregister()
