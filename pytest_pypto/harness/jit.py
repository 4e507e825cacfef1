"""The launcher behind `@pl.jit` calls and `CompiledProgram(...)` (see ir/launch.py).

PyPTO's call conventions on the simulator:

* **RunConfig.** ``config=`` wins; without it a `@pl.jit` call runs on the session's
  first cell (``--pypto-arch``; outside pytest, ``RunConfig()``) and a
  `CompiledProgram` call on the platform it was compiled for.
* **Compiling** goes through the session's compile cache (PLUGIN.md §7), or an
  uncached compile outside pytest.
* **Arguments** are torch tensors or numpy arrays (and Python scalars).  All the
  entry's arguments given: an in-place call, results land in the caller's
  Out/InOut tensors and the call returns None.  Only the inputs given (a program
  that returns): a return-style call, the Out tensors are allocated (torch when an
  input is torch, else numpy) and returned, one or a tuple.
* **Out tensors start as the caller's data**, as device buffers do in PyPTO's
  in-place calls (an atomic-add store accumulates onto it); under `pypto_runner`
  a pure Out starts poisoned instead (DSL.md §1.5).
* ``--pypto-codegen-only``: compiled, not run: inside a test the call ends it as a
  skip naming the program and cell (harness/codegen_only.py); outside a test, and for
  ``RunConfig(codegen_only=True)``, it returns None.

Importing this module registers the launcher; the plugin binds the running pytest
session (`bind_session`) so compiles share its cache.  Standard library only at
module level.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_pypto.ir import launch

__all__ = ["HarnessLauncher", "bind_session", "current_session", "unbind_session"]

# The running pytest sessions' configs, innermost last (pytester runs sessions in-process).
_sessions: list[Any] = []


def bind_session(pconfig: Any) -> None:
    """Compile through ``pconfig``'s cache and default to its first cell."""
    _sessions.append(pconfig)


def unbind_session(pconfig: Any) -> None:
    """Forget ``pconfig`` (its session ended)."""
    if pconfig in _sessions:
        _sessions.remove(pconfig)


def _current() -> Any:
    return _sessions[-1] if _sessions else None


def current_session() -> Any:
    """The innermost running pytest session's config (None outside pytest)."""
    return _current()


class HarnessLauncher:
    """`ir.launch.Launcher` on the compile cache and the simulator."""

    def __init__(self) -> None:
        self._local_cache: Any = None

    # ------------------------------------------------------------ configs
    def config(self, config: Any) -> Any:
        from pytest_pypto.config import RunConfig

        if config is None:
            return self.session_config()
        if not isinstance(config, RunConfig):
            raise TypeError(
                f"config= must be a RunConfig, but got {type(config).__name__} ({config!r:.60})"
            )
        return config

    def session_config(self) -> Any:
        """The session's default cell (its first), else ``RunConfig()``."""
        from pytest_pypto.config import RunConfig

        pconfig = _current()
        if pconfig is None:
            return RunConfig()
        from pytest_pypto.harness.session import config_of, settings

        cells = settings(pconfig).cells
        return config_of(pconfig, None, cells[0]) if cells else RunConfig()

    # ---------------------------------------------------------- compiling
    def _cache(self) -> Any:
        pconfig = _current()
        if pconfig is not None:
            from pytest_pypto.harness.session import compile_cache

            return compile_cache(pconfig)
        if self._local_cache is None:
            from pytest_pypto.harness.cache import CompileCache

            self._local_cache = CompileCache(None)
        return self._local_cache

    def compile(self, program: Any, config: Any) -> Any:
        compiled = self._cache().compile(program, config)
        from pytest_pypto.harness.codegen_only import note_compiled

        note_compiled(compiled)
        if config.save_kernels_dir:
            from pytest_pypto.harness.runner import copy_artifact

            copy_artifact(compiled, Path(config.save_kernels_dir))
        return compiled

    # ------------------------------------------------------------ running
    def call(self, compiled: Any, args: tuple[Any, ...], config: Any) -> Any:
        __tracebackhide__ = True
        from pytest_pypto.config import RunConfig

        run_config = RunConfig(platform=compiled.platform) if config is None else self.config(config)
        full, outputs = coerce_args(compiled, args)
        from pytest_pypto.harness.codegen_only import held

        if held(compiled, run_config):  # under --pypto-codegen-only a test skips here
            return None
        from pytest_pypto.harness.dispatch import run as dispatch
        from pytest_pypto.harness.tensors import is_torch, torch_view

        arrays = [torch_view(a) if is_torch(a) else a for a in full]
        dispatch(compiled, *arrays, config=run_config, outputs_in=True)  # the cell's runtime
        return outputs


def _is_array(value: Any) -> bool:
    """A torch tensor or a numpy array (numpy scalars are scalars)."""
    import numpy as np

    from pytest_pypto.harness.tensors import is_torch

    return is_torch(value) or isinstance(value, np.ndarray)


def coerce_args(compiled: Any, args: tuple[Any, ...]) -> tuple[list[Any], Any]:
    """PyPTO's argument rules for a `CompiledProgram` call: every argument (in place)
    or the inputs only (return style).  Returns the full argument list and what the
    call returns (None in place; the allocated Out tensor(s) in return style)."""
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
    from pytest_pypto.harness.tensors import is_torch
    from pytest_pypto.ir.dtypes import dtype_by_name

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
            import torch

            out = torch.zeros(tuple(p.shape), dtype=_torch_dtype(torch, dtype))
        else:
            import numpy as np

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
