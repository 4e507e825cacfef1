"""The launcher behind `@pl.jit` calls and `CompiledProgram(...)` (see ir/launch.py).

PyPTO's call conventions on the simulator:

* **RunConfig.** ``config=`` wins; without it a `@pl.jit` call runs on the session's
  first cell (``--pypto-arch``; outside pytest, ``RunConfig()``) and a
  `CompiledProgram` call on the platform it was compiled for.
* **Compiling** goes through the session's compile cache (docs/design/plugin.md §9), or an
  uncached compile outside pytest.
* **Arguments** are torch tensors or numpy arrays (and Python scalars; a ctypes
  scalar counts as its value, and an object exposing numpy's array interface, such
  as a compat worker's DeviceTensor, is read and written in place).  All the
  entry's arguments given: an in-place call, results land in the caller's
  Out/InOut tensors and the call returns None.  Only the inputs given (a program
  that returns): a return-style call, the Out tensors are allocated (torch when an
  input is torch, else numpy) and returned, one or a tuple.
* **Out tensors start as the caller's data**, as device buffers do in PyPTO's
  in-place calls (an atomic-add store accumulates onto it); under `pypto_runner`
  a pure Out starts poisoned instead (docs/design/numerics.md §6).
* ``--pypto-codegen-only``: compiled, not run: inside a test the call ends it as a
  skip naming the program and cell (harness/codegen_only.py); outside a test, and for
  ``RunConfig(codegen_only=True)``, it returns None.

Importing this module registers the launcher.  The session is the bound session
context (harness/context.py), so compiles share its cache and a call defaults to its
first cell.
"""

from __future__ import annotations

import ctypes
from typing import Any

import numpy as np

from pytest_pypto.compiler.api import lower
from pytest_pypto.config import RunConfig
from pytest_pypto.harness import context
from pytest_pypto.harness.cache import CompileCache
from pytest_pypto.harness.compiling import compile_cached
from pytest_pypto.harness.dispatch import dispatch
from pytest_pypto.harness.tensors import is_torch
from pytest_pypto.ir import launch
from pytest_pypto.ir.dtypes import dtype_by_name

__all__ = ["HarnessLauncher", "coerce_args"]


class HarnessLauncher:
    """`ir.launch.Launcher` on the compile cache and the simulator."""

    def __init__(self) -> None:
        self._local_cache: CompileCache | None = None

    # ------------------------------------------------------------ configs
    def config(self, config: Any) -> Any:
        if config is None:
            return self.session_config()
        if not isinstance(config, RunConfig):
            platform = config if isinstance(config, str) else "a2a3sim"
            raise TypeError(
                f"config= must be a RunConfig, but got {type(config).__name__} ({config!r:.60}); "
                f"e.g. config=RunConfig(platform='{platform}')"
            )
        return config

    def session_config(self) -> RunConfig:
        """The session's default cell (its first), else ``RunConfig()``."""
        session = context.current()
        return RunConfig() if session is None else session.default_config()

    # ---------------------------------------------------------- compiling
    def _cache(self) -> CompileCache:
        session = context.current()
        if session is not None:
            return session.cache()
        if self._local_cache is None:
            self._local_cache = CompileCache(None)
        return self._local_cache

    def compile(self, program: Any, config: Any) -> Any:
        return compile_cached(program, config, cache=self._cache())

    def lower(self, program: Any, config: Any) -> Any:
        return lower(program, config)[0]

    def coerce(self, compiled: Any, args: tuple[Any, ...]) -> tuple[list[Any], Any]:
        return coerce_args(compiled, args)

    # ------------------------------------------------------------ running
    def call(self, compiled: Any, args: tuple[Any, ...], config: Any) -> Any:
        __tracebackhide__ = True
        run_config = RunConfig(platform=compiled.platform) if config is None else self.config(config)
        full, outputs = coerce_args(compiled, args)
        # the cell's runtime; under --pypto-codegen-only a test skips there
        if dispatch(compiled, full, config=run_config, outputs_in=True) is compiled:
            return None  # held back: compiled, not run
        return outputs


def _is_array(value: Any) -> bool:
    """A torch tensor or a numpy array (numpy scalars are scalars)."""
    return is_torch(value) or isinstance(value, np.ndarray)


def _plain_arg(value: Any) -> Any:
    """A ctypes scalar as its Python value; an object exposing its memory through
    numpy's array interface (a worker's DeviceTensor) as a numpy view of it."""
    if isinstance(value, ctypes._SimpleCData):
        return value.value
    if (not isinstance(value, (np.ndarray, np.generic)) and not is_torch(value)
            and hasattr(type(value), "__array_interface__")):
        return np.asarray(value)
    return value


def coerce_args(compiled: Any, args: tuple[Any, ...]) -> tuple[list[Any], Any]:
    """PyPTO's argument rules for a `CompiledProgram` call: every argument (in place)
    or the inputs only (return style).  Returns the full argument list and what the
    call returns (None in place; the allocated Out tensor(s) in return style)."""
    args = tuple(_plain_arg(a) for a in args)
    params = compiled.manifest.entry_args
    outs = compiled.output_indices
    n_inputs = len(params) - len(outs)
    names = [p.name for p in params]
    if len(args) == len(params):
        full, returned = list(args), None
    elif compiled.has_return and len(args) == n_inputs:
        full, allocated = _with_outputs(compiled, list(args))
        returned = allocated[0] if len(allocated) == 1 else tuple(allocated)
    else:
        expected = f"{len(params)} (in-place)"
        if compiled.has_return:
            expected += f" or {n_inputs} (return)"
        raise TypeError(
            f"'{compiled.program_name}' expects {expected} arguments, got {len(args)}. "
            f"Parameters: {names}"
        )
    for p, value in zip(params, full):
        if p.kind == "scalar" and _is_array(value):
            raise TypeError(
                f"Parameter {p.name!r} of '{compiled.program_name}' is a scalar ({p.dtype}); "
                f"got a {type(value).__name__}"
            )
        if p.kind == "tensor" and not _is_array(value):
            raise TypeError(
                f"Parameter {p.name!r} of '{compiled.program_name}' is a tensor; got "
                f"{type(value).__name__}. Pass a torch.Tensor or a numpy array"
            )
    return full, returned


def _with_outputs(compiled: Any, inputs: list[Any]) -> tuple[list[Any], list[Any]]:
    """The full argument list of a return-style call, its Out tensors allocated."""
    use_torch = any(is_torch(a) for a in inputs)
    full: list[Any] = []
    allocated: list[Any] = []
    it = iter(inputs)
    for i, p in enumerate(compiled.manifest.entry_args):
        if i not in compiled.output_indices:
            full.append(next(it))
            continue
        if not all(isinstance(d, int) for d in p.shape):
            raise TypeError(
                f"'{compiled.program_name}': Out parameter {p.name!r} has a dynamic shape "
                f"{list(p.shape)}, so a return-style call cannot allocate it; pass it "
                "(an in-place call)"
            )
        dtype = dtype_by_name(p.dtype)
        if use_torch:
            import torch  # lazy: torch is optional, used only when the caller passes it

            out = torch.zeros(tuple(p.shape), dtype=_torch_dtype(torch, dtype))
        else:
            out = np.zeros(tuple(p.shape), dtype.np)
        full.append(out)
        allocated.append(out)
    return full, allocated


def _torch_dtype(torch: Any, dtype: Any) -> Any:
    found = getattr(torch, dtype.storage or "", None)
    if found is None:
        raise TypeError(f"torch has no dtype for {dtype.name}; pass the output tensor")
    return found


launch.register_default(HarnessLauncher())
