# SPDX-License-Identifier: Apache-2.0
"""Host SubWorkers and the host's own tensors (docs/design/distributed.md §8).

A SubWorker (``@pl.function(level=pl.Level.HOST, role=pl.Role.SubWorker)``, no
``self``) is a Python task of the host orchestrator.  ``self.verify(out)`` in the host
waits for the chip dispatches queued so far (their results are what the task reads),
then runs the task on the host:

- with a callback bound by name (``prepare(callbacks={"verify": fn})``): ``fn(args)``,
  ``args`` a tuple of `TensorArg` (one per argument, a view of its memory, no copy);
- otherwise the function's own body, with its arguments as torch tensors sharing their
  memory.  As in PyPTO, the body sees only ``torch`` and its arguments, never the names
  of the module it is written in.  A body that is only ``...`` has no implementation:
  it must be bound.

The call gives back the arguments the SubWorker writes (its ``pl.Out`` / ``pl.InOut``
parameters), like a chip dispatch.  The same module holds the host's tensors:
``pl.create_tensor`` in a host orchestrator, and the outputs a return-style call
(``compiled(a, b)`` with ``f`` left out) allocates.
"""

from __future__ import annotations

import builtins
import inspect
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.language.distributed_host import HostProgram
from pytest_pypto.language.surface import AnnotationForm

__all__ = ["TensorArg", "as_torch", "bind_callbacks", "host_create_tensor", "output_params",
           "return_style_args", "run_sub_worker"]


class TensorArg:
    """One tensor argument of a host task: the host memory it names (no copy)."""

    __slots__ = ("value", "tag")

    def __init__(self, value: Any, tag: Any = None) -> None:
        self.value = value
        self.tag = tag

    @property
    def shapes(self) -> tuple[int, ...]:
        return tuple(int(d) for d in self.value.shape)

    @property
    def strides(self) -> tuple[int, ...]:
        """Strides in elements."""
        if isinstance(self.value, np.ndarray):
            return tuple(s // self.value.itemsize for s in self.value.strides)
        return tuple(int(s) for s in self.value.stride())

    @property
    def dtype(self) -> str:
        """The element type's runtime name (``FLOAT32``, ``BFLOAT16``, ...)."""
        name = str(self.value.dtype).rsplit(".", 1)[-1]
        return _RUNTIME_NAMES.get(name, name.upper())

    def torch(self) -> Any:
        """The argument as a torch tensor sharing its memory."""
        return as_torch(self.value)

    def __repr__(self) -> str:
        return f"<tensor arg {list(self.shapes)} {self.dtype}>"


_RUNTIME_NAMES = {"float32": "FLOAT32", "float16": "FLOAT16", "bfloat16": "BFLOAT16",
                  "int8": "INT8", "int16": "INT16", "int32": "INT32", "int64": "INT64",
                  "uint8": "UINT8", "uint16": "UINT16", "uint32": "UINT32"}


def as_torch(value: Any) -> Any:
    """``value`` (a torch tensor or a numpy array) as a torch tensor sharing its memory."""
    import torch  # lazy: SubWorker bodies are torch code; torch loads only when one runs

    if isinstance(value, TensorArg):
        value = value.value
    if isinstance(value, torch.Tensor):
        return value
    array = np.asarray(value)
    if array.dtype.name == "bfloat16":  # numpy has no bfloat16 of its own: reinterpret
        return torch.from_numpy(array.view(np.uint16)).view(torch.bfloat16)
    return torch.from_numpy(array)


def bind_callbacks(hosts: Sequence[HostProgram | Any],
                   callbacks: Mapping[str, Callable[..., Any]] | None) -> dict[str, Any]:
    """Check ``callbacks`` against the programs' SubWorkers: every name must be one of
    them, every abstract (``...``) SubWorker must be bound, every callback must take one
    argument.  ValueError / TypeError otherwise; the checked dict."""
    callbacks = dict(callbacks or {})
    declared = sorted({n for h in hosts if isinstance(h, HostProgram) for n in h.sub_workers})
    unknown = sorted(set(callbacks) - set(declared))
    if unknown:
        raise ValueError(f"callbacks names {unknown} are not sub-workers of this program; its "
                         f"sub-workers are {declared}")
    missing = sorted({n for h in hosts if isinstance(h, HostProgram)
                      for n in h.sub_workers if h.abstract(n)} - set(callbacks))
    if missing:
        raise ValueError(f"SubWorkers {missing} have no body (declared with `...`): bind "
                         f"them with callbacks={{name: fn}}")
    for name, fn in callbacks.items():
        if not callable(fn):
            raise TypeError(f"callback for SubWorker '{name}' is not callable: {fn!r}")
        try:
            inspect.signature(fn).bind(None)
        except TypeError as exc:
            raise TypeError(f"callback for SubWorker '{name}' must take one positional "
                            "argument, fn(args)") from exc
        except ValueError:
            pass  # a builtin without a readable signature
    return callbacks


def run_sub_worker(host: HostProgram, name: str, args: Sequence[Any],
                   callbacks: Mapping[str, Callable[..., Any]]) -> Any:
    """Run SubWorker ``name`` with ``args`` now; the arguments it writes (see module)."""
    __tracebackhide__ = True
    fn = host.function(name)
    bound = callbacks.get(name)
    if bound is not None:
        bound(tuple(TensorArg(a) for a in args))
    elif host.abstract(name):
        raise SimulationError(f"SubWorker '{name}' has no body (declared with `...`); bind it "
                              f"with prepare(callbacks={{'{name}': fn}})")
    else:
        body = _isolated(fn)
        try:
            body(*[as_torch(a) for a in args])
        except NameError as exc:
            raise SimulationError(
                f"SubWorker '{name}': {exc}: a SubWorker body sees only torch and its "
                "arguments (it runs apart from its module); pass the value as an argument, "
                "or bind a callback with prepare(callbacks=...)") from exc
    given = tuple(args[i] for i in output_params(fn) if i < len(args))
    return given[0] if len(given) == 1 else (given or None)


def _isolated(fn: Any) -> Any:
    """``fn`` seeing only ``torch`` and the builtins as its globals."""
    import torch  # lazy: see as_torch

    scope = {"torch": torch, "__builtins__": builtins}
    return types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)


def _forms(fn: Any) -> list[Any]:
    """The annotation of each positional parameter of ``fn`` (``self`` excluded)."""
    code = fn.__code__
    names = code.co_varnames[:code.co_argcount]
    if names[:1] == ("self",):
        names = names[1:]
    notes = getattr(fn, "__annotations__", {})
    forms = []
    for name in names:
        form = notes.get(name)
        if isinstance(form, str):  # `from __future__ import annotations`
            try:
                form = eval(form, fn.__globals__)  # noqa: S307 - the user's own annotation
            except Exception:  # noqa: BLE001 - an annotation we cannot read says nothing
                form = None
        forms.append(form)
    return forms


def _direction(form: Any) -> str | None:
    if isinstance(form, AnnotationForm) and form.form in ("Out", "InOut"):
        return form.form
    return None


def output_params(fn: Any) -> list[int]:
    """The positions of ``fn``'s ``pl.Out`` / ``pl.InOut`` parameters."""
    return [i for i, f in enumerate(_forms(fn)) if _direction(f) is not None]


def return_style_args(fn: Any, args: tuple[Any, ...]) -> tuple[tuple[Any, ...], list[Any]]:
    """``args`` completed with fresh zero outputs when they leave out exactly ``fn``'s
    ``pl.Out`` parameters and ``fn`` declares a return (PyPTO's return-style call);
    ``(all args, the outputs allocated)`` (none allocated: ``args`` as given)."""
    forms = _forms(fn)
    outs = [i for i, f in enumerate(forms) if _direction(f) == "Out"]
    has_return = getattr(fn, "__annotations__", {}).get("return") is not None
    if not outs or not has_return or len(args) != len(forms) - len(outs):
        return args, []
    use_torch = any(type(a).__module__.startswith("torch") for a in args)
    given = iter(args)
    full: list[Any] = []
    allocated: list[Any] = []
    for i, form in enumerate(forms):
        if i not in outs:
            full.append(next(given))
            continue
        shape, dtype = _tensor_of(form.args[0] if isinstance(form.args, tuple) else form.args)
        out = host_create_tensor(shape, dtype, like_torch=use_torch)
        full.append(out)
        allocated.append(out)
    return tuple(full), allocated


def _tensor_of(form: Any) -> tuple[list[int], DataType]:
    if isinstance(form, AnnotationForm) and form.form == "Tensor" \
            and isinstance(form.args, tuple) and len(form.args) >= 2:
        shape, dtype = form.args[0], form.args[1]
        if isinstance(dtype, DataType) and all(isinstance(d, int) for d in shape):
            return list(shape), dtype
    raise SimulationError("a return-style call allocates its outputs from their annotations; "
                          "an output needs pl.Out[pl.Tensor[[static shape], dtype]] (or pass it)")


def host_create_tensor(shape: Any, dtype: Any = None, *, like_torch: bool = False,
                       **_: Any) -> Any:
    """A host tensor of zeros: ``pl.create_tensor`` in a host orchestrator (numpy), or an
    output of a return-style call (torch when the call's inputs are)."""
    if not isinstance(dtype, DataType):
        raise SimulationError("pl.create_tensor in a host orchestrator needs dtype=pl.<dtype>")
    dims = tuple(int(d) for d in shape)
    if like_torch:
        import torch  # lazy: the caller passed torch tensors

        found = getattr(torch, dtype.storage or "", None)
        if found is None:
            raise SimulationError(f"torch has no dtype for {dtype.name}; pass the output tensor")
        return torch.zeros(dims, dtype=found)
    return np.zeros(dims, dtype.np)
