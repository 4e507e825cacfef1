# SPDX-License-Identifier: Apache-2.0
"""The AIV lanes of a cluster: `pl.get_subblock_idx()`, `pl.aiv_shard`, `pl.aic_gather`
(docs/design/language.md §14b).

A cluster has two vector lanes.  `for aiv_id in pl.split_aiv(2, mode=...)`
(language/split_aiv.py) runs its body once per lane; the parser writes the lane
into these ops' ``lane`` / ``mode`` parameters, which a user never passes:

* `get_subblock_idx()`: the lane running the code (0 outside every region: the
  simulator runs a kernel's lanes merged, as lane 0);
* `aiv_shard(x)`: a cube-produced (Acc) tile crossing to the vector lane (Vec).  In a
  data-parallel region (``UP_DOWN`` / ``LEFT_RIGHT``) the lane gets its half of the
  rows / columns; in a ``NONE`` region the whole tile;
* `aic_gather(x)`: a vector (Vec) tile crossing to the cube (Mat), written in lane 1
  with lane 0's value as ``other``.  Data-parallel: the two halves joined again;
  ``NONE``: both lanes push into one slot, so the lanes must agree (a run where they
  differ is a `SimulationError`, where the hardware would hand the cube either one).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import dtypes
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.ir.lazy_numpy import np
from pytest_pypto.ir.ops._rules import tile
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import ScalarType, TileType, Type
from pytest_pypto.ir.values import TileValue

__all__ = ["SPLIT_AXIS"]

SPLIT_AXIS = {"UP_DOWN": 0, "LEFT_RIGHT": 1}  # the halved axis of a data-parallel mode


def _index(info: CallInfo) -> Type:
    return ScalarType(dtypes.INDEX)


for _level, _spelling in (("tile", "get_subblock_idx"), ("tensor", "tensor.get_subblock_idx")):
    register(OpSpec(
        name=f"{_level}.get_subblock_idx",
        params=(ParamSpec("lane", "int", default=0, keyword_only=True),),
        type_rule=_index, mem=MemRule(),
        execute=lambda *, lane=0, out=None: int(lane), spellings=(_spelling,),
        doc="The AIV lane (0 or 1, an INDEX Scalar) running this code inside a "
            "pl.split_aiv region; 0 elsewhere (the simulator runs the lanes merged).",
    ))


def _halved(info: CallInfo, t: TileType, factor: str) -> tuple[int, ...]:
    mode = info.values.get("mode")
    axis = SPLIT_AXIS.get(mode)
    shape = list(t.shape)
    if axis is None:
        return tuple(shape)
    if len(shape) != 2:
        raise OpTypeError(f"The operator {info.op} takes a 2-D tile, got {len(shape)}-D")
    if factor == "half":
        if shape[axis] % 2:
            raise OpTypeError(
                f"The operator {info.op} halves axis {axis} of the tile between the two AIV "
                f"lanes ({mode}), but it has {shape[axis]} elements (odd)",
                "use a tile with an even split axis, or mode=pl.SplitMode.NONE",
            )
        shape[axis] //= 2
    else:
        shape[axis] *= 2
    return tuple(shape)


def _valid(t: TileType, shape: tuple[int, ...]) -> tuple[int | None, ...] | None:
    if t.valid is None or tuple(t.valid) == tuple(t.shape):
        return None
    return tuple(None if v is None else min(v, s) for v, s in zip(t.valid, shape))


def _shard_type(info: CallInfo) -> Type:
    t = tile(info, "x")
    if t.space is not None and t.space != "Acc":
        raise OpTypeError(
            f"The operator {info.op} brings a cube-produced tile (Acc) onto the vector lane, "
            f"but its operand is in {t.space}",
            "a tile the vector lane produced (pl.load / pl.full) is already there: drop the "
            "pl.aiv_shard",
        )
    shape = _halved(info, t, "half")
    return TileType(shape, t.dtype, "Vec", _valid(t, shape), t.pad)


def _shard(x: TileValue, *, lane: int = 0, mode: str = "NONE", out: Any = None) -> TileValue:
    axis = SPLIT_AXIS.get(mode)
    if axis is None:
        return TileValue(x.data.copy(), tuple(x.valid), x.dtype, "Vec", x.pad)
    half = x.data.shape[axis] // 2
    lo = int(lane) * half
    cut = [slice(None)] * x.data.ndim
    cut[axis] = slice(lo, lo + half)
    valid = list(x.valid)
    valid[axis] = max(0, min(valid[axis] - lo, half))
    return TileValue(x.data[tuple(cut)].copy(), tuple(valid), x.dtype, "Vec", x.pad)


def _gather_type(info: CallInfo) -> Type:
    t = tile(info, "x")
    if t.space is not None and t.space != "Vec":
        raise OpTypeError(
            f"The operator {info.op} hands a vector-lane tile (Vec) to the cube, but its "
            f"operand is in {t.space}",
        )
    shape = _halved(info, t, "double")
    return TileType(shape, t.dtype, "Mat", _valid(t, shape) if shape == t.shape else None, t.pad)


def _gather(x: TileValue, other: TileValue | None = None, *, mode: str = "NONE",
            out: Any = None) -> TileValue:
    axis = SPLIT_AXIS.get(mode)
    first = other if other is not None else x
    if axis is None:
        if other is not None and not np.array_equal(other.valid_view(), x.valid_view(),
                                                     equal_nan=True):
            raise SimulationError(
                "pl.aic_gather out of a pl.split_aiv(mode=pl.SplitMode.NONE) region: the two "
                "AIV lanes hold different values, and both push into the cube's one slot, so "
                "the cube would receive either of them",
                hint="gather only a value both lanes compute identically, or use a "
                "data-parallel region (UP_DOWN / LEFT_RIGHT) where each lane owns a half",
            )
        return TileValue(x.data.copy(), tuple(x.valid), x.dtype, "Mat", x.pad)
    data = np.concatenate([first.data, x.data], axis=axis)
    return TileValue(data, tuple(data.shape), x.dtype, "Mat", x.pad)


register(OpSpec(
    name="tile.aiv_shard",
    params=(ParamSpec("x", "tile"),
            ParamSpec("lane", "int", default=0, keyword_only=True),
            ParamSpec("mode", "str", default="NONE", keyword_only=True)),
    type_rule=_shard_type, mem=MemRule(result="Vec"), execute=_shard, reads_while_writing=True,
    spellings=("aiv_shard",),
    doc="Inside a pl.split_aiv region: the cube (Acc) tile x crossing to this AIV lane, as a "
        "Vec tile (its half on the split axis in an UP_DOWN / LEFT_RIGHT region).",
))
register(OpSpec(
    name="tile.aic_gather",
    params=(ParamSpec("x", "tile"), ParamSpec("other", "tile", default=None, optional=True),
            ParamSpec("mode", "str", default="NONE", keyword_only=True)),
    type_rule=_gather_type, mem=MemRule(result="Mat"), execute=_gather, reads_while_writing=True,
    spellings=("aic_gather",),
    doc="Inside a pl.split_aiv region: the Vec tile x crossing to the cube, as a Mat tile (the "
        "two lanes' halves joined on the split axis in an UP_DOWN / LEFT_RIGHT region).",
))
