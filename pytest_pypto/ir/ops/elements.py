# SPDX-License-Identifier: Apache-2.0
"""Element access on Vec tiles: tile.read (-> Scalar) and tile.write (in place).

`x[i, j]` on a tile is `pl.read`; PyPTO has no element-write subscript, only
`pl.write(tile, [i, j], v)`.  Indices are checked against the tile's shape at
compile time where they are known (interval bounds of loop variables included)
and at run time otherwise.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.apply import scalar_to_dtype
from pytest_pypto.ir.ops._rules import OpBoundsError, tile
from pytest_pypto.ir.ops.views import check_inside, index_items
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TileType


def element_index(op: str, indices: Any, shape: tuple[int, ...]) -> tuple[int, ...]:
    """Run-time indices, bounds-checked (docs/design/checks.md §6)."""
    idx = tuple(int(i) for i in indices)
    for d, (i, n) in enumerate(zip(idx, shape)):
        if not 0 <= i < n:
            raise OpBoundsError(
                f"{op} index {i} is outside dimension {d} of extent {n}",
                "indices run from 0 to extent - 1",
            )
    return idx


def element_value(value: Any, dtype: Any) -> Any:
    """A Python scalar of ``dtype``'s category (what a Scalar read returns)."""
    if dtype.is_float:
        return float(value)
    if dtype.name == "BOOL":
        return bool(value)
    return int(value)


def check_written_value(info: CallInfo, dtype: Any, name: str = "value") -> None:
    """The written Scalar has the destination dtype; a literal of its category converts."""
    t = info.types.get(name)
    if not isinstance(t, ScalarType):
        raise OpTypeError(f"The operator {info.op} requires a Scalar '{name}'")
    if t.dtype.name == dtype.name:
        return
    literal = info.values.get(name)
    if literal is not None and not isinstance(literal, bool) and (
        dtype.is_float or (isinstance(literal, int) and dtype.is_int)
    ):
        return
    raise OpTypeError(
        f"The operator {info.op} requires the value in the destination dtype {dtype.name}, but "
        f"got {t.dtype.name}",
        f"pl.cast the value to pl.{dtype.name} first",
    )


def _read_type(info: CallInfo) -> ScalarType:
    src = tile(info, "tile")
    index_items(info, "indices", src.rank, "index")
    check_inside(info, "indices", (1,) * src.rank, src.shape, "tile")
    return ScalarType(src.dtype)


def _read_execute(src, *, indices, out=None, **_):
    idx = element_index("tile.read", indices, src.shape)
    return element_value(src.data[idx], src.dtype)


register(OpSpec(
    name="tile.read",
    wide_safe=True,
    params=(ParamSpec("tile", "tile"),
            ParamSpec("indices", "index_list", aliases=("offset",), bare_index=True)),
    type_rule=_read_type,
    mem=MemRule(operands={"tile": ("Vec",)}),
    execute=_read_execute,
    spellings=("read",),
    doc="The element of a Vec tile at indices (one per dimension; a 1-D tile's single "
        "index may be given bare) as a Scalar of the tile's dtype.",
))


def _write_type(info: CallInfo) -> TileType:
    dst = tile(info, "tile")
    index_items(info, "indices", dst.rank, "index")
    check_inside(info, "indices", (1,) * dst.rank, dst.shape, "tile")
    check_written_value(info, dst.dtype)
    return dst


def _write_execute(dst, value, *, indices, out=None, **_):
    idx = element_index("tile.write", indices, dst.shape)
    dst.data[idx] = scalar_to_dtype(value, dst.dtype)
    return dst


register(OpSpec(
    name="tile.write",
    wide_safe=True,
    params=(
        ParamSpec("tile", "tile"),
        ParamSpec("indices", "index_list", aliases=("offset",), bare_index=True),
        ParamSpec("value", "scalar"),
    ),
    type_rule=_write_type,
    mem=MemRule(operands={"tile": ("Vec",)}, result="same:tile"),
    execute=_write_execute,
    spellings=("write",),
    doc="Store a Scalar (the tile's dtype) into a Vec tile at indices, in place; returns the "
        "tile.",
))
