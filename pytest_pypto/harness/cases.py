"""PTOTestCase and friends: PyPTO's case-style tests on this toolchain.

A case says which tensors a kernel takes (`TensorSpec`, optional `ScalarSpec`), which
program to compile (`get_program`) and how to compute the golden in numpy
(`compute_expected`, in place).  The runner builds inputs from the specs with the
test's seeded generator, computes the golden from pristine copies, dispatches, and
compares every output.  Outputs are the specs with ``is_output=True``, never guessed
from names.

torch is never required (and not imported unless handed in).  When it is installed:

- ``init_value`` may be a torch tensor or a torch factory such as ``torch.randn``
  (called as ``fn(shape)``; converted to numpy here).  torch's generator is not the
  test's seeded one, so such inputs do not follow ``--pypto-seed``; prefer a
  callable taking ``rng``.
- ``compute_expected`` always receives **numpy arrays**, even with torch installed.
  Assigning a torch tensor into them works (``tensors["c"][:] = t`` goes through
  ``__array__``), and an output replaced by a torch tensor is converted back; but
  a PyPTO golden that calls torch functions on its inputs
  (``torch.softmax(tensors["a"], dim=1)``, ``tensors["a"].float()``) fails with
  torch's ``TypeError``.  Port such goldens to numpy (or wrap inputs with
  ``torch.from_numpy`` inside the golden); that is the one change a migrated case
  may need.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_pypto.harness.tensors import is_torch, to_numpy
from pytest_pypto.ir import dtypes as _dtypes

__all__ = [
    "DataType",
    "PTOTestCase",
    "RunResult",
    "ScalarSpec",
    "TensorSpec",
    "build_inputs",
    "expected_outputs",
    "resolve_dtype",
]


class DataType:
    """PyPTO's ``DataType.FP32`` spellings; each value is the DSL's dtype (``pl.FP32``).

    ``DataType("FP32")`` looks a dtype up by name.
    """

    def __new__(cls, name: str) -> Any:  # type: ignore[misc]
        return _dtypes.dtype_by_name(name)


for _name, _dtype in _dtypes.DTYPES.items():
    setattr(DataType, _name, _dtype)

_BY_STORAGE = {}
for _dtype in _dtypes.ALL_DTYPES:
    if _dtype.storage is not None:
        _BY_STORAGE.setdefault(_dtype.storage, _dtype)
_BY_STORAGE["float64"] = None  # a host golden type, not a kernel type


def resolve_dtype(dtype: Any) -> _dtypes.DataType:
    """A DSL dtype from ``pl.FP32`` / ``DataType.FP32``, a name ('FP32', 'float32'),
    a numpy dtype or a torch dtype."""
    if isinstance(dtype, _dtypes.DataType):
        return dtype
    if isinstance(getattr(dtype, "dsl", None), _dtypes.DataType):  # PyPTO's DataType enum
        return dtype.dsl
    if isinstance(dtype, str) and dtype.upper() in _dtypes.DTYPES:
        return _dtypes.DTYPES[dtype.upper()]
    candidate = str(dtype).removeprefix("torch.") if is_torch(dtype) else dtype
    if isinstance(candidate, str) and candidate in _BY_STORAGE:  # also bf16/fp8 names
        storage = candidate
    else:
        try:
            storage = np.dtype(candidate).name
        except TypeError:
            storage = None
    found = _BY_STORAGE.get(storage) if storage else None
    if found is None:
        raise TypeError(
            f"unsupported tensor dtype {dtype!r}; use a DSL dtype such as DataType.FP32 "
            f"(valid: {', '.join(_dtypes.DTYPES)})"
        )
    return found


def _call_init(fn: Callable[..., Any], shape: tuple[int, ...], rng: np.random.Generator) -> Any:
    """Call an ``init_value`` callable: ``fn()``, ``fn(shape)`` or ``fn(shape, rng)``.

    A parameter named ``rng`` is passed the generator by keyword; callables whose
    signature is unknown (C functions such as ``torch.randn``) get ``fn(shape)``.
    """
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return fn(shape)
    if any(p.name == "rng" for p in params):
        others = [p for p in params if p.name != "rng" and p.kind is not p.VAR_KEYWORD]
        return fn(shape, rng=rng) if others else fn(rng=rng)
    positional = [
        p
        for p in params
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty
    ]
    if len(positional) >= 2:
        return fn(shape, rng)
    if positional or any(p.kind is p.VAR_POSITIONAL for p in params):
        return fn(shape)
    return fn()


@dataclass
class TensorSpec:
    """One tensor argument of the kernel, in the entry's parameter order.

    ``init_value``: None (inputs: seeded random data; outputs: zeros), a scalar
    (filled), an array or torch tensor (copied; broadcast to ``shape``), or a callable
    (``fn()``, ``fn(shape)``, ``fn(shape, rng)`` or ``fn(shape, rng=...)``; ``rng`` is
    the test's seeded ``numpy.random.Generator``).  ``is_output`` marks the tensors
    compared after the run (an output with an ``init_value`` is an in-out tensor).
    """

    name: str
    shape: Sequence[int]
    dtype: Any
    init_value: Any = None
    is_output: bool = False

    def __post_init__(self) -> None:
        self.shape = tuple(int(d) for d in self.shape)
        self.dtype = resolve_dtype(self.dtype)

    @property
    def np_dtype(self) -> np.dtype:
        return self.dtype.np

    def create(self, rng: np.random.Generator) -> np.ndarray:
        """A fresh array of this tensor's initial value."""
        dt = self.np_dtype
        init = self.init_value
        if init is None:
            return np.zeros(self.shape, dt) if self.is_output else _random(self, rng)
        if callable(init) and not is_torch(init) and not isinstance(init, np.ndarray):
            init = _call_init(init, self.shape, rng)
        value = to_numpy(init, dt)
        try:
            return np.array(np.broadcast_to(value, self.shape), dtype=dt)
        except ValueError:
            raise ValueError(
                f"TensorSpec {self.name!r}: init_value has shape {value.shape}, "
                f"which does not fit the tensor's shape {self.shape}"
            ) from None


def _random(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    """Default input data: standard normal floats; small integers (exact in any kernel)."""
    dt, kind = spec.np_dtype, spec.dtype.kind
    if kind == "float":
        return rng.standard_normal(spec.shape).astype(dt)
    if kind == "bool":
        return rng.integers(0, 2, spec.shape).astype(dt)
    low = 0 if kind == "uint" else -8
    return rng.integers(low, 8, spec.shape).astype(dt)


# PyPTO's ``ScalarSpec(name, value, ctype)`` ctype names -> DSL dtype names.
_CTYPES = {
    "int64": "INT64",
    "int32": "INT32",
    "uint64": "UINT64",
    "uint32": "UINT32",
    "float": "FP32",
}


@dataclass
class ScalarSpec:
    """A scalar argument of the kernel, in the entry's parameter order (passed as
    ``params[name]`` to ``compute_expected``).

    ``ScalarSpec(name, dtype, value)``; PyPTO's spelling ``ScalarSpec(name, value,
    ctype="int64")`` (ctype one of int64, int32, uint64, uint32, float) is accepted too.
    """

    name: str
    dtype: Any = None
    value: Any = None
    ctype: str | None = None

    def __post_init__(self) -> None:
        if isinstance(self.value, str) and self.value in _CTYPES and self.ctype is None:
            self.dtype, self.value, self.ctype = None, self.dtype, self.value  # PyPTO order
        if self.dtype is not None and not _is_dtype(self.dtype) and self.value is None:
            self.dtype, self.value = None, self.dtype  # PyPTO: ScalarSpec(name, value)
        if self.dtype is None:
            ctype = self.ctype or "int64"
            if ctype not in _CTYPES:
                raise ValueError(
                    f"ScalarSpec {self.name!r}: unsupported ctype {ctype!r}; "
                    f"valid: {', '.join(_CTYPES)}"
                )
            self.dtype = _CTYPES[ctype]
        if self.value is None:
            raise ValueError(f"ScalarSpec {self.name!r} has no value")
        self.dtype = resolve_dtype(self.dtype)


def _is_dtype(value: Any) -> bool:
    try:
        resolve_dtype(value)
    except TypeError:
        return False
    return True


@dataclass(repr=False)
class RunResult:
    """What running one case produced (``pypto_runner.run(case)``; ``check`` raises instead).

    ``str()`` reads like PyPTO's (``PASS: name (0.01s)`` / ``FAIL: name - error``);
    ``repr()`` stays one line so an ``assert result.passed`` explanation does not
    repeat the whole report.
    """

    passed: bool
    test_name: str
    error: str | None = None
    execution_time: float | None = None
    failure_class: str | None = None
    platform: str | None = None
    seed: int | None = None
    inputs: dict[str, np.ndarray] = field(default_factory=dict)
    expected: dict[str, np.ndarray] = field(default_factory=dict)
    outputs: dict[str, np.ndarray] = field(default_factory=dict)

    def __str__(self) -> str:
        took = f" ({self.execution_time:.2f}s)" if self.execution_time else ""
        if self.passed:
            return f"PASS: {self.test_name}{took}"
        return f"FAIL: {self.test_name}" + (f" - {self.error}" if self.error else "") + took

    def __repr__(self) -> str:
        status = "passed" if self.passed else f"failed: {self.failure_class or 'error'}"
        where = f" on {self.platform}" if self.platform else ""
        return f"<RunResult {self.test_name} {status}{where}>"


class PTOTestCase:
    """Base class of a PyPTO-style case; subclasses override the four methods.

    Class attributes ``rtol``/``atol`` (both or neither) override the per-dtype
    tolerances; ``equal_nan = True`` makes NaN in a golden a don't-care;
    ``outputs_in = True`` starts pure Out tensors with their built values (init_value
    or default) instead of poison.
    """

    __test__ = False
    rtol: float | None = None
    atol: float | None = None
    equal_nan: bool = False
    outputs_in: bool = False

    def __init__(self, config: Any = None, **kwargs: Any) -> None:
        # PyPTO cases pass a RunConfig and/or platform=/backend_type=; the cell of the
        # test decides here, so these are kept only for the case's own use.
        self.config = config
        self.options = kwargs

    def get_name(self) -> str:
        return type(self).__name__

    def define_tensors(self) -> list[TensorSpec | ScalarSpec]:
        raise NotImplementedError(f"{type(self).__name__} must define define_tensors()")

    def get_program(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__} must define get_program()")

    def define_scalars(self) -> list[ScalarSpec]:
        """PyPTO's scalar arguments, passed after every tensor (default: none).
        A `ScalarSpec` may also sit among ``define_tensors()`` at its parameter position."""
        return []

    def compute_expected(self, tensors: dict[str, Any], params: dict[str, Any] | None = None):
        raise NotImplementedError(f"{type(self).__name__} must define compute_expected()")

    # The runner's two steps that a flavour may change (compat/cases.py does).
    def _harness_inputs(
        self, rng: np.random.Generator, seed: int | None
    ) -> tuple[list[TensorSpec | ScalarSpec], dict[str, np.ndarray], dict[str, Any]]:
        """(specs, tensors, scalars) for one run: `build_inputs` from ``rng``."""
        return build_inputs(self, rng)

    def _harness_golden(
        self,
        specs: Sequence[TensorSpec | ScalarSpec],
        tensors: dict[str, np.ndarray],
        scalars: dict[str, Any],
    ) -> dict[str, np.ndarray]:
        """The goldens of the outputs: `expected_outputs` (numpy arrays)."""
        return expected_outputs(self, specs, tensors, scalars)


def _specs(case: PTOTestCase) -> list[TensorSpec | ScalarSpec]:
    specs = [*case.define_tensors(), *case.define_scalars()]
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"{case.get_name()}: duplicate tensor name(s) {', '.join(dup)}")
    if not any(isinstance(s, TensorSpec) and s.is_output for s in specs):
        raise ValueError(
            f"{case.get_name()}: no TensorSpec has is_output=True, so nothing would be checked"
        )
    return specs


def build_inputs(
    case: PTOTestCase, rng: np.random.Generator
) -> tuple[list[TensorSpec | ScalarSpec], dict[str, np.ndarray], dict[str, Any]]:
    """(specs, tensors by name, scalars by name), drawn in declaration order from ``rng``."""
    specs = _specs(case)
    tensors: dict[str, np.ndarray] = {}
    scalars: dict[str, Any] = {}
    for spec in specs:
        if isinstance(spec, TensorSpec):
            tensors[spec.name] = spec.create(rng)
        else:
            scalars[spec.name] = spec.value
    return specs, tensors, scalars


def expected_outputs(
    case: PTOTestCase,
    specs: Sequence[TensorSpec | ScalarSpec],
    tensors: dict[str, np.ndarray],
    scalars: dict[str, Any],
) -> dict[str, np.ndarray]:
    """Run ``compute_expected`` on copies of ``tensors``; the goldens of the outputs."""
    work = {name: array.copy() for name, array in tensors.items()}
    case.compute_expected(work, dict(scalars) if scalars else None)
    out = {}
    for spec in specs:
        if isinstance(spec, TensorSpec) and spec.is_output:
            out[spec.name] = to_numpy(work[spec.name])
    return out
