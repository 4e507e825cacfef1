# SPDX-License-Identifier: Apache-2.0
"""The child side of the process-isolating runtime (``runtime/isolated.py``).

The child serves one request at a time over its pipe: a run request carries the
artifact (its file texts, the first time this child is given an in-memory artifact;
its token after that; or a directory to read), the platform, the cell's `RunConfig`, the entry arguments
(arrays travel pickled; pure Out buffers travel as a `Blank` shape and dtype) and
``outputs_in``.  It runs the simulator's `Worker` under the config's
``--pypto-timeout`` (`deadline`, so a kernel looping in Python is stopped at its
loop's ``file:line``) and answers with the Out/InOut arrays and the task record,
or with the exception (its class, message, span and notes travel as they are;
what cannot be pickled travels as its rendered text).

A fatal signal (segfault, abort) makes `faulthandler` write the child's Python stack
to ``crash.log`` in its run directory, which the parent quotes.  Before each task it
writes a breadcrumb (the kernel's name and the user's
``file:line`` of its first statement) into a small shared file mapping, so the
parent can say which kernel was running when the child died.
"""

from __future__ import annotations

import faulthandler
import mmap
import os
import pickle
import signal
import traceback
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_pypto.ir.artifact import CompiledProgram
from pytest_pypto.ir.errors import PyptoError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.runtime import records
from pytest_pypto.runtime.loader import load_artifact
from pytest_pypto.runtime.precise import precise_bind
from pytest_pypto.runtime.protocol import RuntimeFailure
from pytest_pypto.runtime.timeout import deadline

__all__ = [
    "CRASH_LOG", "CRUMB_SIZE", "Blank", "pack_exception", "read_crumb", "serve",
    "unpack_exception",
]

CRUMB_SIZE = 512  # bytes: "<kernel name>\0<file>\0<line>\0<col>"
CRASH_LOG = "crash.log"  # in the child's run directory: faulthandler's dump of a fatal signal


@dataclass(frozen=True)
class Blank:
    """A pure Out buffer the child allocates itself (its contents are never read)."""

    shape: tuple[int, ...]
    dtype: Any

    def make(self) -> Any:
        import numpy as np  # lazy: numpy (the parent imports this module numpy-free)

        return np.empty(self.shape, self.dtype)


# -- exceptions across the pipe ---------------------------------------------------------


def pack_exception(exc: BaseException) -> tuple[str, Any]:
    """``("exc", (class, args, attributes, child traceback))``, or ``("text", rendered)``
    when the exception cannot be pickled."""
    state = {k: v for k, v in vars(exc).items() if k != "__traceback__"}
    where = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    payload = (type(exc), exc.args, state, where)
    try:
        blob = pickle.dumps(payload)
        pickle.loads(blob)  # a class the parent cannot rebuild is sent as text instead
    except Exception:
        return ("text", (type(exc).__name__, str(exc), where))
    return ("exc", blob)


def unpack_exception(packed: tuple[str, Any]) -> BaseException:
    """The exception of `pack_exception`, rebuilt in the parent (its class, message,
    span, hint and notes as they were; Python exceptions also get the child's
    traceback as a note)."""
    kind, body = packed
    if kind == "exc":
        cls, args, state, where = pickle.loads(body)
        try:
            exc = cls.__new__(cls, *args)
            exc.args = args
            exc.__dict__.update(state)
        except Exception:
            exc = None
        if exc is not None:
            if not isinstance(exc, PyptoError) and hasattr(exc, "add_note"):
                exc.add_note(f"raised in the isolated runtime's child process:\n{where}")
            return exc
        name, text = cls.__name__, str(args[0]) if args else cls.__name__
    else:
        name, text, where = body
    return RuntimeFailure(
        f"{name} in the isolated runtime's child process: {text}",
        runtime="isolated",
        notes=(f"child traceback:\n{where}",),
    )


# -- breadcrumbs ------------------------------------------------------------------------


def _crumb_bytes(name: str, span: Any) -> bytes:
    where = (span.file, str(span.line), str(span.col)) if span is not None else ("", "", "")
    data = "\0".join((name, *where)).encode("utf-8", "replace")[: CRUMB_SIZE - 1]
    return data.ljust(CRUMB_SIZE, b"\0")


def read_crumb(mapping: mmap.mmap) -> tuple[str, Any] | None:
    """``(kernel name, Span or None)`` the child wrote last (None: nothing yet)."""
    raw = bytes(mapping[:CRUMB_SIZE]).rstrip(b"\0")
    if not raw:
        return None
    parts = raw.decode("utf-8", "replace").split("\0") + ["", "", ""]
    name, file, line, col = parts[:4]
    span = Span(file, int(line), int(col or 1)) if file and line.isdigit() else None
    return name, span


def first_span(spans: dict[int, Any]) -> Any:
    """The user span of a generated module's first mapped line (its first statement)."""
    return spans[min(spans)] if spans else None


def _crumbed(fn: Callable[..., Any], crumb: bytes, mapping: mmap.mmap) -> Callable[..., Any]:
    def run_with_crumb(*args: Any, **kwargs: Any) -> Any:
        mapping[:CRUMB_SIZE] = crumb
        return fn(*args, **kwargs)

    return run_with_crumb


# -- the loop ---------------------------------------------------------------------------


def serve(conn: Any, crumb_path: str, run_root: str, parent_end: Any = None) -> None:
    """The child's main loop (the target of the child process)."""
    if parent_end is not None:  # forked: drop the parent's end, so its death is our EOF
        parent_end.close()
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    records.temp_root = Path(run_root)  # records of failed runs: the parent cleans up
    with open(crumb_path, "r+b") as f:
        mapping = mmap.mmap(f.fileno(), CRUMB_SIZE)
    # A fatal signal's Python stack goes to a log the parent quotes, not to the terminal.
    crash_log = open(os.path.join(run_root, CRASH_LOG), "w")  # noqa: SIM115 (open till exit)
    faulthandler.enable(crash_log, all_threads=False)
    workers: dict[str, Any] = {}
    crumbed: weakref.WeakValueDictionary[int, Any] = weakref.WeakValueDictionary()
    handed: OrderedDict[int, Any] = OrderedDict()  # token -> CompiledProgram (in memory)
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):
            return
        if request is None:
            return
        try:
            reply = ("ok", _run(request, workers, crumbed, handed, mapping))
        except BaseException as exc:  # noqa: BLE001 (everything goes back to the parent)
            reply = ("error", pack_exception(exc))
        try:
            conn.send(reply)
        except Exception as exc:  # an unpicklable result: say so instead of dying
            conn.send(("error", pack_exception(exc)))


def _leave_crumbs(loaded: Any, crumbed: weakref.WeakValueDictionary, mapping: mmap.mmap) -> None:
    """Wrap each built kernel of ``loaded`` once, so every task leaves a breadcrumb."""
    if crumbed.get(id(loaded)) is loaded:
        return
    for kernel in loaded.kernels.values():
        crumb = _crumb_bytes(kernel.name, first_span(kernel.spans))
        kernel.fn = _crumbed(kernel.fn, crumb, mapping)
    crumbed[id(loaded)] = loaded  # (dropped with it: a reused id is another object)


def _artifact(source: tuple, handed: OrderedDict) -> Any:
    """What the worker loads: the in-memory artifact the parent handed over (kept by its
    token), or a directory path."""
    if source[0] == "dir":
        return source[1]
    _, token, memory, forget = source
    for old in forget:
        handed.pop(old, None)
    if memory is not None:
        handed[token] = CompiledProgram(memory=memory)
    handed.move_to_end(token)
    return handed[token]


def _run(
    request: tuple, workers: dict, crumbed: weakref.WeakValueDictionary, handed: OrderedDict,
    mapping: mmap.mmap,
) -> dict[str, Any]:
    from pytest_pypto.runtime.staging import entry_span  # lazy: numpy, child-side only
    from pytest_pypto.runtime.worker import Worker  # lazy: numpy, child-side only

    source, platform, config, arrays, outputs_in = request
    artifact = _artifact(source, handed)  # first: the parent counts it as held from now on
    worker = workers.get(platform)
    if worker is None:
        worker = workers[platform] = Worker(platform)
    loaded = worker.load(artifact)
    _leave_crumbs(loaded, crumbed, mapping)
    if getattr(config, "precise", False):  # the worker runs the precise-bound build
        _leave_crumbs(load_artifact(loaded, precise_bind), crumbed, mapping)
    manifest = loaded.manifest
    mapping[:CRUMB_SIZE] = _crumb_bytes("", entry_span(manifest))  # staging, orchestration
    arrays = [a.make() if isinstance(a, Blank) else a for a in arrays]
    what = f"'{manifest.program}' on {platform}"
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with deadline(config.timeout, what, runtime="isolated"):
            run = worker.run(loaded, *arrays, config=config, outputs_in=outputs_in)
    written = [
        (i, arrays[i]) for i, a in enumerate(manifest.entry_args)
        if a.kind == "tensor" and a.direction != "In"
    ]
    return {
        "written": written,
        "record": run.record,
        "deps_path": _kept_deps(run) if config.save_kernels or config.trace else None,
        "war_hazards": run.war_hazards,
        "kernel_seconds": run.kernel_seconds,
        "arg_dumps": run.arg_dumps,
        "warnings": [(w.message, w.category) for w in caught],
        "pid": os.getpid(),
    }


def _kept_deps(run: Any) -> str | None:
    """Where the run kept its deps.json; None when it could not be written (the worker
    already warned, and the warning travels back with the result)."""
    try:
        return str(run.deps_path())
    except OSError:
        return None
