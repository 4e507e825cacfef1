"""PyPTO's case semantics (its test harness, ``harness.core.harness``), on our runner.

`pytest_pypto.harness.cases` is the native flavour: numpy goldens, seeded random
inputs, per-dtype tolerances.  A PyPTO suite's cases expect PyPTO's contract
instead, and this module provides it (re-exported by `pytest_pypto.compat.harness`):

- ``DataType`` is an Enum whose ``.value`` is PyPTO's string (``"fp32"``) and whose
  ``.torch_dtype`` is PyPTO's table (unsigned ints travel as the signed torch type
  of the same width: same bits).
- A ``TensorSpec`` without ``init_value`` is zeros; a scalar fills; a torch tensor
  is used as is; ``torch.randn``/``rand``/``zeros``/``ones`` are called with
  ``(shape, dtype=...)``; any other callable is called with no arguments.  torch's
  global generator is seeded with the test's seed while inputs are built, so the
  data is the same on every run and worker (and restored afterwards).
- ``compute_expected(tensors, params)`` receives **torch tensors** and writes the
  outputs in place, as PyPTO's golden does.
- Every case has a mutable ``self.config`` (PyPTO's default ``RunConfig()``:
  rtol = atol = 1e-5) whose tolerances the runner uses; a NaN in a golden is a
  don't-care, as in PyPTO's ``validate_golden``.
- ``get_platform()`` (the ``platform=`` constructor argument) picks the cell a
  case runs on; the other selections (strategy, memory planner, L0C double
  buffering) are accepted and recorded in the artifact, with no effect here.

torch is an optional dependency (the ``torch`` extra): a case of this flavour
skips, naming the extra, when torch is not installed.
"""

from __future__ import annotations

import abc
import enum
import sys
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest

from pytest_pypto import arch
from pytest_pypto.arch import BackendType, parse_platform
from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.selections import OptimizationStrategy
from pytest_pypto.harness import cases as _native
from pytest_pypto.harness.tensors import torch_to_numpy, torch_view
from pytest_pypto.ir.dtypes import dtype_by_name

__all__ = [
    "ALL_PLATFORM_IDS",
    "ONBOARD_PLATFORMS",  # noqa: F822  (module __getattr__)
    "ONBOARD_PLATFORM_IDS",
    "PLATFORMS",  # noqa: F822
    "PTOTestCase",
    "PYPTO_TOLERANCE",
    "SIM_PLATFORMS",  # noqa: F822
    "SIM_PLATFORM_IDS",
    "DataType",
    "ScalarSpec",
    "TensorSpec",
    "platform_param_list",
    "platform_to_backend",
    "set_requested_cells",
]

# PyPTO's RunConfig() default tolerance, used by a case that does not set its own.
PYPTO_TOLERANCE = 1e-5
TORCH_EXTRA = "pip install 'pytest-pypto[torch]'"

# (the module's SIM_PLATFORMS / ONBOARD_PLATFORMS are PyPTO's pytest.param lists, below)
SIM_PLATFORM_IDS: tuple[str, ...] = arch.SIM_PLATFORMS
ONBOARD_PLATFORM_IDS: tuple[str, ...] = arch.ONBOARD_PLATFORMS
ALL_PLATFORM_IDS: tuple[str, ...] = (*SIM_PLATFORM_IDS, *ONBOARD_PLATFORM_IDS)

# The cells the running session requested (the plugin sets them at configure time);
# None outside pytest: every platform.
_requested: tuple[str, ...] | None = None
# The session's cells -> parameter id, where it is not the cell (emulated onboard cells).
_ids: dict[str, str] = {}


def set_requested_cells(cells: Sequence[str] | None, ids: dict[str, str] | None = None) -> None:
    """Record the session's cells, which the ``*PLATFORMS`` lists are made of, and the
    ids of those whose id is not their name (``a5-emulated``)."""
    global _requested
    _requested = tuple(cells) if cells is not None else None
    _ids.clear()
    _ids.update(ids or {})


def platform_param_list(family: Sequence[str]) -> list[Any]:
    """``pytest.param`` per requested cell of ``family``, so a test parametrized over it
    runs once per requested cell.  When the run requested none of them, every
    platform of the family is listed with a skip mark that says how to request it."""
    wanted = [p for p in family if _requested is None or p in _requested]
    if wanted:
        return [pytest.param(p, id=_ids.get(p, p)) for p in wanted]
    return [
        pytest.param(
            p,
            id=p,
            marks=pytest.mark.skip(
                reason=f"cell {p} not requested (select it with --pypto-arch and --pypto-mode)"
            ),
        )
        for p in family
    ]


def __getattr__(name: str) -> Any:
    """``PLATFORMS`` / ``SIM_PLATFORMS`` / ``ONBOARD_PLATFORMS``, made when first read
    (a test module imports them during collection, after the cells are known)."""
    families = {
        "PLATFORMS": ALL_PLATFORM_IDS,
        "SIM_PLATFORMS": SIM_PLATFORM_IDS,
        "ONBOARD_PLATFORMS": ONBOARD_PLATFORM_IDS,
    }
    if name in families:
        return platform_param_list(families[name])
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def platform_to_backend(platform: str) -> BackendType:
    """The BackendType of a platform string (ValueError names the valid ones)."""
    try:
        return parse_platform(platform)[0]
    except (ValueError, TypeError):
        raise ValueError(
            f"Unknown platform {platform!r}. Expected one of {ALL_PLATFORM_IDS}."
        ) from None


class DataType(enum.Enum):
    """PyPTO's harness dtypes: ``.value`` is PyPTO's string, ``.dsl`` our ``pl.`` dtype."""

    BF16 = "bf16"
    FP32 = "fp32"
    FP16 = "fp16"
    FP8E4M3FN = "fp8e4m3fn"
    FP8E5M2 = "fp8e5m2"
    FP8E8M0 = "fp8e8m0"
    FP4 = "fp4"
    INT32 = "int32"
    UINT32 = "uint32"
    INT16 = "int16"
    UINT16 = "uint16"
    INT8 = "int8"
    UINT8 = "uint8"
    INT64 = "int64"
    UINT64 = "uint64"
    BOOL = "bool"

    @property
    def dsl(self) -> Any:
        """The DSL dtype (``pl.FP32``) of this member."""
        return dtype_by_name(self.name)

    @property
    def torch_dtype(self) -> Any:
        """PyPTO's torch dtype of this member (ValueError when torch lacks it)."""
        import torch  # lazy: torch is optional (the torch extra)

        name = _TORCH_NAMES[self]
        dtype = getattr(torch, name, None)
        if not isinstance(dtype, torch.dtype):
            raise ValueError(f"PyTorch does not provide the dtype torch.{name}")
        return dtype


# PyPTO's DataType -> torch table; unsigned types wider than a byte keep their bits in
# the signed type of the same width (torch's unsigned support is partial).
_TORCH_NAMES = {
    DataType.BF16: "bfloat16",
    DataType.FP32: "float32",
    DataType.FP16: "float16",
    DataType.FP8E4M3FN: "float8_e4m3fn",
    DataType.FP8E5M2: "float8_e5m2",
    DataType.FP8E8M0: "float8_e8m0fnu",
    DataType.FP4: "float4_e2m1fn_x2",
    DataType.INT32: "int32",
    DataType.UINT32: "int32",
    DataType.INT16: "int16",
    DataType.UINT16: "int16",
    DataType.INT8: "int8",
    DataType.UINT8: "uint8",
    DataType.INT64: "int64",
    DataType.UINT64: "int64",
    DataType.BOOL: "bool",
}

_TORCH_FACTORIES = ("randn", "rand", "zeros", "ones")


class TensorSpec(_native.TensorSpec):
    """PyPTO's ``TensorSpec(name, shape, dtype, init_value=None, is_output=False)``.

    ``dtype`` may be a `DataType` member, a DSL dtype, a torch or numpy dtype (the
    native spec resolves each).  Inputs are built with PyPTO's rules (the module
    docstring), then held as numpy arrays of the DSL dtype.
    """

    def create(self, rng: Any) -> Any:
        init = self.init_value
        if init is None:
            return np.zeros(self.shape, self.np_dtype)
        if isinstance(init, (bool, int, float)):
            return np.full(self.shape, init, self.np_dtype)
        import torch  # lazy: torch is optional (the torch extra)

        if not isinstance(init, torch.Tensor) and callable(init):
            if getattr(init, "__name__", None) in _TORCH_FACTORIES and (
                getattr(torch, init.__name__, None) is init
            ):
                made = init(list(self.shape), dtype=torch_dtype_of(self))
                # A tensor only we hold: the array may share its memory (no copy).
                return from_torch(made, self.np_dtype, self.name, self.shape, fresh=True)
            init = init()
            # A made tensor nobody else holds (only our name refers to it, and it is no
            # view of another tensor) is shared too: a case's own init function drawing
            # weights is the common large input.  An output's stays a copy.
            if isinstance(init, torch.Tensor) and not self.is_output \
                    and init._base is None and sys.getrefcount(init) <= 2:
                return from_torch(init, self.np_dtype, self.name, self.shape, fresh=True)
        if not isinstance(init, torch.Tensor):
            init = torch.as_tensor(init)
        return from_torch(init, self.np_dtype, self.name, self.shape)


ScalarSpec = _native.ScalarSpec


def torch_dtype_of(spec: _native.TensorSpec) -> Any:
    """The torch dtype a PyPTO golden sees for ``spec`` (PyPTO's table)."""
    member = DataType.__members__.get(spec.dtype.name)
    if member is None:
        raise TypeError(f"TensorSpec {spec.name!r}: {spec.dtype!r} has no PyPTO torch dtype")
    return member.torch_dtype


_BITS = {1: "uint8", 2: "int16", 4: "int32", 8: "int64"}


def to_torch(array: Any, spec: _native.TensorSpec, share: bool = False) -> Any:
    """A torch tensor of the golden's dtype holding ``array``'s bits (same-width types:
    bf16, fp8, unsigned as signed) or, where the widths differ, its values."""
    import torch  # lazy: torch is optional (the torch extra)

    want = torch_dtype_of(spec)
    array = np.ascontiguousarray(array)
    if array.dtype == np.bool_ or want is torch.bool:
        return torch.from_numpy(array.astype(np.bool_))
    width = torch.empty((), dtype=want).element_size()
    if array.dtype.itemsize == width:
        bits = array.view(_BITS[width])
        return torch.from_numpy(bits if share and bits.flags.writeable else bits.copy()).view(want)
    return torch.from_numpy(array.astype(np.float64)).to(want)


def from_torch(
    tensor: Any, np_dtype: Any, name: str, shape: Sequence[int], fresh: bool = False
) -> Any:
    """``tensor`` as a numpy array of ``np_dtype`` broadcast to ``shape``: bit for bit
    between integers of one width (PyPTO's unsigned-as-signed), by value otherwise.

    ``fresh``: nobody else holds ``tensor``, so an array of the right dtype and shape
    shares its memory instead of copying it (a large input is made once)."""
    array = torch_view(tensor.detach().cpu().contiguous()) if fresh else torch_to_numpy(tensor)
    if array.dtype != np_dtype:
        same_ints = array.dtype.kind in "iu" and np_dtype.kind in "iu"
        if same_ints and array.dtype.itemsize == np_dtype.itemsize:
            array = array.view(np_dtype)
        else:
            array = array.astype(np_dtype)
    if array.shape == tuple(shape):  # already private: a copy, or a tensor only we hold
        return array
    try:
        return np.array(np.broadcast_to(array, tuple(shape)), dtype=np_dtype)
    except ValueError:
        raise ValueError(
            f"TensorSpec {name!r}: init_value has shape {tuple(array.shape)}, which does "
            f"not fit the tensor's shape {tuple(shape)}"
        ) from None


class PTOTestCase(_native.PTOTestCase, abc.ABC):
    """PyPTO's ``PTOTestCase``: its constructor, hooks and golden contract.

    Subclasses implement ``get_name``, ``define_tensors``, ``get_program`` and
    ``compute_expected(tensors, params=None)`` (torch tensors, outputs in place); as
    in PyPTO (an ABC), a subclass missing one cannot be instantiated.
    """

    @abc.abstractmethod
    def get_name(self) -> str: ...

    @abc.abstractmethod
    def define_tensors(self) -> list[Any]: ...

    @abc.abstractmethod
    def get_program(self) -> Any: ...

    @abc.abstractmethod
    def compute_expected(self, tensors: dict[str, Any], params: dict[str, Any] | None = None) -> None: ...

    equal_nan = True  # PyPTO: a NaN in the golden is a don't-care
    # PyPTO allocates every output from its TensorSpec (zeros or init_value) and the
    # device buffer starts with that data: elements a kernel leaves alone keep it.
    outputs_in = True

    def __init__(
        self,
        config: RunConfig | None = None,
        *,
        platform: str | None = None,
        backend_type: BackendType | None = None,
        strategy: Any = None,
        memory_planner: Any = None,
        enable_pypto_l0c_double_buffer: bool | None = None,
    ) -> None:
        super().__init__(config)
        self.config = config or RunConfig(rtol=PYPTO_TOLERANCE, atol=PYPTO_TOLERANCE)
        if platform is not None:
            platform_to_backend(platform)  # an unknown platform fails here, as in PyPTO
        self._override_platform = platform
        self._override_backend = backend_type
        self._override_strategy = strategy
        self._override_memory_planner = memory_planner
        self._override_enable_pypto_l0c_double_buffer = enable_pypto_l0c_double_buffer
        self._tensor_specs: list[Any] | None = None
        self._scalar_specs: list[Any] | None = None

    def get_strategy(self) -> Any:
        return self._override_strategy or OptimizationStrategy.Default

    def get_memory_planner(self) -> Any:
        return self._override_memory_planner

    def get_enable_pypto_l0c_double_buffer(self) -> bool | None:
        return self._override_enable_pypto_l0c_double_buffer

    def get_platform(self) -> str | None:
        return self._override_platform

    def get_backend_type(self) -> BackendType:
        if self._override_platform is not None:
            return platform_to_backend(self._override_platform)
        return self._override_backend or BackendType.Ascend910B

    @property
    def tensor_specs(self) -> list[Any]:
        if self._tensor_specs is None:
            self._tensor_specs = self.define_tensors()
        return self._tensor_specs

    @property
    def scalar_specs(self) -> list[Any]:
        if self._scalar_specs is None:
            self._scalar_specs = self.define_scalars()
        return self._scalar_specs

    def _harness_inputs(self, rng: Any, seed: int | None) -> Any:
        """PyPTO's inputs, with torch's global generator seeded by the test's seed
        for the duration (and restored), so torch.randn data is reproducible."""
        torch = _require_torch()
        self._input_draw = (rng, seed)  # a golden that writes an input redraws it
        with torch.random.fork_rng(devices=[]):
            torch.manual_seed(0 if seed is None else seed % (1 << 63))
            return _native.build_inputs(self, rng)

    def _harness_golden(self, specs: Any, tensors: Any, scalars: Any) -> Any:
        """``compute_expected`` on torch tensors of the inputs; outputs back as numpy.

        Outputs are copies; inputs share the arrays' memory (a large input is not copied
        again).  A golden that writes an input in place (seen by torch's version counter)
        gets the input redrawn for the run, which must see what PyPTO's device sees: the
        inputs as drawn, not as the golden left them."""
        _require_torch()
        work = {}
        shared = {}
        by_name = {s.name: s for s in specs if isinstance(s, _native.TensorSpec)}
        for name, array in tensors.items():
            spec = by_name[name]
            work[name] = to_torch(array, spec, share=not spec.is_output)
            if not spec.is_output:
                shared[name] = work[name]._version
        self.compute_expected(work, dict(scalars) if scalars else None)
        written = [name for name, version in shared.items() if work[name]._version != version]
        if written:
            rng, seed = getattr(self, "_input_draw", (None, None))
            redrawn = self._harness_inputs(rng, seed)[1]
            for name in written:
                tensors[name] = redrawn[name]
        return {
            s.name: from_torch(work[s.name], s.np_dtype, s.name, s.shape)
            for s in specs
            if isinstance(s, _native.TensorSpec) and s.is_output
        }


def _require_torch() -> Any:
    """torch, or a skip naming the extra that installs it."""
    try:
        import torch  # lazy: torch is optional (the torch extra)
    except ImportError:
        pytest.skip(f"PyPTO-style cases need torch for their goldens: {TORCH_EXTRA}")
    return torch
