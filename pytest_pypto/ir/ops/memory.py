"""Memory ops: tile.load, tile.store, tile.move, tile.create, tile.full (docs/design/language.md
§21, §15).

Their numpy semantics are about buffers (windows, valid regions, poison, in-place
tensor writes), so they use ``execute`` rather than ``compute``.
"""

from __future__ import annotations

import math
from typing import Any

from pytest_pypto.ir.apply import convert_array, dtype_of, scalar_to_dtype
from pytest_pypto.ir.ops._rules import (
    OpBoundsError,
    check_window,
    dims,
    dtype_list,
    enum_name,
    index_items,
    np,
    require_atomic_mode,
    space_name,
    static_shape,
    tensor,
    tile,
)
from pytest_pypto.ir.ops.matmul import ACC_DTYPES
from pytest_pypto.ir.ops.views_tensor import window_valid
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpaceError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TensorType, TileType
from pytest_pypto.ir.values import TileValue, new_buffer, row_major_copy, widen

SCALE_SPACES = ("LeftScale", "RightScale")
# The names the compiler passes dispatch on (a load, a store, a move of one tile).
LOAD_OP, STORE_OP, MOVE_OP = "tile.load", "tile.store", "tile.move"


# ----------------------------------------------------------------------- load


def _load_type(info: CallInfo) -> TileType:
    src = tensor(info, "tensor")
    if src.rank < 1:
        raise OpTypeError(f"The operator {info.op} requires a tensor of rank >= 1")
    index_items(info, "offsets", src.rank, "offset")
    shape = static_shape(info, "shapes", index_items(info, "shapes", src.rank, "extent"))
    requested = info.values.get("valid_shapes")
    valid = list(shape if requested is None else index_items(info, "valid_shapes", src.rank,
                                                             "valid extent"))
    for d, (v, s) in enumerate(zip(valid, shape)):
        if v is not None and not 0 <= v <= s:
            raise OpTypeError(
                f"The operator {info.op} requires 0 <= valid_shapes <= shapes, but got "
                f"valid_shapes {dims(valid)} for shapes {dims(shape)} (dimension {d})"
            )
    if src.valid is not None:
        # A narrowed tensor (pl.set_validshape, a slice's valid_shape) is read only
        # inside its valid region (the lowering passes the cut as valid_shapes).

        valid = list(window_valid(src, shape, info.values.get("offsets"), valid, False))
    if info.values.get("clamp"):
        offsets = info.values.get("offsets")
        for d, (o, size) in enumerate(zip(offsets, src.shape)):
            if valid[d] is None:
                continue
            if o is None or not isinstance(size, int):
                valid[d] = None  # cut at the source edge at run time
            else:
                valid[d] = max(0, min(valid[d], size - o))
    else:
        check_window(info, "offsets", valid, src.shape, verb="reads", whose="source")
    return TileType(shape, src.dtype, space_name(info.values.get("target_memory")),
                    tuple(valid))


def _load_arch(arch: Any, info: CallInfo) -> None:
    target = space_name(info.values.get("target_memory"))
    if target is None or target in arch.load_targets:
        return
    raise OpSpaceError(
        f"The operator {info.op} cannot target {target}: a load lands only in "
        f"{dtype_list(arch.load_targets)}",
        f"load into pl.Mem.Mat, then pl.move(..., target_memory=pl.Mem.{target})",
    )


def _runtime_window(op: str, verb: str, whose: str, offsets, extents, size, clamp: bool):
    """Per-dim extents actually covered, raising on out-of-range windows (run-time
    docs/design/checks.md §6)."""
    cut = []
    for d, (o, e, n) in enumerate(zip(offsets, extents, size)):
        o, e = int(o), int(e)
        if o < 0:
            raise OpBoundsError(f"{op} {verb} before the start of dimension {d}: offset {o} < 0",
                                "offsets must be non-negative")
        if o + e > n and not clamp:
            raise OpBoundsError(
                f"{op} {verb} past the end of dimension {d}: offset {o} + extent {e} > "
                f"{whose} extent {n}",
                "pass clamp=True to cut the read at the source edge, or shrink valid_shapes"
                if verb == "reads" else "shrink the tile's valid_shapes (e.g. pl.min(T, M - r)) "
                "or fix the offset",
            )
        cut.append(max(0, min(e, n - o)))
    return tuple(cut)


_TILE_VALUE: Any = None  # ir.values.TileValue, fetched on the first run (it imports numpy)


def _tile_value() -> Any:
    global _TILE_VALUE

    _TILE_VALUE = TileValue
    return TileValue


def _load_execute(src, *, offsets, shapes, valid_shapes=None, target_memory=None, clamp=False,
                  out=None, **_):
    if out is not None and valid_shapes is None and not clamp:
        # Fast path (the compiled call): a whole window, in bounds -> one copy.
        tile_value = _TILE_VALUE or _tile_value()
        size = src.shape
        if len(size) == 2 and len(offsets) == 2:  # the common rank, without a loop
            o0, o1 = offsets
            e0, e1 = shapes
            data = None
            if 0 <= o0 and o0 + e0 <= size[0] and 0 <= o1 and o1 + e1 <= size[1]:
                data = src[o0:o0 + e0, o1:o1 + e1]
        else:
            window = []
            for o, e, n in zip(offsets, shapes, size):
                if o < 0 or o + e > n:
                    break
                window.append(slice(o, o + e))
            data = src[tuple(window)] if len(window) == len(size) else None
        if data is not None:
            want = out.dtype.np
            data = data.copy() if data.dtype == want else data.astype(want)
            return tile_value(data, data.shape, out.dtype, out.space or space_name(
                target_memory) or "Vec", out.pad)

    shape = tuple(int(s) for s in shapes)
    requested = shape if valid_shapes is None else tuple(int(v) for v in valid_shapes)
    valid = _runtime_window("tile.load", "reads", "source", offsets, requested, src.shape,
                            bool(clamp))
    dtype = out.dtype if out is not None else dtype_of(src)
    window = tuple(slice(int(o), int(o) + v) for o, v in zip(offsets, valid))
    pad = out.pad if out is not None else None
    if valid == shape:
        data = src[window].astype(dtype.np, copy=True)
    else:
        data = new_buffer(shape, dtype, pad)
        data[tuple(slice(0, v) for v in valid)] = src[window]
    space = (out.space if out is not None else None) or space_name(target_memory) or "Vec"
    return TileValue(data, valid, dtype, space, pad)


register(OpSpec(
    name=LOAD_OP,
    params=(
        ParamSpec("tensor", "tensor"),
        ParamSpec("offsets", "index_list"),
        ParamSpec("shapes", "shape"),
        # PyPTO spells it valid_shapes; the older valid_shape is accepted too
        # (docs/design/language.md §1).
        ParamSpec("valid_shapes", "index_list", default=None, aliases=("valid_shape",)),
        ParamSpec("target_memory", "space", default=None),
        ParamSpec("clamp", "bool", default=False),
    ),
    type_rule=_load_type,
    mem=MemRule(result="attr:target_memory"),
    arch_rule=_load_arch,
    execute=_load_execute,
    spellings=("load",),
    doc="Copy a window of a DDR tensor into a new tile (Vec, or Mat). The tile's valid region "
        "is valid_shapes (default shapes) cut at the source edge when clamp=True; the rest is "
        "poisoned. target_memory=None means Vec unless the consumers demand Mat.",
))


# ---------------------------------------------------------------------- store


def _store_type(info: CallInfo) -> TensorType:
    src = tile(info, "tile")
    dst = tensor(info, "output_tensor")
    if src.rank > dst.rank:
        raise OpTypeError(
            f"The operator {info.op} requires the tile rank to be at most the tensor rank, but "
            f"got rank {src.rank} and rank {dst.rank}",
            "a lower-rank tile fills the tensor's trailing axes; reshape the tile to fewer axes",
        )
    index_items(info, "offsets", dst.rank, "offset")
    if src.dtype.name != dst.dtype.name and (
        src.space == "Vec" or (src.space is None and src.dtype.name not in ACC_DTYPES)
    ):
        raise OpTypeError(
            f"The operator {info.op} requires the tile dtype to equal the tensor dtype, but got "
            f"{src.dtype.name} and {dst.dtype.name}",
            f"pl.cast the tile to pl.{dst.dtype.name} before storing it",
        )
    require_atomic_mode(info)
    # A lower-rank tile covers the trailing axes: its window is left-padded with unit axes.
    window = (1,) * (dst.rank - src.rank) + tuple(src.valid)
    if info.values.get("shapes") is not None:
        window = _partition(info, src, dst) or window
    check_window(info, "offsets", window, dst.shape, verb="writes", whose="destination")
    return dst


def _partition(info: CallInfo, src: TileType, dst: TensorType) -> tuple[int, ...] | None:
    """``shapes=``: the ND partition of the destination the tile fills (PyPTO's 4th store
    operand).  Unit axes then the tile's shape is the plain store (None); another
    rectangle of the tile's element count takes the whole tile, reshaped row-major."""
    shapes = static_shape(info, "shapes", index_items(info, "shapes", dst.rank, "extent"))
    if shapes[dst.rank - src.rank:] == tuple(src.shape) and all(
            d == 1 for d in shapes[:dst.rank - src.rank]):
        return None
    if math.prod(shapes) != math.prod(src.shape) or src.valid != src.shape:
        raise OpTypeError(
            f"The operator {info.op} requires shapes {dims(shapes)} to hold the tile "
            f"{dims(src.shape)}" + ("" if src.valid == src.shape else
                                    f" (valid {dims(src.valid)}), and a partially valid tile "
                                    "to be stored without shapes") + ": the same element count",
            "drop shapes= (a lower-rank tile fills the trailing axes), or pl.reshape the tile",
        )
    return shapes


def _store_arch(arch: Any, info: CallInfo) -> None:
    src = tile(info, "tile")
    dst = tensor(info, "output_tensor")
    if src.space is not None and src.space not in arch.store_sources:
        raise OpSpaceError(
            f"The operator {info.op} requires a tile in {dtype_list(arch.store_sources)}, "
            f"but got {src.space}",
            "pl.move the tile to pl.Mem.Vec first",
        )
    if src.space == "Acc" and dst.dtype.name not in arch.acc_store_dtypes:
        raise OpArchError(
            f"The operator {info.op} stores an Acc tile into an {dst.dtype.name} tensor on the "
            f"'{arch.name}' backend; Acc stores only into {dtype_list(arch.acc_store_dtypes)}",
            "pl.cast on the vector side and store that, or store into an FP32/INT32 tensor",
        )
    if src.space == "Vec" and src.dtype.name != dst.dtype.name:
        raise OpTypeError(
            f"The operator {info.op} requires the tile dtype to equal the tensor dtype, but got "
            f"{src.dtype.name} and {dst.dtype.name}",
            f"pl.cast the tile to pl.{dst.dtype.name} before storing it",
        )
    if enum_name(info.values.get("atomic")) in ("Add", 1):
        name = dst.dtype.name
        if name not in arch.atomic_add_dtypes:
            hint = ("accumulate in fp32, cast after" if name == "BF16"
                    else f"atomic add supports {dtype_list(arch.atomic_add_dtypes)}")
            raise OpArchError(
                f"The operator {info.op} atomically adds into a {name} tensor, which the "
                f"'{arch.name}' backend cannot do",
                hint,
            )


def _store_execute(src, dst, *, offsets, atomic=None, shapes=None, out=None, **_):
    valid = src.valid
    region = src.data
    if shapes is not None:
        shapes = tuple(int(d) for d in shapes)
        lead = len(shapes) - len(valid)
        if not (lead >= 0 and shapes[lead:] == tuple(region.shape)
                and all(d == 1 for d in shapes[:lead])):
            # A reshaped partition (the type rule admits only a fully valid tile).
            src = TileValue(region.reshape(shapes), shapes, src.dtype, src.space)
            valid, region = shapes, src.data
    plain = atomic is None or enum_name(atomic) not in ("Add", 1)
    if plain and valid == region.shape and dst.ndim == len(valid):
        # Fast path: a whole tile, plain overwrite, in bounds -> one assignment.
        if len(valid) == 2 and len(offsets) == 2:  # the common rank, without a loop
            o0, o1 = offsets
            e0, e1 = valid
            size = dst.shape
            window = None
            if 0 <= o0 and o0 + e0 <= size[0] and 0 <= o1 and o1 + e1 <= size[1]:
                window = (slice(o0, o0 + e0), slice(o1, o1 + e1))
        else:
            cut = []
            for o, e, n in zip(offsets, valid, dst.shape):
                if o < 0 or o + e > n:
                    break
                cut.append(slice(o, o + e))
            window = tuple(cut) if len(cut) == len(valid) else None
        if window is not None:
            if region.dtype == dst.dtype:
                dst[window] = region
            else:
                dst[window] = convert_array(region, dtype_of(dst))
            return dst
    valid = (1,) * (dst.ndim - len(valid)) + tuple(int(v) for v in valid)
    _runtime_window("tile.store", "writes", "destination", offsets, valid, dst.shape, False)
    window = tuple(slice(int(o), int(o) + v) for o, v in zip(offsets, valid))
    region = src.valid_view().reshape(valid)
    if enum_name(atomic) in ("Add", 1):
        total = widen(region, src.dtype) + widen(dst[window], src.dtype)
        dst[window] = convert_array(total, dtype_of(dst))
    elif region.dtype == dst.dtype:
        dst[window] = region
    else:
        dst[window] = convert_array(region, dtype_of(dst))
    return dst


register(OpSpec(
    name=STORE_OP,
    wide_safe=True,
    params=(
        ParamSpec("tile", "tile"),
        ParamSpec("offsets", "index_list"),
        ParamSpec("output_tensor", "tensor"),
        ParamSpec("shapes", "index_list", default=None),
        ParamSpec("atomic", "enum", default=None, keyword_only=True),
    ),
    type_rule=_store_type,
    mem=MemRule(operands={"tile": ("Vec", "Acc")}, result=None),
    arch_rule=_store_arch,
    execute=_store_execute,
    spellings=("store",),
    writes="output_tensor",
    doc="Write the tile's valid region into the tensor at offsets and return the tensor "
        "(rebind it); a lower-rank tile fills the trailing axes (shapes=, the ND partition, "
        "may say so: unit axes then the tile's shape; another rectangle of the same element "
        "count takes a fully valid tile reshaped row-major). Acc tiles convert once "
        "(RNE) to FP32/FP16/BF16/INT32 tensors; atomic=Add adds into the destination "
        "instead of overwriting it.",
))


# ----------------------------------------------------------------------- move


def _move_type(info: CallInfo) -> TileType:
    src = tile(info, "tile")
    target = space_name(info.values.get("target_memory"))
    if target is None:
        raise OpTypeError(f"The operator {info.op} requires target_memory")
    if target == "DDR":
        raise OpSpaceError(
            f"The operator {info.op} cannot target DDR: tiles leave the chip only by a store",
            "use pl.store(tile, offsets, tensor)",
        )
    if src.space is not None and src.space == target:
        raise OpSpaceError(
            f"The operator {info.op} requires a target different from the source space, but "
            f"the tile is already in {target}",
            "drop the pl.move",
        )
    return src.with_(space=target)


def _move_arch(arch: Any, info: CallInfo) -> None:
    src = tile(info, "tile")
    target = space_name(info.values.get("target_memory"))
    if not arch.has_space(target):
        raise OpArchError(
            f"The operator {info.op} targets {target}, which does not exist on the "
            f"'{arch.name}' backend"
        )
    if src.space is None or target in arch.move_graph.get(src.space, ()):
        return
    if (src.space, target) in arch.cross_core_moves:
        return
    legal = [s for s in arch.move_graph.get(src.space, ()) if s != "DDR"]
    legal += [f"{b} (cross-core transfer)" for a, b in arch.cross_core_moves if a == src.space]
    listed = ", ".join(legal) if legal else "none"
    raise OpSpaceError(
        f"tile.move has no path from {src.space} to {target} on '{arch.name}'; legal moves "
        f"from {src.space}: {listed}",
        f"move to pl.Mem.{legal[0].split(' ')[0]} first" if legal else None,
    )


def _move_execute(src, *, target_memory=None, out=None, share=False, **_):
    """The moved tile shares the source's buffer (``share=True``) where the compiler proved
    neither tile is written in place afterwards: the data does not change on the way.
    Otherwise it is a copy."""

    space = (out.space if out is not None else None) or space_name(target_memory)
    data = src.data
    if not share or (data.ndim > 1 and data.strides[-1] != data.itemsize and data.shape[-1] > 1):
        # a copy; also of a view whose rows are not contiguous (a transpose_view): the
        # copy lays it out row-major, where numpy's matmul is 2-3x faster than on the
        # transposed layout, which costs more than this copy
        data = row_major_copy(data)
    return TileValue(data, tuple(src.valid), src.dtype, space, src.pad)


register(OpSpec(
    name=MOVE_OP,
    wide_safe=True,
    reads_while_writing=True,
    params=(
        ParamSpec("tile", "tile"),
        ParamSpec("target_memory", "space"),
        ParamSpec("blayout", "enum", default=None),
        ParamSpec("slayout", "enum", default=None),
    ),
    type_rule=_move_type,
    mem=MemRule(result="attr:target_memory"),
    arch_rule=_move_arch,
    execute=_move_execute,
    batchable=True,
    spellings=("move",),
    doc="Copy a tile to another memory space along a legal move edge or cross-core transfer; "
        "shape, dtype and valid region are kept, blayout/slayout are accepted and ignored.",
))


# --------------------------------------------------------------- create / full


def _create_type(info: CallInfo) -> TileType:
    shape = static_shape(info, "shape", info.values.get("shape"))
    dtype = info.values.get("dtype")
    if dtype is None:
        raise OpTypeError(f"The operator {info.op} requires a dtype")
    target = space_name(info.values.get("target_memory"))
    if target in SCALE_SPACES or target == "DDR":
        raise OpSpaceError(
            f"The operator {info.op} cannot create a tile in {target}",
            "create it in pl.Mem.Vec or pl.Mem.Mat",
        )
    return TileType(shape, dtype, target)


def _create_arch(arch: Any, info: CallInfo) -> None:
    target = space_name(info.values.get("target_memory"))
    if target is not None and not arch.has_space(target):
        raise OpArchError(
            f"The operator {info.op} targets {target}, which does not exist on the "
            f"'{arch.name}' backend"
        )


def _create_execute(*, shape, dtype, target_memory=None, out=None, **_):
    shape = tuple(int(s) for s in shape)
    space = (out.space if out is not None else None) or space_name(target_memory) or "Vec"
    return TileValue(new_buffer(shape, dtype), shape, dtype, space)


register(OpSpec(
    name="tile.create",
    batched_create=True,
    params=(
        ParamSpec("shape", "shape"),
        ParamSpec("dtype", "dtype"),
        ParamSpec("target_memory", "space", default=None),
    ),
    type_rule=_create_type,
    mem=MemRule(result="attr:target_memory"),
    arch_rule=_create_arch,
    execute=_create_execute,
    spellings=("create_tile", "tile.create"),
    doc="Allocate a new tile whose contents are undefined (poisoned, docs/design/numerics.md §6); "
        "target_memory=None means Vec unless the consumers demand another space.",
))


# Largest finite value of each float format (the smallest, where it is not -max).
_FLOAT_MAX = {
    "FP32": 3.4028234663852886e38, "BF16": 3.3895313892515355e38, "FP16": 65504.0,
    "FP8E4M3FN": 448.0, "FP8E5M2": 57344.0, "FP8E8M0": 2.0 ** 127, "FP4": 6.0,
}
_FLOAT_MIN = {"FP8E8M0": 2.0 ** -127}  # E8M0 holds powers of two only: no zero, no sign


def _int_range(dtype: Any) -> tuple[int, int]:
    if dtype.kind == "uint":
        return 0, (1 << dtype.bits) - 1
    return -(1 << (dtype.bits - 1)), (1 << (dtype.bits - 1)) - 1


def _shown(value: int | float) -> str:
    if isinstance(value, int) and value.bit_length() > 64:
        return f"an integer of {value.bit_length()} bits"
    return repr(value)


def _check_fill(op: str, value: int | float, dtype: Any) -> None:
    """The fill value must be a value of ``dtype``: in its range, finite unless it has inf.

    Ints: the C conversion truncates a float toward zero, and that integer must lie in
    the dtype's range (a fill never wraps).  Floats: a value in [min, max] is rounded
    as the device rounds it; only outside that range (rare: no numpy for the usual
    case) is the value converted exactly as the simulator stores it, and it must not
    overflow to inf or NaN, nor an infinity or NaN turn into something else (FP8E4M3FN
    has no inf, FP4 neither inf nor NaN).
    """
    shown = _shown(value)
    if dtype.is_int:
        lo, hi = _int_range(dtype)
        if isinstance(value, float) and not math.isfinite(value):
            raise OpTypeError(
                f"The operator {op} requires a finite fill value for {dtype.name} (range "
                f"[{lo}, {hi}]), but got {shown}",
                f"an infinity or NaN has no {dtype.name} value (a float literal beyond about "
                "1.8e308, such as 1e400, is inf); fill with a value in the range",
            )
        if not lo <= int(value) <= hi:
            raise OpTypeError(
                f"The operator {op} requires a fill value within the range of {dtype.name} "
                f"[{lo}, {hi}], but got {shown}",
                f"fill with a value in [{lo}, {hi}], or use a wider dtype",
            )
        return
    hi_f = _FLOAT_MAX.get(dtype.name)
    if not dtype.is_float or hi_f is None:
        return
    lo_f = _FLOAT_MIN.get(dtype.name, -hi_f)
    try:
        x = float(value)
    except OverflowError:  # an int beyond every float format
        x = math.inf if value > 0 else -math.inf
        stored = None
    else:
        if lo_f <= x <= hi_f:
            return
        stored = scalar_to_dtype(x, dtype)
        same = (math.isnan(x) and math.isnan(stored)) or (math.isinf(x) and stored == x)
        if same or (math.isfinite(x) and math.isfinite(stored)):
            return  # an IEEE special kept, or a value rounding onto the range's edge
    becomes = f", which {dtype.name} stores as {stored!r}" if stored is not None else ""
    raise OpTypeError(
        f"The operator {op} requires a fill value within the range of {dtype.name} "
        f"[{lo_f!r}, {hi_f!r}], but got {shown}{becomes}",
        "fill with a value in the range, or use a wider dtype",
    )


def _full_type(info: CallInfo) -> TileType:
    shape = static_shape(info, "shape", info.values.get("shape"))
    dtype = info.values.get("dtype")
    value = info.values.get("value")
    if dtype is None:
        raise OpTypeError(f"The operator {info.op} requires a dtype")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise OpTypeError(
            f"The operator {info.op} requires a literal int or float value, but got {value!r}",
            "fill with a constant, then pl.adds a Scalar if the value is dynamic",
        )
    _check_fill(info.op, value, dtype)
    if dtype.is_int and isinstance(value, float) and value != int(value):
        info.warnings.append(f"{info.op}: {value} truncates to {int(value)} in {dtype.name}")
    return TileType(shape, dtype)


def _full_execute(*, shape, dtype, value, out=None, **_):
    shape = tuple(int(s) for s in shape)
    data = np.empty(shape, dtype=dtype.np)
    data.fill(scalar_to_dtype(value, dtype))  # (np.full's copyto, at half the cost)
    space = (out.space if out is not None else None) or "Vec"
    return TileValue(data, shape, dtype, space)


register(OpSpec(
    name="tile.full",
    batched_create=True,
    params=(
        ParamSpec("shape", "shape"),
        ParamSpec("dtype", "dtype"),
        ParamSpec("value", "literal"),
    ),
    type_rule=_full_type,
    mem=MemRule(result="Vec"),
    execute=_full_execute,
    spellings=("tile.full",),
    doc="A new Vec tile of shape filled with a literal value (converted to dtype first), "
        "fully valid.",
))
