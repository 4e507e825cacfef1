# SPDX-License-Identifier: Apache-2.0
"""Type rules of explicit tensor entries that reuse a tile op's rule on whole tensors.

Several tensor-level entries (gather, scatter, ci, scatter_update...) mean "the tile
op, on the whole tensor as one tile": their rules run the tile op's rule on tiles
standing for the tensors, and its errors name the tensor op the user called.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir.ops._rules import tensor
from pytest_pypto.ir.registry import REGISTRY, CallInfo, OpRuleError
from pytest_pypto.ir.tensor_forms import tile_view
from pytest_pypto.ir.types import TileType, Type


def via_tile(tile_op: str, info: CallInfo, types: dict[str, Type | None],
             values: dict[str, Any] | None = None) -> Any:
    """Run ``tile_op``'s type rule on whole-tensor tiles; its errors name the tensor op."""
    spec = REGISTRY[tile_op]
    sub = CallInfo(tile_op, types, dict(info.values if values is None else values),
                   arch=info.arch, warnings=info.warnings)
    try:
        return spec.type_rule(sub)
    except OpRuleError as exc:
        exc.message = exc.message.replace(tile_op, info.op)
        exc.args = (exc.message,)
        raise


def whole(info: CallInfo, name: str) -> TileType:
    """The tensor operand ``name`` as one fully valid tile (static shapes only)."""
    return tile_view(tensor(info, name), name, info.op)
