# SPDX-License-Identifier: Apache-2.0
"""Views of tiles: slice, reshape, transpose, transpose_view, set_validshape, assemble
(docs/design/language.md §15, §21).

PyPTO's views are zero-copy, so these share the source buffer where PyPTO's do
(``slice``, ``reshape``, ``transpose_view``, ``set_validshape``); ``transpose``
is a copy (TTRANS).  A view is never valid where its source is not: the result's
valid region is the requested one cut by the source's valid region shifted by the
offset.  Tensor forms live in `views_tensor`, element access in `elements`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from pytest_pypto.ir.ops._rules import (
    OpBoundsError,
    check_valid_extents,
    dims,
    index_items,
    np,
    require_int_scalar,
    require_same_dtype,
    tile,
    window_ranges,
)
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue, fill_value

PAD_NAMES = ("zero", "min", "max")


# ------------------------------------------------------------------ shared rules


def pad_name(info: CallInfo, value: Any) -> str | None:
    """`pad_value` as a tile pad: PadValue.{zero,min,max}, 0, math.inf, -math.inf, or None."""
    if value is None or value == "null":
        return None
    if isinstance(value, str) and value in PAD_NAMES:
        return value
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        if value == 0:
            return "zero"
        if value == math.inf:
            return "max"
        if value == -math.inf:
            return "min"
    raise OpTypeError(
        f"The operator {info.op} requires pad_value pl.PadValue.zero/min/max, 0, math.inf or "
        f"-math.inf, but got {value!r}",
        "pad with one of the three pad values, or fill explicitly with pl.fillpad",
    )


def check_inside(
    info: CallInfo, param: str, extents: Sequence[int | None], size: Sequence[Any], whose: str,
) -> None:
    """Static bounds of a window (docs/design/checks.md §6): offset >= 0 and offset + extent <=
    size.

    Uses interval bounds of dynamic offsets at compile time; skipped at parse time.
    """
    if info.arch is None:
        return
    for d, lo, hi, ext, n in window_ranges(info, param, extents, size):
        if lo is not None and lo < 0:
            raise OpBoundsError(
                f"{info.op} starts before dimension {d}: offset {lo} < 0",
                "offsets must be non-negative",
            )
        if hi is not None and ext is not None and isinstance(n, int) and hi + ext > n:
            raise OpBoundsError(
                f"{info.op} reaches past the end of dimension {d}: offset {hi} + extent {ext} > "
                f"{whose} extent {n}",
                "shrink the window or fix the offset",
            )


def runtime_inside(op: str, offsets: Sequence[Any], extents: Sequence[Any],
                   size: Sequence[int], whose: str) -> None:
    """The run-time form of `check_inside` (dynamic offsets)."""
    for d, (o, e, n) in enumerate(zip(offsets, extents, size)):
        o, e = int(o), int(e)
        if o < 0:
            raise OpBoundsError(f"{op} starts before dimension {d}: offset {o} < 0",
                                "offsets must be non-negative")
        if o + e > n:
            raise OpBoundsError(
                f"{op} reaches past the end of dimension {d}: offset {o} + extent {e} > "
                f"{whose} extent {n}",
                "shrink the window or fix the offset",
            )


def cut_valid(requested: Sequence[Any], src_valid: Sequence[Any], offsets: Sequence[Any]
              ) -> tuple[int | None, ...]:
    """requested ∩ (source valid shifted by offsets), per dim; None where unknown."""
    out: list[int | None] = []
    for r, v, o in zip(requested, src_valid, offsets):
        if r is None or v is None or o is None:
            out.append(None)
        else:
            out.append(max(0, min(int(r), int(v) - int(o))))
    return tuple(out)


def normalize_axis(info: CallInfo, axis: Any, rank: int, name: str) -> int:
    if not isinstance(axis, int) or isinstance(axis, bool) or not -rank <= axis < rank:
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' in [{-rank}, {rank - 1}] for a rank-{rank} "
            f"operand, but got {axis!r}"
        )
    return axis % rank


def swap(seq: Sequence[Any], a: int, b: int) -> tuple[Any, ...]:
    items = list(seq)
    items[a], items[b] = items[b], items[a]
    return tuple(items)


def drop_axes(info: CallInfo, shape: Sequence[Any], valid: Sequence[Any], drop: Any,
              floor: int) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """Erase ``drop`` (static unit, fully valid axes) from shape/valid; tiles keep >= ``floor``
    axes by prepending unit axes (PyPTO clamps sub-2-D tile results back to 2-D)."""
    if not drop:
        return tuple(shape), tuple(valid)
    rank = len(shape)
    axes = set()
    for a in drop:
        if not isinstance(a, int) or isinstance(a, bool) or not -rank <= a < rank:
            raise OpTypeError(
                f"The operator {info.op} requires drop_dims entries in [{-rank}, {rank - 1}], "
                f"but got {list(drop)}"
            )
        a %= rank
        if shape[a] != 1:
            raise OpTypeError(
                f"The operator {info.op} can drop only unit axes, but dimension {a} has extent "
                f"{shape[a]}",
                "index that axis with a single value, or keep it",
            )
        if valid[a] == 0:
            raise OpTypeError(
                f"The operator {info.op} can drop only fully valid axes, but dimension {a} has "
                "no valid element"
            )
        axes.add(a)
    kept = [d for d in range(rank) if d not in axes]
    new_shape = [shape[d] for d in kept]
    new_valid = [valid[d] for d in kept]
    while len(new_shape) < floor:
        new_shape.insert(0, 1)
        new_valid.insert(0, 1)
    return tuple(new_shape), tuple(new_valid)


def reshape_valid(op: str, shape: Sequence[int], valid: Sequence[Any], target: Sequence[int]
                  ) -> tuple[Any, ...]:
    """Map a valid region through a reshape without widening it (docs/design/language.md §15).

    Fully valid stays fully valid; empty stays empty; adding or dropping unit axes keeps
    the rectangle; a region that is a row-major prefix maps to the same prefix when that
    is a rectangle of ``target``.  Anything else raises OpTypeError.
    """
    shape, target = tuple(shape), tuple(target)
    if tuple(valid) == shape:
        return target
    if any(v == 0 for v in valid):
        return tuple(0 for _ in target)
    squeezed = [(s, v) for s, v in zip(shape, valid) if s != 1]
    if [s for s, _ in squeezed] == [t for t in target if t != 1]:
        it = iter(v for _, v in squeezed)
        return tuple(next(it) if t != 1 else 1 for t in target)
    if all(v is not None for v in valid):
        # Row-major prefix: [1.., v_j, full..] holds the first prod(valid) cells.
        j = next((d for d, v in enumerate(valid) if v != 1), len(valid))
        if all(v == s for v, s in zip(valid[j + 1:], shape[j + 1:])):
            count = math.prod(int(v) for v in valid)
            for k in range(len(target)):
                tail = math.prod(target[k + 1:])
                if count % tail == 0 and count // tail <= target[k]:
                    return (1,) * k + (count // tail,) + tuple(target[k + 1:])
    raise OpTypeError(
        f"The operator {op} cannot map valid region {dims(valid)} of shape {dims(shape)} onto "
        f"shape {dims(target)}: no origin-anchored region of the new shape holds the same cells",
        "pl.fillpad the tile first (its result is fully valid), then reshape",
    )


def _static_positive(info: CallInfo, name: str, rank: int | None = None) -> tuple[int, ...]:
    shape = info.values.get(name)
    if not isinstance(shape, (tuple, list)) or not shape:
        raise OpTypeError(
            f"The operator {info.op} requires '{name}' to be a non-empty list of ints, but got "
            f"{shape!r}"
        )
    if rank is not None and len(shape) != rank:
        raise OpTypeError(
            f"The operator {info.op} requires one extent per dimension ({rank}), but got "
            f"{len(shape)} in '{name}'"
        )
    for d, s in enumerate(shape):
        if not isinstance(s, int) or isinstance(s, bool) or s <= 0:
            raise OpTypeError(
                f"The operator {info.op} requires static positive '{name}', but got "
                f"{dims(shape)} (dimension {d})",
                "tile shapes are compile-time ints; narrow with valid_shape for dynamic extents",
            )
    return tuple(shape)


def _view_value(src: Any, data: Any, valid: Sequence[Any], pad: str | None = None) -> Any:
    return TileValue(data, tuple(int(v) for v in valid), src.dtype, src.space,
                     src.pad if pad is None else pad)


# ------------------------------------------------------------------------- slice


def _slice_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    if info.values.get("clamp"):
        raise OpTypeError(
            f"The operator {info.op} does not take clamp=True: an on-chip window has no "
            "clamping mechanism, so offset + shape must stay inside the source tile",
            "clamp at the tensor: pl.load(..., clamp=True) or pl.slice(tensor, ..., clamp=True)",
        )
    shape = _static_positive(info, "shape", src.rank)
    offsets = index_items(info, "offset", src.rank, "offset")
    for d, (o, s, n) in enumerate(zip(offsets, shape, src.shape)):
        if o is not None and (o < 0 or o + s > n):
            raise OpTypeError(
                f"The operator {info.op} requires the window inside the source tile, but "
                f"dimension {d} has offset {o} + extent {s} > source extent {n}",
                "a tile window cannot overhang its tile; narrow it with valid_shape",
            )
    check_inside(info, "offset", shape, src.shape, "source tile")
    requested: Sequence[Any] = shape
    if info.values.get("valid_shape") is not None:
        requested = index_items(info, "valid_shape", src.rank, "valid extent")
        for d, (v, s) in enumerate(zip(requested, shape)):
            if v is not None and not 0 <= v <= s:
                raise OpTypeError(
                    f"The operator {info.op} requires 0 <= valid_shape <= shape, but got "
                    f"valid_shape {dims(requested)} for shape {dims(shape)} (dimension {d})"
                )
    valid = cut_valid(requested, src.valid, offsets)
    pad = pad_name(info, info.values.get("pad_value"))
    shape, valid = drop_axes(info, shape, valid, info.values.get("drop_dims"), floor=2)
    return TileType(shape, src.dtype, src.space, valid, pad or src.pad)


def _slice_execute(src, *, shape, offset, valid_shape=None, drop_dims=None, pad_value=None,
                   out=None, **_):
    shape = tuple(int(s) for s in shape)
    offset = tuple(int(o) for o in offset)
    runtime_inside("tile.slice", offset, shape, src.shape, "source tile")
    requested = shape if valid_shape is None else tuple(int(v) for v in valid_shape)
    for d, (v, s) in enumerate(zip(requested, shape)):
        if not 0 <= v <= s:
            raise OpBoundsError(
                f"tile.slice valid_shape {list(requested)} is outside 0..shape {list(shape)} "
                f"(dimension {d})"
            )
    valid = cut_valid(requested, src.valid, offset)
    data = src.data[tuple(slice(o, o + s) for o, s in zip(offset, shape))]
    pad = out.pad if out is not None else None
    if out is not None and out.shape != data.shape:
        keep = [d for d in range(len(shape)) if d not in {int(a) % len(shape) for a in drop_dims or ()}]
        valid = (1,) * (len(out.shape) - len(keep)) + tuple(valid[d] for d in keep)
        data = data.reshape(out.shape)
    if pad is not None and pad != src.pad and tuple(valid) != data.shape:
        # A new pad mode paints the cells outside the valid region: a copy, so the
        # source's own cells stay as they are.
        data = data.copy()
        mask = np.ones(data.shape, dtype=bool)
        mask[tuple(slice(0, v) for v in valid)] = False
        data[mask] = fill_value(src.dtype, pad)
    return _view_value(src, data, valid, pad)


_SLICE_PARAMS = (
    ParamSpec("shape", "shape"),
    ParamSpec("offset", "index_list", aliases=("offsets",)),
    ParamSpec("valid_shape", "index_list", default=None, aliases=("valid_shapes",)),
    ParamSpec("drop_dims", "shape", default=None),
    ParamSpec("pad_value", "literal", default=None),
)

register(OpSpec(
    name="tile.slice",
    wide_safe=True,
    params=(ParamSpec("tile", "tile"), *_SLICE_PARAMS,
            ParamSpec("clamp", "bool", default=False)),
    type_rule=_slice_type,
    mem=MemRule(result="same:tile", view=True),
    execute=_slice_execute,
    spellings=("slice",),
    doc="A zero-copy window [offset, offset + shape) of a tile in its own memory space; "
        "valid = (valid_shape or shape) cut by the source's valid region shifted by offset. "
        "drop_dims erases static unit axes (results stay at least 2-D); pad_value sets the "
        "pad mode of the cells outside the valid region. Tiles may not clamp.",
))


# ----------------------------------------------------------------------- reshape


def _reshape_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    shape = _static_positive(info, "shape")
    if math.prod(shape) != math.prod(src.shape):
        raise OpTypeError(
            f"The operator {info.op} requires the same element count, but {dims(src.shape)} has "
            f"{math.prod(src.shape)} and {dims(shape)} has {math.prod(shape)}"
        )
    valid = reshape_valid(info.op, src.shape, src.valid, shape)
    return TileType(shape, src.dtype, src.space, valid, src.pad)


def _reshape_execute(src, *, shape, out=None, **_):
    data = src.data
    if src.valid == data.shape and shape.__class__ is tuple:
        # Fast path: a fully valid tile stays fully valid (reshape_valid), in a static shape.
        view = data.reshape(shape)
        if view.shape == shape:  # (not when numpy inferred a -1)
            return TileValue(view, view.shape, src.dtype, src.space, src.pad)
    shape = tuple(int(s) for s in shape)
    valid = reshape_valid("tile.reshape", src.shape, src.valid, shape)
    return _view_value(src, src.data.reshape(shape), valid)


register(OpSpec(
    name="tile.reshape",
    wide_safe=True,
    params=(ParamSpec("tile", "tile"), ParamSpec("shape", "shape")),
    type_rule=_reshape_type,
    mem=MemRule(result="same:tile", view=True),
    execute=_reshape_execute,
    batchable=True,
    batched_shape=True,
    spellings=("reshape",),
    doc="The same elements in a new static shape (same element count), zero-copy; the valid "
        "region maps without widening (docs/design/language.md §15) or the call is an error asking for "
        "pl.fillpad first.",
))


# --------------------------------------------------------------------- transpose


def _transpose_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    if src.rank < 2:
        raise OpTypeError(f"The operator {info.op} requires a tile of rank >= 2, but got rank "
                          f"{src.rank}")
    a = normalize_axis(info, info.values.get("axis1"), src.rank, "axis1")
    b = normalize_axis(info, info.values.get("axis2"), src.rank, "axis2")
    if a == b:
        raise OpTypeError(
            f"The operator {info.op} requires two different axes, but both name axis {a}",
            "a transpose of an axis with itself is not a no-op here; drop the call",
        )
    tmp = info.types.get("tmp_tile")
    if isinstance(tmp, TileType):
        require_same_dtype(info, src.dtype, tmp.dtype, "tmp_tile and the tile")
    return TileType(swap(src.shape, a, b), src.dtype, None, swap(src.valid, a, b))


def _transpose_compute(tile_: Any, tmp_tile: Any = None, *, axis1: int, axis2: int, **_: Any):
    return np.swapaxes(tile_, int(axis1), int(axis2))


register(OpSpec(
    name="tile.transpose",
    reads_while_writing=True,
    params=(
        ParamSpec("tile", "tile"),
        ParamSpec("axis1", "int"),
        ParamSpec("axis2", "int"),
        ParamSpec("tmp_tile", "tile", default=None, optional=True),
    ),
    type_rule=_transpose_type,
    mem=MemRule(operands={"tile": ("Vec",), "tmp_tile": ("Vec",)}, result="Vec"),
    compute=_transpose_compute,
    spellings=("transpose",),
    doc="A Vec copy of the tile with axis1 and axis2 exchanged (negative axes count from the "
        "end; the two must differ); shape and valid region are swapped with them.",
))


def _transpose_view_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    if src.rank < 2:
        raise OpTypeError(f"The operator {info.op} requires a tile of rank >= 2, but got rank "
                          f"{src.rank}")
    a, b = src.rank - 2, src.rank - 1
    return TileType(swap(src.shape, a, b), src.dtype, src.space, swap(src.valid, a, b), src.pad)


def _transpose_view_execute(src, *, out=None, **_):
    valid = swap(src.valid, -2 % len(src.valid), -1 % len(src.valid))
    return _view_value(src, np.swapaxes(src.data, -2, -1), valid)


register(OpSpec(
    name="tile.transpose_view",
    wide_safe=True,
    task_batchable=True,
    params=(ParamSpec("tile", "tile"),),
    type_rule=_transpose_view_type,
    mem=MemRule(operands={"tile": ("Mat",)}, result="same:tile", view=True),
    execute=_transpose_view_execute,
    spellings=("tile.transpose_view",),
    doc="A zero-copy view of a Mat tile with its trailing two axes exchanged (the NZ<->ZN "
        "layout reinterpretation), so one load can feed a transposed and a plain matmul.",
))


# ----------------------------------------------------------------- set_validshape


def _validshape_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    if src.rank != 2:
        raise OpTypeError(f"The operator {info.op} requires a 2-D tile, but got rank {src.rank}")
    valid = (info.values.get("valid_rows"), info.values.get("valid_cols"))
    for d, (v, name) in enumerate(zip(valid, ("valid_rows", "valid_cols"))):
        require_int_scalar(info, name)
        if v is not None and not 0 <= v <= src.shape[d]:
            raise OpTypeError(
                f"The operator {info.op} requires 0 <= {name} <= {src.shape[d]}, but got {v}"
            )
    return TileType(src.shape, src.dtype, src.space, valid, src.pad)


def _validshape_execute(src, valid_rows, valid_cols, *, out=None, **_):
    valid = (int(valid_rows), int(valid_cols))
    check_valid_extents("tile.set_validshape", valid, src.shape, "tile")
    return _view_value(src, src.data, valid)


register(OpSpec(
    name="tile.set_validshape",
    wide_safe=True,
    params=(
        ParamSpec("tile", "tile"),
        ParamSpec("valid_rows", "scalar"),
        ParamSpec("valid_cols", "scalar"),
    ),
    type_rule=_validshape_type,
    mem=MemRule(result="same:tile", view=True),
    execute=_validshape_execute,
    spellings=("set_validshape",),
    doc="Metadata only: the same 2-D tile buffer with valid region [valid_rows, valid_cols] "
        "(ints or INDEX Scalars, 0 <= valid <= shape).",
))


# ---------------------------------------------------------------------- assemble


def _assemble_type(info: CallInfo) -> TileType:
    dst, src = tile(info, "target"), tile(info, "source")
    require_same_dtype(info, dst.dtype, src.dtype, "target and source")
    if src.rank != dst.rank:
        raise OpTypeError(
            f"The operator {info.op} requires source and target of one rank, but got "
            f"{dims(src.shape)} and {dims(dst.shape)}"
        )
    offsets = index_items(info, "offset", dst.rank, "offset")
    for d, (o, v, n) in enumerate(zip(offsets, src.valid, dst.shape)):
        if o is not None and v is not None and (o < 0 or o + v > n):
            raise OpTypeError(
                f"The operator {info.op} requires offset + source valid extent <= target extent, "
                f"but dimension {d} has {o} + {v} > {n}"
            )
    check_inside(info, "offset", src.valid, dst.shape, "target")
    return TileType(dst.shape, dst.dtype, dst.space, dst.valid, dst.pad)


def _assemble_arch(arch: Any, info: CallInfo) -> None:
    for name in ("target", "source"):
        space = tile(info, name).space
        if space is not None and space != "Vec":
            raise OpTypeError(
                f"The operator {info.op} assembles Vec into Vec, but '{name}' is in {space}",
                "pl.move the tile to pl.Mem.Vec first",
            )


def _assemble_execute(dst, src, *, offset, out=None, **_):
    valid = tuple(int(v) for v in src.valid)
    offset = tuple(int(o) for o in offset)
    runtime_inside("tile.assemble", offset, valid, dst.shape, "target")
    dst.data[tuple(slice(o, o + v) for o, v in zip(offset, valid))] = src.valid_view()
    return _view_value(dst, dst.data, dst.valid)


register(OpSpec(
    name="tile.assemble",
    wide_safe=True,
    params=(
        ParamSpec("target", "tile"),
        ParamSpec("source", "tile"),
        ParamSpec("offset", "index_list", aliases=("offsets",)),
    ),
    type_rule=_assemble_type,
    mem=MemRule(operands={"target": ("Vec",), "source": ("Vec",)}, result="same:target"),
    arch_rule=_assemble_arch,
    execute=_assemble_execute,
    spellings=("assemble",),
    doc="Write the source tile's valid region into the target tile at offset (TINSERT, in "
        "place, Vec to Vec); the result is the target with its shape and valid region. "
        "Not available on a2a3 (use the tensor form, a store).",
))
