"""Row-vector broadcasts: row_expand_{add,sub,mul,div,expdif}(tile, row_vec) apply
``tile op row_vec`` along each row (DSL.md §4.1, expdif = exp(tile - row_vec) from
Tier 2).  The result has the tile's shape and valid region."""

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
    tile,
)
from pytest_pypto.ir.ops.elementwise import DIV_DTYPES, divide
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TileType

_OPS: dict[str, tuple[tuple[str, ...], Any, str]] = {
    "add": (NUMERIC_DTYPES, lambda a, v: a + v, "tile + row_vec"),
    "sub": (NUMERIC_DTYPES, lambda a, v: a - v, "tile - row_vec"),
    "mul": (NUMERIC_DTYPES, lambda a, v: a * v, "tile * row_vec"),
    "div": (DIV_DTYPES, divide, "tile / row_vec (ints truncate toward zero)"),
    "expdif": (("FP16", "FP32", "BF16"), lambda a, v: np.exp(a - v), "exp(tile - row_vec)"),
}


def _expand_type(info: CallInfo) -> TileType:
    a, v = tile(info, "tile"), tile(info, "row_vec")
    require_rank(info, a, "tile", at_least=2)
    require_same_dtype(info, a.dtype, v.dtype, "tile and row_vec")
    require_dtype(info, a.dtype, _OPS[info.op.rsplit("_", 1)[1]][0])
    if v.rank != a.rank or v.shape[-1] != 1 or v.shape[:-1] != a.shape[:-1]:
        want = list(a.shape[:-1]) + [1]
        raise OpTypeError(
            f"The operator {info.op} requires row_vec of shape {dims(want)} (one value per "
            f"row), but got row_vec {dims(v.shape)} for tile {dims(a.shape)}",
            f"reduce with pl.row_sum/row_max into a {dims(want)} tile",
        )
    tmp = optional_tile(info, "tmp")
    if tmp is not None:
        require_same_dtype(info, a.dtype, tmp.dtype, "tmp and the tile")
    return TileType(a.shape, a.dtype, valid=a.valid)


def _make(fn: Any):
    def compute(tile: Any, row_vec: Any, tmp: Any = None, **_: Any) -> Any:
        return fn(tile, row_vec)

    compute.region = "lhs"  # type: ignore[attr-defined]
    return compute


for _name, (_allowed, _fn, _doc) in _OPS.items():
    _params = [ParamSpec("tile", "tile"), ParamSpec("row_vec", "tile")]
    if _name == "add":
        _params.append(ParamSpec("tmp", "tile", default=None, optional=True))
    register(OpSpec(
        name=f"tile.row_expand_{_name}",
        params=tuple(_params),
        type_rule=_expand_type,
        mem=MemRule(operands={"tile": ("Vec",), "row_vec": ("Vec",), "tmp": ("Vec",)},
                    result="Vec"),
        compute=_make(_fn),
        batchable=True,
        spellings=(f"row_expand_{_name}",),
        tier=2 if _name == "expdif" else 1,
        doc=f"Elementwise {_doc}, row_vec [..., R, 1] broadcast along each row; result has "
            "the tile's shape and valid region, computed wide and rounded once.",
    ))
