# SPDX-License-Identifier: Apache-2.0
"""Subscript sugar (DSL.md §3.4) and `pl.create_tensor`.

`x[a:b, c:d]` is `pl.slice`, `x[i, j]` is `pl.read`, `dst[a:b, c:d] = src` is
`dst = pl.assemble(dst, src, [a, c])` and `dst[i, j] = v` is `pl.write`.  Each maps
to the registry op of that name; where the registry has none yet, the sugar says
so instead of guessing.
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
from pytest_pypto.language.context import Tier3Hit

if TYPE_CHECKING:
    from pytest_pypto.language.expressions import ExprParser


def window(ep: ExprParser, base: Expr, node: ast.Subscript) -> tuple[str, Any, Any]:
    """("slice", shape, offsets) for slice subscripts, ("index", indices, None) for indices."""
    ctx = ep.ctx
    shape = base.type.shape  # type: ignore[union-attr]
    elts = list(node.slice.elts) if isinstance(node.slice, ast.Tuple) else [node.slice]
    is_slice = [isinstance(e, ast.Slice) for e in elts]
    if any(is_slice) and not all(is_slice):
        raise ctx.error(
            InvalidOperationError,
            "mixed index/slice subscripts (rank-dropping) are not supported by the bundled "
            "toolchain yet (tier 2)",
            node,
            hint="slice every dimension, e.g. x[i:i + 1, a:b]",
        )
    if len(elts) > len(shape) or (not any(is_slice) and len(elts) != len(shape)):
        raise ctx.error(
            InvalidOperationError,
            f"subscript has {len(elts)} indices for a rank-{len(shape)} value",
            node,
        )
    if not any(is_slice):
        return "index", [ep.eval(e) for e in elts], None
    extents, offsets = [], []
    for d, dim in enumerate(shape):
        s = elts[d] if d < len(elts) else ast.Slice()
        assert isinstance(s, ast.Slice)
        if s.step is not None:
            raise ctx.error(InvalidOperationError, "slices with a step are not supported", s)
        lower = 0 if s.lower is None else ep.eval(s.lower)
        if s.upper is None:
            if not isinstance(dim, int):
                raise ctx.error(
                    ParserTypeError,
                    f"dimension {d} is dynamic: write the slice end explicitly", node,
                )
            extent: Any = scalars.binop(ctx, "-", dim, lower, node)
        elif (
            s.lower is not None
            and isinstance(s.upper, ast.BinOp)
            and isinstance(s.upper.op, ast.Add)
            and ast.dump(s.upper.left) == ast.dump(s.lower)
        ):
            extent = ep.eval(s.upper.right)
        else:
            extent = scalars.binop(ctx, "-", ep.eval(s.upper), lower, node)
        if not isinstance(extent, int) or isinstance(extent, bool) or extent <= 0:
            raise ctx.error(
                ParserTypeError,
                f"the extent of dimension {d} of this slice must be a positive constant",
                node,
                hint="write it as x[a:a + N] with a constant N",
            )
        extents.append(extent)
        offsets.append(lower)
    return "slice", extents, offsets


def _sugar_op(ep: ExprParser, base: Expr, name: str, args: list[Arg], node: ast.AST) -> Call:
    ctx = ep.ctx
    if isinstance(base.type, TensorType):
        raise calls.tensor_level(ctx, name, node)
    if not any(s.level == "tile" for s in REGISTRY.by_namespace("tile", name)):
        raise ctx.error(
            InvalidOperationError,
            f"subscript '{ctx.text(node)}' means pl.{name}, which is not supported by the "
            "bundled toolchain yet",
            node,
        )
    return calls.op_call(ctx, "tile", name, args, {}, node)  # type: ignore[arg-type]


def read_subscript(ep: ExprParser, base: Expr, node: ast.Subscript) -> Call:
    kind, first, offsets = window(ep, base, node)
    if kind == "index":
        return _sugar_op(ep, base, "read", [Arg(base, node.value), Arg(first, node)], node)
    return _sugar_op(
        ep, base, "slice", [Arg(base, node.value), Arg(first, node), Arg(offsets, node)], node
    )


def write_subscript(ep: ExprParser, base: Expr, node: ast.Subscript, value: Any,
                    value_node: ast.AST) -> Call:
    """The op call for `base[...] = value` (assemble or write)."""
    kind, first, offsets = window(ep, base, node)
    if kind == "index":
        args = [Arg(base, node.value), Arg(first, node), Arg(value, value_node)]
        return _sugar_op(ep, base, "write", args, node)
    args = [Arg(base, node.value), Arg(value, value_node), Arg(offsets, node)]
    return _sugar_op(ep, base, "assemble", args, node)


def create_tensor(ep: ExprParser, pos: list[Arg], kw: dict[str, Arg], node: ast.Call) -> Call:
    """`pl.create_tensor(shape, dtype, init_value=None)` as a "tensor.create" Call."""
    ctx = ep.ctx
    if "manual_dep" in kw and kw["manual_dep"].value:
        raise Tier3Hit("create_tensor(manual_dep=True)", "tier 3: explicit task dependencies", node)
    kw = {k: v for k, v in kw.items() if k != "manual_dep"}
    if "tensor.create" in REGISTRY:
        spec = REGISTRY["tensor.create"]
        bound = calls.bind(ctx, spec, "pl.create_tensor", pos, kw, node)
        return calls.build_call(ctx, spec, "pl.create_tensor", bound, node)
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
    for d in shape_value:
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
        type_dims.append(DynVar(ctx.text(got["shape"].node)))
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
    return Call("tensor.create", args, type=TensorType(tuple(type_dims), dtype), span=ctx.span(node))


def reject_strict(ep: ExprParser, node: ast.AST) -> None:
    if ep.ctx.strict_ssa:
        raise ep.ctx.error(
            ParserSyntaxError,
            "subscript writes rebind their target and are rejected under strict_ssa=True",
            node,
            hint="write dst = pl.assemble(dst, src, offsets) with a new name",
        )

