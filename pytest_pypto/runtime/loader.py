"""Load an artifact: manifest, generated kernels and orchestration, built once.

Generated sources follow the ABIs documented in `pytest_pypto.ir.artifact`.  An
artifact in memory (`ArtifactInMemory`, what a compile returns) is built from its
code objects without touching the file system, once per binder (kept on the
artifact).  A directory is read, compiled and built once per directory, hash of the
manifest's bytes (a rewritten artifact is reloaded) and binder.  Every later run of
the same artifact reuses the built kernels.
"""

from __future__ import annotations

import functools
import hashlib
import os
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import CodeType
from typing import Any

from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.artifact import (
    MANIFEST_NAME,
    ArtifactInMemory,
    CompiledProgram,
    Manifest,
    read_manifest,
)
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.nodes import Span
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.runtime.locate import scalars_of, spans_of

Binder = Callable[[str], Callable[..., Any]]


def registry_bind(op: str) -> Callable[..., Any]:
    """The default op binder: the registry entry's numpy semantics via `ir.apply.apply`.

    Memory ops (``execute``) take their operands unchanged, so they are bound to the
    entry's ``execute`` directly, which is what `apply` would call; value ops
    (``compute``) go through `apply` for widening, rounding and poisoning.
    """
    try:
        spec = REGISTRY[op]
    except KeyError:
        raise SimulationError(
            f"generated code binds op '{op}', which the op registry does not have",
            hint="the artifact was produced by a different toolchain version; recompile it",
        ) from None
    if spec.execute is not None:
        return spec.execute
    return functools.partial(apply, spec)


@dataclass
class Kernel:
    """A built kernel plus what dispatch needs from its manifest entry."""

    name: str
    func_id: int
    core_type: str
    fn: Callable[..., Any]
    arg_names: tuple[str, ...]
    directions: tuple[str, ...]
    kinds: tuple[str, ...]
    dtypes: tuple[str, ...]
    shapes: tuple[tuple[int | str, ...], ...]
    returns: tuple[int, ...]
    path: str = ""  # generated source, as tracebacks name it
    spans: dict[int, Span] = field(default_factory=dict)  # generated line -> user span
    # generated line -> ((user name, local), ...) of the Scalars it reads
    scalars: dict[int, tuple[tuple[str, str], ...]] = field(default_factory=dict)


@dataclass
class LoadedArtifact:
    """An artifact ready to run: manifest, built kernels and the orchestration's ``make``.

    ``origin`` is what it was built from: an in-memory artifact or a directory.
    ``digest`` is the sha256 of a directory's manifest ("" in memory).
    """

    origin: ArtifactInMemory | Path
    manifest: Manifest
    digest: str
    kernels: dict[str, Kernel]
    make_orchestration: Callable[[Any], Callable[..., Any]]
    orchestration_path: str = ""
    orchestration_spans: dict[int, Span] = field(default_factory=dict)
    orchestration_scalars: dict[int, tuple[tuple[str, str], ...]] = field(default_factory=dict)

    @property
    def directory(self) -> Path:
        """The artifact's directory (an in-memory artifact is written there now, once)."""
        origin = self.origin
        return origin.directory if isinstance(origin, ArtifactInMemory) else origin


_lock = threading.Lock()
_by_content: dict[tuple[str, str, Binder], LoadedArtifact] = {}
_by_stat: dict[tuple[str, int, int, int], str] = {}
_manifest_paths: dict[str, str] = {}


def load_artifact(
    source: ArtifactInMemory | CompiledProgram | LoadedArtifact | str | os.PathLike[str],
    bind: Binder = registry_bind,
) -> LoadedArtifact:
    """The built artifact ``source`` is or names, for ``bind``.

    A `CompiledProgram` or `LoadedArtifact` is built from the in-memory artifact it
    holds (else from its directory); a directory is cached per directory, manifest
    hash and binder.
    """
    if isinstance(source, LoadedArtifact):
        source = source.origin
    elif isinstance(source, CompiledProgram):
        source = source.memory if source.memory is not None else source.artifact_dir()
    if isinstance(source, ArtifactInMemory):
        return _load_memory(source, bind)
    where = os.fspath(source)
    manifest_path = _manifest_paths.get(where)
    if manifest_path is None:
        manifest_path = _manifest_paths[where] = os.path.join(
            os.path.realpath(where), MANIFEST_NAME
        )
    try:
        st = os.stat(manifest_path)
    except FileNotFoundError:
        raise SimulationError(
            f"{where} is not an artifact directory: {MANIFEST_NAME} is missing",
            hint="pass the CompiledProgram returned by pytest_pypto.compile(...)",
        ) from None
    stat_key = (manifest_path, st.st_mtime_ns, st.st_size, st.st_ino)
    digest = _by_stat.get(stat_key)
    if digest is None:
        digest = hashlib.sha256(Path(manifest_path).read_bytes()).hexdigest()
        _by_stat[stat_key] = digest
    content_key = (manifest_path, digest, bind)
    loaded = _by_content.get(content_key)
    if loaded is None:
        with _lock:
            loaded = _by_content.get(content_key)
            if loaded is None:
                loaded = _build(Path(manifest_path).parent, digest, bind)
                _by_content[content_key] = loaded
    return loaded


def _load_memory(memory: ArtifactInMemory, bind: Binder) -> LoadedArtifact:
    loaded = memory.built.get(bind)
    if loaded is None:
        with _lock:
            loaded = memory.built.get(bind)
            if loaded is None:
                loaded = memory.built[bind] = _assemble(
                    memory, memory.manifest, "", bind,
                    lambda rel, _what: memory.code(rel), memory.home,
                )
    return loaded


def clear_cache() -> None:
    """Forget every artifact built from a directory (tests; long sessions rewriting
    artifacts in place).  In-memory artifacts keep theirs: they cannot change."""
    with _lock:
        _by_content.clear()
        _by_stat.clear()
        _manifest_paths.clear()


def _build(directory: Path, digest: str, bind: Binder) -> LoadedArtifact:
    try:
        manifest = read_manifest(directory)
    except ValueError as exc:
        raise SimulationError(f"cannot load the artifact: {exc}") from None
    return _assemble(
        directory, manifest, digest, bind,
        lambda rel, what: _read_code(directory, rel, what), directory,
    )


def _read_code(directory: Path, rel: str, what: str) -> CodeType:
    path = directory / rel
    try:
        source = path.read_bytes()
    except OSError as exc:
        raise SimulationError(f"cannot read generated source of {what}: {exc}") from None
    return compile(source, str(path), "exec")  # real path: tracebacks show generated lines


def _assemble(
    origin: ArtifactInMemory | Path,
    manifest: Manifest,
    digest: str,
    bind: Binder,
    code_of: Callable[[str, str], CodeType],
    directory: Path,
) -> LoadedArtifact:
    """Run each generated module's ``make``: kernels bound by ``bind``, the orchestration."""
    kernels = {}
    for info in manifest.kernels:
        path = directory / info.source
        make, spans, scalars = _load_make(code_of, info.source, path, f"kernel '{info.name}'")
        fn = make(bind)
        if not callable(fn):
            raise SimulationError(f"{path}: make(bind) returned {fn!r}, not a kernel function")
        kernels[info.name] = Kernel(
            name=info.name,
            func_id=info.func_id,
            core_type=info.core_type,
            fn=fn,
            arg_names=tuple(a.name for a in info.args),
            directions=tuple(a.direction for a in info.args),
            kinds=tuple(a.kind for a in info.args),
            dtypes=tuple(a.dtype for a in info.args),
            shapes=tuple(tuple(a.shape) for a in info.args),
            returns=tuple(info.returns),
            path=str(path),
            spans=spans,
            scalars=scalars,
        )
    orch_path = directory / manifest.orchestration
    make_orch, orch_spans, orch_scalars = _load_make(
        code_of, manifest.orchestration, orch_path, "the orchestration"
    )
    return LoadedArtifact(
        origin, manifest, digest, kernels, make_orch, str(orch_path), orch_spans, orch_scalars
    )


def _load_make(
    code_of: Callable[[str, str], CodeType], rel: str, path: Path, what: str
) -> tuple[Callable[[Any], Any], dict[int, Span], dict[int, tuple[tuple[str, str], ...]]]:
    code = code_of(rel, what)
    namespace: dict[str, Any] = {"__name__": f"pypto_generated.{path.stem}", "__file__": str(path)}
    exec(code, namespace)
    make = namespace.get("make")
    if not callable(make):
        raise SimulationError(f"{path}: generated source of {what} defines no make() function")
    return make, spans_of(namespace), scalars_of(namespace)
