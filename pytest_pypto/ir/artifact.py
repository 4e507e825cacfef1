"""The artifact: what the compiler writes and the simulator reads (PLUGIN.md §8).

This module is the contract between `compiler/` (writer) and `runtime/` (reader);
neither imports the other.  An artifact directory holds:

    kernel_config.json      the manifest (`Manifest`, below)
    kernels/<name>.py       generated source of each InCore kernel
    kernels/<name>.txt      readable kernel listing with the memory map
    orchestration.py        generated source of the entry (task submission)
    orchestration.txt       readable orchestration task listing
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
bounds error can add their values ("(at run time, c = 1)", DSL.md §6.4).
"""

from __future__ import annotations

import dataclasses
import functools
import json
import types
import typing
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

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


def write_manifest(directory: str | Path, manifest: Manifest) -> Path:
    """Write kernel_config.json (stable key order, so equal artifacts are equal bytes)."""
    path = Path(directory) / MANIFEST_NAME
    path.write_text(json.dumps(asdict(manifest), indent=2, sort_keys=True) + "\n")
    return path


def read_json(path: str | Path, *, max_depth: int = MAX_JSON_DEPTH) -> Any:
    """The JSON value in ``path``; ValueError when it is not JSON or nests arrays
    and objects deeper than ``max_depth`` (never a RecursionError); OSError when unreadable."""
    data = Path(path).read_bytes()
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
    raw = read_json(path)
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


@dataclass
class CompiledProgram:
    """What `pytest_pypto.compile` returns: an artifact directory plus its manifest.

    Defined here (not in the compiler) because the runtime accepts it and must not
    import the compiler.
    """

    artifact_dir: Path
    manifest: Manifest
    ir_text: str = ""  # printed IR after the last pass

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
        return self.artifact_dir

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
        from pytest_pypto.ir.launch import launcher

        return launcher().call(self, args, config)
