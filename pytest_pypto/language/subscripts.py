# SPDX-License-Identifier: Apache-2.0
"""Subscript sugar (docs/design/language.md §18, PyPTO's numpy-style rules) and `pl.create_tensor`.

Reads: `x[i, j]` with every axis indexed is `pl.read`; anything else is `pl.slice`
(a scalar index keeps a unit axis at that offset and drops it, missing trailing axes
are whole).  Writes: `dst[...] = src` is `dst = pl.assemble(dst, src, offsets)`, the
source of the same kind as dst and reshaped up over dropped axes; an element write
`dst[i, j] = v` is rejected as PyPTO rejects it (use `pl.write`).
"""

from __future__ import annotations

import ast
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Call, Expr
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import DynVar, TensorType
from pytest_pypto.language import calls, scalars
from pytest_pypto.language.calls import Arg

if TYPE_CHECKING:
    from pytest_pypto.language.expressions import ExprParser


def _indices(node: ast.Subscript) -> list[ast.expr]:
    return list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]


def _level(base: Expr) -> str:
    return "tensor" if isinstance(base.type, TensorType) else "tile"


def _extent(ep: ExprParser, s: ast.Slice, lower: Any, upper: Any, node: ast.AST) -> Any:
    """upper - lower, folded; `a + i:a + j` gives j - i even when `a` is dynamic."""
    if s.lower is not None and s.upper is not None:
        lo_base, lo_off = _base_offset(s.lower)
        up_base, up_off = _base_offset(s.upper)
        if lo_base == up_base and (lo_off == 0 or _is_const_node(lo_off)):
            if lo_off == 0:
                return ep.eval(s.upper.right) if up_off != 0 else 0  # type: ignore[attr-defined]
            if up_off != 0 and _is_const_node(up_off):
                return up_off.value - lo_off.value
    return scalars.binop(ep.ctx, "-", upper, lower, node)


def _base_offset(e: ast.expr) -> tuple[str, Any]:
    """``E + k`` as (dump of E, the k node); anything else as (its dump, 0)."""
    if isinstance(e, ast.BinOp) and isinstance(e.op, ast.Add):
        return ast.dump(e.left), e.right
    return ast.dump(e), 0


def _is_const_node(e: Any) -> bool:
    return isinstance(e, ast.Constant) and _is_const(e.value)


def _is_const(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def window(ep: ExprParser, base: Expr, node: ast.Subscript) -> tuple[list, list, list, list | None]:
    """(shape, offsets, drop_dims, valid_shape) of a subscript window, PyPTO's numpy rules:
    a scalar index keeps a unit axis at that offset and drops it, a slice keeps its axis
    (no step), dims past the indices are whole.  Tile windows have static extents (a
    dynamic upper bound narrows valid_shape instead) and constant lower bounds."""
    ctx = ep.ctx
    level = _level(base)
    shape = base.type.shape  # type: ignore[union-attr]
    elts = _indices(node)
    extents: list[Any] = []
    offsets: list[Any] = []
    valid: list[Any] = []
    drop: list[int] = []
    dynamic_valid = False
    for d, dim in enumerate(shape):
        e = elts[d] if d < len(elts) else ast.Slice()
        if not isinstance(e, ast.Slice):
            offsets.append(ep.eval(e))
            extents.append(1)
            valid.append(1)
            drop.append(d)
            continue
        if e.step is not None:
            raise ctx.error(
                InvalidOperationError, f"slices with a step are not supported in {level} subscripts",
                e, hint="write x[start:stop] without a step",
            )
        lower = 0 if e.lower is None else ep.eval(e.lower)
        upper = dim if e.upper is None else ep.eval(e.upper)
        if level == "tile" and not _is_const(lower):
            raise ctx.error(
                InvalidOperationError, "dynamic lower bounds are not supported in tile subscripts",
                e, hint="use a constant lower bound, or pl.tile.slice(t, shape, [offsets...])",
            )
        extent = _extent(ep, e, lower, upper, node)
        if level == "tile" and not _is_const(extent):
            extent, dynamic_valid = dim - lower, True
            valid.append(scalars.binop(ctx, "-", upper, lower, node))
        else:
            valid.append(extent)
        if _is_const(extent) and extent <= 0:
            raise ctx.error(
                ParserTypeError,
                f"the extent of dimension {d} of this subscript must be positive, but it is "
                f"{extent}",
                node,
                hint="keep upper > lower inside the source's shape",
            )
        extents.append(extent)
        offsets.append(lower)
    return extents, offsets, drop, valid if dynamic_valid else None


def _check_count(ep: ExprParser, base: Expr, node: ast.Subscript) -> list[ast.expr]:
    elts = _indices(node)
    rank = len(base.type.shape)  # type: ignore[union-attr]
    if len(elts) > rank:
        raise ep.ctx.error(
            ParserTypeError,
            f"{_level(base).capitalize()} subscript has {len(elts)} indices but the "
            f"{_level(base)} is {rank}D",
            node,
            hint=f"give at most {rank} indices",
        )
    return elts


def _op(ep: ExprParser, op: str, args: list[Arg], kw: dict[str, Arg], node: ast.AST) -> Call:
    """Bind and type a call of registry op ``op`` for a subscript."""
    ctx = ep.ctx
    if op not in REGISTRY:
        raise ctx.error(
            InvalidOperationError,
            f"subscript '{ctx.text(node)}' means {op}, which the bundled toolchain does not have",
            node,
        )
    spec = REGISTRY[op]
    display = "pl." + op
    return calls.build_call(ctx, spec, display, calls.bind(ctx, spec, display, args, kw, node),
                            node)


def read_subscript(ep: ExprParser, base: Expr, node: ast.Subscript) -> Call:
    """`x[i, j]` (every axis indexed) reads an element; anything else is a slice view."""
    elts = _check_count(ep, base, node)
    level = _level(base)
    rank = len(base.type.shape)  # type: ignore[union-attr]
    if len(elts) == rank and not any(isinstance(e, ast.Slice) for e in elts):
        indices = [ep.eval(e) for e in elts]
        return _op(ep, f"{level}.read", [Arg(base, node.value), Arg(indices, node)], {}, node)
    extents, offsets, drop, valid = window(ep, base, node)
    kw = {}
    if drop:
        kw["drop_dims"] = Arg(drop, node)
    if valid is not None:
        kw["valid_shape"] = Arg(valid, node)
    args = [Arg(base, node.value), Arg(extents, node), Arg(offsets, node)]
    return _op(ep, f"{level}.slice", args, kw, node)


def write_subscript(ep: ExprParser, base: Expr, node: ast.Subscript, value: Any,
                    value_node: ast.AST) -> Call:
    """The call for `dst[...] = src`: `pl.assemble(dst, src, offsets)` (the caller rebinds
    dst).  Scalar indices drop their axes from the window, so the source may have fewer
    axes; it is reshaped up to the window's rank.  PyPTO has no element-write subscript."""
    ctx = ep.ctx
    level = _level(base)
    elts = _check_count(ep, base, node)
    rank = len(base.type.shape)  # type: ignore[union-attr]
    if len(elts) == rank and not any(isinstance(e, ast.Slice) for e in elts):
        raise ctx.error(
            InvalidOperationError,
            f"element-write 'dst[i, j] = value' is not supported for {level} targets",
            node,
            hint="write pl.write(dst, [i, j], value), or assign a window: dst[i:i + 1, j:j + 1] = t",
        )
    extents, offsets, drop, _ = window(ep, base, node)
    want = "Tensor" if level == "tensor" else "Tile"
    src_type = getattr(value, "type", None)
    if not (isinstance(value, Expr) and getattr(src_type, "kind", None) == want):
        got = getattr(src_type, "kind", None) or type(value).__name__
        raise ctx.error(
            ParserTypeError,
            f"subscript-write source must also be a {want}, but got {got}",
            value_node,
            hint=f"the right-hand side of dst[...] = src must be a {want} of the window's shape"
            + (" (pl.store a tile into a tensor)" if want == "Tensor" else ""),
        )
    kept = [d for d in range(rank) if d not in drop]
    natural = len(kept)
    src_shape = list(src_type.shape)  # type: ignore[union-attr]
    allowed = {natural, max(2, natural)} if level == "tile" else {natural}
    if len(src_shape) not in allowed:
        raise ctx.error(
            ParserTypeError,
            f"subscript-write source must be {natural}D to match the window, but it is "
            f"{len(src_shape)}D",
            value_node,
            hint="a scalar index removes its axis from the window; the source's rank must match "
            "the remaining axes",
        )
    lead = len(src_shape) - natural
    want_extents = [1] * lead + [extents[d] for d in kept]
    src_valid = getattr(src_type, "valid", None) or src_shape
    for axis, (w, s, v) in enumerate(zip(want_extents, src_shape, src_valid)):
        if _is_const(w) and _is_const(s) and w != s and v != w:
            raise ctx.error(
                ParserTypeError,
                f"subscript-write shape mismatch on source axis {axis}: the window expects {w} "
                f"elements, the source has {s}",
                value_node,
                hint="make the source's shape (or valid shape) match the window",
            )
    source = value
    if len(src_shape) != rank:
        it = iter(src_shape[lead:])
        lifted = [1 if d in drop else next(it) for d in range(rank)]
        source = _op(ep, f"{level}.reshape", [Arg(value, value_node), Arg(lifted, value_node)],
                     {}, value_node)
    args = [Arg(base, node.value), Arg(source, value_node), Arg(offsets, node)]
    return _op(ep, f"{level}.assemble", args, {}, node)


def create_tensor(ep: ExprParser, pos: list[Arg], kw: dict[str, Arg], node: ast.Call) -> Call:
    """`pl.create_tensor(shape, dtype, init_value=None)` as a "tensor.create" Call."""
    ctx = ep.ctx
    manual = kw.get("manual_dep")
    if manual is not None and not isinstance(manual.value, bool):
        raise ctx.error(ParserTypeError, "pl.create_tensor manual_dep= must be True or False",
                        manual.node, hint="manual_dep=True")
    kw = {k: v for k, v in kw.items() if k != "manual_dep"}
    if "tensor.create" in REGISTRY:
        spec = REGISTRY["tensor.create"]
        bound = calls.bind(ctx, spec, "pl.create_tensor", pos, kw, node)
        call = calls.build_call(ctx, spec, "pl.create_tensor", bound, node)
        if manual is not None and manual.value:
            # no automatic dependencies for this buffer (docs/design/scheduling.md §1)
            call.set_arg("manual_dep", True)
        return call
    names = ("shape", "dtype", "init_value")
    if len(pos) > 3 or any(k not in names for k in kw):
        raise ctx.error(
            InvalidOperationError, "pl.create_tensor takes (shape, dtype, init_value=None)", node
        )
    got = {n: a for n, a in zip(names, pos)}
    got.update(kw)
    if "shape" not in got or "dtype" not in got:
        raise ctx.error(InvalidOperationError, "pl.create_tensor needs shape and dtype", node)
    shape_value, dtype = got["shape"].value, got["dtype"].value
    if not isinstance(dtype, DataType):
        raise ctx.error(InvalidOperationError, "pl.create_tensor needs a dtype such as pl.FP32",
                        got["dtype"].node)
    if not isinstance(shape_value, (list, tuple)) or not shape_value:
        raise ctx.error(InvalidOperationError, "pl.create_tensor needs a shape list",
                        got["shape"].node)
    dims: list[Any] = []
    type_dims: list[Any] = []
    shape_node = got["shape"].node
    items = shape_node.elts if isinstance(shape_node, (ast.List, ast.Tuple)) and len(
        shape_node.elts) == len(shape_value) else [shape_node] * len(shape_value)
    for d, item in zip(shape_value, items):
        if isinstance(d, (int, DynVar)) and not isinstance(d, bool):
            dims.append(d)
            type_dims.append(d)
            continue
        expr = scalars.as_scalar_expr(d, ctx.span(node))
        if expr is None or not expr.type.dtype.is_int:  # type: ignore[union-attr]
            raise ctx.error(
                ParserTypeError, "pl.create_tensor dims are ints, pl.dynamic dims or int Scalars",
                got["shape"].node,
            )
        dims.append(expr)
        type_dims.append(calls.scalar_dim(ctx, expr, item))
    init = got["init_value"].value if "init_value" in got else None
    if init is not None and not scalars.is_number(init):
        raise ctx.error(ParserTypeError, "init_value must be a number literal",
                        got["init_value"].node)
    if isinstance(init, float) and not dtype.is_float and init != int(init):
        raise ctx.error(ParserTypeError, f"init_value {init!r} does not fit {dtype.name}",
                        got["init_value"].node)
    if any(isinstance(d, int) and d <= 0 for d in dims):
        raise ctx.error(ParserTypeError, "pl.create_tensor dims must be positive", node)
    args = (("shape", tuple(dims)), ("dtype", dtype), ("init_value", init))
    if manual is not None and manual.value:
        args += (("manual_dep", True),)  # no automatic dependencies (docs/design/scheduling.md §1)
    return Call("tensor.create", args, type=TensorType(tuple(type_dims), dtype), span=ctx.span(node))


def reject_strict(ep: ExprParser, node: ast.AST) -> None:
    if ep.ctx.strict_ssa:
        raise ep.ctx.error(
            ParserSyntaxError,
            "subscript writes rebind their target and are rejected under strict_ssa=True",
            node,
            hint="write dst = pl.assemble(dst, src, offsets) with a new name",
        )

