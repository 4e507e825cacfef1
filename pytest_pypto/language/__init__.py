# SPDX-License-Identifier: Apache-2.0
"""The kernel language: `import pytest_pypto.language as pl`, with PyPTO's spellings.

Decorators, annotation forms, dtypes, enums and iterators are defined here; every
op of the registry is reachable as `pl.<spelling>` / `pl.tile.<spelling>`, created
lazily on first attribute access so that importing this module does not load the
op modules (which import numpy).  Kernel bodies are parsed by `@pl.program`, never
run, so calling any of these from plain Python raises `NotRunnable`.
"""

from __future__ import annotations

import sys
import types as _types
from typing import Any

from pytest_pypto.ir.dtypes import (
    BF16,
    BOOL,
    FP4,
    FP8E4M3FN,
    FP8E5M2,
    FP8E8M0,
    FP16,
    FP32,
    HF4,
    HF8,
    INDEX,
    INT4,
    INT8,
    INT16,
    INT32,
    INT64,
    TASK_ID,
    UINT4,
    UINT8,
    UINT16,
    UINT32,
    UINT64,
    DataType,
)
from pytest_pypto.ir.errors import PyptoError
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import DynVar, MemorySpace
from pytest_pypto.language import distributed as distributed  # `pl.distributed` is `pld` always
from pytest_pypto.language.deferred import DeferredProgram
from pytest_pypto.language.functions import InlineFunction, function, inline
from pytest_pypto.language.jit import JITFunction, jit
from pytest_pypto.language.memref import MemRef, MemRefType
from pytest_pypto.language.parser import parse_program
from pytest_pypto.language.surface import (
    SCALAR_MINMAX,
    Array,
    AsyncEvent,
    AsyncSession,
    AtomicType,
    CompactMode,
    DslFunction,
    FunctionType,
    InOut,
    Level,
    MaskPattern,
    NotRunnable,
    OpStub,
    Out,
    PadValue,
    PipeType,
    PrefetchAsyncContext,
    Role,
    Scalar,
    ScopeMode,
    SplitMode,
    Tensor,
    Tile,
    TileLayout,
    TileView,
    Tuple,
    at,
    cluster,
    cross_core_slot,
    dump_tag,
    func_attr,
    manual_scope,
    no_dep,
    scope,
    split,
    split_aiv,
    spmd,
    spmd_submit,
    submit,
)
from pytest_pypto.language.unsupported import (
    OpNamespace,
    SystemNamespace,
    TensorLayout,
    TensorView,
    unsupported_names,
)

Mem = MemorySpace

__all__ = [
    "BF16", "BOOL", "FP4", "FP8E4M3FN", "FP8E5M2", "FP8E8M0", "FP16", "FP32", "HF4", "HF8",
    "INDEX", "INT4", "INT8", "INT16", "INT32", "INT64", "UINT4", "UINT8", "UINT16", "UINT32",
    "UINT64", "DataType", "DynVar", "MemorySpace", "Mem", "AtomicType", "FunctionType", "Level", "Role",
    "PadValue", "SplitMode", "Tensor", "Tile", "Scalar", "Out", "InOut", "Tuple", "function",
    "program", "dynamic", "NotRunnable", "range", "parallel", "unroll", "pipeline", "yield_",
    "while_", "cond",
    "create_tensor", "const", "static_assert", "static_print", "max", "min", "cast", "tile",
    "tensor", "DN", "ND", "NZ", "jit", "inline", "JITFunction", "InlineFunction", "at", "spmd", "split", "cross_core_slot",
    "MemRef", "MemRefType", "Array", "array", "TileView", "TileLayout", "CompactMode",
    "TASK_ID", "manual_scope", "cluster", "split_aiv", "submit", "spmd_submit", "system", "dump_tag", "AUTO",
    "TensorLayout", "TensorView", "ScopeMode", "scope", "no_dep", "TaskId", "func_attr",
    "PipeType", "prefetch", "PrefetchAsyncContext", "AsyncEvent", "AsyncSession",
]


def dynamic(name: str) -> DynVar:
    """`pl.dynamic("M")`: a dynamic tensor dimension; each call is a new, independent dim."""
    return DynVar(name)


def program(cls: type) -> Any:
    """`@pl.program`: parse the class's `@pl.function` methods into an IR `Program`.

    At module level a parse error is deferred (language/deferred.py): the module
    still imports, so one bad kernel fails its own tests, not the file's collection.
    Inside a function the error is raised here, where the caller can see it.
    """
    __tracebackhide__ = True  # a failing test shows its own line and the diagnostic
    if not isinstance(cls, type):
        _not_a_class(cls)
    frame = sys._getframe(1)
    try:
        namespace = dict(frame.f_globals)
        namespace.update(frame.f_locals)
        where = (frame.f_code.co_filename, frame.f_lineno)
        at_module = frame.f_code.co_name == "<module>"
    finally:
        del frame
    if not at_module:
        return parse_program(cls, namespace, where)
    try:
        return parse_program(cls, namespace, where)
    except PyptoError as exc:
        return DeferredProgram(cls.__name__, exc)


def _not_a_class(value: Any) -> None:
    """The TypeError of `@pl.program` on a function or any other non-class."""
    __tracebackhide__ = True
    if isinstance(value, (_types.FunctionType, _types.BuiltinFunctionType)):
        shown = f"the function '{value.__name__}'"
    else:
        kind = type(value).__name__
        shown = f"{'an' if kind[:1] in 'aeiou' else 'a'} {kind} ({value!r:.40})"
    raise TypeError(
        f"@pl.program decorates a class, but got {shown}; write the kernels as "
        f"@pl.function methods of a class (class P: ...), or make a single function a "
        f"@pl.jit kernel"
    )


range = DslFunction("range", "`for i in pl.range(start, stop, step, init_values=...)`.")  # noqa: A001
parallel = DslFunction("parallel", "`for i in pl.parallel(...)`: iterations asserted independent.")
unroll = DslFunction("unroll", "`for i in pl.unroll(...)`: literal bounds, unrolled.")
pipeline = DslFunction("pipeline", "`for i in pl.pipeline(..., stage=F)`.")
yield_ = DslFunction("yield_", "Values carried out of a loop iteration or an if arm.")
while_ = DslFunction("while_", "`for (x,) in pl.while_(init_values=(x0,)):` a while loop.")
cond = DslFunction("cond", "`pl.cond(c)`: the condition, first statement of a pl.while_ body.")
create_tensor = DslFunction("create_tensor", "`pl.create_tensor(shape, dtype, init_value=None)`.")
const = DslFunction("const", "`pl.const(value, dtype)`: a typed constant.")
AUTO = -1  # `pl.reserve_buffer(base=pl.AUTO)`: the toolchain places the buffer
static_assert = DslFunction("static_assert", "`pl.static_assert(cond, msg)` at parse time.")
static_print = DslFunction("static_print", "`pl.static_print(...)` prints at parse time.")
max = SCALAR_MINMAX["max"]  # noqa: A001
min = SCALAR_MINMAX["min"]  # noqa: A001
cast = OpStub("cast")  # tile.cast on tiles, a C conversion on Scalars

tile = OpNamespace("tile")
tile.MaskPattern = MaskPattern  # type: ignore[attr-defined]  (pl.tile.MaskPattern.P0101)
tensor = OpNamespace("tensor")
array = OpNamespace("array")  # on-core arrays (ir/ops/arrays.py)
prefetch = OpNamespace("prefetch")  # asynchronous GM->L2 prefetch (ir/ops/prefetch.py)
system = SystemNamespace()  # pl.system.*: task_dummy (language/scheduling.py), syncall and the pipes (ir/ops/cross_core.py)

TaskId = Scalar[TASK_ID]  # the annotation of a TaskId (docs/design/scheduling.md §2)

DN = TensorLayout.DN
ND = TensorLayout.ND
NZ = TensorLayout.NZ

_UNSUPPORTED = unsupported_names()
_OPS: dict[str, OpStub] = {}


def __getattr__(name: str) -> Any:
    """Op spellings (`pl.add`...) and named-but-unsupported PyPTO features, lazily."""
    if name.startswith("_"):
        raise AttributeError(name)
    if name in _UNSUPPORTED:
        return _UNSUPPORTED[name]
    stub = _OPS.get(name)
    if stub is None:
        if not REGISTRY.by_namespace("", name):  # tile ops and tensor-level ones (pl.full)
            raise AttributeError(
                f"module 'pytest_pypto.language' has no attribute {name!r} "
                f"(no op of the bundled toolchain is spelled pl.{name})"
            )
        stub = _OPS[name] = OpStub(name)
    return stub


def __dir__() -> list[str]:
    names = set(globals()) | set(_UNSUPPORTED)
    for spec in REGISTRY.values():
        names.update(s for s in spec.spellings if "." not in s)
    return sorted(names)
