"""The op registry: one `OpSpec` per op, the single place every fact about an op lives.

An entry holds the op's signature (`ParamSpec`s), its type rule, its memory-space
rule, its arch gate, its numpy semantics, its docstring and the kinds other code
asks about (a matmul result, a lowering hook, a view that regroups cells...).  The
parser asks it how to bind and type a call, the compiler asks it where operands must
live, whether the arch has the op and how to lower it, the simulator asks it what to
compute, and the lint check asks it whether every op is documented and tested.

Op modules under `pytest_pypto/ir/ops/` register their entries with `register`;
importing `REGISTRY` from here loads them all.

Numpy semantics come in two forms (exactly one is set on an entry):

* ``compute(*operands, **attrs) -> ndarray`` for value ops.  Operands arrive in
  parameter order: tiles as arrays of their **valid region**, widened (floats to
  float32, ints to int64, bool stays bool); scalars as Python numbers already
  converted to the tile dtype's category; static params come as keywords.  It
  returns the result's valid region, still wide.  The simulator rounds it once to
  the result dtype (RNE / two's-complement wrap) and places it in a fresh buffer
  whose elements outside the valid region are poisoned (docs/design/numerics.md).
* ``execute(*operands, out, **attrs)`` for ops whose meaning is about memory
  (load, store, move, create_tile, in-place accumulate...).  Operands arrive as
  `TileValue`s (see `ir.values`), numpy views for tensors, Python scalars; ``out``
  is the compiled result `TileType` (None when the op yields a tensor or nothing).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.types import Type

if TYPE_CHECKING:
    from pytest_pypto.arch import ArchSpec


class _Required:
    def __repr__(self) -> str:
        return "<required>"


REQUIRED: Any = _Required()

# Kinds of parameters.  Value kinds hold IR expressions; the rest are static.
VALUE_KINDS = frozenset(
    {"tile", "tensor", "scalar", "tile_or_scalar", "tile_or_tensor", "array", "handle"}
)
STATIC_KINDS = frozenset(
    {"shape", "index_list", "dtype", "space", "int", "float", "bool", "str", "enum", "literal"}
)


@dataclass(frozen=True)
class ParamSpec:
    """One parameter of an op.

    kind: "tile" | "tensor" | "scalar" | "tile_or_scalar" | "tile_or_tensor" | "array" (value
    operands; "tile_or_tensor": either, the type rule decides, e.g. mgather's idx; "handle":
    an opaque handle (ir.types.HandleType), the type rule checks which);
    "index_list" (offsets: ints or Scalar expressions); "shape" (static ints);
    "dtype" | "space" | "int" | "float" | "bool" | "str" | "enum" | "literal".
    """

    name: str
    kind: str
    default: Any = REQUIRED
    keyword_only: bool = False
    optional: bool = False  # value param that may be None (e.g. tmp_tile=None)
    aliases: tuple[str, ...] = ()  # other keyword spellings accepted for this param
    # index_list only: a single index stands for the one-element list (PyPTO's read and
    # write of a 1-D tensor or tile: ``pl.read(t, i)`` is ``pl.read(t, [i])``).
    bare_index: bool = False

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


class OpRuleError(Exception):
    """Raised by type/memory/arch rules; the caller attaches the span and error class."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


class OpTypeError(OpRuleError):
    """A shape/dtype rule failed (docs/design/checks.md §5)."""


class OpSpaceError(OpRuleError):
    """A memory-space rule failed (docs/design/checks.md §4)."""


class OpArchError(OpRuleError):
    """The op or dtype is not available on this arch (docs/design/checks.md §8)."""


@dataclass
class CallInfo:
    """What rules see of one call: operand types, static values and (at compile) the arch.

    ``values`` holds static params as Python values; index lists become tuples whose
    items are ints where known at compile time and None where dynamic.
    ``bounds`` (compile only) maps an index-list param to per-item (lo, hi)
    intervals where interval arithmetic could bound a dynamic offset.
    """

    op: str
    types: dict[str, Type | None]
    values: dict[str, Any]
    arch: ArchSpec | None = None
    bounds: dict[str, tuple[tuple[int, int] | None, ...]] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class MemRule:
    """Where operands must live and where the result lands.

    ``operands`` maps a tile param to the spaces it accepts; the first is the one a
    retargetable producer (load/create_tile without target_memory) is steered to,
    and the one automatic move insertion aims for.  ``result`` is a fixed space,
    ``"same:<param>"`` (views, in-place ops), ``"attr:<param>"`` (e.g. load's
    target_memory), or None (the op yields no tile).  ``view`` marks a ``same:`` op that
    only looks at the operand's buffer (slice, reshape, transpose_view, ...) and writes
    none of it; without it a ``same:`` op writes its operand in place (the two differ
    for the compiler's move sharing, compiler/codegen_alias.py).
    """

    operands: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    result: str | None = None
    view: bool = False


_LiveOperands = bool | tuple[str, ...]
ReadsWhileWriting = (
    _LiveOperands | Callable[[Mapping[str, Type | None], Type | None], _LiveOperands]
)


@dataclass(frozen=True)
class OpSpec:
    """Everything about one op (see the module docstring)."""

    name: str
    params: tuple[ParamSpec, ...]
    type_rule: Callable[[CallInfo], Type | None]
    mem: MemRule
    doc: str
    # Names the op is reachable under: "name" = `pl.name` and `pl.tile.name`;
    # "tile.name" = only `pl.tile.name` (e.g. tile.full vs the tensor-level pl.full).
    spellings: tuple[str, ...] = ()
    scalar_form: str | None = None  # e.g. tile.add -> tile.adds when the rhs is a scalar
    arch_rule: Callable[[ArchSpec, CallInfo], None] | None = None
    compute: Callable[..., Any] | None = None
    execute: Callable[..., Any] | None = None
    tier: int = 1
    # Batched loop execution (compiler/batching.py): True when the numpy semantics, given
    # operands with one extra LEADING batch axis (tile values of shape (n, *tile.shape),
    # ``out`` the matching batched TileType), compute exactly the per-iteration results
    # stacked, with the same per-element rounding: elementwise ops and their scalar forms,
    # unary ops, cast, move, reductions and row_expand over trailing axes, matmul via
    # np.matmul broadcasting, and matmul_acc (in place on its batched ``acc``).  Operands
    # without the batch axis broadcast (loop-invariant tiles).  Loads, stores and tile
    # creation are batched by the compiler itself and keep False here.
    batchable: bool = False
    # The tensor parameter the op writes and returns (the caller rebinds it), e.g.
    # "output_tensor" for tile.store: argument directions (compiler/directions.py)
    # trace tensor roots and check In/Out through it.
    writes: str | None = None
    # The tensor parameter a zero-copy view op looks through (e.g. "tensor" for
    # tensor.slice): a write through the view is a write of that operand's root buffer,
    # so argument directions trace views back to it.
    view_of: str | None = None
    # Operands the hardware still reads while it writes the result, so the result may not
    # take their buffer even when this call is their last use (compiler/capacity.py):
    # False (none), True (every tile operand), a tuple of param names, or a function of
    # (operand types by param, result type) returning one of those when it depends on the
    # call (a widening cast's write cursor outruns its read cursor).
    reads_while_writing: ReadsWhileWriting = False
    # --- kinds the compiler and the runtime ask about (each read in one place) ---
    # The result is a matmul accumulator stored into a tensor (tensor.matmul,
    # tensor.matmul_acc): the tensor lowering (compiler/tensor_lowering.py) tiles it
    # through the cube (Mat -> Left/Right -> Acc), and only such a result may be assembled
    # into a target of another dtype (the accumulator store converts; compiler/tensor_valid.py).
    matmul_result: bool = False
    # A tensor op with a lowering of its own in the compiler's hook table
    # (compiler/lowering_hooks.py HOOKS), which the tensor lowering calls for it.
    lowering_hook: bool = False
    # That lowering tiles pl.dynamic dims too; without it a dynamic dim in a call of a
    # hooked op is an error naming the op (the hook needs static shapes).
    hook_tiles_dynamic: bool = False
    # The result regroups the operand's cells (tensor.reshape, tensor.matrix_view): a valid
    # region does not carry over dim by dim (compiler/tensor_valid.py).
    regroups: bool = False
    # A tensor op an orchestration body may run (on whole tensors, compiler/structure.py);
    # every other tensor op runs only in InCore code.
    in_orchestration: bool = False
    # The op reads its kernel's launch (block index / count), which codegen then passes
    # to the kernel (compiler/codegen.py).
    reads_launch: bool = False
    # For a reduction over an axis: the tile op combining two partial results when the
    # tensor lowering cuts that axis into chunks (row_sum -> tile.add); None: never cut.
    partial_combine: str | None = None
    # A batched loop (compiler/batching.py) creates this tile once, with the batch axis in
    # front of its `shape` attribute (tile.create, tile.full); like loads and stores, it
    # keeps `batchable` False.
    batched_create: bool = False
    # A batchable op whose `shape` attribute is its result's shape (tile.reshape): a
    # batched call gets the batch axis in front of it, as a batched creation does.
    batched_shape: bool = False
    # A memory op whose ``execute`` maps over a leading task axis (valid regions included),
    # which a kernel's task-batched variant may call (compiler/codegen_tasks.py) though
    # batched loops do not take it (tile.transpose_view, tile.fillpad).
    task_batchable: bool = False
    # Precise runs (runtime/precise.py): a memory op (`execute`) that takes a tile held in
    # FP32 under a narrower float dtype as it is (stores, moves, views, casts, matmul
    # accumulates...); every other memory op sees its tiles rounded to their dtype first.
    wide_safe: bool = False
    # Operands the op's tensor-level form brings to one dtype by PyPTO's promotion rule
    # (ir/tensor_forms.py `promote`): the lowering casts a narrower one after its load.
    tensor_promotes: tuple[str, ...] = ()

    def live_while_writing(
        self, types: Mapping[str, Type | None], result: Type | None
    ) -> _LiveOperands:
        """`reads_while_writing` resolved for one call: False, True or param names."""
        rule = self.reads_while_writing
        return rule(types, result) if callable(rule) else rule

    @property
    def level(self) -> str:
        """'tile', 'tensor' or 'scalar': the prefix of the op name."""
        return self.name.split(".", 1)[0]

    @property
    def short_name(self) -> str:
        return self.name.split(".", 1)[1]

    def param(self, name: str) -> ParamSpec:
        for p in self.params:
            if p.name == name:
                return p
        raise KeyError(f"{self.name} has no parameter {name!r}")


_REGISTRY: dict[str, OpSpec] = {}


def register(spec: OpSpec) -> OpSpec:
    """Add an op; each name is registered once."""
    if spec.name in _REGISTRY:
        raise ValueError(f"op {spec.name!r} registered twice")
    if (spec.compute is None) == (spec.execute is None):
        raise ValueError(f"op {spec.name!r} needs exactly one of compute/execute")
    if spec.mem.view and not (spec.mem.result or "").startswith("same:"):
        raise ValueError(f"op {spec.name!r}: a view's result is 'same:<param>'")
    _REGISTRY[spec.name] = spec
    return spec


class _Registry(Mapping[str, OpSpec]):
    """Read-only view of all ops; loads the op modules on first access."""

    _loaded = False

    def _load(self) -> dict[str, OpSpec]:
        if not _Registry._loaded:
            _Registry._loaded = True
            import pytest_pypto.ir.ops  # noqa: F401  # lazy: the op modules import this one; registers them all
        return _REGISTRY

    def __getitem__(self, name: str) -> OpSpec:
        return self._load()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._load())

    def __len__(self) -> int:
        return len(self._load())

    def as_dict(self) -> dict[str, OpSpec]:
        """The live name -> OpSpec dict (for the compiler's many per-call lookups, which
        through this Mapping cost a method call and a load check each)."""
        return self._load()

    def by_spelling(self, spelling: str) -> list[OpSpec]:
        """Ops reachable as `pl.<spelling>` / `pl.tile.<spelling>` / `pl.tensor.<spelling>`."""
        return [s for s in self._load().values() if spelling in s.spellings]

    # by_namespace answers, memoised (the parser asks for every op call it reads) for as
    # long as the registry keeps the size they were computed at: `register` only adds.
    _by_namespace: dict[tuple[str, str], tuple[OpSpec, ...]] = {}
    _by_namespace_size = -1

    def by_namespace(self, namespace: str, name: str) -> list[OpSpec]:
        """Ops reachable as `pl.<name>` (namespace "") or `pl.tile.<name>` ("tile")."""
        ops = self._load()
        memo = _Registry._by_namespace
        if _Registry._by_namespace_size != len(ops):
            memo.clear()
            _Registry._by_namespace_size = len(ops)
        found = memo.get((namespace, name))
        if found is None:
            found = memo[namespace, name] = tuple(
                s for s in ops.values()
                if name in s.spellings or (namespace and f"{namespace}.{name}" in s.spellings)
            )
        return list(found)


REGISTRY = _Registry()
