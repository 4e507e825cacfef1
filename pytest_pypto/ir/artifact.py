"""The artifact: what the compiler writes and the simulator reads (docs/design/artifact.md).

This module is the contract between `compiler/` (writer) and `runtime/` (reader);
neither imports the other.  An artifact directory holds:

    kernel_config.json      the manifest (`Manifest`, below)
    kernels/<name>.py       generated source of each InCore kernel
    kernels/<name>.txt      readable kernel listing with the memory map
    orchestration.py        generated source of the entry (task submission)
    orchestration.txt       readable orchestration task listing
    debug/<run>.py          run.py, a script that runs the artifact again (ir/run_script.py)
    passes/NN_<pass>.txt    IR after each pass (only when dumping)

Every listing starts with a header line naming the platform and
``sim_backend: numpy-functional`` (or ``null`` for onboard compiles).

Kernel ABI (``kernels/<name>.py``)::

    def make(bind):
        add = bind("tile.add")            # one local per op the kernel uses
        ...
        def <name>(<params in declaration order>):
            ...                            # straight-line numpy-backed tile program
            return (<returned Out/InOut tensors>,)   # or () when it returns nothing
        return <name>

A kernel that reads its block index (`pl.get_block_idx()` / `pl.get_block_num()`)
takes one more, keyword argument ``_launch=(0, 1)``: (block index, block count) of
the `pl.spmd` launch running it, passed to the block-identity ops.

``bind(op_name)`` is supplied by the simulator and returns a callable
``f(*operands, out=<TileType or None>, **static_attrs)``: value operands
positionally in the op's parameter order, static parameters as keywords, and
``out`` the compiled result type (tile results only).  Tensors arrive as numpy
views (windows of their root buffer), scalars as Python numbers, tiles as
`ir.values.TileValue`.  The module may import from `pytest_pypto.ir` (types,
dtypes) and nothing else from the package.

Orchestration ABI (``orchestration.py``)::

    def make(rt):
        def <entry>(<entry params>):
            t = rt.create_tensor(shape, dtype, init_value, name="t")  # dtype: a DataType
            out = rt.submit("<kernel>", (x, y, 0.5, out), returns=(3,))
            v = rt.read(t, (i, j)); rt.write(t, (i, j), v)
            w = rt.slice(t, shape, offsets); r = rt.reshape(t, shape)
            tt = rt.transpose(t, axis1, axis2)
            n = rt.dim(t, axis)
            return (out,)
        return <entry>

``rt.submit`` records one task: per argument its direction from the manifest and
its byte range; it returns the arguments at positions ``returns`` (a single value
when there is one, a tuple otherwise).  ``rt.submit(..., blocks=n, launch=True)`` is a
`pl.spmd(n)` launch: n tasks sharing the dependencies of the first, block i called
with ``_launch=(i, n)`` when ``launch`` (the kernel reads its block index).  ``name=`` labels the tensor in deps.json.

Optional, both modules: a module-level ``SPANS = {<generated line>: (file, line,
col)}`` maps generated lines to the user's source, so run-time errors (a dynamic
window past a tensor's edge, a bad orchestration index) point at the user's
file:line.  Lines without an entry take the nearest mapped line above them.
Optional too: ``SCALARS = {<generated line>: ((<user name>, <local>), ...)}``, the
Scalars (loop variables, scalar values, dynamic dims) a line reads, so a run-time
bounds error can add their values ("(at run time, c = 1)", docs/design/checks.md §6).

In memory (`ArtifactInMemory`): a compile need not touch the file system.  The same
files are held as text (listings rendered on first use) with each generated module's
code object compiled once, under the path it has (or would have) in the directory, so
tracebacks show generated lines either way; the directory is written only when asked
for (`ArtifactInMemory.directory`, `CompiledProgram.artifact_dir()`, `save_to`).
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import json
import linecache
import shutil
import threading
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_pypto.arch import parse_platform
from pytest_pypto.ir.launch import launcher
from pytest_pypto.ir.runtime_facade import RuntimeFacade

ARTIFACT_FORMAT = 1
MANIFEST_NAME = "kernel_config.json"
SIM_BACKEND = "numpy-functional"
# Deepest nesting of arrays/objects `read_json` accepts (a manifest nests about 5 deep).
MAX_JSON_DEPTH = 64


@dataclass
class ArgInfo:
    """One parameter of a kernel or of the entry."""

    name: str
    kind: str  # "tensor" | "scalar"
    direction: str  # "In" | "Out" | "InOut" | "Scalar"
    dtype: str  # DataType name
    # str: a dynamic dim, named "M@k" (k numbers distinct pl.dynamic objects of the
    # program); equal strings within one signature are one dim and bind together.
    shape: list[int | str] = field(default_factory=list)
    # An Out the compiler proved is overwritten entirely before any read (a kernel arg:
    # by that kernel; an entry arg: by the first task touching it), so the runtime may
    # skip poisoning it at entry (compiler/coverage.py).
    fully_written: bool = False


def dim_label(dim: str, others: Iterable[Any]) -> str:
    """A dynamic dim's manifest name for people: ``'M'`` when no other dynamic dim in
    ``others`` shares the name, else ``'M@1'`` (as the IR printer numbers them)."""
    base = dim.partition("@")[0]
    clash = any(isinstance(o, str) and o != dim and o.partition("@")[0] == base for o in others)
    return f"'{dim}'" if clash else f"'{base}'"


@dataclass
class KernelInfo:
    """One InCore kernel: its id, core class and argument directions."""

    name: str
    func_id: int
    core_type: str  # "aic" | "aiv" | "mix"
    args: list[ArgInfo]
    source: str  # path relative to the artifact dir, e.g. "kernels/add.py"
    listing: str  # e.g. "kernels/add.txt"
    returns: list[int] = field(default_factory=list)  # positions of returned params


@dataclass
class Manifest:
    """kernel_config.json."""

    program: str
    platform: str
    arch: str
    mode: str
    toolchain_version: str
    sim_backend: str | None
    entry: str
    entry_args: list[ArgInfo]
    entry_returns: list[int]
    kernels: list[KernelInfo]
    orchestration: str = "orchestration.py"
    orchestration_listing: str = "orchestration.txt"
    format: int = ARTIFACT_FORMAT
    extra: dict[str, Any] = field(default_factory=dict)

    def kernel(self, name: str) -> KernelInfo:
        for k in self.kernels:
            if k.name == name:
                return k
        raise KeyError(f"artifact of {self.program!r} has no kernel {name!r}")


def manifest_text(manifest: Manifest) -> str:
    """kernel_config.json's text (stable key order, so equal artifacts are equal bytes)."""
    return json.dumps(_plain(manifest), indent=2, sort_keys=True) + "\n"


def _plain(value: Any) -> Any:
    """`dataclasses.asdict` for the manifest's JSON values (a quarter of its cost: no
    deep copies of leaves that are only read)."""
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    names = _field_names(type(value))
    if names:
        return {name: _plain(getattr(value, name)) for name in names}
    return value


@functools.cache
def _field_names(cls: type) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls)) if dataclasses.is_dataclass(cls) else ()


def write_manifest(directory: str | Path, manifest: Manifest) -> Path:
    """Write kernel_config.json into ``directory``."""
    path = Path(directory) / MANIFEST_NAME
    path.write_text(manifest_text(manifest), encoding="utf-8")
    return path


def read_json(path: str | Path, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in ``path``; ValueError when it is not JSON or nests arrays
    and objects deeper than ``max_depth`` (never a RecursionError); OSError when unreadable."""
    return parse_json(Path(path).read_bytes(), path, max_depth=max_depth)


def parse_json(data: bytes | str, path: str | Path, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """`read_json` of ``data`` already read from ``path`` (named in the errors)."""
    try:
        value = json.loads(data)
    except RecursionError:
        raise ValueError(f"{path}: JSON nested too deep to parse") from None
    except ValueError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from None
    pending = [(value, 1)]
    while pending:  # iterative: a deep value must not recurse here either
        item, depth = pending.pop()
        if isinstance(item, (dict, list)):
            if depth > max_depth:
                raise ValueError(f"{path}: JSON nested deeper than {max_depth} levels")
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return value


def read_manifest(directory: str | Path) -> Manifest:
    """Read kernel_config.json; ValueError when it is not JSON, is missing fields, has a
    field of the wrong type or a return position out of range, or is of another format."""
    path = Path(directory) / MANIFEST_NAME
    return parse_manifest(path.read_bytes(), path)


def parse_manifest(data: bytes | str, path: str | Path) -> Manifest:
    """`read_manifest` of kernel_config.json's ``data``, already read from ``path``."""
    raw = parse_json(data, path)
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: malformed manifest (a JSON {type(raw).__name__}, not an object)")
    if raw.get("format") != ARTIFACT_FORMAT:
        raise ValueError(f"{path}: artifact format {raw.get('format')!r}, expected {ARTIFACT_FORMAT}")
    try:
        kernels = [
            KernelInfo(**{**k, "args": [ArgInfo(**a) for a in k["args"]]}) for k in raw["kernels"]
        ]
        entry_args = [ArgInfo(**a) for a in raw["entry_args"]]
        fields = {k: v for k, v in raw.items() if k not in ("kernels", "entry_args")}
        manifest = Manifest(kernels=kernels, entry_args=entry_args, **fields)
    except (KeyError, TypeError) as exc:
        raise ValueError(f"{path}: malformed manifest ({exc})") from None
    problem = _type_problem(manifest, Manifest, "") or _return_problem(manifest)
    if problem is not None:
        raise ValueError(f"{path}: malformed manifest ({problem})")
    return manifest


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def _type_problem(value: Any, hint: Any, where: str) -> str | None:
    """Why ``value`` is not of the annotated type ``hint`` (None when it is)."""
    if hint is Any:
        return None
    origin = typing.get_origin(hint)
    if origin in (types.UnionType, typing.Union):
        if any(_type_problem(value, arm, where) is None for arm in typing.get_args(hint)):
            return None
        return f"{where} is {value!r:.40}, expected {_hint_name(hint)}"
    if dataclasses.is_dataclass(hint):
        if not isinstance(value, hint):
            return f"{where} is {value!r:.40}, expected an object"
        hints = _hints(hint)
        for f in dataclasses.fields(hint):
            found = _type_problem(getattr(value, f.name), hints[f.name], _join(where, f.name))
            if found is not None:
                return found
        return None
    if origin is list:
        if not isinstance(value, list):
            return f"{where} is {value!r:.40}, expected a list"
        (arg,) = typing.get_args(hint)
        for i, item in enumerate(value):
            found = _type_problem(item, arg, f"{where}[{i}]")
            if found is not None:
                return found
        return None
    if origin is dict:
        if not isinstance(value, dict):
            return f"{where} is {value!r:.40}, expected an object"
        _, arg = typing.get_args(hint)
        for k, item in value.items():
            found = _type_problem(item, arg, f"{where}[{k!r}]")
            if found is not None:
                return found
        return None
    if hint is type(None):
        ok = value is None
    elif hint is int:
        ok = type(value) is int  # not a bool
    else:
        ok = isinstance(value, hint)
    return None if ok else f"{where} is {value!r:.40}, expected {_hint_name(hint)}"


def _join(where: str, name: str) -> str:
    return f"{where}.{name}" if where else name


def _hint_name(hint: Any) -> str:
    if hint is type(None):
        return "null"
    if isinstance(hint, type):
        return hint.__name__
    return " or ".join(_hint_name(arm) for arm in typing.get_args(hint))


def _return_problem(manifest: Manifest) -> str | None:
    """A returned position that names no parameter."""
    owners = [("entry_returns", manifest.entry_returns, manifest.entry_args)]
    owners += [
        (f"kernel {k.name!r} returns", k.returns, k.args) for k in manifest.kernels
    ]
    for what, returns, args in owners:
        for pos in returns:
            if not 0 <= pos < len(args):
                return f"{what}: position {pos} of {len(args)} parameters"
    return None


# A file's text, or what renders it on first use (listings nobody may read).
Text = str | Callable[[], str]


class ArtifactInMemory:
    """One artifact's files held in memory (see the module docstring).

    ``texts`` maps relative posix paths (``kernels/<kernel>.py``, ``orchestration.txt``...) to
    their text or a renderer; the manifest's text is made on first use too.  ``home``
    is the directory the files are in (``on_disk``) or would be written to: code is
    compiled under ``home/<path>`` and registered with `linecache` there.  ``built`` is
    the runtime loader's per-binder cache of built kernels (it lives as long as this).
    Pickles as its texts and manifest; code objects are compiled again after loading.
    """

    def __init__(
        self, manifest: Manifest, texts: dict[str, Text], home: str | Path, *,
        on_disk: bool = False, manifest_text: str | None = None,
    ) -> None:
        self.manifest = manifest
        self.home = Path(home)
        self.on_disk = on_disk
        self._texts = dict(texts)
        self._manifest_text = manifest_text
        self._codes: dict[str, types.CodeType] = {}
        self._lock = threading.Lock()
        self.built: dict[Any, Any] = {}

    def __repr__(self) -> str:
        where = "written to" if self.on_disk else "in memory, would be"
        return f"<artifact of {self.manifest.program!r} {where} {self.home}>"

    def __getstate__(self) -> dict[str, Any]:
        return {"manifest": self.manifest, "texts": self.files(), "home": str(self.home),
                "on_disk": self.on_disk}

    def __setstate__(self, state: dict[str, Any]) -> None:
        texts = state["texts"]
        self.__init__(  # type: ignore[misc]
            state["manifest"], {k: v for k, v in texts.items() if k != MANIFEST_NAME},
            state["home"], on_disk=state["on_disk"], manifest_text=texts.get(MANIFEST_NAME),
        )

    def text(self, rel: str) -> str:
        """The text of the file at ``rel`` (rendered now when it was not yet)."""
        if rel == MANIFEST_NAME:
            if self._manifest_text is None:
                self._manifest_text = manifest_text(self.manifest)
            return self._manifest_text
        value = self._texts[rel]
        if not isinstance(value, str):
            value = self._texts[rel] = value()
        return value

    def files(self) -> dict[str, str]:
        """Every file's text by relative path, the manifest last (as they are written)."""
        out = {rel: self.text(rel) for rel in self._texts}
        out[MANIFEST_NAME] = self.text(MANIFEST_NAME)
        return out

    def checksums(self) -> dict[str, str]:
        """sha256 of every file by relative path (what a directory read back would give)."""
        return {rel: hashlib.sha256(t.encode()).hexdigest() for rel, t in self.files().items()}

    def code(self, rel: str) -> types.CodeType:
        """The generated module at ``rel`` compiled (once) under its path in ``home``."""
        code = self._codes.get(rel)
        if code is None:
            path = str(self.home / rel)
            source = self.text(rel)
            code = compile(source, path, "exec", dont_inherit=True)
            # mtime None: linecache.checkcache keeps the entry (the file may not exist).
            linecache.cache[path] = (len(source), None, source.splitlines(True), path)
            self._codes[rel] = code
        return code

    def rehome(self, home: str | Path) -> None:
        """Name ``home`` as the artifact's directory from now on (its files are moved
        there, or will be written there); code compiled under the old name is dropped."""
        with self._lock:
            self.home = Path(home)
            self._codes.clear()
            self.built.clear()

    def write(self, directory: str | Path) -> None:
        """Write every file into ``directory`` (created; files replaced), manifest last,
        so a reader that sees the manifest sees a whole artifact."""
        directory = Path(directory)
        made: set[Path] = set()
        for rel, text in self.files().items():
            path = directory / rel
            if path.parent not in made:
                path.parent.mkdir(parents=True, exist_ok=True)
                made.add(path.parent)
            path.write_text(text, encoding="utf-8")

    @property
    def directory(self) -> Path:
        """``home``, its files written there first if they were not yet (once)."""
        if not self.on_disk:
            with self._lock:
                if not self.on_disk:
                    self.write(self.home)
                    self.on_disk = True
        return self.home

    def save_to(self, target: str | Path) -> None:
        """Put this artifact's files into ``target`` (created; files replaced): copied
        from ``home`` when written there (with any pass dumps), else written from memory."""
        if self.on_disk:
            Path(target).mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.home, target, dirs_exist_ok=True)
        else:
            self.write(target)


class CompiledProgram(RuntimeFacade):
    """What `pytest_pypto.compile` returns: the manifest and the artifact, in memory
    (``memory``) and as a directory (``artifact_dir()``, written on the first call).

    Defined here (not in the compiler) because the runtime accepts it and must not
    import the compiler.  ``CompiledProgram(directory, manifest)`` names an artifact
    that is only on disk.  ``ir_text``, the printed IR after the last pass, may be
    given as a callable: it is printed on first use.  PyPTO's manual-dispatch surface
    (``chip_callable``, ``build_orch_args``...) comes from `RuntimeFacade`.
    """

    def __init__(
        self,
        artifact_dir: str | Path | None = None,
        manifest: Manifest | None = None,
        ir_text: Text = "",
        *,
        memory: ArtifactInMemory | None = None,
    ) -> None:
        if memory is None and artifact_dir is None:
            raise TypeError("CompiledProgram needs an artifact directory or an in-memory artifact")
        if manifest is None:
            if memory is None:
                raise TypeError("CompiledProgram of a directory needs its manifest")
            manifest = memory.manifest
        self._artifact_dir = Path(artifact_dir) if artifact_dir is not None else None
        self.manifest = manifest
        self.memory = memory
        self._ir_text = ir_text

    # PyPTO's live IR of the program: none here (the artifact is what runs).
    program: Any = None

    @classmethod
    def from_dir(cls, directory: str | Path, *, platform: str | None = None) -> CompiledProgram:
        """The program compiled into ``directory`` (its manifest read back, nothing
        recompiled).  ``platform`` replays it on another platform of the same arch
        (``a2a3sim`` -> ``a2a3``); another arch needs a new compile (ValueError)."""
        manifest = read_manifest(directory)
        if platform is not None and platform != manifest.platform:
            if parse_platform(platform)[0] is not parse_platform(manifest.platform)[0]:
                raise ValueError(
                    f"{directory} was compiled for {manifest.platform}, which is not the "
                    f"arch of {platform}; compile it again for {platform}"
                )
            manifest = dataclasses.replace(manifest, platform=platform)
        return cls(directory, manifest)

    def __repr__(self) -> str:
        where = self._artifact_dir if self._artifact_dir is not None else self.memory
        return f"CompiledProgram({self.manifest.program!r}, {self.platform!r}, {where})"

    def __getstate__(self) -> dict[str, Any]:
        return {**self.__dict__, "_ir_text": self.ir_text}

    def artifact_dir(self) -> Path:
        """The artifact's directory; an in-memory artifact is written there now (once)."""
        if self._artifact_dir is None:
            assert self.memory is not None
            self._artifact_dir = self.memory.directory
        return self._artifact_dir

    @property
    def ir_text(self) -> str:
        """The printed IR after the last pass."""
        if not isinstance(self._ir_text, str):
            self._ir_text = self._ir_text()
        return self._ir_text

    def save_to(self, target: str | Path) -> None:
        """Put the artifact's files into ``target`` (save-kernels, a kept failure)
        without writing them anywhere else first."""
        if self.memory is not None:
            self.memory.save_to(target)
        else:
            Path(target).mkdir(parents=True, exist_ok=True)
            shutil.copytree(self.artifact_dir(), target, dirs_exist_ok=True)

    @property
    def platform(self) -> str:
        return self.manifest.platform

    @property
    def program_name(self) -> str:
        return self.manifest.program

    # PyPTO's CompiledProgram surface: called with arrays, it runs on the simulator.
    @property
    def output_dir(self) -> Path:
        """PyPTO's name for the artifact directory."""
        return self.artifact_dir()

    @property
    def param_names(self) -> list[str]:
        """The entry's parameters, in call order."""
        return [a.name for a in self.manifest.entry_args]

    @property
    def output_indices(self) -> list[int]:
        """Positions of the pure Out parameters (allocated by a return-style call)."""
        return [i for i, a in enumerate(self.manifest.entry_args)
                if a.kind == "tensor" and a.direction == "Out"]

    @property
    def has_return(self) -> bool:
        """Whether the entry returns values (so a return-style call is possible)."""
        return bool(self.manifest.entry_returns)

    def __call__(self, *args: Any, config: Any = None) -> Any:
        """Run with PyPTO's conventions: every argument given (in place; returns None),
        or only the inputs (return style: the Out tensors are allocated and returned).
        Runs on ``config``'s platform, else this artifact's."""
        __tracebackhide__ = True

        return launcher().call(self, args, config)
