"""One compile-cache entry on disk: what it records and the checks a hit must pass.

An entry ``<root>/<key>/`` holds ``artifact/`` (what the compiler wrote) and
``entry.json``::

    format      ENTRY_FORMAT
    key         the entry's own key (its directory name)
    inputs      what the key hashes: printed IR, file, span, source hash, specs,
                platform, dump_passes, batch_loops, toolchain version
    checksums   sha256 of every file under artifact/ by relative posix path
    ir_text     printed IR after the last pass (CompiledProgram.ir_text)
    warnings    [{category, message, filename, lineno}] the compile emitted

`verify` serves an entry only when every field has its type, the key and inputs are
the ones asked for (an entry filed under another key, e.g. two directories swapped,
is rejected), the manifest parses and agrees on platform and toolchain version,
every file the manifest lists is there and unchanged, and the generated code
compiles.  Anything else -- including any exception while reading -- is
`DamagedEntry`, and the caller rebuilds the entry.

"""

from __future__ import annotations

import hashlib
import importlib
import os
import stat
import sys
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_pypto.ir.artifact import (
    MANIFEST_NAME,
    ArtifactInMemory,
    CompiledProgram,
    parse_json,
    parse_manifest,
)

__all__ = [
    "ARTIFACT",
    "ENTRY_FILE",
    "ENTRY_FORMAT",
    "DamagedEntry",
    "Found",
    "checksums",
    "entry_record",
    "read_files",
    "read_regular",
    "replay",
    "verify",
    "warning_record",
]

ENTRY_FILE = "entry.json"
ARTIFACT = "artifact"
ENTRY_FORMAT = 2  # 2: key and inputs recorded (format 1 entries are rebuilt)

# (message, category, filename, lineno): a compile warning, ready to re-emit
Warning4 = tuple[str, type[Warning], str, int]


class DamagedEntry(Exception):
    """An entry that must not be served; the message says why (for people)."""


@dataclass
class Found:
    """A verified entry: its `CompiledProgram` and the compile warnings to replay."""

    compiled: Any
    warnings: list[Warning4]


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def checksums(artifact: Path) -> dict[str, str]:
    """sha256 of every file under ``artifact`` by its relative posix path."""
    return {rel: sha(data) for rel, data in read_files(artifact).items()}


def read_files(artifact: Path) -> dict[str, bytes]:
    """Every file under ``artifact`` by its relative posix path: its bytes.

    Every file of a hit is read once per process (the memo in `CompileCache` holds
    verified entries); os.scandir keeps that cheap (a third of rglob's cost).  An
    entry holds directories and regular files only: anything else (a FIFO, a device,
    a symlink) is `DamagedEntry`, found without opening it for long (`read_regular`).
    """
    files: dict[str, bytes] = {}
    pending = [(os.fspath(artifact), "")]
    while pending:
        directory, prefix = pending.pop()
        with os.scandir(directory) as entries:
            for entry in entries:
                if entry.is_dir(follow_symlinks=False):
                    pending.append((entry.path, f"{prefix}{entry.name}/"))
                else:
                    files[prefix + entry.name] = read_regular(entry.path)
    return files


_OPEN_FLAGS = getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOFOLLOW", 0)


def _opener(path: str, flags: int) -> int:
    return os.open(path, flags | _OPEN_FLAGS)


def read_regular(path: str | Path) -> bytes:
    """The bytes of the regular file at ``path``.

    Opened without following a symlink and without blocking (a FIFO would wait for a
    writer forever, holding the key's lock); `DamagedEntry` when it is not a regular
    file (a symlink fails to open: OSError, which `verify` also reports as damage).
    """
    with open(path, "rb", opener=_opener) as fh:
        if not stat.S_ISREG(os.fstat(fh.fileno()).st_mode):
            raise DamagedEntry(f"{Path(path).name} is not a regular file")
        return fh.read()


def warning_record(w: warnings.WarningMessage) -> dict[str, Any]:
    """How entry.json stores one caught compile warning."""
    return {
        "category": f"{w.category.__module__}.{w.category.__qualname__}",
        "message": str(w.message),
        "filename": str(w.filename),
        "lineno": int(w.lineno or 0),
    }


def entry_record(
    key: str, inputs: dict[str, Any], sums: dict[str, str], ir_text: str,
    recorded: list[dict[str, Any]],
) -> dict[str, Any]:
    """entry.json of a freshly compiled artifact whose files have checksums ``sums``."""
    return {
        "format": ENTRY_FORMAT,
        "key": key,
        "inputs": inputs,
        "checksums": sums,
        "ir_text": ir_text,
        "warnings": recorded,
    }


def replay(recorded: Sequence[Warning4]) -> None:
    """Re-emit a compile's warnings (a hit warns as the compile did)."""
    for message, category, filename, lineno in recorded:
        warnings.warn_explicit(message, category, filename, lineno)


def verify(final: Path, key: str, inputs: dict[str, Any]) -> Found:
    """The entry at ``final`` when it is whole, unchanged and the one asked for.

    Raises `DamagedEntry` for any fault (never another exception): the caller
    discards and rebuilds.
    """
    try:
        return _verify(final, key, inputs)
    except DamagedEntry:
        raise
    except Exception as exc:  # reading a damaged entry can fail in any way
        raise DamagedEntry(f"unreadable: {type(exc).__name__}: {exc}") from None


def _verify(final: Path, key: str, inputs: dict[str, Any]) -> Found:
    entry = parse_json(read_regular(final / ENTRY_FILE), final / ENTRY_FILE)
    if not isinstance(entry, dict):
        raise DamagedEntry(f"{ENTRY_FILE} is a JSON {type(entry).__name__}, not an object")
    fmt = entry.get("format")
    if type(fmt) is not int or fmt != ENTRY_FORMAT:
        raise DamagedEntry(f"{ENTRY_FILE} format {fmt!r:.40}, expected {ENTRY_FORMAT}")
    recorded_key = _field(entry, "key", str)
    if recorded_key != key or final.name != key:
        raise DamagedEntry(
            f"filed under another key: records {recorded_key!r:.20}, asked for {key[:16]!r}"
        )
    _check_inputs(_field(entry, "inputs", dict), inputs)
    sums = _field(entry, "checksums", dict)
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in sums.items()):
        raise DamagedEntry("checksums: not a table of file name -> sha256")
    ir_text = _field(entry, "ir_text", str)
    recorded = _warnings(_field(entry, "warnings", list))

    artifact = final / ARTIFACT
    files = read_files(artifact)  # the only read of the artifact: memory is built from it
    actual = {rel: sha(data) for rel, data in files.items()}
    if actual != sums:
        changed = sorted(set(actual) ^ set(sums) | {p for p in actual if actual[p] != sums.get(p)})
        raise DamagedEntry(f"artifact files changed: {', '.join(changed[:3])}")
    if MANIFEST_NAME not in files:  # as reading it would have failed
        raise DamagedEntry(f"unreadable: {MANIFEST_NAME} is missing")
    # ValueError (type, depth, format): unreadable
    manifest = parse_manifest(files[MANIFEST_NAME], artifact / MANIFEST_NAME)
    if manifest.platform != inputs["platform"]:
        raise DamagedEntry(
            f"manifest platform {manifest.platform!r}, expected {inputs['platform']!r}"
        )
    if manifest.toolchain_version != inputs["version"]:
        raise DamagedEntry(
            f"manifest toolchain version {manifest.toolchain_version!r}, "
            f"expected {inputs['version']!r}"
        )
    listings = [manifest.orchestration_listing] + [k.listing for k in manifest.kernels]
    sources = [manifest.orchestration] + [k.source for k in manifest.kernels]
    for rel in listings + sources:
        if rel not in sums:  # also catches a path outside the artifact
            raise DamagedEntry(f"manifest lists {rel!r:.60}, which the artifact lacks")
    memory = ArtifactInMemory(
        manifest, {rel: files[rel].decode("utf-8") for rel in sources + listings}, artifact,
        on_disk=True, manifest_text=files[MANIFEST_NAME].decode("utf-8"),
    )
    for rel in sources:
        _check_loads(memory, rel)
    compiled = CompiledProgram(memory=memory, ir_text=ir_text)
    return Found(compiled, recorded)


def _field(entry: dict[str, Any], name: str, kind: type) -> Any:
    value = entry.get(name)
    if not isinstance(value, kind):
        expected = {dict: "an object", list: "a list", str: "a string"}[kind]
        raise DamagedEntry(f"{ENTRY_FILE} field {name!r} is {value!r:.40}, expected {expected}")
    return value


def _check_inputs(recorded: dict[str, Any], inputs: dict[str, Any]) -> None:
    """The entry was compiled from what the key says: same IR, platform, version..."""
    for name in sorted(set(recorded) | set(inputs)):
        if name not in inputs:
            raise DamagedEntry(f"records an unknown key input {name!r:.40}")
        if recorded.get(name) != inputs[name]:
            shown = "the printed IR" if name == "ir" else repr(recorded.get(name))[:60]
            raise DamagedEntry(
                f"recorded {name} disagrees: {shown} is not what this compile hashes"
            )


def _warnings(raw: list[Any]) -> list[Warning4]:
    out: list[Warning4] = []
    for i, w in enumerate(raw):
        if not isinstance(w, dict):
            raise DamagedEntry(f"warnings[{i}] is {w!r:.40}, expected an object")
        fields = (("category", str), ("message", str), ("filename", str), ("lineno", int))
        for name, kind in fields:
            value = w.get(name)
            if not isinstance(value, kind) or isinstance(value, bool):
                raise DamagedEntry(
                    f"warnings[{i}].{name} is {value!r:.40}, expected {kind.__name__}"
                )
        if w["lineno"] < 0:
            raise DamagedEntry(f"warnings[{i}].lineno is {w['lineno']}, expected >= 0")
        out.append((w["message"], _category(w["category"]), w["filename"], w["lineno"]))
    return out


def _category(name: str) -> type[Warning]:
    """The warning class named ``module.qualname``: from a loaded module or this package;
    UserWarning when it cannot be found."""
    module, _, qual = name.rpartition(".")
    obj: Any = sys.modules.get(module)
    try:
        if obj is None:
            if module.partition(".")[0] != "pytest_pypto":
                return UserWarning  # never import what a damaged entry names
            obj = importlib.import_module(module)
        for part in qual.split("."):
            obj = getattr(obj, part)
    except Exception:  # an unimportable or broken module: the message still matters
        return UserWarning
    return obj if isinstance(obj, type) and issubclass(obj, Warning) else UserWarning


def _check_loads(memory: Any, rel: str) -> None:
    """Generated source that Python can compile and that defines ``make`` (its ABI);
    the code object is kept for the run (`ArtifactInMemory.code`)."""
    if "make" not in memory.code(rel).co_names:
        raise DamagedEntry(f"{Path(rel).name}: generated code defines no make()")
