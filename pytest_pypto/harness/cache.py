"""The compile cache (PLUGIN.md §7): artifacts stored by what they are made of.

The key is a sha256 over everything that can change an artifact: the program's
printed IR, where it came from (file, span and source text: listings and run-time
errors point at the user's lines), the tensor specs of a case, the platform, the
artifact-changing compile options (``dump_passes``, batched loops) and the toolchain
version.  Options that only choose where output goes (``save_kernels_dir``) are not
in the key; the runner re-applies them on every compile, hit or miss.

An entry is a directory ``<root>/<key>/`` holding ``artifact/`` (what the compiler
wrote) and ``entry.json`` (sha256 of every artifact file, the printed IR, the
warnings the compile emitted, replayed on a hit).  It is built in a temporary
directory inside the root and published with one ``os.rename``: a reader sees a
whole entry or none.  A per-key file lock makes concurrent xdist workers compile a
kernel once; the loser of any remaining race uses the winner's entry.  An entry that
fails verification (unparsable manifest, missing or changed file) is discarded and
rebuilt.  A root that cannot be written turns the cache off (the plugin warns once).

Imports only the standard library at module level (cheap for the plugin).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import warnings
import weakref
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

__all__ = ["ENTRY_FILE", "CompileCache", "cache_key", "probe_writable"]

ENTRY_FILE = "entry.json"
ARTIFACT = "artifact"
_ENTRY_FORMAT = 1


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _spec_text(spec: Any) -> list[Any]:
    """The artifact-relevant part of a TensorSpec/ScalarSpec (never its data)."""
    dtype = getattr(spec.dtype, "name", str(spec.dtype))
    if hasattr(spec, "shape"):
        return ["tensor", spec.name, [int(d) for d in spec.shape], dtype, bool(spec.is_output)]
    return ["scalar", spec.name, dtype]


# Printing a program is the costly part of a key: once per program object.  Programs
# are immutable once parsed (the compiler works on a deep copy).
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
    import pytest_pypto
    from pytest_pypto.ir.printer import print_program
    from pytest_pypto.language.deferred import DeferredProgram

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
        "version": pytest_pypto.__version__,
    }
    return _sha(json.dumps(parts, sort_keys=True).encode())


def probe_writable(root: Path) -> str | None:
    """None when ``root`` can hold cache entries, else why not."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=root, prefix=".probe-")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _checksums(artifact: Path) -> dict[str, str]:
    """sha256 of every file under ``artifact`` by its relative posix path.

    Every file of a hit is hashed once per process (the memo in `CompileCache`
    holds verified entries); os.scandir keeps that cheap (a third of rglob's cost).
    """
    sums: dict[str, str] = {}
    pending = [(os.fspath(artifact), "")]
    while pending:
        directory, prefix = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{prefix}{entry.name}/"))
                elif entry.is_file():
                    with open(entry.path, "rb") as fh:
                        sums[prefix + entry.name] = _sha(fh.read())
    return sums


def _category(name: str) -> type[Warning]:
    module, _, qual = name.rpartition(".")
    try:
        import importlib

        obj: Any = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except (ImportError, AttributeError, ValueError):
        return UserWarning
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def _replay(recorded: Sequence[dict[str, Any]]) -> None:
    for w in recorded:
        warnings.warn_explicit(
            w["message"], _category(w["category"]), w["filename"], w["lineno"]
        )


class CompileCache:
    """One process's view of the cache: lookups, publication and hit/miss counts.

    ``root`` None means no cache: every compile is a miss into a fresh directory.
    """

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.hits = 0
        self.misses = 0
        self.disabled_reason: str | None = None
        # key -> (CompiledProgram, its compile warnings), verified in this process
        self._memo: dict[str, tuple[Any, list[dict[str, Any]]]] = {}

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
            from pytest_pypto.compiler import api

            self.misses += 1
            return api.compile(program, config)
        assert self.root is not None
        key = cache_key(program, config, specs=specs)
        found = self._memo.get(key)
        if found is not None and (found[0].artifact_dir / "kernel_config.json").is_file():
            self.hits += 1
            _replay(found[1])
            return found[0]
        final = self.root / key
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with self._lock(key):
                found = self._load(final)
                if found is not None:
                    self.hits += 1
                else:
                    self.misses += 1
                    found = self._build(program, config, final)
        except OSError as exc:
            self.disable(f"{type(exc).__name__}: {exc}")
            warnings.warn(
                f"pypto compile cache at {self.root} turned off: {exc}", stacklevel=2
            )
            from pytest_pypto.compiler import api

            return api.compile(program, config)
        self._memo[key] = found
        _replay(found[1])
        return found[0]

    @contextlib.contextmanager
    def _lock(self, key: str) -> Iterator[None]:
        """An exclusive OS lock on the key (dies with the process); none without fcntl."""
        assert self.root is not None
        try:
            import fcntl
        except ImportError:  # pragma: no cover  (Windows: the rename still protects)
            yield
            return
        locks = self.root / ".locks"
        locks.mkdir(exist_ok=True)
        with open(locks / key, "a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def _load(self, final: Path) -> tuple[Any, list[dict[str, Any]]] | None:
        """The entry at ``final`` when it is whole and unchanged; a bad entry is discarded."""
        if not final.exists():
            return None
        compiled = self._verify(final)
        if compiled is None:
            self._discard(final)
        return compiled

    def _verify(self, final: Path) -> tuple[Any, list[dict[str, Any]]] | None:
        from pytest_pypto.ir.artifact import CompiledProgram, read_manifest

        artifact = final / ARTIFACT
        try:
            entry = json.loads((final / ENTRY_FILE).read_text())
            if entry.get("format") != _ENTRY_FORMAT:
                return None
            manifest = read_manifest(artifact)
            listed = [manifest.orchestration, manifest.orchestration_listing]
            listed += [p for k in manifest.kernels for p in (k.source, k.listing)]
            if any(not (artifact / p).is_file() for p in listed):
                return None
            if _checksums(artifact) != entry["checksums"]:
                return None
            compiled = CompiledProgram(
                artifact_dir=artifact, manifest=manifest, ir_text=entry["ir_text"]
            )
            recorded = list(entry.get("warnings", []))
        except (OSError, ValueError, KeyError, TypeError):
            return None
        return compiled, recorded

    def _discard(self, final: Path) -> None:
        """Move the entry aside first (atomic), then delete it."""
        assert self.root is not None
        trash = Path(tempfile.mkdtemp(dir=self.root, prefix=".trash-"))
        try:
            os.rename(final, trash / "entry")
        except OSError:
            pass  # someone else discarded it already
        shutil.rmtree(trash, ignore_errors=True)

    def _build(
        self, program: Any, config: Any, final: Path
    ) -> tuple[Any, list[dict[str, Any]]]:
        from pytest_pypto.compiler import api
        from pytest_pypto.ir.artifact import CompiledProgram

        assert self.root is not None
        tmp = Path(tempfile.mkdtemp(dir=self.root, prefix=".tmp-"))
        try:
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                built = api.compile(program, config, output_dir=tmp / ARTIFACT)
            recorded = [
                {
                    "category": f"{w.category.__module__}.{w.category.__qualname__}",
                    "message": str(w.message),
                    "filename": w.filename,
                    "lineno": w.lineno,
                }
                for w in caught
            ]
            entry = {
                "format": _ENTRY_FORMAT,
                "checksums": _checksums(tmp / ARTIFACT),
                "ir_text": built.ir_text,
                "warnings": recorded,
            }
            (tmp / ENTRY_FILE).write_text(json.dumps(entry, indent=1, sort_keys=True))
            try:
                os.rename(tmp, final)
            except OSError:
                winner = self._verify(final)
                if winner is None:  # not a lost race: a real failure
                    raise
                return winner
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        compiled = CompiledProgram(
            artifact_dir=final / ARTIFACT, manifest=built.manifest, ir_text=built.ir_text
        )
        return compiled, recorded
