"""IR types (docs/design/language.md §11): tensors in DDR, tiles on chip, scalars, tuples.

Types are frozen and hashable, so they can key caches and be compared structurally.
"""

from __future__ import annotations

import enum
import itertools
from dataclasses import dataclass, field, replace
from typing import Any

from pytest_pypto.ir.dtypes import DataType


class MemorySpace(enum.Enum):
    """Where a buffer lives (docs/design/language.md §14); values are the names used in ArchSpec
    tables."""

    DDR = "DDR"
    Vec = "Vec"
    Mat = "Mat"
    Left = "Left"
    Right = "Right"
    Acc = "Acc"
    Bias = "Bias"
    LeftScale = "LeftScale"
    RightScale = "RightScale"

    def __repr__(self) -> str:
        return f"pl.Mem.{self.name}"


CUBE_SPACES = frozenset({"Mat", "Left", "Right", "Acc", "Bias", "LeftScale", "RightScale"})
VECTOR_SPACES = frozenset({"Vec"})


class Direction(enum.Enum):
    """How a kernel parameter is accessed (docs/design/language.md §5); drives task dependencies."""

    IN = "In"
    OUT = "Out"
    INOUT = "InOut"
    SCALAR = "Scalar"

    @property
    def reads(self) -> bool:
        return self in (Direction.IN, Direction.INOUT)

    @property
    def writes(self) -> bool:
        return self in (Direction.OUT, Direction.INOUT)


_dyn_ids = itertools.count(1)


@dataclass(frozen=True, eq=False)
class DynVar:
    """A dynamic tensor dimension (`pl.dynamic("M")`): identity, not name, makes it one dim."""

    name: str
    uid: int = field(default_factory=lambda: next(_dyn_ids))

    def __repr__(self) -> str:
        return f"{self.name}"

    def __eq__(self, other: object) -> bool:
        return self is other

    def __hash__(self) -> int:
        return hash(("DynVar", self.uid))

    # `M * 2`, `M // TM`, `M + 1`: shape expressions (PyPTO's composite dims).
    def __add__(self, other: object) -> DynExpr:
        return DynExpr.make("+", self, other)

    def __radd__(self, other: object) -> DynExpr:
        return DynExpr.make("+", other, self)

    def __sub__(self, other: object) -> DynExpr:
        return DynExpr.make("-", self, other)

    def __rsub__(self, other: object) -> DynExpr:
        return DynExpr.make("-", other, self)

    def __mul__(self, other: object) -> DynExpr:
        return DynExpr.make("*", self, other)

    def __rmul__(self, other: object) -> DynExpr:
        return DynExpr.make("*", other, self)

    def __floordiv__(self, other: object) -> DynExpr:
        return DynExpr.make("//", self, other)

    def __rfloordiv__(self, other: object) -> DynExpr:
        return DynExpr.make("//", other, self)

    def __mod__(self, other: object) -> DynExpr:
        return DynExpr.make("%", self, other)

    def __rmod__(self, other: object) -> DynExpr:
        return DynExpr.make("%", other, self)


DYN_OPS = ("+", "-", "*", "//", "%")


@dataclass(frozen=True, eq=False)
class DynExpr(DynVar):
    """A dimension computed from `pl.dynamic` dims and ints (`M * 2`, `M // TM`).

    Equal when structurally equal (same op, same DynVar objects, same ints), so two
    annotations spelling `M * 2` denote one dimension.  It binds no variable itself:
    its value is evaluated from the DynVars it names.
    """

    op: str = "+"
    lhs: Any = 0
    rhs: Any = 0

    @staticmethod
    def make(op: str, lhs: object, rhs: object) -> DynExpr:
        for side in (lhs, rhs):
            if not (isinstance(side, DynVar) or (isinstance(side, int) and not isinstance(side, bool))):
                return NotImplemented  # type: ignore[return-value]
        return DynExpr(f"({_dim_text(lhs)} {op} {_dim_text(rhs)})", op=op, lhs=lhs, rhs=rhs)

    def __repr__(self) -> str:
        return self.name[1:-1]

    def _key(self) -> tuple[Any, ...]:
        return (self.op, _dim_key(self.lhs), _dim_key(self.rhs))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, DynExpr) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(("DynExpr",) + self._key())

    def dyn_vars(self) -> list[DynVar]:
        """The plain DynVars this expression reads, left to right, once each."""
        found: list[DynVar] = []
        for side in (self.lhs, self.rhs):
            for v in side.dyn_vars() if isinstance(side, DynExpr) else (
                    [side] if isinstance(side, DynVar) else []):
                if v not in found:
                    found.append(v)
        return found

    def evaluate(self, values: dict[DynVar, int]) -> int:
        """The value under ``values`` (a DynVar missing from it raises KeyError)."""
        a, b = (_dim_value(s, values) for s in (self.lhs, self.rhs))
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "*":
            return a * b
        if self.op == "//":
            return a // b
        return a % b


def _dim_text(d: object) -> str:
    return d.name if isinstance(d, DynVar) else str(d)


def _dim_key(d: object) -> object:
    if isinstance(d, DynExpr):
        return d._key()
    if isinstance(d, DynVar):
        return ("var", d.uid)
    return d


def _dim_value(d: object, values: dict[DynVar, int]) -> int:
    if isinstance(d, DynExpr):
        return d.evaluate(values)
    if isinstance(d, DynVar):
        return values[d]
    return int(d)  # type: ignore[call-overload]


Dim = int | DynVar


class Type:
    """Base of IR types."""

    kind: str = "?"


@dataclass(frozen=True)
class TensorType(Type):
    """A DDR buffer, row-major; dims are ints or DynVars.

    ``valid`` is PyPTO's tensor valid_shape (from `pl.set_validshape`, a slice's
    ``valid_shape``/``clamp=True``, or a tensor op on such a tensor): one entry per
    dim, an int or None where it is Scalar-valued; None when the whole tensor is
    valid.  ``pad`` is the pad mode of the cells outside it.  Both are metadata of
    a value, not of the buffer, so they take no part in type equality.
    """

    shape: tuple[Dim, ...]
    dtype: DataType
    valid: tuple[int | None, ...] | None = field(default=None, compare=False)
    pad: str | None = field(default=None, compare=False)
    kind = "Tensor"

    def __post_init__(self) -> None:
        if self.valid is not None and tuple(self.valid) == tuple(self.shape):
            object.__setattr__(self, "valid", None)

    @property
    def rank(self) -> int:
        return len(self.shape)

    @property
    def valid_shape(self) -> tuple[Any, ...]:
        """The valid extent per dim (the shape itself when the whole tensor is valid)."""
        return tuple(self.shape) if self.valid is None else tuple(self.valid)

    @property
    def narrowed(self) -> bool:
        """Whether part of the tensor lies outside its valid region."""
        return self.valid is not None

    @property
    def is_static(self) -> bool:
        return all(isinstance(d, int) for d in self.shape)


@dataclass(frozen=True)
class TileType(Type):
    """An on-chip buffer: static physical shape, valid region, memory space, pad.

    ``valid`` holds one entry per dim: an int when known at compile time, or None
    when it is Scalar-valued (known only at run time).  ``space`` is None until
    memory-space inference fixes it.
    """

    shape: tuple[int, ...]
    dtype: DataType
    space: str | None = None
    valid: tuple[int | None, ...] | None = None
    pad: str | None = None
    # A declared allocation (ir/memref.MemRefBinding) on an annotation's type: a storage
    # hint, so it takes no part in type equality.
    memref: Any = field(default=None, compare=False)
    kind = "Tile"

    def __post_init__(self) -> None:
        if self.valid is None:
            object.__setattr__(self, "valid", tuple(self.shape))

    @property
    def rank(self) -> int:
        return len(self.shape)

    def with_(self, **changes: object) -> TileType:
        """A copy with some fields changed (``self`` when the changed fields are equal
        strings or the same objects: the type is frozen, so sharing it is the same)."""
        for key, value in changes.items():
            current = getattr(self, key)
            if current is not value and not (type(current) is str and type(value) is str
                                             and current == value):
                break
        else:
            return self
        return replace(self, **changes)


@dataclass(frozen=True)
class ScalarType(Type):
    """A register value: scalar params, read results, loop vars (INDEX), comparisons (BOOL)."""

    dtype: DataType
    kind = "Scalar"


@dataclass(frozen=True)
class ArrayType(Type):
    """PyPTO's on-core array (`pl.Array[extent, dtype]`): a small 1-D integer/BOOL array
    on the scalar register file, local to one kernel; updates are functional."""

    extent: int
    dtype: DataType
    kind = "Array"


@dataclass(frozen=True)
class HandleType(Type):
    """An opaque handle one op produces and others consume (PyPTO's async-prefetch
    handles, docs/design/language.md §11): no value a kernel computes with, local to one
    kernel.  ``kind`` is the handle's PyPTO class name."""

    name: str

    @property
    def kind(self) -> str:  # type: ignore[override]
        return self.name


@dataclass(frozen=True)
class TupleType(Type):
    """Several values returned together (binds positionally)."""

    items: tuple[Type, ...]
    kind = "Tuple"


def type_str(t: Type | None) -> str:
    """Stable, readable rendering of a type (used by the printer and diagnostics)."""
    if t is None:
        return "?"
    if isinstance(t, TensorType):
        extra = ""
        if t.valid is not None:
            extra = ", valid=[" + ", ".join("?" if v is None else str(v) for v in t.valid) + "]"
        if t.pad is not None:
            extra += f", pad={t.pad}"
        return f"Tensor[[{', '.join(map(str, t.shape))}], {t.dtype.name}{extra}]"
    if isinstance(t, TileType):
        parts = [f"[{', '.join(map(str, t.shape))}]", t.dtype.name]
        if t.space is not None:
            parts.append(t.space)
        if tuple(t.valid or ()) != t.shape:
            parts.append("valid=[" + ", ".join("?" if v is None else str(v) for v in t.valid) + "]")
        if t.pad is not None:
            parts.append(f"pad={t.pad}")
        return f"Tile[{', '.join(parts)}]"
    if isinstance(t, ScalarType):
        return f"Scalar[{t.dtype.name}]"
    if isinstance(t, ArrayType):
        return f"Array[{t.extent}, {t.dtype.name}]"
    if isinstance(t, TupleType):
        return f"Tuple[{', '.join(type_str(i) for i in t.items)}]"
    if isinstance(t, HandleType):
        return t.name
    return repr(t)
