# SPDX-License-Identifier: Apache-2.0
"""`@pl.jit` and `@pl.jit.incore` / `.inline` / `.opaque` (docs/design/language.md §6; `@pl.inline`
is in
language/functions.py).

A `@pl.jit` function is an orchestration body written without shapes: each call
specialises it to its arguments' shapes and dtypes, parses and compiles it once per
specialisation, and runs it (PyPTO's JIT):

* **Parameters.** A bare `pl.Tensor` takes the argument's shape and dtype; a full
  `pl.Tensor[[...], dtype]` is checked against the argument, its `pl.dynamic` dims
  staying dynamic (as does a dim named by ``x.bind_dynamic(i, M)``); `pl.Out[...]` /
  `pl.InOut[...]` give directions.  Scalars (`int`/`float`/`bool`, annotated
  `pl.Scalar[dtype]`, a bare dtype, or nothing) are folded into the body as
  constants and stay parameters.  ``x.shape``, ``x.shape[i]`` and ``x.dtype`` of a
  parameter read as constants.
* **Dependencies.** Functions the body calls by name (``sub(a, c)``) that are
  decorated `@pl.jit.incore` (an InCore kernel: one task per call, one program
  function per argument signature), `@pl.jit.inline` (spliced) or `@pl.jit.opaque`
  (spliced: loops and `pl.at` regions around kernels) join the program as the
  parser meets them; their bare `pl.Tensor` parameters take the argument's type.
* **Cache.** ``kernel._cache`` maps a key (source hash, platform, strategy, each
  tensor's name, shape with dynamic dims as None and dtype, each scalar's value) to
  its `CompiledProgram`; a hit neither parses nor compiles.
* **Calls.** ``kernel(*arrays, config=RunConfig(...))`` with torch tensors or numpy
  arrays runs in place and returns None, as PyPTO's do; ``kernel.compile(...)``
  stops after compiling and returns the cached `CompiledProgram` (its ``output_dir``
  runs again with ``execute_compiled``); ``kernel.lower(...)`` stops after the passes
  and returns the specialised IR `Program`.

Running reaches the compiler and the simulator through `pytest_pypto.ir.launch`
(the package face installs the default launcher).  `@pl.jit.host` is a multi-chip host
orchestrator (language/distributed_host.py); `@pl.jit.extern` stays
Tier 3: decorating works; calling one, from Python or from a kernel body, raises
`UnsupportedFeatureError` at the call.
"""

from __future__ import annotations

import ast
import functools
import hashlib
import inspect
from collections.abc import Callable
from typing import Any, NamedTuple

from pytest_pypto._version import __version__
from pytest_pypto.ir.dtypes import ALL_DTYPES, BOOL, FP32, INDEX, DataType
from pytest_pypto.ir.errors import UnsupportedFeatureError
from pytest_pypto.ir.launch import launcher
from pytest_pypto.ir.nodes import Param
from pytest_pypto.ir.types import Direction, DynVar, ScalarType, TensorType
from pytest_pypto.language.distributed_host import jit_host
from pytest_pypto.language.parser import program_from_template
from pytest_pypto.language.surface import AnnotationForm, Tensor
from pytest_pypto.language.templates import (
    Template,
    enclosing_locals,
    function_template,
    namespace_of,
)
from pytest_pypto.language.unsupported import JitMarker
from pytest_pypto.language.unsupported import _definition_span as span

__all__ = ["JITFunction", "jit"]

# Decorator kinds -> the FunctionType the body is parsed as.
_KINDS = {"orchestration": "Orchestration", "incore": "InCore", "inline": "Inline",
          "opaque": "Opaque"}


class TensorCacheInfo(NamedTuple):
    """One tensor argument in a cache key: dynamic dims are None."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str


class ScalarCacheInfo(NamedTuple):
    """One scalar argument in a cache key: its value is compiled in."""

    name: str
    value: int | float | bool


class JITFunction:
    """A function decorated by `@pl.jit` (an entry) or `@pl.jit.<kind>` (a dependency)."""

    def __init__(self, fn: Any, func_type: str = "orchestration", *, level: Any = None,
                 auto_scope: bool = True) -> None:
        functools.update_wrapper(self, fn)
        self._func = fn
        self._enclosing = enclosing_locals(fn)  # a kernel factory's parameters
        self._func_type = func_type
        self._level = level
        self._auto_scope = auto_scope
        self._cache: dict[Any, Any] = {}  # PyPTO's L1 cache: key -> CompiledProgram
        self._template: Template | None = None
        self._source_hash: str | None = None

    @property
    def _what(self) -> str:
        return "@pl.jit" if self._func_type == "orchestration" else f"@pl.jit.{self._func_type}"

    def pl_template(self) -> Template:
        """The body as the parser reads it (a dependency called from another jit body)."""
        if self._template is None:
            kind = _KINDS[self._func_type]
            if kind == "Orchestration":
                kind = "Opaque"  # a jit entry called from another one is spliced
            self._template = function_template(self._func, kind, self._what, self._enclosing)
        return self._template

    def __repr__(self) -> str:
        return f"<{self._what} function {self.__name__!r}>"

    # --------------------------------------------------------------- calls
    def __call__(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """Specialise, compile (or take from ``_cache``) and run; None (in place)."""
        __tracebackhide__ = True
        compiled, ordered, run_config = self._resolve(args, kwargs, config)
        compiled(*ordered, config=run_config)
        return None

    def compile(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """The `CompiledProgram` of these arguments' specialisation (cached, not run)."""
        __tracebackhide__ = True
        return self._resolve(args, kwargs, config)[0]

    def lower(self, *args: Any, config: Any = None, **kwargs: Any) -> Any:
        """The IR `Program` of these arguments' specialisation after every pass of
        ``config``'s platform (default: the session's first cell): no codegen, no run,
        nothing written or cached."""
        __tracebackhide__ = True
        self._check_callable()
        launch = launcher()
        return launch.lower(self._program(self._bind(args, kwargs)), launch.config(config))

    def specialize(self, *args: Any, **kwargs: Any) -> Any:
        """The parsed IR `Program` of these arguments' specialisation (not compiled)."""
        __tracebackhide__ = True
        spec = self._bind(args, kwargs)
        return self._program(spec)

    def _resolve(self, args: tuple[Any, ...], kwargs: dict[str, Any], config: Any) -> Any:
        self._check_callable()
        launch = launcher()
        run_config = launch.config(config)
        spec = self._bind(args, kwargs)
        key = self._key(spec, run_config)
        compiled = self._cache.get(key)
        if compiled is None:
            compiled = launch.compile(self._program(spec), run_config)
            self._cache[key] = compiled
        return compiled, spec.ordered, run_config

    def _check_callable(self) -> None:
        if self._func_type != "orchestration":
            raise TypeError(
                f"{self._what} function '{self.__name__}' is a dependency: call it from the "
                "body of a @pl.jit function, which compiles and runs it"
            )
        if not self._auto_scope:
            raise UnsupportedFeatureError(
                f"@pl.jit(auto_scope=False) is not supported by the bundled toolchain "
                f"(tier 3: explicit task dependencies): the @pl.jit function '{self.__name__}' "
                "cannot be called",
                _definition_span(self._func),
            )

    # -------------------------------------------------------- specialising
    def _bind(self, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _Specialization:
        name = self.__name__
        sig = inspect.signature(self._func)
        try:
            bound = sig.bind(*args, **kwargs)
        except TypeError as exc:
            raise TypeError(f"@pl.jit function '{name}': {exc}") from None
        bound.apply_defaults()
        annotations = _annotations(self._func, self._enclosing)
        dynamic = _bind_dynamic_dims(self._template_of_entry())
        params: list[Param] = []
        constants: dict[str, Any] = {}
        tensors: list[TensorCacheInfo] = []
        scalars: list[ScalarCacheInfo] = []
        for pname, value in bound.arguments.items():
            ann = annotations.get(pname)
            if _is_array(value):
                t, direction = _tensor_param(name, pname, value, ann, dynamic.get(pname, {}))
                params.append(Param(pname, t, direction))
                tensors.append(TensorCacheInfo(
                    pname, tuple(None if isinstance(d, DynVar) else d for d in t.shape),
                    t.dtype.name,
                ))
            elif _is_scalar(value):
                scalar = _scalar_value(value)
                params.append(Param(pname, ScalarType(_scalar_dtype(name, pname, scalar, ann)),
                                    Direction.SCALAR))
                constants[pname] = scalar
                scalars.append(ScalarCacheInfo(pname, scalar))
            else:
                raise TypeError(
                    f"@pl.jit function '{name}': argument '{pname}' is a {type(value).__name__}; "
                    "pass a torch tensor or numpy array for a tensor parameter, or an int, "
                    "float or bool for a scalar"
                )
        ordered = [bound.arguments[p.name] for p in params]
        return _Specialization(params, constants, tuple(tensors), tuple(scalars), ordered)

    def _template_of_entry(self) -> Template:
        if self._template is None:
            self._template = function_template(
                self._func, "Orchestration", self._what, self._enclosing
            )
        return self._template

    def _program(self, spec: _Specialization) -> Any:
        return program_from_template(
            self._template_of_entry(), spec.params, spec.constants, "Orchestration"
        )

    def _key(self, spec: _Specialization, config: Any) -> tuple[Any, ...]:
        strategy = getattr(config, "strategy", None)
        strategy_name = getattr(strategy, "name", None) or "Default"
        return (self._hash(), config.platform, strategy_name, spec.tensors, spec.scalars)

    def _hash(self) -> str:
        if self._source_hash is None:
            template = self._template_of_entry()
            text = ast.dump(template.node, include_attributes=True)
            digest = hashlib.sha256(f"{__version__}\n{text}".encode())
            self._source_hash = digest.hexdigest()[:16]
        return self._source_hash


class _Specialization(NamedTuple):
    params: list[Param]
    constants: dict[str, Any]
    tensors: tuple[TensorCacheInfo, ...]
    scalars: tuple[ScalarCacheInfo, ...]
    ordered: list[Any]  # the arguments in parameter order


# ----------------------------------------------------------------- arguments
_BY_STORAGE = {d.storage: d for d in reversed(ALL_DTYPES) if d.storage and d is not INDEX}


def _is_array(value: Any) -> bool:
    """A torch tensor or a numpy array of rank >= 1 (numpy scalars are scalars)."""
    module = type(value).__module__.split(".")[0]
    return module in ("torch", "numpy") and getattr(value, "ndim", 0) >= 1


def _is_scalar(value: Any) -> bool:
    if isinstance(value, (bool, int, float)):
        return True
    module = type(value).__module__.split(".")[0]
    return module == "numpy" and getattr(value, "ndim", None) == 0


def _scalar_value(value: Any) -> int | float | bool:
    if isinstance(value, (bool, int, float)):
        return value
    item = value.item()
    return item  # type: ignore[no-any-return]


def _dtype_of(fname: str, pname: str, value: Any) -> DataType:
    storage = str(value.dtype).removeprefix("torch.")
    found = _BY_STORAGE.get(storage)
    if found is None:
        raise TypeError(
            f"@pl.jit function '{fname}': argument '{pname}' has dtype {value.dtype}, which "
            f"has no DSL dtype; supported: {', '.join(sorted(_BY_STORAGE))}"
        )
    return found


def _annotations(fn: Any, enclosing: dict[str, Any] | None = None) -> dict[str, Any]:
    """The parameters' annotations, evaluated (string annotations where Python would have
    evaluated them: the enclosing function's locals over the function's globals)."""
    raw = dict(getattr(fn, "__annotations__", {}))
    out: dict[str, Any] = {}
    namespace: dict[str, Any] | None = None
    for name, ann in raw.items():
        if isinstance(ann, str):
            if namespace is None:
                namespace = namespace_of(fn, enclosing)
            try:
                ann = eval(ann, namespace)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - left unresolved: read as unannotated
                ann = None
        out[name] = ann
    return out


def _direction_of(ann: Any) -> tuple[Any, Direction]:
    if isinstance(ann, AnnotationForm) and ann.form in ("Out", "InOut"):
        inner = ann.args[0] if isinstance(ann.args, tuple) else ann.args
        return inner, Direction.OUT if ann.form == "Out" else Direction.INOUT
    if getattr(ann, "window", False):  # pld.DistributedTensor: shared memory (distributed.md §3)
        return ann, Direction.INOUT
    return ann, Direction.IN


def _tensor_param(
    fname: str, pname: str, value: Any, ann: Any, dynamic: dict[int, DynVar]
) -> tuple[TensorType, Direction]:
    """The parameter type of a tensor argument: its shape and dtype, checked against
    a full annotation, whose `pl.dynamic` dims (and ``bind_dynamic`` ones) stay dynamic."""
    where = f"@pl.jit function '{fname}': argument '{pname}'"
    shape = tuple(int(d) for d in value.shape)
    inner, direction = _direction_of(ann)
    if inner is not None and inner is not Tensor and not (
        isinstance(inner, AnnotationForm) and inner.form == "Tensor"
    ):
        raise TypeError(f"{where} is a tensor, but the parameter is annotated {inner!r}")
    dtype = _dtype_of(fname, pname, value)
    dims: list[Any] = list(shape)
    if isinstance(inner, AnnotationForm) and inner.form == "Tensor":
        args = inner.args if isinstance(inner.args, tuple) else (inner.args,)
        declared = list(args[0]) if args and isinstance(args[0], (list, tuple)) else None
        if declared is not None:
            if len(declared) != len(shape):
                raise TypeError(
                    f"{where} has shape {list(shape)}, but the annotation declares rank "
                    f"{len(declared)} ({_shown(declared)})"
                )
            for i, (want, got) in enumerate(zip(declared, shape)):
                if isinstance(want, DynVar):
                    dims[i] = want
                elif want != got:
                    raise TypeError(
                        f"{where} has shape {list(shape)}, but the annotation declares "
                        f"{_shown(declared)} (dimension {i})"
                    )
        if len(args) > 1 and isinstance(args[1], DataType) and args[1] is not dtype:
            raise TypeError(
                f"{where} has dtype {dtype.name}, but the annotation declares {args[1].name}"
            )
    for i, dv in dynamic.items():
        if 0 <= i < len(dims):
            dims[i] = dv
    return TensorType(tuple(dims), dtype), direction


def _shown(dims: list[Any]) -> str:
    return "[" + ", ".join(d.name if isinstance(d, DynVar) else str(d) for d in dims) + "]"


def _scalar_dtype(fname: str, pname: str, value: Any, ann: Any) -> DataType:
    if isinstance(ann, AnnotationForm) and ann.form == "Scalar":
        dtype = ann.args[0] if isinstance(ann.args, tuple) else ann.args
        if isinstance(dtype, DataType):
            return dtype
    if isinstance(ann, DataType):
        return ann
    if ann is not None and not (isinstance(ann, type) and issubclass(ann, (int, float, bool))):
        raise TypeError(
            f"@pl.jit function '{fname}': argument '{pname}' is the scalar {value!r}, but "
            f"the parameter is annotated {ann!r}"
        )
    if isinstance(value, bool):
        return BOOL
    return INDEX if isinstance(value, int) else FP32


def _bind_dynamic_dims(template: Template) -> dict[str, dict[int, DynVar]]:
    """``x.bind_dynamic(i, M)`` statements of the body: parameter -> {dim: DynVar}."""
    found: dict[str, dict[int, DynVar]] = {}
    for stmt in ast.walk(template.node):
        call = stmt.value if isinstance(stmt, ast.Expr) else None
        if not (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                and call.func.attr == "bind_dynamic" and isinstance(call.func.value, ast.Name)
                and len(call.args) == 2 and isinstance(call.args[0], ast.Constant)):
            continue
        dv = call.args[1]
        value = template.namespace.get(dv.id) if isinstance(dv, ast.Name) else None
        if isinstance(value, DynVar) and isinstance(call.args[0].value, int):
            found.setdefault(call.func.value.id, {})[call.args[0].value] = value
    return found


def _definition_span(fn: Any) -> Any:
    return span(fn)


# ----------------------------------------------------------------- decorators
class _KindDecorator:
    """`@pl.jit.incore` / `.inline` / `.opaque`, bare or called with options."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def __call__(self, fn: Any = None, *, level: Any = None, auto_scope: Any = None) -> Any:
        if fn is None:
            return lambda f: self(f, level=level, auto_scope=auto_scope)
        if not callable(fn):
            raise TypeError(f"@pl.jit.{self.kind} decorates a function, not {fn!r}")
        return JITFunction(fn, self.kind, level=level,
                           auto_scope=auto_scope if auto_scope is not None else True)

    def __repr__(self) -> str:
        return f"pl.jit.{self.kind}"


class JitDecorator:
    """`pl.jit`: `@pl.jit`, `@pl.jit(auto_scope=...)` and the dependency kinds."""

    incore = _KindDecorator("incore")
    inline = _KindDecorator("inline")
    opaque = _KindDecorator("opaque")
    host = staticmethod(jit_host)  # a multi-chip host orchestrator (distributed_host.py)
    extern = JitMarker("jit.extern", 3, "hand-written external kernels")

    def __call__(self, fn: Any = None, *, auto_scope: bool = True) -> Any:
        if fn is None:
            return lambda f: JITFunction(f, auto_scope=auto_scope)
        if not callable(fn):
            raise TypeError(f"@pl.jit decorates a function, not {fn!r}")
        return JITFunction(fn, auto_scope=auto_scope)

    def __repr__(self) -> str:
        return "pl.jit"


jit: Callable[..., Any] = JitDecorator()
