"""Broadcast ops (docs/design/language.md §21): a row vector along each row, a column vector
along each column, or a scalar over a whole tile.

* ``row_expand_{add,sub,mul,div,max,min,expdif}(tile, row_vec)``: ``tile op row_vec``
  with ``row_vec`` ``[..., R, 1]`` (expdif = exp(tile - row_vec)).
* ``col_expand_{add,sub,mul,div,max,min,expdif}(tile, col_vec)``: ``col_vec`` ``[1, C]``.
* ``row_expand(target, row_vec)``, ``col_expand(target, col_vec)``,
  ``expands(target, scalar)``: the broadcast itself; ``target`` gives shape, dtype and
  valid region, its values are never read.

``row_expand_add`` is PyPTO's TROWEXPANDADD and has its own rule: dtype INT8, INT16,
INT32, FP16 or FP32 (INT8 only on a5), ``row_vec``'s valid rows equal the tile's, and
``row_vec`` is either a column carrier ``[R, 1]`` or a *packed* row-major carrier of one
32-byte block per row (``[R, 32 / element bytes]``, e.g. ``[R, 8]`` FP32), whose lanes
repeat across the row: ``out[r, c] = tile[r, c] + row_vec[r, c % lanes]``.  ``tmp`` is
workspace of any dtype and shape (a5 ignores it).

Results keep the tile's shape and valid region, computed wide and rounded once.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import (
    NUMERIC_DTYPES,
    dims,
    np,
    optional_tile,
    require_dtype,
    require_rank,
    require_same_dtype,
    scalar,
    tile,
    warn_unvalidated,
)
from pytest_pypto.ir.ops.elementwise import DIV_DTYPES, divide
from pytest_pypto.ir.registry import (
    CallInfo,
    MemRule,
    OpArchError,
    OpSpec,
    OpTypeError,
    ParamSpec,
    register,
)
from pytest_pypto.ir.types import TileType

FLOAT_DTYPES = ("FP16", "FP32", "BF16")
ROW_EXPAND_ADD_DTYPES = ("INT8", "INT16", "INT32", "FP16", "FP32")
CARRIER_BYTES = 32  # one packed row_vec block per row

_OPS: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "add": (NUMERIC_DTYPES, lambda a, v: a + v, "tile + v"),
    "sub": (NUMERIC_DTYPES, lambda a, v: a - v, "tile - v"),
    "mul": (NUMERIC_DTYPES, lambda a, v: a * v, "tile * v"),
    "div": (DIV_DTYPES, divide, "tile / v (ints truncate toward zero)"),
    "max": (NUMERIC_DTYPES, lambda a, v: np.maximum(a, v), "max(tile, v)"),
    "min": (NUMERIC_DTYPES, lambda a, v: np.minimum(a, v), "min(tile, v)"),
    "expdif": (FLOAT_DTYPES, lambda a, v: np.exp(a - v), "exp(tile - v)"),
}


def _kind(op: str) -> str:
    return op.rsplit("_", 1)[1]


# ---------------------------------------------------------------- type rules


def packed_lanes(dtype: Any) -> int:
    """Elements in one packed 32-byte row_vec block of ``dtype``."""
    return CARRIER_BYTES // dtype.itemsize


def _is_column_carrier(v: TileType) -> bool:
    """A [R, 1] tile is a column (DN) carrier.  PyPTO infers DN for R > 1 and for every
    row-reduction result (a [1, 1] row_sum too); we do not track layouts, so [1, 1]
    counts as a column carrier whatever made it."""
    return v.shape[-1] == 1


def _row_expand_add_vec(info: CallInfo, a: TileType, v: TileType) -> None:
    require_dtype(info, a.dtype, ROW_EXPAND_ADD_DTYPES)
    if v.shape[:-2] != a.shape[:-2]:
        raise OpTypeError(
            f"The operator {info.op} requires row_vec's leading dims to equal the tile's, but "
            f"got row_vec {dims(v.shape)} for tile {dims(a.shape)}"
        )
    vr_a, vr_v = a.valid[-2], v.valid[-2]
    if vr_a is not None and vr_v is not None and vr_a != vr_v:
        raise OpTypeError(
            f"The operator {info.op} requires row_vec's valid rows to equal the tile's, but "
            f"got row_vec valid {dims(v.valid)} for tile valid {dims(a.valid)}",
            f"load row_vec with valid_shape=[{vr_a}, {v.shape[-1]}]",
        )
    lanes = 1 if _is_column_carrier(v) else packed_lanes(v.dtype)
    if v.valid[-1] is not None and v.valid[-1] != lanes:
        form = "a column carrier [R, 1]" if lanes == 1 else (
            f"a packed row-major carrier of {lanes} {v.dtype.name} lanes per row")
        raise OpTypeError(
            f"The operator {info.op} requires row_vec to be a column carrier [R, 1] "
            f"or a packed {CARRIER_BYTES}-byte carrier [R, {packed_lanes(v.dtype)}], but got "
            f"row_vec {dims(v.shape)} (valid {dims(v.valid)}), read as {form}",
            f"reduce with pl.row_sum/row_max into a {dims(list(a.shape[:-1]) + [1])} tile",
        )


def _row_expand_type(info: CallInfo) -> TileType:
    a, v = tile(info, "tile"), tile(info, "row_vec")
    require_rank(info, a, "tile", at_least=2)
    require_same_dtype(info, a.dtype, v.dtype, "tile and row_vec")
    if info.op == "tile.row_expand_add":
        require_rank(info, v, "row_vec", exact=a.rank)
        _row_expand_add_vec(info, a, v)
        optional_tile(info, "tmp")  # any dtype and shape: workspace only
        return TileType(a.shape, a.dtype, valid=a.valid)
    if info.op != "tile.row_expand":
        require_dtype(info, a.dtype, _OPS[_kind(info.op)][0])
    if v.rank != a.rank or v.shape[-1] != 1 or v.shape[:-1] != a.shape[:-1]:
        want = list(a.shape[:-1]) + [1]
        raise OpTypeError(
            f"The operator {info.op} requires row_vec of shape {dims(want)} (one value per "
            f"row), but got row_vec {dims(v.shape)} for tile {dims(a.shape)}",
            f"reduce with pl.row_sum/row_max into a {dims(want)} tile",
        )
    return TileType(a.shape, a.dtype, valid=a.valid)


def _col_expand_type(info: CallInfo) -> TileType:
    a, v = tile(info, "tile"), tile(info, "col_vec")
    require_rank(info, a, "tile", exact=2)
    require_same_dtype(info, a.dtype, v.dtype, "tile and col_vec")
    if info.op != "tile.col_expand":
        require_dtype(info, a.dtype, _OPS[_kind(info.op)][0])
    if v.rank != 2 or v.shape[0] != 1 or v.shape[1] != a.shape[1]:
        want = [1, a.shape[1]]
        raise OpTypeError(
            f"The operator {info.op} requires col_vec of shape {dims(want)} (one value per "
            f"column), but got col_vec {dims(v.shape)} for tile {dims(a.shape)}",
            f"reduce with pl.col_sum/col_max into a {dims(want)} tile",
        )
    return TileType(a.shape, a.dtype, valid=a.valid)


def _expands_type(info: CallInfo) -> TileType:
    a = tile(info, "tile")
    scalar(info, "scalar")
    require_dtype(info, a.dtype, NUMERIC_DTYPES)
    return TileType(a.shape, a.dtype, valid=a.valid)


def _row_expand_add_arch(arch: Any, info: CallInfo) -> None:
    a, v = tile(info, "tile"), tile(info, "row_vec")
    if a.dtype.name == "INT8" and not arch.row_expand_add_int8:
        raise OpArchError(
            f"The operator {info.op} does not support dtype INT8 on the '{arch.name}' backend",
            "use INT16/INT32/FP16/FP32, or target a5",
        )
    if not _is_column_carrier(v):
        warn_unvalidated(arch, info, "row_expand_add:packed", "with a packed row_vec")


# ------------------------------------------------------------------ numerics


def _repeat_lanes(tile: Any, v: Any) -> Any:
    """A packed carrier's lanes repeated across the tile's columns (a [.., R, 1] vector
    broadcasts as it is)."""
    lanes = v.shape[-1]
    cols = tile.shape[-1]
    if lanes <= 1 or lanes == cols:
        return v
    reps = -(-cols // lanes)
    return np.tile(v, (1,) * (v.ndim - 1) + (reps,))[..., :cols]


# The numpy ufunc each vector op is on float32 operands whose vector broadcasts as it
# is (see elementwise._FLOAT32_UFUNC): batched stores compute straight into the window.
_FLOAT32_UFUNC = {"add": "add", "sub": "subtract", "mul": "multiply", "div": "divide",
                  "max": "maximum", "min": "minimum"}


def _vector_compute(fn: Any, ufunc: str | None = None):
    def compute(tile: Any, vec: Any, tmp: Any = None, **_: Any) -> Any:
        return fn(tile, _repeat_lanes(tile, vec))

    compute.region = "lhs"  # type: ignore[attr-defined]
    compute.float32_ufunc = ufunc  # type: ignore[attr-defined]
    return compute


def _broadcast_compute(target: Any, vec: Any, **_: Any) -> Any:
    return np.broadcast_to(vec, target.shape).copy()


_broadcast_compute.region = "lhs"  # type: ignore[attr-defined]


def _expands_compute(target: Any, scalar: Any, **_: Any) -> Any:
    return np.full(target.shape, scalar, dtype=target.dtype)


# -------------------------------------------------------------- registration

_VEC = MemRule(operands={"tile": ("Vec",), "row_vec": ("Vec",), "col_vec": ("Vec",),
                         "tmp": ("Vec",)}, result="Vec")
_TIER1 = ("add", "sub", "mul", "div")

for _name, (_allowed, _fn, _what) in _OPS.items():
    _params = [ParamSpec("tile", "tile", aliases=("lhs",)),
               ParamSpec("row_vec", "tile", aliases=("rhs",))]
    if _name == "add":
        _params.append(ParamSpec("tmp", "tile", default=None, optional=True))
    register(OpSpec(
        name=f"tile.row_expand_{_name}",
        params=tuple(_params),
        type_rule=_row_expand_type,
        mem=_VEC,
        arch_rule=_row_expand_add_arch if _name == "add" else None,
        compute=_vector_compute(_fn, _FLOAT32_UFUNC.get(_name)),
        batchable=True,
        spellings=(f"row_expand_{_name}",),
        reads_while_writing=("row_vec", "tmp") if _name == "add" else ("row_vec",),
        tier=1 if _name in _TIER1 else 2,
        doc=f"Elementwise {_what} with v = row_vec [..., R, 1] broadcast along each row"
            + (" (or a packed 32-byte carrier whose lanes repeat; tmp is workspace)"
               if _name == "add" else "")
            + "; result has the tile's shape and valid region, computed wide, rounded once.",
    ))
    register(OpSpec(
        name=f"tile.col_expand_{_name}",
        params=(ParamSpec("tile", "tile", aliases=("lhs", "target")),
                ParamSpec("col_vec", "tile", aliases=("rhs", "col_tile"))),
        type_rule=_col_expand_type,
        mem=_VEC,
        compute=_vector_compute(_fn, _FLOAT32_UFUNC.get(_name)),
        batchable=True,
        spellings=(f"col_expand_{_name}",),
        reads_while_writing=("col_vec",),
        tier=1 if _name in _TIER1 else 2,
        doc=f"Elementwise {_what} with v = col_vec [1, C] broadcast along each column; "
            "result has the tile's shape and valid region, computed wide, rounded once.",
    ))

register(OpSpec(
    name="tile.row_expand",
    params=(ParamSpec("tile", "tile", aliases=("target", "lhs")),
            ParamSpec("row_vec", "tile", aliases=("rhs",))),
    type_rule=_row_expand_type,
    mem=_VEC,
    compute=_broadcast_compute,
    batchable=True,
    spellings=("row_expand",),
    reads_while_writing=("row_vec",),
    doc="row_vec [..., R, 1] repeated along each row of target's valid region; target "
        "gives shape, dtype and valid region, its values are not read.",
))
register(OpSpec(
    name="tile.col_expand",
    params=(ParamSpec("tile", "tile", aliases=("target", "lhs")),
            ParamSpec("col_vec", "tile", aliases=("rhs", "col_tile"))),
    type_rule=_col_expand_type,
    mem=_VEC,
    compute=_broadcast_compute,
    batchable=True,
    spellings=("col_expand",),
    reads_while_writing=("col_vec",),
    doc="col_vec [1, C] repeated down each column of target's valid region; target gives "
        "shape, dtype and valid region, its values are not read.",
))
register(OpSpec(
    name="tile.expands",
    params=(ParamSpec("tile", "tile", aliases=("target",)), ParamSpec("scalar", "scalar")),
    type_rule=_expands_type,
    mem=MemRule(operands={"tile": ("Vec",)}, result="Vec"),
    compute=_expands_compute,
    batchable=True,
    spellings=("expands",),
    doc="A tile of target's shape, dtype and valid region holding the scalar (converted to "
        "the tile dtype first); target's values are not read.",
))
