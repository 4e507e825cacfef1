# SPDX-License-Identifier: Apache-2.0
"""`IsolatedRuntime`: the numpy simulator in a child process, so a kernel cannot take
the test session down with it.

Selected with ``--pypto-isolate`` (every sim cell), ``@pytest.mark.pypto_isolate``
(one test) or ``RunConfig(runtime="isolated")``.  One child process is kept per
runtime (per pytest process; each xdist worker has its own) and serves one run at a
time (``runtime/child.py``).  What changes against the in-process simulator:

* a child that dies (``os._exit``, a segfault or ``abort()`` in native code, the OOM
  killer) fails only that run: `RuntimeFailure` (``runtime-error``) saying how it
  died (exit code or signal) and which kernel was running, at the ``file:line`` of
  its first statement; the next run gets a fresh child;
* ``--pypto-timeout`` (without it, ``--pypto-isolate-timeout`` or `ISOLATED_TIMEOUT`,
  600 s, for a config with none): the child stops a kernel looping in Python at its loop's
  ``file:line`` (`deadline`); a child that does not answer within the timeout plus a
  grace period (stuck in native code) is killed and the run fails "timed out";
  either way the next run gets a fresh child;
* the caller's Out/InOut arrays are written only when the run succeeded; In arrays
  are only read (they travel pickled; pure Out buffers travel as shape and dtype);
* errors come back as they were raised (class, message, span, notes); the run's task
  record comes back with the outputs (`IsolatedRun.tasks`, ``deps_path()``).

Start method: ``fork`` where the platform has it (a child is ready in a few
milliseconds and inherits the already built artifacts), else ``spawn``;
``bench/bench_runtimes.py`` measures the per-dispatch cost against in-process runs.
Arrays that alias each other (two arguments viewing one buffer) are copied apart by
the pipe: the child sees them as distinct buffers.

The child runs exactly the code the parent holds (docs/design/runtime.md §9): an
artifact in memory (a `CompiledProgram` from a compile or a verified compile-cache
entry) travels over the pipe as its file texts, once per child (the child keeps the
last `HANDED_MAX` it was given and the parent tells it which to forget), so a cache
file edited or deleted on disk after the parent verified it is never what runs.
Only an artifact given as a bare directory is read from disk, by the child, as the
in-process simulator would read it.
"""

from __future__ import annotations

import atexit
import copy
import itertools
import mmap
import multiprocessing
import os
import shutil
import signal
import tempfile
import threading
import warnings
import weakref
from collections import OrderedDict
from collections.abc import Sequence
from multiprocessing.reduction import ForkingPickler
from pathlib import Path
from typing import Any

from pytest_pypto._version import __version__
from pytest_pypto.arch import SIM_PLATFORMS
from pytest_pypto.config import ISOLATED_TIMEOUT
from pytest_pypto.ir.artifact import (
    MANIFEST_NAME,
    ArtifactInMemory,
    CompiledProgram,
    read_manifest,
)
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.child import (
    CRASH_LOG,
    CRUMB_SIZE,
    Blank,
    read_crumb,
    serve,
    unpack_exception,
)
from pytest_pypto.runtime.protocol import RuntimeFailure, compiled_for_another_platform
from pytest_pypto.runtime.records import RecordedRun
from pytest_pypto.runtime.timeout import RunTimedOut

__all__ = ["IsolatedRun", "IsolatedRuntime", "bounded"]

NAME = "isolated"
HANDED_MAX = 64  # in-memory artifacts a child keeps (the least recently used is forgotten)
START_METHOD = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"

_SIGNAL_MEANING = {
    "SIGSEGV": "segmentation fault: native code touched bad memory",
    "SIGBUS": "bus error: native code touched bad memory",
    "SIGABRT": "abort: a failed native assertion or os.abort()",
    "SIGFPE": "arithmetic fault in native code",
    "SIGILL": "illegal instruction in native code",
    "SIGKILL": "killed: the kernel's OOM killer when memory runs out, or another process",
    "SIGTERM": "terminated by another process",
}


def bounded(config: Any) -> Any:
    """``config``, or a copy with the default limit `ISOLATED_TIMEOUT` when it has no
    timeout: a kernel looping forever fails its run instead of hanging the caller."""
    if config.timeout is not None:
        return config
    config = copy.copy(config)
    config.timeout = ISOLATED_TIMEOUT
    return config


def _grace(timeout: float) -> float:
    """How long the parent waits past ``timeout`` for the child's own alarm to answer."""
    return 2.0 + 0.1 * timeout  # generous: a loaded machine may deschedule the child


class IsolatedRun(RecordedRun):
    """What `IsolatedRuntime.execute` returns (an `Execution`, like the simulator's SimRun)."""

    def __init__(
        self, *, program: str, platform: str, outputs: dict[str, Any], returns: tuple[Any, ...],
        reply: dict[str, Any], config: Any,
    ) -> None:
        self.program = program
        self.platform = platform
        self.outputs = outputs  # Out/InOut entry params by name (the caller's arrays)
        self.returns = returns
        self.record: dict[str, Any] = reply["record"]
        self.war_hazards: list[dict[str, Any]] = reply["war_hazards"]
        self.kernel_seconds: float = reply["kernel_seconds"]
        self.arg_dumps = reply.get("arg_dumps", [])
        self.uninitialized: str = config.uninitialized
        self.child_pid: int = reply["pid"]
        self._config = config
        self._deps_path = Path(reply["deps_path"]) if reply["deps_path"] else None

    def __repr__(self) -> str:
        return (
            f"<IsolatedRun {self.program} on {self.platform}: {len(self.tasks)} tasks, "
            f"outputs {sorted(self.outputs)}>"
        )


class _Child:
    """One child process, its pipe and its breadcrumb mapping."""

    def __init__(self, root: Path, serial: int, method: str) -> None:
        ctx = multiprocessing.get_context(method)
        runs = self.runs = root / f"child-{serial}"
        runs.mkdir()
        crumb_path = runs / "crumb"
        crumb_path.write_bytes(b"\0" * CRUMB_SIZE)
        with open(crumb_path, "r+b") as f:
            self.crumbs = mmap.mmap(f.fileno(), CRUMB_SIZE)
        self.conn, child_end = ctx.Pipe()
        # tokens of the in-memory artifacts this child holds, least recently used first
        self.handed: OrderedDict[int, None] = OrderedDict()
        forked = method == "fork"
        self.process = ctx.Process(
            target=serve,
            args=(child_end, str(crumb_path), str(runs), self.conn if forked else None),
            name=f"pypto-isolated-{serial}",
            daemon=True,
        )
        with warnings.catch_warnings():
            # Python >= 3.12 warns when a multi-threaded process forks (xdist workers have
            # an IO thread).  The child runs only the simulator, on the forking thread, and
            # takes no lock another thread of the parent could hold.
            warnings.filterwarnings("ignore", "This process .* is multi-threaded",
                                    DeprecationWarning)
            self.process.start()
        child_end.close()

    def ask(self, request: bytes, limit: float | None) -> Any:
        """Send the pickled ``request`` and wait up to ``limit`` seconds (None: no limit)
        for the reply.

        Raises `_Died` when the child died, `_Silent` when it did not answer in time.
        """
        try:
            self.conn.send_bytes(request)
        except (BrokenPipeError, ConnectionResetError, EOFError):
            raise _Died() from None
        try:
            if not self.conn.poll(limit):
                raise _Silent()
            return self.conn.recv()
        except (EOFError, ConnectionResetError, OSError):
            raise _Died() from None

    def source(self, origin: ArtifactInMemory | Path) -> tuple[Any, ...]:
        """What a request names its artifact by: ``("dir", path)``, or ``("memory",
        token, the artifact or None when this child holds it already, tokens to forget)``."""
        if not isinstance(origin, ArtifactInMemory):
            return ("dir", str(origin))
        token = _token(origin)
        if token in self.handed:
            self.handed.move_to_end(token)
            return ("memory", token, None, ())
        self.handed[token] = None
        forget = []
        while len(self.handed) > HANDED_MAX:
            forget.append(self.handed.popitem(last=False)[0])
        return ("memory", token, origin, tuple(forget))

    def last_crumb(self) -> tuple[str, Any] | None:
        try:
            return read_crumb(self.crumbs)
        except (ValueError, OSError):
            return None

    def how_it_died(self) -> str:
        self.process.join(5)
        code = self.process.exitcode
        if code is None:
            self.kill()
            return "stopped answering (its pipe closed) and was killed"
        if code < 0:
            try:
                name = signal.Signals(-code).name
            except ValueError:
                name = f"signal {-code}"
            meaning = _SIGNAL_MEANING.get(name)
            return f"was killed by signal {name}" + (f" ({meaning})" if meaning else "")
        return f"exited with code {code}"

    def crash_stack(self, frames: int = 8) -> str:
        """The Python stack faulthandler wrote when a fatal signal hit the child ("": none)."""
        try:
            text = (self.runs / CRASH_LOG).read_text(errors="replace")
        except OSError:
            return ""
        runtime_dir = os.path.dirname(__file__)
        lines = []
        for line in text.splitlines():  # innermost first: the frames above our runtime's
            if line.startswith("  File "):
                if line[8:].startswith(runtime_dir):
                    break
                lines.append(line)
        if not lines:
            return ""
        shown = "\n".join(lines[:frames]) + ("\n  ..." if len(lines) > frames else "")
        return f"the child's Python stack at the signal (most recent call first):\n{shown}"

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        self.process.join(5)

    def close(self) -> None:
        try:
            self.conn.send(None)
        except (OSError, EOFError):
            pass
        self.process.join(2)
        if self.process.is_alive():
            self.kill()
        self.conn.close()
        self.crumbs.close()


class _Died(Exception):
    pass


class _Silent(Exception):
    pass


class IsolatedRuntime:
    """Runs sim artifacts in a child process (module docstring); a `Runtime`."""

    name = NAME
    compiles = False

    def __init__(self, *, start_method: str = START_METHOD) -> None:
        self.version: str = __version__
        self.platforms: tuple[str, ...] = SIM_PLATFORMS
        self.start_method = start_method  # multiprocessing's: "fork", "forkserver", "spawn"
        self._lock = threading.Lock()
        self._child: _Child | None = None
        self._root: Path | None = None
        self._serial = 0
        self.children_started = 0  # how many children this runtime started (tests, bench)

    def __repr__(self) -> str:
        state = f"child pid {self._child.process.pid}" if self._child is not None else "no child"
        return f"IsolatedRuntime({state})"

    # -- the protocol ---------------------------------------------------------------------
    def execute(
        self,
        artifact: Any,
        arrays: Sequence[Any],
        *,
        config: Any,
        outputs_in: bool = False,
        device: int | None = None,
    ) -> IsolatedRun:
        """Run ``artifact`` in the child with ``arrays``; Out/InOut written back on success."""
        import numpy as np  # lazy: numpy (the registry constructs this runtime)

        origin, manifest = _artifact_of(artifact)
        self._refuse_other_platforms(manifest, config)
        config = bounded(config)
        arrays = tuple(arrays)
        params = manifest.entry_args
        sent = list(arrays)
        if len(arrays) == len(params) and not outputs_in:
            for i, (param, value) in enumerate(zip(params, arrays)):
                if param.kind == "tensor" and param.direction == "Out" and (
                    value.__class__ is np.ndarray
                ):
                    sent[i] = Blank(value.shape, value.dtype)
        what = f"'{manifest.program}' on {config.platform}"
        limit = config.timeout + _grace(config.timeout) if config.timeout else None
        with self._lock:
            child = self._ready_child()
            handed = dict(child.handed)
            try:
                request = ForkingPickler.dumps((child.source(origin), config.platform, config,
                                                sent, outputs_in))
            except Exception as exc:
                child.handed = OrderedDict(handed)  # nothing was sent
                raise RuntimeFailure(
                    f"{what}: the arguments cannot be sent to the isolated child process "
                    f"({type(exc).__name__}: {exc})",
                    runtime=NAME,
                    hint="pass numpy arrays (or CPU torch tensors) and Python scalars",
                ) from exc
            try:
                status, reply = child.ask(request, limit)
            except _Died:
                failure = self._death(child, what)
                self._discard()
                raise failure from None
            except _Silent:
                failure = self._silence(child, what, config.timeout)
                self._discard()
                raise failure from None
            except BaseException:  # Ctrl-C while waiting: the child's state is unknown
                child.kill()
                self._discard()
                raise
            if status == "error":
                exc = unpack_exception(reply)
                if _poisons_child(exc):
                    self._discard()
                raise _for_parent(exc, what)
        for message, category in reply["warnings"]:  # before the copy-back, as in-process
            warnings.warn(message, category, stacklevel=2)
        for index, value in reply["written"]:
            np.copyto(arrays[index], value)
        outputs = {params[i].name: arrays[i] for i, _ in reply["written"]}
        return IsolatedRun(
            program=manifest.program,
            platform=config.platform,
            outputs=outputs,
            returns=tuple(arrays[i] for i in manifest.entry_returns),
            reply=reply,
            config=config,
        )

    def close(self) -> None:
        """Stop the child and remove its records (idempotent)."""
        with self._lock:
            self._discard()
            if self._root is not None:
                shutil.rmtree(self._root, ignore_errors=True)
                self._root = None

    # -- children ---------------------------------------------------------------------------
    @property
    def child_pid(self) -> int | None:
        """The pid of the current child (None: none running)."""
        return self._child.process.pid if self._child is not None else None

    def _ready_child(self) -> _Child:
        child = self._child
        if child is not None and not child.process.is_alive():
            self._discard()
            child = None
        if child is None:
            if self._root is None:
                self._root = Path(tempfile.mkdtemp(prefix="pypto-isolated-"))
                atexit.register(shutil.rmtree, self._root, True)
            self._serial += 1
            child = self._child = _Child(self._root, self._serial, self.start_method)
            self.children_started += 1
        return child

    def _discard(self) -> None:
        child, self._child = self._child, None
        if child is not None:
            child.close()

    def _refuse_other_platforms(self, manifest: Any, config: Any) -> None:
        platform = config.platform
        if platform not in self.platforms:
            raise RuntimeFailure(
                f"the isolated runtime runs the simulator platforms "
                f"({', '.join(self.platforms)}), not '{platform}'",
                runtime=NAME,
                hint="onboard cells need an onboard runtime (--pypto-runtime)",
            )
        if manifest.platform != platform:
            raise compiled_for_another_platform(NAME, manifest.program, manifest.platform,
                                                platform)

    # -- failures ---------------------------------------------------------------------------
    def _death(self, child: _Child, what: str) -> RuntimeFailure:
        how = child.how_it_died()
        where, span = _running(child)
        stack = child.crash_stack()
        return RuntimeFailure(
            f"{what}: the isolated child process {how}{where}",
            span=span,
            notes=(stack,) if stack else (),
            runtime=NAME,
            hint="the next run starts a fresh child; run this test without --pypto-isolate "
            "to debug it in-process",
        )

    def _silence(self, child: _Child, what: str, timeout: float) -> RuntimeFailure:
        where, span = _running(child)
        child.kill()
        return RunTimedOut(
            f"{what}: timed out after {timeout:g} s (--pypto-timeout {timeout:g}); the "
            f"isolated child did not answer and was killed{where}",
            span=span,
            runtime=NAME,
            hint="stuck in native code (a numpy call that never returns?); the next run "
            "starts a fresh child",
        )


def _running(child: _Child) -> tuple[str, Any]:
    crumb = child.last_crumb()
    if crumb is None:
        return "", None
    name, span = crumb
    at = f" ({span.file}:{span.line})" if span is not None else ""
    if name:
        return f" while running kernel '{name}'{at}", span
    return f" while staging or orchestrating{at}", span


def _poisons_child(exc: BaseException) -> bool:
    """A timeout or an exhausted memory may leave the child half-way: start a fresh one."""
    return isinstance(exc, (MemoryError, RunTimedOut))


def _for_parent(exc: BaseException, what: str) -> BaseException:
    if isinstance(exc, MemoryError):
        failure = RuntimeFailure(
            f"{what}: the isolated child process ran out of memory (MemoryError)",
            runtime=NAME,
            hint="the next run starts a fresh child",
        )
        failure.__cause__ = exc
        return failure
    return exc


_manifests: dict[tuple[str, int, int], Any] = {}
_tokens: weakref.WeakKeyDictionary[ArtifactInMemory, int] = weakref.WeakKeyDictionary()
_next_token = itertools.count(1)


def _token(memory: ArtifactInMemory) -> int:
    """A number naming ``memory`` to the children for as long as it lives."""
    token = _tokens.get(memory)
    if token is None:
        token = _tokens[memory] = next(_next_token)
    return token


def _artifact_of(artifact: Any) -> tuple[ArtifactInMemory | Path, Any]:
    """(what the child is handed: the in-memory artifact, else its directory; manifest)
    of a CompiledProgram, LoadedArtifact or artifact directory."""
    if isinstance(artifact, CompiledProgram):
        if artifact.memory is not None:
            return artifact.memory, artifact.manifest
        return Path(artifact.artifact_dir()), artifact.manifest
    if hasattr(artifact, "manifest") and hasattr(artifact, "origin"):  # LoadedArtifact
        origin = artifact.origin
        return (origin if isinstance(origin, ArtifactInMemory) else Path(origin),
                artifact.manifest)
    directory = Path(os.fspath(artifact))
    try:
        st = os.stat(directory / MANIFEST_NAME)
    except FileNotFoundError:
        raise SimulationError(
            f"{directory} is not an artifact directory: {MANIFEST_NAME} is missing",
            hint="pass the CompiledProgram returned by pytest_pypto.compile(...)",
        ) from None
    key = (str(directory.resolve()), st.st_mtime_ns, st.st_size)
    manifest = _manifests.get(key)
    if manifest is None:
        try:
            manifest = _manifests[key] = read_manifest(directory)
        except ValueError as exc:
            raise SimulationError(f"cannot load the artifact: {exc}") from None
    return directory, manifest
