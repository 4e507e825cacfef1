"""`pytest_pypto.run`: compile when needed, then dispatch on the runtime of the cell.

The harness sits above both the compiler and the runtime, so this is where a
parsed program meets a `Runtime`, chosen by the registry
(`pytest_pypto.runtime.registry.runtime_for`) and nowhere else.  `dispatch` is the
one door every run passes (``pypto_runner``, ``pytest_pypto.run``, `@pl.jit` and
``CompiledProgram`` calls), and the only place the ``--pypto-codegen-only`` gate is
consulted (harness/codegen_only.py).  A program is compiled through the harness's
one compile path (harness/compiling.py, uncached here); a program passed again with
the same compile options reuses its artifact (an in-process memo per program
object), so calling ``run`` in a loop compiles once.  A runtime that brings its own
compiler (``compiles = True``) compiles the program instead.

On a platform that executes on an NPU, the device is leased exactly around the
runtime's ``execute`` (unless ``config.device_id`` names one already), and an
exception from the runtime that is not the toolchain's becomes a `DeviceFailure`
naming the runtime, with the original as its cause.

torch tensors cross as numpy views of their memory, so Out/InOut results land in
them in place, behind autograd: a written tensor that requires grad is refused before
the run (`ValueError` naming the argument), and every other written tensor's version
counter is moved after it (docs/design/plugin.md §7).
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import numbers
import os
import types
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_pypto.arch import ExecutionMode
from pytest_pypto.config import RunConfig
from pytest_pypto.harness import codegen_only
from pytest_pypto.harness.compiling import compile_cached
from pytest_pypto.harness.tensors import is_torch, torch_view
from pytest_pypto.ir.artifact import CompiledProgram, read_manifest
from pytest_pypto.ir.errors import PyptoError
from pytest_pypto.runtime import registry
from pytest_pypto.runtime.argdump import write_args_dump
from pytest_pypto.runtime.devices import DeviceLease, discover_npus
from pytest_pypto.runtime.protocol import DeviceFailure, RuntimeFailure
from pytest_pypto.runtime.simulator import SimRuntime
from pytest_pypto.runtime.swimlane import new_dfx_dir

if TYPE_CHECKING:  # pragma: no cover
    from pytest_pypto.runtime.worker import SimRun, Worker

__all__ = ["check_config", "check_program", "dispatch", "execute", "run", "worker_for"]

_DEFAULT = RunConfig()
_compiled: weakref.WeakKeyDictionary[Any, dict[tuple, CompiledProgram]] = (
    weakref.WeakKeyDictionary()
)


def _compile(program: Any, config: RunConfig) -> CompiledProgram:
    """Compile ``program`` for ``config`` once per (program object, compile options)."""
    key = (config.platform, config.dump_passes, config.save_kernels, config.save_kernels_dir)
    try:
        per_program = _compiled.setdefault(program, {})
    except TypeError:  # not weak-referenceable: no memo
        per_program = {}
    compiled = per_program.get(key)
    if compiled is None or (  # an in-memory artifact cannot go stale; a directory can
        compiled.memory is None and not (compiled.artifact_dir() / "kernel_config.json").is_file()
    ):
        compiled = per_program[key] = compile_cached(program, config)
    return compiled


def worker_for(platform: str) -> Worker:
    """The process-wide `Worker` of a sim platform: the ``sim`` runtime's (raises
    `OnboardExecutionError` for onboard platforms)."""
    try:
        sim = registry.default_registry().get("sim")
    except registry.RuntimeSelectionError:  # unusable as registered: a private one still works
        sim = _private_sim()
    return sim.worker(platform)


@functools.lru_cache(maxsize=1)
def _private_sim() -> Any:
    return SimRuntime()


def run(
    program_or_compiled: Any, *arrays: Any, config: RunConfig = _DEFAULT,
    outputs_in: bool = False, lease: Callable[[], Any] | None = None,
) -> SimRun | CompiledProgram:
    """Run a kernel program on ``config.platform`` with ``arrays`` bound to the entry's params.

    ``program_or_compiled`` is a parsed program (``@pl.program``; compiled here with
    ``config``), a `CompiledProgram`, or an artifact directory.  Out/InOut arrays
    (numpy arrays or CPU torch tensors) receive the results in place; the runtime's
    returned `Execution` (on sim, a `SimRun`) also holds them by name, the executed task
    graph and (`SimRun`) the path of its ``deps.json``.  ``outputs_in``: pure Out
    arrays start with the caller's data instead of poison (PyPTO's cases).  With
    ``config.codegen_only`` nothing is dispatched and the `CompiledProgram` is returned;
    inside a test of a ``--pypto-codegen-only`` session the call skips the test instead.
    The runtime is the registry's choice for the cell (``config.runtime`` names one);
    with none usable the program is still compiled (its errors come first), then a
    `DeviceFailure` says which runtimes exist.  ``lease``: how the pytest runner leases
    a device (a context-manager factory yielding its id; default: any visible NPU).
    """
    __tracebackhide__ = True
    check_program(program_or_compiled, "pytest_pypto.run()")
    check_config(config, "run()")
    return dispatch(program_or_compiled, arrays, config=config, outputs_in=outputs_in, lease=lease)


PROGRAMS = (
    "a program decorated with @pl.program, a CompiledProgram (pytest_pypto.compile(...)) "
    "or an artifact directory"
)


def check_program(value: Any, call: str) -> None:
    """A TypeError naming ``call``'s program argument when ``value`` is plainly no program
    (None, a number, an array, a container, a bare class or function): the common slips.
    Anything else goes on (a runtime that compiles takes its own program objects)."""
    __tracebackhide__ = True
    if value is None:
        shown = "None"
    elif isinstance(value, type):
        shown = f"the class '{value.__name__}', which is not decorated with @pl.program"
    elif isinstance(value, (types.FunctionType, types.BuiltinFunctionType, types.MethodType)):
        shown = (f"the function '{value.__name__}' (a @pl.program is a class; a @pl.jit "
                 f"kernel is called directly)")
    elif isinstance(value, np.ndarray) or is_torch(value):
        shown = f"a {'numpy array' if isinstance(value, np.ndarray) else 'torch tensor'} " \
            f"of shape {tuple(value.shape)} (the program comes first, then the arrays)"
    elif isinstance(value, (numbers.Number, bytes, list, tuple, dict, set)):
        shown = f"{_article(type(value).__name__)} ({value!r:.40})"
    elif getattr(value, "__class__", None).__name__ == "JITFunction":
        shown = f"the @pl.jit kernel '{getattr(value, '__name__', '?')}' (call it directly)"
    else:
        return
    raise TypeError(f"{call}: program is {shown}; pass {PROGRAMS}")


def check_config(config: Any, call: str) -> None:
    """A TypeError when ``config`` is not a RunConfig (a platform string, most often)."""
    __tracebackhide__ = True
    if isinstance(config, RunConfig):
        return
    platform = config if isinstance(config, str) else "a2a3sim"
    raise TypeError(
        f"{call}: config must be a RunConfig, got {type(config).__name__} ({config!r:.40}); "
        f"e.g. config=RunConfig(platform='{platform}')"
    )


def _article(noun: str) -> str:
    return f"{'an' if noun[:1] in 'aeiou' else 'a'} {noun}"


def dispatch(
    program_or_compiled: Any, arrays: Sequence[Any], *, config: RunConfig = _DEFAULT,
    outputs_in: bool = False, lease: Callable[[], Any] | None = None, ends_test: bool = True,
) -> Any:
    """`run` with the arrays as one sequence: the door every dispatch passes.

    Returns the `CompiledProgram` when the codegen-only gate holds the run back
    (`codegen_only.held`; ``ends_test`` False: never as a skip, the compat runner's
    ``run(case)``), else the runtime's `Execution`.
    """
    __tracebackhide__ = True
    runtime: Any = None
    unusable: Exception | None = None
    gated = config.codegen_only or codegen_only.gate_on()
    if not gated:  # codegen-only never looks a runtime up
        try:
            runtime = registry.runtime_for(config)
        except Exception as exc:  # noqa: BLE001  (raised after the compile checks)
            unusable = exc
    if program_or_compiled.__class__ is CompiledProgram or isinstance(
        program_or_compiled, (CompiledProgram, str, os.PathLike)
    ):
        compiled = program_or_compiled
    elif runtime is not None and getattr(runtime, "compiles", False):
        compiled = runtime.compile(program_or_compiled, config)
    else:
        compiled = _compile(program_or_compiled, config)
    # --pypto-codegen-only: inside a test, a skip here (`held` is False unless gated)
    if gated and codegen_only.held(compiled, config, ends_test=ends_test):
        if not isinstance(compiled, CompiledProgram):
            raise TypeError("codegen_only needs a program or a CompiledProgram, not a path")
        return compiled
    if unusable is not None:
        raise unusable
    written: list[Any] = []
    for a in arrays:
        if a.__class__ not in _AS_GIVEN:  # torch tensors (or a class not seen yet)
            written = _written_torch(compiled, arrays)
            arrays = tuple([_at_boundary(a) for a in arrays])
            break
    try:
        ran = execute(
            runtime, compiled, arrays, config=config, outputs_in=outputs_in, lease=lease
        )
    finally:
        if written:
            _moved(written)
    if getattr(ran, "arg_dumps", None) and getattr(config, "dump_args", 0):
        _write_arg_dump(ran, config)
    return ran


def _write_arg_dump(ran: Any, config: RunConfig) -> None:
    """The run's argument dump under ``<work dir>/dfx_outputs/args_dump/``: the config's
    ``save_kernels_dir``, else a new ``build_output/<program>_<timestamp>``, as PyPTO's
    (docs/design/scheduling.md §7)."""
    if config.save_kernels_dir:
        dfx = os.path.join(config.save_kernels_dir, "dfx_outputs")
    else:
        dfx = new_dfx_dir(ran.program)
    write_args_dump(ran.arg_dumps, dfx)


def execute(
    runtime: Any,
    compiled: Any,
    arrays: Sequence[Any],
    *,
    config: RunConfig,
    outputs_in: bool = False,
    lease: Callable[[], Any] | None = None,
) -> Any:
    """``runtime.execute`` with the device leased around it where the platform has one
    (module docstring); returns the runtime's `Execution`."""
    if config.device_id is not None or config.execution_mode is not ExecutionMode.ONBOARD:
        return _call(runtime, compiled, arrays, config, outputs_in, config.device_id)
    with (lease or functools.partial(_any_device, config))() as device:
        leased = dataclasses.replace(config, device_id=device)
        return _call(runtime, compiled, arrays, leased, outputs_in, device)


def _call(
    runtime: Any, compiled: Any, arrays: Sequence[Any], config: RunConfig, outputs_in: bool,
    device: int | None,
) -> Any:
    __tracebackhide__ = True
    try:
        return runtime.execute(
            compiled, tuple(arrays), config=config, outputs_in=outputs_in, device=device
        )
    except Exception as exc:
        name = getattr(runtime, "name", type(runtime).__name__)
        if isinstance(exc, MemoryError):  # not a bug of the test: a runtime-error
            raise RuntimeFailure(
                f"runtime '{name}' ran out of memory on {config.platform}: "
                f"{exc or 'MemoryError'}", runtime=name,
                hint="a tensor too big for this host? the simulator holds every tensor in "
                "host memory",
            ) from exc
        if isinstance(exc, PyptoError) or not _on_device(config):
            raise  # the toolchain's own errors carry their class; the simulator's tracebacks help
        where = config.platform if device is None else f"{config.platform} (device {device})"
        raise DeviceFailure(
            f"runtime '{name}' failed on {where}: {type(exc).__name__}: {exc}", runtime=name
        ) from exc


def _on_device(config: RunConfig) -> bool:
    """Whether the cell executes on an NPU (onboard platforms), which is then leased."""
    return config.execution_mode is ExecutionMode.ONBOARD


@contextlib.contextmanager
def _any_device(config: RunConfig) -> Any:
    """Lease any visible NPU (outside the pytest runner, which brings its own lease)."""
    devices = discover_npus()
    if not devices:
        raise DeviceFailure(
            f"cannot run on {config.platform}: no NPU visible to lease (no /dev/davinci<N>; "
            f"PYPTO_DEV_ROOT and ASCEND_RT_VISIBLE_DEVICES narrow them)"
        )
    with DeviceLease.acquire(devices) as held_lease:
        yield held_lease.device_id


_AS_GIVEN: set[type] = {int, float, bool}  # classes `_at_boundary` passes as they are


def _written_torch(compiled: Any, arrays: Sequence[Any]) -> list[Any]:
    """The torch tensors among ``arrays`` the run may write (Out/InOut; every tensor
    when the directions are unknown).  One that requires grad is refused here, before
    the run: the kernel writes it in place, behind autograd's back."""
    params = _entry_args(compiled)
    program = getattr(getattr(compiled, "manifest", None), "program", None) or "the program"
    written = []
    for i, value in enumerate(arrays):
        if not is_torch(value) or not hasattr(value, "requires_grad"):
            continue
        param = params[i] if params is not None and i < len(params) else None
        if param is not None and param.direction not in ("Out", "InOut"):
            continue
        if value.requires_grad:
            what = (f"argument '{param.name}' ({param.direction})" if param is not None
                    else f"argument {i}")
            raise ValueError(
                f"{what} of '{program}' is a torch tensor that requires grad: the kernel "
                f"writes it in place, which autograd cannot see (a later backward would "
                f"use wrong values); pass a tensor that does not require grad: a fresh "
                f"one (torch.empty_like) or its .detach() to write into its data"
            )
        written.append(value)
    return written


def _entry_args(compiled: Any) -> list[Any] | None:
    """The entry's parameters (ArgInfo: name, direction) of an artifact, or None."""
    manifest = getattr(compiled, "manifest", None)
    if manifest is None and isinstance(compiled, (str, os.PathLike)):
        try:
            manifest = read_manifest(compiled)
        except Exception:  # noqa: BLE001  (the runtime reports a bad artifact)
            return None
    args = getattr(manifest, "entry_args", None)
    return list(args) if args is not None else None


def _moved(tensors: Sequence[Any]) -> None:
    """Move the version counter of torch tensors the run wrote through numpy, as an
    in-place torch op does: a graph that saved one then refuses its backward."""
    import torch  # lazy: torch is optional; these tensors exist, so it is loaded

    bump = getattr(torch.autograd.graph, "increment_version", None)
    for t in tensors:
        if t.is_inference():  # inference tensors have no version counter
            continue
        if bump is not None:
            bump(t)
        else:  # pragma: no cover  (torch < 2.1)
            torch._C._increment_version(t)


def _at_boundary(value: Any) -> Any:
    """torch tensors become numpy views of their memory (results written in place)."""
    cls = value.__class__
    if not cls.__module__.startswith("torch"):  # numpy arrays, numbers: as given
        _AS_GIVEN.add(cls)
        return value
    return torch_view(value) if is_torch(value) and hasattr(value, "detach") else value
