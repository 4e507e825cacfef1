"""The compile cache (docs/design/plugin.md §9): artifacts stored by what they are made of.

The key is a sha256 over everything that can change an artifact: the program's
printed IR, where it came from (file, span and source text: listings and run-time
errors point at the user's lines), the tensor specs of a case, the platform, the
artifact-changing compile options (``dump_passes``, batched loops), the toolchain
version and a digest of the toolchain's sources (`harness.toolchain`).  Options that only choose where output goes (``save_kernels_dir``) are not
in the key; the runner re-applies them on every compile, hit or miss.

An entry is a directory ``<root>/<key>/`` holding ``artifact/`` (what the compiler
wrote) and ``entry.json`` (its own key, what the key hashes, sha256 of every
artifact file, the warnings the compile emitted, replayed on a hit; see
`harness.cache_entry`).  It is built in a temporary directory inside the root and
published with one ``os.rename``: a reader sees a whole entry or none.  A per-key
file lock makes concurrent xdist workers compile a kernel once; the loser of any
remaining race uses the winner's entry.  A hit is served only after the entry
passes `cache_entry.verify` (filed under this key, compiled from this IR for this
platform and toolchain, every field of the right type, files unchanged, generated
code loadable); a damaged entry is moved aside atomically, deleted, counted as a
miss and a damaged entry, and rebuilt.  A root that cannot be written turns the
cache off (the plugin warns once).

A damaged cache is never worse than no cache: entry files are opened without
following symlinks or blocking (an ``entry.json`` that is a FIFO is damage, not a
hang); an entry this process verified stays served from memory when its directory
turns unreadable; a damaged entry that cannot be moved aside is counted once and
warned about once (naming it and the OS error), and only its key bypasses the
cache (compiled in memory, memoized); ``.tmp-*``/``.trash-*`` directories older
than `STALE_SECONDS` whose key nobody holds locked are removed on a process's
first lookup.

What a lookup returns is an in-memory artifact (`ir.artifact.ArtifactInMemory`): a
miss is compiled in memory and then written as the entry; a hit from disk is read
once (verification reads every file; the artifact is built from those bytes); a hit
this process already served is the same object again, its kernels already built.

The compiler is imported on the first miss only: a hit never loads it.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import stat
import tempfile
import time
import warnings
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pytest_pypto._version import __version__
from pytest_pypto.harness.cache_entry import (
    ARTIFACT,
    ENTRY_FILE,
    DamagedEntry,
    Found,
    checksums,
    entry_record,
    replay,
    verify,
    warning_record,
)
from pytest_pypto.harness.cache_entry import sha as _sha
from pytest_pypto.harness.toolchain import toolchain_digest
from pytest_pypto.ir.printer import print_program
from pytest_pypto.language.deferred import DeferredProgram

__all__ = ["ENTRY_FILE", "STALE_SECONDS", "CompileCache", "cache_key"]

# A .tmp-*/.trash-* directory this old (seconds since its last change), its key not
# locked, is debris of a process that died while building or discarding an entry.
STALE_SECONDS = 600.0
_LOCK_FLAGS = os.O_RDWR | os.O_CREAT | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


class _Unmovable(Exception):
    """A damaged entry that cannot be moved aside (the message: the OS error)."""


def _spec_text(spec: Any) -> list[Any]:
    """The artifact-relevant part of a TensorSpec/ScalarSpec (never its data)."""
    dtype = getattr(spec.dtype, "name", str(spec.dtype))
    if hasattr(spec, "shape"):
        return ["tensor", spec.name, [int(d) for d in spec.shape], dtype, bool(spec.is_output)]
    return ["scalar", spec.name, dtype]


# Printing a program is the costly part of a key: once per program object.  Programs
# are immutable once parsed (the compiler works on a copy, `ir.clone`).
_program_text: weakref.WeakKeyDictionary[Any, dict[str, Any]] = weakref.WeakKeyDictionary()


# compiler.batching.ENV_VAR; read here, not imported: importing the compiler costs a
# hit ~10 ms.  ut/harness/test_cache.py checks both readings agree.
_BATCH_ENV = "PYPTO_BATCH_LOOPS"


def _batching_by_env() -> bool:
    """`compiler.batching.enabled_by_env()`, without importing the compiler."""
    return os.environ.get(_BATCH_ENV, "1").strip().lower() not in ("0", "false", "off", "no")


def cache_key(
    program: Any,
    config: Any,
    *,
    specs: Sequence[Any] = (),
    batch_loops: bool | None = None,
) -> str:
    """The content address of ``program`` compiled for ``config`` (hex sha256)."""
    return _keyed(program, config, specs=specs, batch_loops=batch_loops)[0]


def _keyed(
    program: Any, config: Any, *, specs: Sequence[Any], batch_loops: bool | None
) -> tuple[str, dict[str, Any]]:
    """The key and what it hashes (JSON values; an entry records them as ``inputs``)."""
    if isinstance(program, DeferredProgram):
        raise program.error()  # its parse error, not a key of a program that is not there
    if batch_loops is None:
        batch_loops = _batching_by_env()
    try:
        text = _program_text.get(program)
    except TypeError:  # not weak-referenceable
        text = None
    if text is None:
        span = getattr(program, "span", None)
        source = "\n".join(getattr(program, "source_lines", ()))
        text = {
            "ir": print_program(program),
            "file": str(getattr(program, "file", "")),
            "span": [span.line, span.col] if span is not None else None,
            "source": _sha(source.encode()),
        }
        with contextlib.suppress(TypeError):
            _program_text[program] = text
    parts = {
        **text,
        "specs": [_spec_text(s) for s in specs],
        "platform": config.platform,
        "dump_passes": bool(config.dump_passes),
        "batch_loops": bool(batch_loops),
        "version": __version__,
        "toolchain": toolchain_digest(),  # (the sources: harness/toolchain.py)
    }
    if config.assembler_plans_memory:  # refuses some pl.MemRef programs (memref_slots.py)
        parts["assembler_plans_memory"] = True
    accepted = config.accepted_without_effect()
    if accepted:  # recorded in the artifact's manifest
        parts["accepted_without_effect"] = {k: repr(v) for k, v in accepted.items()}
    return _sha(json.dumps(parts, sort_keys=True).encode()), parts


class CompileCache:
    """One process's view of the cache: lookups, publication and hit/miss counts.

    ``root`` None means no cache: every compile is a miss into a fresh directory.
    ``rebuilt`` lists ``(key, why)`` of every damaged entry this process replaced
    (each is also a miss).
    """

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.hits = 0
        self.misses = 0
        self.rebuilt: list[tuple[str, str]] = []
        self.disabled_reason: str | None = None
        self._cleaned = False  # stale debris removed (`_clean_stale`)
        # key -> (the verified entry, (st_dev, st_ino) of its directory when verified;
        # None: a bypassed key, compiled in memory only)
        self._memo: dict[str, tuple[Found, tuple[int, int] | None]] = {}

    @property
    def damaged(self) -> int:
        """How many damaged entries this process rebuilt."""
        return len(self.rebuilt)

    @property
    def enabled(self) -> bool:
        return self.root is not None and self.disabled_reason is None

    def disable(self, reason: str) -> None:
        self.disabled_reason = reason

    def compile(self, program: Any, config: Any, *, specs: Sequence[Any] = ()) -> Any:
        """The `CompiledProgram` of ``program`` for ``config``: from the cache or compiled.

        A hit never imports the compiler.
        """
        if not self.enabled:
            from pytest_pypto.compiler import api  # lazy: a cache hit never loads the compiler

            self.misses += 1
            return api.compile(program, config)
        assert self.root is not None
        key, inputs = _keyed(program, config, specs=specs, batch_loops=None)
        final = self.root / key
        found = self._memoized(key, final)
        if found is not None:
            self.hits += 1
            replay(found.warnings)
            return found.compiled
        missed = False
        identity: tuple[int, int] | None
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            self._clean_stale()
            with self._lock(key):
                found = self._load(final, key, inputs)
                if found is not None:
                    self.hits += 1
                else:
                    self.misses += 1
                    missed = True
                    found = self._build(program, config, final, key, inputs)
                identity = _identity(final)
        except _Unmovable as exc:  # this key only: the cache stays on for the others
            if not missed:
                self.misses += 1
            found, identity = self._bypass(program, config, final, str(exc)), None
        except OSError as exc:
            self.disable(f"{type(exc).__name__}: {exc}")
            warnings.warn(
                f"pypto compile cache at {self.root} turned off: {exc}", stacklevel=2
            )
            from pytest_pypto.compiler import api  # lazy: a cache hit never loads the compiler

            return api.compile(program, config)
        self._memo[key] = (found, identity)
        replay(found.warnings)
        return found.compiled

    def _memoized(self, key: str, final: Path) -> Found | None:
        """The entry this process verified, while its directory is still the same one
        (not discarded, rebuilt or swapped for another since), or while it cannot be
        looked at (unreadable now: the verified artifact in memory is still right).
        A bypassed key's artifact (identity None) is always served."""
        memo = self._memo.get(key)
        if memo is None:
            return None
        found, identity = memo
        if identity is None:
            return found
        try:
            same = _identity(final) == identity and stat.S_ISREG(
                os.stat(found.compiled.artifact_dir() / "kernel_config.json").st_mode
            )
        except (FileNotFoundError, NotADirectoryError):
            same = False
        except OSError:  # unreadable (permissions, I/O): serve what was verified
            return found
        if same:
            return found
        del self._memo[key]
        return None

    @contextlib.contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        """An exclusive OS lock on the key (dies with the process); none without fcntl."""
        assert self.root is not None
        try:
            import fcntl  # lazy: POSIX only
        except ImportError:  # pragma: no cover  (Windows: the rename still protects)
            yield
            return
        fd = _open_lock(self.root / ".locks" / key)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)

    def _clean_stale(self) -> None:
        """Remove the ``.tmp-*``/``.trash-*`` debris of dead processes (once per
        `CompileCache`, i.e. per session and xdist worker): older than `STALE_SECONDS`
        and, when it names its key, not locked."""
        assert self.root is not None
        if self._cleaned:
            return
        self._cleaned = True
        where = os.fspath(self.root)
        try:
            import fcntl  # lazy: POSIX only
        except ImportError:  # pragma: no cover
            fcntl = None  # type: ignore[assignment]
        now = time.time()
        try:
            with os.scandir(where) as entries:
                debris = [e for e in entries if e.name.startswith((".tmp-", ".trash-"))]
        except OSError:
            return
        for entry in debris:
            try:
                if now - entry.stat(follow_symlinks=False).st_mtime < STALE_SECONDS:
                    continue
                key = entry.name.split("-", 2)[1]
                if fcntl is None or len(key) != 64:
                    _remove(entry.path)
                    continue
                fd = _open_lock(self.root / ".locks" / key)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held: still being built
                    _remove(entry.path)
                finally:
                    os.close(fd)
            except OSError:
                continue

    def _bypass(self, program: Any, config: Any, final: Path, why: str) -> Found:
        """``program`` compiled in memory, its key's damaged entry left where it is (it
        cannot be moved aside); said once, as this key's artifact is memoized."""
        warnings.warn(
            f"pypto compile cache: the damaged entry {final} cannot be moved aside "
            f"({why}); this kernel compiles without the cache in this process and other "
            f"kernels still use it; remove that directory by hand",
            stacklevel=3,
        )
        built, caught = _compile_recording(program, config)
        return Found(built, [(str(w.message), w.category, str(w.filename), int(w.lineno or 0))
                             for w in caught])

    def _load(self, final: Path, key: str, inputs: dict[str, Any]) -> Found | None:
        """The entry at ``final`` when it passes `verify`; a damaged one is discarded."""
        if not os.path.lexists(final):
            return None
        try:
            return verify(final, key, inputs)
        except DamagedEntry as exc:
            self._reject(final, key, str(exc))
            return None

    def _reject(self, final: Path, key: str, why: str) -> None:
        self.rebuilt.append((key, why))
        self._discard(final, key, why)

    def _discard(self, final: Path, key: str, why: str) -> None:
        """Move the entry aside first (atomic: no reader sees half of it), then delete it.

        It is renamed within the root (a directory moved to another parent needs write
        permission on itself); `_Unmovable` when it is still there and cannot be moved.
        """
        assert self.root is not None
        trash = self.root / f".trash-{key}-{os.urandom(4).hex()}"
        try:
            os.rename(final, trash)
        except OSError as exc:
            if os.path.lexists(final):
                raise _Unmovable(f"it is damaged ({why}); {type(exc).__name__}: {exc}") from None
            return  # someone else discarded it already
        _remove(trash)

    def _build(
        self, program: Any, config: Any, final: Path, key: str, inputs: dict[str, Any]
    ) -> Found:
        """Compile afresh in memory, write the entry into a temporary directory (the
        files once, checksummed from memory) and publish it as ``final``.

        Nothing here catches the compiler's errors: a failing compile is the user's.
        """
        assert self.root is not None
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=f".tmp-{key}-"))
        try:
            built, caught = _compile_recording(
                program, config, output_dir=tmp / ARTIFACT, write=False
            )
            memory = built.memory
            memory.write(tmp / ARTIFACT)
            # pass dumps are files only: read back; the rest is hashed from memory
            sums = checksums(tmp / ARTIFACT) if config.dump_passes else memory.checksums()
            recorded = [warning_record(w) for w in caught]
            entry = entry_record(key, inputs, sums, built.ir_text, recorded)
            (tmp / ENTRY_FILE).write_text(json.dumps(entry, indent=1, sort_keys=True))
            winner = self._publish(tmp, final, key, inputs)
            if winner is not None:
                return winner
        finally:
            _remove(tmp)
        memory.rehome(final / ARTIFACT)  # published: its files are there now
        memory.on_disk = True
        replayable = [
            (r["message"], w.category, r["filename"], r["lineno"]) for r, w in zip(recorded, caught)
        ]
        return Found(built, replayable)

    def _publish(self, tmp: Path, final: Path, key: str, inputs: dict[str, Any]) -> Found | None:
        """Rename ``tmp`` to ``final``: None when ours landed, else the sound entry another
        process published first.  A damaged entry in the way is replaced (`_Unmovable`
        when it cannot be)."""
        for _ in range(3):
            try:
                os.rename(tmp, final)
                return None
            except OSError:
                if not os.path.lexists(final):
                    raise  # not a lost race: a real failure
            try:
                return verify(final, key, inputs)
            except DamagedEntry as exc:
                self._reject(final, key, str(exc))
        os.rename(tmp, final)  # failing now is a real failure
        return None


def _identity(path: Path) -> tuple[int, int]:
    st = os.stat(path)
    return st.st_dev, st.st_ino


def _compile_recording(program: Any, config: Any, **kw: Any) -> tuple[Any, list[Any]]:
    """``api.compile(program, config, **kw)`` and the warnings it emitted."""
    from pytest_pypto.compiler import api  # lazy: a cache hit never loads the compiler

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        built = api.compile(program, config, **kw)
    return built, list(caught)


def _open_lock(path: Path) -> int:
    """A descriptor of the lock file at ``path`` (created): a FIFO, symlink or other
    non-regular file planted there is replaced, never opened for long or followed."""
    path.parent.mkdir(exist_ok=True)
    for _ in range(3):
        try:
            fd = os.open(path, _LOCK_FLAGS, 0o644)
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENXIO, errno.EISDIR):
                raise
        else:
            if stat.S_ISREG(os.fstat(fd).st_mode):
                return fd
            os.close(fd)
        _remove(os.fspath(path))
    raise OSError(errno.EEXIST, f"{path}: cannot be made a lock file")


def _remove(path: str | Path) -> None:
    """Delete ``path`` (a tree or a file), as far as possible; read-only directories
    inside are made writable first (they are this cache's own)."""
    if os.path.isdir(path) and not os.path.islink(path):
        shutil.rmtree(path, ignore_errors=True)
        if not os.path.lexists(path):
            return
        with contextlib.suppress(OSError):
            os.chmod(path, 0o700)
        for top, dirs, _files in os.walk(path):
            for d in dirs:
                inner = os.path.join(top, d)
                if not os.path.islink(inner):
                    with contextlib.suppress(OSError):
                        os.chmod(inner, 0o700)
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
