# SPDX-License-Identifier: Apache-2.0
"""Annotations: `pl.Tensor[...]` & co. as IR types, and the consistency check (docs/design/checks.md
§3).

An annotation is checked, never used to convert: kind, dtype, rank and every pair
of static dims must equal the inferred type.  The parser evaluates an annotation to
an `AnnotationForm` (the same record Python builds at class-definition time) and
turns that into an IR type here, so aliases captured from the module work too.
"""

from __future__ import annotations

import ast
from typing import Any

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Expr
from pytest_pypto.ir.types import (
    ArrayType,
    Direction,
    DynVar,
    HandleType,
    MemorySpace,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
)
from pytest_pypto.language import memref
from pytest_pypto.language.context import FunctionContext, Tier3Hit
from pytest_pypto.language.surface import (
    AnnotationForm,
    CompactMode,
    OpaqueHandle,
    PadValue,
    TileLayout,
    TileView,
)
from pytest_pypto.language.unsupported import Layout, TensorView


def to_type(
    ctx: FunctionContext, form: Any, node: ast.AST, *, param: bool = False
) -> tuple[Type, Direction | None]:
    """An evaluated annotation as (IR type, direction); direction only for Out/InOut."""
    if isinstance(form, type) and issubclass(form, OpaqueHandle) and form is not OpaqueHandle:
        if param:
            raise ctx.error(
                ParserTypeError,
                f"a {form.__name__} handle cannot be a function parameter: handles live in "
                "the kernel whose op made them", node,
                hint="make the handle inside the kernel that uses it")
        return HandleType(form.__name__), None
    if not isinstance(form, AnnotationForm):
        raise ctx.error(
            ParserSyntaxError,
            f"'{ctx.text(node)}' is not a type annotation of the DSL",
            node,
            hint="use pl.Tensor[[...], dtype], pl.Tile[[...], dtype], pl.Scalar[dtype], "
            "pl.Out[...] / pl.InOut[...] or tuple[...]",
        )
    args = form.args if isinstance(form.args, tuple) else (form.args,)
    if form.form in ("Out", "InOut"):
        if not param:
            raise ctx.error(
                ParserTypeError,
                f"pl.{form.form}[...] is a parameter direction; it is allowed on parameters only",
                node,
            )
        inner, _ = to_type(ctx, args[0], node)
        if not isinstance(inner, TensorType):
            raise ctx.error(
                ParserTypeError,
                f"pl.{form.form}[...] wraps a pl.Tensor, but got {spelling(inner)}",
                node,
            )
        return inner, Direction.OUT if form.form == "Out" else Direction.INOUT
    if form.form == "Tensor":
        return _tensor(ctx, args, node), None
    if form.form == "Tile":
        return _tile(ctx, args, node), None
    if form.form == "Scalar":
        return ScalarType(_dtype(ctx, args[0], node)), None
    if form.form == "Tuple":
        return TupleType(tuple(to_type(ctx, a, node)[0] for a in args)), None
    if form.form == "Array":
        if param:
            raise ctx.error(
                ParserTypeError,
                "an on-core array (ArrayType) cannot be a function parameter: arrays do not "
                "cross function boundaries", node,
                hint="create it inside the kernel with pl.array.create(extent, dtype)",
            )
        return _array(ctx, args, node), None
    raise ctx.error(ParserSyntaxError, f"unknown annotation pl.{form.form}", node)


def _dtype(ctx: FunctionContext, value: Any, node: ast.AST) -> DataType:
    if not isinstance(value, DataType):
        raise ctx.error(
            ParserTypeError, f"expected a dtype such as pl.FP32, but got {value!r}", node
        )
    return value


_MAX_DIM = 2**63 - 1  # shapes, offsets and element counts are int64 at run time


def _dims(ctx: FunctionContext, value: Any, node: ast.AST, *, static: bool) -> tuple[Any, ...]:
    if not isinstance(value, (list, tuple)) or not value:
        raise ctx.error(
            ParserTypeError, f"expected a shape list such as [64, 128], but got {value!r}", node
        )
    dims = []
    for d in value:
        if isinstance(d, DynVar) and not static:
            dims.append(d)
        elif not static and isinstance(d, Expr) and isinstance(d.type, ScalarType) \
                and d.type.dtype.is_int:
            # PyPTO: a run-time Scalar as a tensor dim (`pl.Tensor[[q, n_cfg], ...]` on a
            # create_tensor / slice result): a dim known only when the program runs.
            dims.append(DynVar(getattr(d, "name", "dim")))
        elif isinstance(d, int) and not isinstance(d, bool) and d > 0:
            if d > _MAX_DIM:
                raise ctx.error(
                    ParserTypeError,
                    f"dimension {d} does not fit int64: a dimension is at most {_MAX_DIM} "
                    f"(2**63 - 1)",
                    node,
                )
            dims.append(d)
        elif isinstance(d, DynVar):
            raise ctx.error(
                ParserTypeError,
                f"tile dimension {d.name} is dynamic, but tile shapes must be static",
                node,
                hint="use a compile-time constant; dynamic dims are for tensors only",
            )
        else:
            raise ctx.error(
                ParserTypeError,
                f"a dimension must be a positive int or pl.dynamic(...), but got {d!r}",
                node,
            )
    return tuple(dims)


def _is_dim(value: Any) -> bool:
    """A single dimension as a shape list would hold it (an int, pl.dynamic, an int Scalar)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, DynVar)):
        return True
    return isinstance(value, Expr) and isinstance(value.type, ScalarType) \
        and value.type.dtype.is_int


def _written_items(ctx: FunctionContext, form: str, args: tuple[Any, ...], node: ast.AST
                   ) -> tuple[str, list[str], ast.AST]:
    """How the user spelled ``pl.<form>`` and each of its items, and the node to point at.

    Read from the source when ``node`` (or the subscript inside pl.Out[...]) is the
    literal annotation; else rendered from the evaluated values (an alias, a helper).
    """
    sub: ast.AST = node
    while isinstance(sub, ast.Subscript):
        head = ctx.text(sub.value)
        if head.split(".")[-1] not in ("Out", "InOut"):  # pl.Tensor, or an alias of it
            items = sub.slice.elts if isinstance(sub.slice, ast.Tuple) else [sub.slice]
            if len(items) == len(args):
                return head, [ctx.text(i) for i in items], sub
            break
        sub = sub.slice
    return f"pl.{form}", [_value_text(a) for a in args], node


def _value_text(value: Any) -> str:
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value_text(v) for v in value) + "]"
    return repr(value)


def _check_spelling(ctx: FunctionContext, form: str, args: tuple[Any, ...], node: ast.AST
                    ) -> None:
    """The usual misspellings of ``pl.Tensor[[shape], dtype]`` / ``pl.Tile[...]``, each
    named with the annotation written right: shape not in a list, dtype first, no dtype."""
    head, items, where = _written_items(ctx, form, args, node)
    written = f"{head}[{', '.join(items)}]"
    dtype_at = next((i for i, a in enumerate(args) if isinstance(a, DataType)), None)
    dims_end = next((i for i, a in enumerate(args) if not _is_dim(a)), len(args))
    example = "pl.FP32"
    if dims_end > 0:  # pl.Tensor[M, N, pl.FP32]: the dims are separate arguments
        rest = items[dims_end:] or [example]
        fixed = f"{head}[[{', '.join(items[:dims_end])}], {', '.join(rest)}]"
        what = "the shape must be a list" + ("" if dtype_at is not None else ", and a dtype follows")
        raise ctx.error(
            ParserTypeError,
            f"{written}: {what}; written like this, every dimension is a separate argument",
            where,
            hint=f"write {fixed}" + ("" if dtype_at is not None else " (with the dtype you need)"),
        )
    if dtype_at == 0:  # pl.Tensor[pl.FP32, [M, N]]: dtype first
        shape = [t for a, t in zip(args[1:], items[1:]) if isinstance(a, (list, tuple))]
        dims = [t for a, t in zip(args[1:], items[1:]) if _is_dim(a)]
        if shape:
            fixed_shape = shape[0]
        elif dims:
            fixed_shape = f"[{', '.join(dims)}]"
        else:
            raise ctx.error(
                ParserTypeError, f"{written} has no shape", where,
                hint=f"write {head}[[M, N], {items[0]}] with the {form.lower()}'s dimensions",
            )
        extras = [t for a, t in zip(args[1:], items[1:])
                  if not isinstance(a, (list, tuple)) and not _is_dim(a)]
        fixed = f"{head}[{', '.join([fixed_shape, items[0], *extras])}]"
        raise ctx.error(
            ParserTypeError, f"{written}: the shape comes first, then the dtype", where,
            hint=f"write {fixed}",
        )
    if len(args) == 1 and isinstance(args[0], (list, tuple)):  # pl.Tensor[[M, N]]
        raise ctx.error(
            ParserTypeError, f"{written} has no dtype", where,
            hint=f"write {head}[{items[0]}, {example}] (with the dtype you need)",
        )


def _tensor(ctx: FunctionContext, args: tuple[Any, ...], node: ast.AST) -> TensorType:
    _check_spelling(ctx, "Tensor", args, node)
    if len(args) < 2:
        raise ctx.error(ParserTypeError, "pl.Tensor needs [shape] and a dtype", node)
    valid = None
    for extra in args[2:]:
        if memref.is_memref(extra):
            raise Tier3Hit("pl.MemRef in pl.Tensor", "tier 3: memory references on tensors", node)
        if isinstance(extra, TensorView) and valid is None:
            valid = _tensor_view(ctx, extra, args[0], node)
            continue
        if isinstance(extra, Layout) and extra.name == "ND":
            continue  # row-major: what every tensor is
        if isinstance(extra, Layout) and extra.name == "DN":
            raise ctx.error(
                ParserTypeError,
                "pl.DN layout is not accepted in a pl.Tensor annotation",
                node,
                hint="declare the tensor row-major and transpose with pl.transpose",
            )
        raise Tier3Hit(f"{extra!r} in pl.Tensor", "tier 3: tensor layout markers", node)
    shape = _dims(ctx, args[0], node, static=False)
    if valid is not None and len(valid) != len(shape):
        raise ctx.error(
            ParserTypeError,
            f"pl.TensorView valid_shape has {len(valid)} dims, but the tensor has {len(shape)}",
            node, hint="give one valid extent per dimension",
        )
    return TensorType(shape, _dtype(ctx, args[1], node), valid)


def tensor_view(ctx: FunctionContext, pos: list[Any], kw: dict[str, Any], node: ast.AST
                ) -> TensorView:
    """`pl.TensorView(valid_shape=None, layout=None, stride=None)` in an annotation."""
    names = ("valid_shape", "layout", "stride")
    bad = [k for k in kw if k not in names]
    if len(pos) > len(names) or bad:
        raise ctx.error(
            ParserTypeError,
            "pl.TensorView takes (valid_shape=None, layout=None, stride=None)"
            + (f", not {bad[0]}=" if bad else ""), node,
        )
    values = {n: a.value for n, a in zip(names, pos)}
    values.update({k: a.value for k, a in kw.items()})
    return TensorView(**values)


def _tensor_view(ctx: FunctionContext, view: TensorView, shape: Any, node: ast.AST
                 ) -> tuple[Any, ...] | None:
    """The valid region a `pl.TensorView` gives a tensor annotation (None: all of it)."""
    if view.stride is not None:
        raise Tier3Hit("pl.TensorView(stride=...) in pl.Tensor", "tier 3: strided tensor views",
                       node)
    if view.layout is not None and getattr(view.layout, "name", None) != "ND":
        raise Tier3Hit(f"{view.layout!r} in pl.TensorView", "tier 3: tensor layout markers", node)
    if view.valid_shape is None:
        return None
    if not isinstance(view.valid_shape, (list, tuple)):
        raise ctx.error(ParserTypeError, "pl.TensorView valid_shape must be a list", node)
    shape_dims = list(shape) if isinstance(shape, (list, tuple)) else []
    out = []
    for i, v in enumerate(view.valid_shape):
        if isinstance(v, int) and not isinstance(v, bool) and v >= 0:
            out.append(v)
        elif i < len(shape_dims):
            # The tensor's own dim, or an extent known only at run time, which is not
            # traced into the kernel: its loads say what they read (valid_shapes=).
            out.append(shape_dims[i])
        else:
            out.append(None)
    return tuple(out)


def _tile(ctx: FunctionContext, args: tuple[Any, ...], node: ast.AST) -> TileType:
    _check_spelling(ctx, "Tile", args, node)
    if len(args) < 2:
        raise ctx.error(ParserTypeError, "pl.Tile needs [shape] and a dtype", node)
    space = None
    binding = None
    view: TileView | None = None
    for i, extra in enumerate(args[2:], start=2):
        if isinstance(extra, MemorySpace) and space is None:
            space = extra.value
        elif isinstance(extra, TileView) and view is None:
            view = extra
        elif memref.is_memref(extra):
            where = _element(node, i, len(args))
            if binding is not None:
                raise ctx.error(
                    ParserTypeError, "Tile annotation can contain at most one memref argument",
                    where, hint="remove the duplicate pl.MemRef(...) argument",
                )
            binding = memref.binding(ctx, extra, where)
        else:
            raise ctx.error(
                ParserTypeError,
                f"unexpected {extra!r} in a pl.Tile annotation",
                node,
                hint="after [shape] and dtype come a memory space such as pl.Mem.Vec, a "
                "pl.TileView(...) and a pl.MemRef(...), each at most once",
            )
    if binding is not None and space is None:
        raise ctx.error(
            ParserTypeError,
            "Tile annotation with a memref argument must also specify explicit memory space",
            node, hint="e.g. pl.Tile[[64, 64], pl.FP32, buf[i % 2], pl.Mem.Vec]",
        )
    shape = _dims(ctx, args[0], node, static=True)
    valid, pad = _view_region(ctx, view, shape, node) if view is not None else (None, None)
    return TileType(shape, _dtype(ctx, args[1], node), space, valid, pad, memref=binding)


_VIEW_KEYWORDS = ("valid_shape", "stride", "start_offset", "blayout", "slayout", "fractal",
                  "pad", "compact")


def tile_view(ctx: FunctionContext, pos: list[Any], kw: dict[str, Any], node: ast.AST
              ) -> TileView:
    """`pl.TileView(...)` evaluated in kernel code: PyPTO's keywords, each checked."""
    if len(pos) > len(_VIEW_KEYWORDS):
        raise ctx.error(ParserTypeError, f"pl.TileView takes at most {len(_VIEW_KEYWORDS)} "
                        f"arguments, but {len(pos)} were given", node)
    given = dict(zip(_VIEW_KEYWORDS, pos))
    for key, arg in kw.items():
        if key not in _VIEW_KEYWORDS:
            raise ctx.error(ParserTypeError, f"pl.TileView got an unexpected keyword '{key}'",
                            arg.node, hint=f"its keywords are: {', '.join(_VIEW_KEYWORDS)}")
        if key in given:
            raise ctx.error(ParserTypeError, f"pl.TileView got multiple values for '{key}'",
                            arg.node)
        given[key] = arg
    values = {k: a.value for k, a in given.items()}
    enums = {"blayout": TileLayout, "slayout": TileLayout, "pad": PadValue,
             "compact": CompactMode}
    for key, kind in enums.items():
        if key in values and not isinstance(values[key], kind):
            names = ", ".join(f"pl.{kind.__name__}.{m.name}" for m in kind)
            raise ctx.error(ParserTypeError, f"pl.TileView {key}= must be one of {names}, but "
                            f"got {values[key]!r}", given[key].node)
    for key in ("valid_shape", "stride"):
        if key in values and values[key] is not None \
                and not isinstance(values[key], (list, tuple)):
            raise ctx.error(ParserTypeError, f"pl.TileView {key}= takes a list such as [16, "
                            f"64], but got {values[key]!r}", given[key].node)
    fractal = values.get("fractal", 512)
    if not isinstance(fractal, int) or isinstance(fractal, bool) or fractal <= 0:
        raise ctx.error(ParserTypeError, f"pl.TileView fractal= must be a positive int, but "
                        f"got {fractal!r}", given["fractal"].node)
    return TileView(**values)


def _view_region(ctx: FunctionContext, view: TileView, shape: tuple[int, ...], node: ast.AST
                 ) -> tuple[tuple[int | None, ...] | None, str | None]:
    """The valid region (None entries: known at run time) and pad a TileView declares."""
    pad = None if view.pad is PadValue.null else view.pad.value
    if view.valid_shape is None:
        return None, pad
    if len(view.valid_shape) != len(shape):
        raise ctx.error(
            ParserTypeError,
            f"pl.TileView valid_shape {list(view.valid_shape)} has {len(view.valid_shape)} "
            f"dims, but the tile is rank {len(shape)}", node,
        )
    valid: list[int | None] = []
    for i, (v, s) in enumerate(zip(view.valid_shape, shape)):
        if isinstance(v, Expr) and isinstance(v.type, ScalarType) and v.type.dtype.is_int:
            valid.append(None)
        elif isinstance(v, int) and not isinstance(v, bool) and 0 <= v <= s:
            valid.append(v)
        else:
            raise ctx.error(
                ParserTypeError,
                f"pl.TileView valid_shape[{i}] must be an int in 0..{s} (the tile's dim) or an "
                f"integer Scalar, but got {v!r}", node,
            )
    return tuple(valid), pad


def _array(ctx: FunctionContext, args: tuple[Any, ...], node: ast.AST) -> ArrayType:
    if len(args) != 2 or not isinstance(args[0], int) or isinstance(args[0], bool) \
            or args[0] <= 0:
        raise ctx.error(ParserTypeError, "pl.Array needs [extent, dtype] with a positive int "
                        "extent, e.g. pl.Array[8, pl.INT32]", node)
    return ArrayType(args[0], _dtype(ctx, args[1], node))


def _element(node: ast.AST, i: int, count: int) -> ast.AST:
    """The AST of item ``i`` of a literal ``pl.Tile[...]`` annotation (else the whole)."""
    items = getattr(getattr(node, "slice", None), "elts", None)
    return items[i] if isinstance(items, list) and len(items) == count else node


def spelling(t: Type | None, *, space: bool = False) -> str:
    """How the user would annotate a value of type ``t``."""
    if isinstance(t, TensorType):
        return f"pl.Tensor[[{', '.join(map(str, t.shape))}], pl.{t.dtype.name}]"
    if isinstance(t, TileType):
        mem = f", pl.Mem.{t.space}" if space and t.space else ""
        return f"pl.Tile[[{', '.join(map(str, t.shape))}], pl.{t.dtype.name}{mem}]"
    if isinstance(t, ScalarType):
        return f"pl.Scalar[pl.{t.dtype.name}]"
    if isinstance(t, TupleType):
        return f"pl.Tuple[{', '.join(spelling(i, space=space) for i in t.items)}]"
    if isinstance(t, ArrayType):
        return f"pl.Array[{t.extent}, pl.{t.dtype.name}]"
    if isinstance(t, HandleType):
        return f"pl.{t.name}"
    return "nothing (the value has no type)"


def check(
    ctx: FunctionContext, ann: Type, value: Type | None, subject: str, node: ast.AST
) -> None:
    """Raise ParserTypeError unless ``value`` agrees with annotation ``ann`` (docs/design/checks.md
    §3)."""
    hint = f"annotate it as {spelling(value, space=isinstance(ann, TileType) and ann.space is not None)}"
    if value is None or ann.kind != value.kind:
        got = "nothing" if value is None else f"a {value.kind}"
        raise ctx.error(
            ParserTypeError,
            f"Type annotation for {subject} says {ann.kind}, but the value is {got}",
            node,
            hint=hint,
        )
    if isinstance(ann, HandleType):
        return  # same kind: the same handle
    if isinstance(ann, TupleType):
        assert isinstance(value, TupleType)
        if len(ann.items) != len(value.items):
            raise ctx.error(
                ParserTypeError,
                f"Type annotation for {subject} has {len(ann.items)} items, "
                f"but the value has {len(value.items)}",
                node,
                hint=hint,
            )
        for i, (a, v) in enumerate(zip(ann.items, value.items)):
            check(ctx, a, v, f"{subject} (item {i})", node)
        return
    adt, vdt = ann.dtype, value.dtype  # type: ignore[attr-defined]
    # PyPTO: INDEX (loop variables, dims) agrees with every integer dtype, both ways.
    index_int = "INDEX" in (adt.name, vdt.name) and adt.is_int and vdt.is_int
    if adt is not vdt and not index_int:
        raise ctx.error(
            ParserTypeError,
            f"Type annotation for {subject} says dtype {adt.name}, but the value has dtype "
            f"{vdt.name}",
            node,
            hint=hint,
        )
    if isinstance(ann, ArrayType) and ann.extent != value.extent:  # type: ignore[attr-defined]
        raise ctx.error(
            ParserTypeError,
            f"Type annotation for {subject} says extent {ann.extent}, but the array has "
            f"{value.extent}", node, hint=hint,  # type: ignore[attr-defined]
        )
    if isinstance(ann, (TensorType, TileType)):
        ashape, vshape = ann.shape, value.shape  # type: ignore[attr-defined]
        if len(ashape) != len(vshape):
            raise ctx.error(
                ParserTypeError,
                f"Type annotation for {subject} is rank {len(ashape)}, but the value is rank "
                f"{len(vshape)}",
                node,
                hint=hint,
            )
        for i, (a, v) in enumerate(zip(ashape, vshape)):
            if isinstance(a, int) and isinstance(v, int) and a != v:
                raise ctx.error(
                    ParserTypeError,
                    f"Type annotation for {subject} disagrees with its value in dimension {i}: "
                    f"annotated {a}, inferred {v}",
                    node,
                    hint=hint,
                )
    if isinstance(ann, TileType) and isinstance(value, TileType):
        _check_view(ctx, ann, value, subject, node)


def _check_view(ctx: FunctionContext, ann: TileType, value: TileType, subject: str,
                node: ast.AST) -> None:
    """A pl.TileView's static valid_shape and its pad must agree with the value's."""
    if tuple(ann.valid) != tuple(ann.shape):  # a TileView valid_shape was given
        for i, (a, v) in enumerate(zip(ann.valid, value.valid)):
            if a is not None and v is not None and a != v:
                shown = ["?" if x is None else x for x in value.valid]
                raise ctx.error(
                    ParserTypeError,
                    f"Type annotation for {subject} says valid_shape[{i}] = {a}, but the "
                    f"value's valid region is {shown}", node,
                    hint="match the TileView's valid_shape to the value (pl.tile.set_validshape "
                    "narrows a tile)",
                )
    if ann.pad is not None and value.pad is not None and ann.pad != value.pad:
        raise ctx.error(
            ParserTypeError,
            f"Type annotation for {subject} says pad {ann.pad}, but the value pads with "
            f"{value.pad}", node,
            hint="match the TileView's pad to the value (pl.tile.fillpad sets it)",
        )


def type_difference(a: Type | None, b: Type | None) -> str | None:
    """The first way two carried/merged types differ, or None if they agree."""
    if a is None or b is None or a.kind != b.kind:
        return f"kind {getattr(a, 'kind', None)} vs {getattr(b, 'kind', None)}"
    if isinstance(a, (TupleType, HandleType)):
        return None if a == b else "tuple types"
    if a.dtype is not b.dtype:  # type: ignore[attr-defined]
        return f"dtype {a.dtype.name} vs {b.dtype.name}"  # type: ignore[attr-defined]
    if isinstance(a, ArrayType) and a.extent != b.extent:  # type: ignore[attr-defined]
        return f"extent {a.extent} vs {b.extent}"  # type: ignore[attr-defined]
    if isinstance(a, (TensorType, TileType)):
        if a.shape != b.shape:  # type: ignore[attr-defined]
            return f"shape {list(a.shape)} vs {list(b.shape)}"  # type: ignore[attr-defined]
    if isinstance(a, TileType) and isinstance(b, TileType):
        if a.space and b.space and a.space != b.space:
            return f"memory space {a.space} vs {b.space}"
    return None
