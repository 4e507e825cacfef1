"""Shared pieces of the op entries: operand accessors, dtype/shape checks, messages.

Type rules run at parse time (no arch) and again at compile time; they must stay
cheap and must not import numpy, so the numpy side lives behind `np`
(`ir.lazy_numpy`), which loads numpy on the first attribute access (the simulator's
first compute), not when the registry is imported.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from pytest_pypto.arch import ARCH_CHOICES, spec
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.lazy_numpy import np  # noqa: F401  (the op modules import it from here)
from pytest_pypto.ir.registry import CallInfo, OpArchError, OpRuleError, OpTypeError
from pytest_pypto.ir.types import ScalarType, TensorType, TileType, Type

FLOAT_DTYPES = ("FP16", "FP32", "BF16", "FP8E4M3FN", "FP8E5M2")
SIGNED_INT_DTYPES = ("INT8", "INT16", "INT32", "INT64")
NUMERIC_DTYPES = (
    "INT8", "UINT8", "INT16", "UINT16", "INT32", "UINT32", "INT64", "UINT64",
    "FP16", "FP32", "BF16",
)


class OpBoundsError(OpRuleError):
    """A load/store window reaches past its tensor (docs/design/checks.md §6); the caller adds the
    span."""


# ------------------------------------------------------------------ accessors


def tile(info: CallInfo, name: str) -> TileType:
    """The TileType of value param ``name``; a non-tile operand is a type error."""
    t = info.types.get(name)
    if not isinstance(t, TileType):
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a Tile, but got {_kind(t)}",
            "load tensors into tiles with pl.load first" if isinstance(t, TensorType) else None,
        )
    return t


def optional_tile(info: CallInfo, name: str) -> TileType | None:
    """The TileType of an optional tile param (None when not passed)."""
    if info.types.get(name) is None:
        return None
    return tile(info, name)


def tensor(info: CallInfo, name: str) -> TensorType:
    t = info.types.get(name)
    if not isinstance(t, TensorType):
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a Tensor, but got {_kind(t)}"
        )
    return t


def scalar(info: CallInfo, name: str) -> ScalarType:
    t = info.types.get(name)
    if not isinstance(t, ScalarType):
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a scalar, but got {_kind(t)}",
            f"use the tile form: {info.op.rstrip('s')}(...)" if isinstance(t, TileType) else None,
        )
    if t.dtype.name == "BOOL":
        raise OpTypeError(
            f"The operator {info.op} requires a numeric scalar, but got a BOOL",
            "pass an int or float value",
        )
    return t


def require_int_scalar(info: CallInfo, name: str) -> None:
    """A Scalar operand ``name`` (an extent, an index) must be an integer; a literal passes."""
    t = info.types.get(name)
    if isinstance(t, ScalarType) and not t.dtype.is_int:
        raise OpTypeError(
            f"The operator {info.op} requires an integer '{name}', but got {t.dtype.name}",
            "pl.cast it to pl.INDEX",
        )


def _kind(t: Type | None) -> str:
    if t is None:
        return "nothing"
    return f"a {t.kind}"


def space_name(value: Any) -> str | None:
    """Normalize a memory-space static value (MemorySpace member or name) to its name."""
    if value is None:
        return None
    if isinstance(value, str):
        return value
    return str(getattr(value, "value", getattr(value, "name", value)))


def enum_name(value: Any) -> str | None:
    """Name of an enum-like static value (enum member, or already a string/int)."""
    if value is None or isinstance(value, (str, int)):
        return value
    return str(getattr(value, "name", value))


def require_atomic_mode(info: CallInfo) -> None:
    """A store's or assemble's ``atomic`` is None_ (a plain write) or Add."""
    atomic = enum_name(info.values.get("atomic"))
    if atomic not in (None, "None_", "None", 0, "Add", 1):
        raise OpTypeError(f"The operator {info.op} requires atomic None_ or Add, but got {atomic}")


# ------------------------------------------------------------------- messages


def dtype_list(names: Iterable[str]) -> str:
    """'INT16, INT32, FP16 or FP32'."""
    names = list(names)
    if len(names) == 1:
        return names[0]
    return ", ".join(names[:-1]) + " or " + names[-1]


def dims(shape: Sequence[Any]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in shape) + "]"


# --------------------------------------------------------------------- checks


def require_dtype(
    info: CallInfo, dt: DataType, allowed: Sequence[str], what: str = "dtype",
    hint: str | None = None,
) -> None:
    """``dt`` must be one of ``allowed`` ("The operator tile.div requires dtype ..., but got X")."""
    if dt.name not in allowed:
        raise OpTypeError(
            f"The operator {info.op} requires {what} {dtype_list(allowed)}, but got {dt.name}",
            hint or f"pl.cast the operand to one of {dtype_list(allowed)} first",
        )


def require_same_dtype(info: CallInfo, a: DataType, b: DataType, what: str = "both operands") -> None:
    if a is not b and a.name != b.name:
        wider = a if a.bits >= b.bits else b
        raise OpTypeError(
            f"The operator {info.op} requires {what} in one dtype, but got {a.name} and {b.name}",
            f"pl.cast one side, e.g. pl.cast(x, pl.{wider.name})",
        )


def require_rank(info: CallInfo, t: TileType, name: str, *, exact: int | None = None,
                 at_least: int | None = None) -> None:
    if exact is not None and t.rank != exact:
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be rank {exact}, but got rank {t.rank}"
        )
    if at_least is not None and t.rank < at_least:
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be at least rank {at_least}, "
            f"but got rank {t.rank}"
        )


def index_items(info: CallInfo, name: str, rank: int, what: str) -> tuple[Any, ...]:
    """An index list of one entry per dimension (ints, or None where dynamic)."""
    items = info.values.get(name)
    if items is None or not isinstance(items, (tuple, list)):
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a list, but got {items!r}"
        )
    if len(items) != rank:
        raise OpTypeError(
            f"The operator {info.op} requires one {what} per dimension ({rank}), but got "
            f"{len(items)} in '{name}'"
        )
    return tuple(items)


def static_shape(info: CallInfo, name: str, shape: Any) -> tuple[int, ...]:
    """A static, positive shape (tile physical dims)."""
    if shape is None or not isinstance(shape, (tuple, list)) or not shape:
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a non-empty list of ints, "
            f"but got {shape!r}"
        )
    for i, d in enumerate(shape):
        if not isinstance(d, int) or isinstance(d, bool) or d <= 0:
            raise OpTypeError(
                f"The operator {info.op} requires static positive '{name}', but got "
                f"{dims(shape)} (dimension {i})",
                "tile shapes are compile-time ints; use valid_shapes for dynamic extents",
            )
    return tuple(shape)


def broadcast_result(info: CallInfo, a: TileType, b: TileType) -> TileType:
    """Right-aligned broadcast of two tiles where a dim is 1; valid follows ``a`` (else ``b``)."""
    if a.rank != b.rank:
        raise OpTypeError(
            f"The operator {info.op} requires operands of one rank, but got "
            f"{dims(a.shape)} and {dims(b.shape)}"
        )
    shape, valid = [], []
    for i, (da, db) in enumerate(zip(a.shape, b.shape)):
        if da == db or db == 1:
            shape.append(da)
            valid.append(a.valid[i])
        elif da == 1:
            shape.append(db)
            valid.append(b.valid[i])
        else:
            raise OpTypeError(
                f"The operator {info.op} requires shapes that broadcast, but got "
                f"{dims(a.shape)} and {dims(b.shape)} (dimension {i})",
                "make the dims equal, or 1 on the operand that should be broadcast",
            )
    return TileType(tuple(shape), a.dtype, valid=tuple(valid))


def require_arch_dtype(arch: Any, info: CallInfo, family: str, dt: DataType) -> None:
    """The arch's vector instruction for ``family`` takes ``dt`` (docs/design/arch.md §7,
    `ArchSpec.vec_op_dtypes`); otherwise an OpArchError naming the arch, the dtypes it
    takes and the archs that take ``dt``."""
    allowed = arch.vec_op_dtypes.get(family)
    if allowed is None or dt.name in allowed:
        return

    others = [a for a in ARCH_CHOICES if a != arch.name
              and dt.name in spec(a).vec_op_dtypes.get(family, (dt.name,))]
    hint = f"use {dtype_list(allowed)}"
    if others:
        hint += f", or target {' or '.join(others)}"
    raise OpArchError(
        f"The operator {info.op} does not support dtype {dt.name} on the '{arch.name}' backend",
        hint,
    )


def warn_unvalidated(arch: Any, info: CallInfo, key: str, what: str) -> None:
    """docs/design/arch.md §7: combinations PyPTO accepts but has validated only on a5 warn, not
    fail."""
    if key in arch.unvalidated_combos:
        info.warnings.append(
            f"The operator {info.op} {what} is not validated on '{arch.name}' hardware"
        )


def window_ranges(
    info: CallInfo, param: str, extents: Sequence[Any], size: Sequence[Any],
) -> Iterator[tuple[int, Any, Any, Any, Any]]:
    """Per dimension of a window ``(d, lo, hi, extent, size)``: the offset's range, a static
    offset's own value or a dynamic one's interval from CallInfo.bounds (None when unknown)."""
    offsets = info.values.get(param) or ()
    ranges = info.bounds.get(param, ())
    for d, (off, ext, n) in enumerate(zip(offsets, extents, size)):
        lo = hi = off
        if off is None and d < len(ranges) and ranges[d] is not None:
            lo, hi = ranges[d]
        yield d, lo, hi, ext, n


def check_valid_extents(op: str, valid: Sequence[int], shape: Sequence[int], what: str) -> None:
    """Run time: each valid extent lies in 0..shape (set_validshape with Scalar extents)."""
    for d, v in enumerate(valid):
        if not 0 <= v <= shape[d]:
            raise OpBoundsError(
                f"{op}: valid extent {v} of dimension {d} is outside 0..{shape[d]}",
                f"keep the valid region inside the {what}'s shape",
            )


def check_window(
    info: CallInfo, param: str, extents: Sequence[int | None], tensor_shape: Sequence[Any],
    *, verb: str, whose: str,
) -> None:
    """Static bounds of a load/store window (docs/design/checks.md §6), using CallInfo.bounds at
    compile.

    Bounds are a compile-time check (BoundsError): at parse time (no arch) it is skipped.
    """
    if info.arch is None:
        return
    for d, lo, hi, ext, size in window_ranges(info, param, extents, tensor_shape):
        if lo is not None and lo < 0:
            raise OpBoundsError(
                f"{info.op} {verb} before the start of dimension {d}: offset {lo} < 0",
                "offsets must be non-negative",
            )
        if hi is None or ext is None or not isinstance(size, int):
            continue
        if hi + ext > size:
            hint = (
                "pass clamp=True to cut the read at the source edge, or shrink valid_shapes"
                if verb == "reads" else "shrink the tile's valid_shapes or fix the offset"
            )
            raise OpBoundsError(
                f"{info.op} {verb} past the end of dimension {d}: offset {hi} + extent {ext} "
                f"> {whose} extent {size}",
                hint,
            )


def lowered_by_compiler(*_: Any, **__: Any) -> Any:
    """The `execute` of tensor-level ops the compiler lowers to tile ops: never run."""
    raise RuntimeError("this tensor-level op is lowered to tile ops by the compiler")
