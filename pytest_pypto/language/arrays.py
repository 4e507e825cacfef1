# SPDX-License-Identifier: Apache-2.0
"""Subscript sugar on on-core arrays (PyPTO's `pl.Array`, ops in `ir/ops/arrays.py`).

`arr[i]` is `pl.array.get_element(arr, i)`; `arr[i] = v` is
`arr = pl.array.update_element(arr, i, v)` (the statement parser rebinds `arr`, so a
write in a loop or an if arm is a carried value).  Arrays are 1-D: one index, no slices.
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.errors import ParserTypeError
from pytest_pypto.ir.nodes import Call, Expr
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.language import calls
from pytest_pypto.language.calls import Arg

if TYPE_CHECKING:
    from pytest_pypto.language.expressions import ExprParser


def _index_node(ep: ExprParser, node: ast.Subscript) -> ast.expr:
    index = node.slice
    if isinstance(index, (ast.Tuple, ast.Slice)):
        raise ep.ctx.error(
            ParserTypeError,
            f"an on-core array takes one integer index, but got '{ep.ctx.text(index)}'",
            node, hint="arrays are 1-D and have no slices: write arr[i]",
        )
    return index


def _call(ep: ExprParser, op: str, args: list[Arg], node: ast.AST) -> Call:
    spec = REGISTRY[op]
    display = "pl." + op
    return calls.build_call(ep.ctx, spec, display, calls.bind(ep.ctx, spec, display, args, {},
                                                              node), node)


def read_element(ep: ExprParser, base: Expr, node: ast.Subscript) -> Call:
    """`arr[i]`: the element as a Scalar of the array's dtype."""
    index = _index_node(ep, node)
    return _call(ep, "array.get_element", [Arg(base, node.value), Arg(ep.eval(index), index)],
                 node)


def write_element(ep: ExprParser, base: Expr, node: ast.Subscript, value: Any,
                  value_node: ast.AST) -> Call:
    """`arr[i] = v`: the updated array (the caller rebinds the name)."""
    index = _index_node(ep, node)
    return _call(ep, "array.update_element",
                 [Arg(base, node.value), Arg(ep.eval(index), index), Arg(value, value_node)],
                 node)
