# SPDX-License-Identifier: Apache-2.0
"""Hand-written cross-core kernels (docs/design/language.md §14): ``pl.FunctionType.AIC`` /
``AIV`` kernels and the ``Group`` function that runs one of each as a single task.

``attrs=`` of such a function takes ``"split"`` (a `pl.SplitMode` member: how the two
AIV lanes of a cluster divide a transferred tile) and ``"dual_aiv_dispatch"`` (a bool:
the AIV body runs on both lanes).  Both choose how the hardware spreads the AIV
kernel over its two vector lanes; the simulator runs the kernel once over the whole
tile, which computes the same values, so they are checked and recorded only.
"""

from __future__ import annotations

import ast
from typing import Any

from pytest_pypto.ir.errors import ParserTypeError
from pytest_pypto.language.context import FunctionContext, Header
from pytest_pypto.language.surface import SplitMode

__all__ = ["ATTR_KEYS", "function_attrs"]

ATTR_KEYS = ("split", "dual_aiv_dispatch")


def function_attrs(ctx: FunctionContext, ep: Any, node: ast.expr, header: Header) -> None:
    """Check and record ``attrs={...}`` of an AIC / AIV / Group function."""
    if not isinstance(node, ast.Dict):
        raise ctx.error(ParserTypeError, "attrs= must be a dict literal", node,
                        hint='e.g. attrs={"split": pl.SplitMode.UP_DOWN}')
    for key_node, value_node in zip(node.keys, node.values):
        key = ep.eval(key_node) if key_node is not None else None
        if key not in ATTR_KEYS:
            raise ctx.error(
                ParserTypeError,
                f"attrs= of a pl.FunctionType.{_kind(header)} function has no key {key!r}",
                key_node or node,
                hint="valid keys: " + ", ".join(repr(k) for k in ATTR_KEYS),
            )
        value = ep.eval(value_node)
        if key == "split" and not isinstance(value, SplitMode):
            raise ctx.error(ParserTypeError, 'attrs["split"] must be a pl.SplitMode member',
                            value_node)
        if key == "dual_aiv_dispatch" and not isinstance(value, bool):
            raise ctx.error(ParserTypeError, 'attrs["dual_aiv_dispatch"] must be True or False',
                            value_node)
        header.attrs[key] = value.name if isinstance(value, SplitMode) else value


_POP_NAMES = frozenset({"tpop_from_aic", "tpop_from_aiv"})


def typed_pop(ep: Any, stmt: ast.AnnAssign) -> ast.expr:
    """``t: pl.Tile[[M, N], dtype, space, pl.TileView(valid_shape=[...])] = pl.tpop_from_...()``:
    the pop takes its shape, dtype (and valid shape) from the annotation, as PyPTO's does;
    any other value is returned as it is."""
    call = stmt.value
    if not isinstance(call, ast.Call) or any(k.arg == "shape" for k in call.keywords):
        return call  # type: ignore[return-value]
    try:
        target = ep.eval(call.func)
    except Exception:  # noqa: BLE001  (the normal evaluation reports it)
        return call
    if getattr(target, "op_name", None) not in _POP_NAMES:
        return call
    ann = stmt.annotation
    if not isinstance(ann, ast.Subscript):
        return call
    items = list(ann.slice.elts) if isinstance(ann.slice, ast.Tuple) else [ann.slice]
    if len(items) < 2:
        return call
    keywords = [*call.keywords, ast.keyword("shape", items[0]), ast.keyword("dtype", items[1])]
    for item in items[2:]:
        if isinstance(item, ast.Call):
            keywords += [ast.keyword("valid_shape", k.value) for k in item.keywords
                         if k.arg == "valid_shape"]
    typed = ast.Call(call.func, call.args, keywords)
    return ast.copy_location(typed, call)


def function_kind(header: Header) -> None:
    """An AIC / AIV function is an InCore kernel pinned to one core kind (``attrs["core"]``);
    a Group keeps its kind."""
    if header.kind in ("AIC", "AIV"):
        header.attrs["core"] = header.kind.lower()
        header.kind = "InCore"


def is_cross_core(header: Header) -> bool:
    return "core" in header.attrs or header.kind == "Group"


def _kind(header: Header) -> str:
    return header.attrs["core"].upper() if "core" in header.attrs else header.kind
