# SPDX-License-Identifier: Apache-2.0
"""Op calls: bind arguments to an op's ParamSpecs, dispatch, and type the result.

`pl.X(...)` dispatches by operand kind (docs/design/language.md §20): Tile operands select the tile
op, Tensor operands the tensor-level op (an explicit ``tensor.X`` entry, else the
form derived from the tile entry: `ir.tensor_forms`), a number or Scalar as the
right operand selects the `scalar_form`, and mixing Tensor and Tile operands is an
error.  Static parameters are evaluated at
parse time; the op's `type_rule` then types the call, and an `OpRuleError` becomes
the parser error class that matches it, pointing at the call.
"""

from __future__ import annotations

import ast
import enum
from dataclasses import dataclass
from typing import Any

from pytest_pypto.ir import tensor_forms
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import InvalidOperationError, ParserError, ParserTypeError
from pytest_pypto.ir.nodes import Call, Const, Expr, Var
from pytest_pypto.ir.registry import (
    REGISTRY,
    VALUE_KINDS,
    CallInfo,
    OpRuleError,
    OpSpec,
    OpTypeError,
    ParamSpec,
)
from pytest_pypto.ir.types import (
    DynVar,
    HandleType,
    MemorySpace,
    TensorType,
    TileType,
    type_str,
)
from pytest_pypto.language.context import FunctionContext
from pytest_pypto.language.scalars import as_scalar_expr, is_number


@dataclass
class Arg:
    """One evaluated argument and the AST node it came from (for spans)."""

    value: Any
    node: ast.AST


def resolve_tile_op(ctx: FunctionContext, namespace: str, name: str, node: ast.AST) -> OpSpec:
    """The op reachable as `pl.<name>` / `pl.tile.<name>` (tile level) or `pl.tensor.<name>`."""
    if namespace == "array":  # pl.array.create / get_element / update_element
        spec = REGISTRY.get(f"array.{name}")
        if spec is None:
            raise ctx.error(InvalidOperationError,
                            f"pl.array.{name} is not an op of the bundled toolchain", node,
                            hint="pl.array has create, get_element and update_element")
        return spec
    if namespace.startswith("pld"):  # pld.<name> / pld.system.<name> ... (ir/ops/distributed.py)
        found = REGISTRY.by_namespace(namespace, name)
        if not found:
            raise ctx.error(InvalidOperationError,
                            f"{namespace}.{name} is not an op of the bundled toolchain", node)
        return found[0]
    if namespace == "tensor":
        spec = tensor_entry(name)
        if spec is None:
            raise tensor_level(ctx, name, node)
        return spec
    spec = tile_entry(namespace, name)
    if spec is None:
        spec = tensor_entry(name) if not namespace else None
        if spec is None:
            prefix = f"pl.{namespace}." if namespace else "pl."
            raise ctx.error(
                InvalidOperationError, f"{prefix}{name} is not an op of the bundled toolchain",
                node,
            )
    return spec


def tile_entry(namespace: str, name: str) -> OpSpec | None:
    """The tile-level entry spelled `pl.<name>` / `pl.tile.<name>`, if any."""
    specs = [s for s in REGISTRY.by_namespace(namespace, name) if s.level == "tile"]
    exact = [s for s in specs if s.short_name == name]
    return (exact or specs or [None])[0]


def tensor_entry(name: str) -> OpSpec | None:
    """The tensor-level op `pl.tensor.<name>`: an explicit entry (by name, else by
    spelling), else the form derived from the tile entry (ir.tensor_forms)."""
    explicit = REGISTRY.get(f"tensor.{name}")
    if explicit is None:
        explicit = next((s for s in REGISTRY.by_namespace("tensor", name)
                         if s.level == "tensor"), None)
    if explicit is not None:
        return explicit
    tile = tile_entry("tile", name)
    if tile is not None and tile.short_name != name:
        return None
    return tensor_forms.resolve(REGISTRY, name)


def tensor_level(ctx: FunctionContext, name: str, node: ast.AST) -> ParserError:
    return ctx.error(
        InvalidOperationError,
        f"pl.{name} has no tensor-level form in the bundled toolchain (pl.tensor.{name})",
        node,
        hint="load the tensor into a tile with pl.load and use the tile op",
    )


def bind(
    ctx: FunctionContext, spec: OpSpec, display: str, pos: list[Arg], kw: dict[str, Arg],
    node: ast.AST,
) -> dict[str, Arg]:
    """Match positional and keyword arguments to ``spec.params`` (no defaults filled)."""
    positional = [p for p in spec.params if not p.keyword_only]
    if len(pos) > len(positional):
        raise ctx.error(
            InvalidOperationError,
            f"{display} takes at most {len(positional)} positional arguments, "
            f"but {len(pos)} were given",
            node,
        )
    bound = {p.name: a for p, a in zip(positional, pos)}
    names = {p.name for p in spec.params}
    canonical = {alias: p.name for p in spec.params for alias in p.aliases}
    for key, arg in kw.items():
        key = canonical.get(key, key)
        if key not in names:
            raise ctx.error(
                InvalidOperationError,
                f"{display} got an unexpected keyword argument '{key}'",
                arg.node,
                hint=f"its parameters are: {', '.join(p.name for p in spec.params)}",
            )
        if key in bound:
            raise ctx.error(
                InvalidOperationError, f"{display} got multiple values for '{key}'", arg.node
            )
        bound[key] = arg
    for p in spec.params:
        if p.required and p.name not in bound:
            raise ctx.error(
                InvalidOperationError, f"{display} is missing the argument '{p.name}'", node
            )
    return bound


def _kind_of(value: Any) -> str:
    if isinstance(value, Expr):
        return getattr(value.type, "kind", "?")
    if is_number(value) or isinstance(value, DynVar):
        return "Scalar"
    return "static"


def _operand_kinds(spec: OpSpec, pos: list[Arg], kw: dict[str, Arg]) -> list[str]:
    """Kinds (Tensor, Tile, Scalar...) of the arguments given for ``spec``'s operand params,
    read off positions and keywords without binding (the level decides the signature)."""
    positional = [p for p in spec.params if not p.keyword_only]
    kinds = []
    for p in spec.params:
        if p.kind not in ("tile", "tile_or_scalar", "tensor") or p.name in tensor_forms.SCRATCH_PARAMS:
            continue
        if spec.level == "tile" and p.kind == "tensor":
            continue  # load/store address a tensor: not a dispatching operand
        arg = next((kw[k] for k in (p.name, *p.aliases) if k in kw), None)
        if arg is None and p in positional and positional.index(p) < len(pos):
            arg = pos[positional.index(p)]
        if arg is not None:
            kinds.append(_kind_of(arg.value))
    return kinds


def op_call(
    ctx: FunctionContext, namespace: str, name: str, pos: list[Arg], kw: dict[str, Arg],
    node: ast.Call,
) -> Call:
    """Bind, dispatch and type one `pl.X(...)` / `pl.tile.X(...)` / `pl.tensor.X(...)` call.

    `pl.X` on Tensor operands selects the tensor-level op (docs/design/language.md §20 dispatch): an
    explicit `tensor.X` entry or the form derived from the tile entry; a keyword of
    the other level raises unless it has its default value (PyPTO's rule).
    """
    spec = resolve_tile_op(ctx, namespace, name, node)
    display = f"pl.{namespace + '.' if namespace else ''}{name}"
    if spec.level == "tile" and not namespace:
        kinds = _operand_kinds(spec, pos, kw)
        if "Tensor" in kinds and "Tile" in kinds:
            raise ctx.error(
                InvalidOperationError, f"pl.{name}: Tensor and Tile operands cannot be mixed",
                node, hint="pl.load the tensor into a tile first",
            )
        if "Tensor" in kinds:
            tensor_spec = tensor_entry(name)
            if tensor_spec is None:
                raise tensor_level(ctx, name, node)
            spec = tensor_spec
    out_dtype = None
    if spec.level == "tensor":
        pos, kw = _drop_tile_only(ctx, spec, tile_entry("tile", name), display, pos, kw, node)
    elif spec.level == "tile":
        kw, out_dtype = _drop_tensor_only(ctx, spec, tensor_entry(name), display, kw)
    if spec.short_name == "scatter_update":
        pos, kw = _dim_first(pos, kw)
    bound = bind(ctx, spec, display, pos, kw, node)
    operands = [p for p in spec.params if p.kind in ("tile", "tensor")]
    if spec.scalar_form and len(operands) >= 2 and operands[1].name in bound:
        rhs = bound[operands[1].name].value
        if _kind_of(rhs) == "Scalar":
            scalar_spec = _scalar_spec(spec)
            carried = _rebind(spec, scalar_spec, bound)
            lost = [k for k, a in bound.items() if all(a is not b for b in carried.values())
                    and getattr(a.value, "value", a.value) not in (None, False)]
            if lost:  # e.g. pl.div(t, 2.0, high_precision=True): divs has no such mode
                raise ctx.error(
                    InvalidOperationError,
                    f"{display}: '{lost[0]}' needs a Tile {operands[1].name}; the scalar form "
                    f"{scalar_spec.name} has no such parameter", bound[lost[0]].node,
                    hint=f"pass a Tile as {operands[1].name}, or drop '{lost[0]}'",
                )
            bound = bind(ctx, scalar_spec, display, [], carried, node)
            spec = scalar_spec
    call = build_call(ctx, spec, display, bound, node)
    if spec.level == "tile" and out_dtype is not None:
        _check_out_dtype(ctx, display, call, out_dtype)
    return call


def _dim_first(pos: list[Arg], kw: dict[str, Arg]) -> tuple[list[Arg], dict[str, Arg]]:
    """PyPTO's scatter_update(input, dim, index, src) and (input, dim, index=, src=) call
    shapes: a static int second argument is ``dim``, moved to its keyword."""
    if len(pos) >= 2 and "dim" not in kw and isinstance(pos[1].value, int) \
            and not isinstance(pos[1].value, bool):
        return [pos[0], *pos[2:]], {**kw, "dim": pos[1]}
    return pos, kw


def _scalar_spec(spec: OpSpec) -> OpSpec:
    if spec.level == "tensor" and spec.scalar_form not in REGISTRY:
        found = tensor_forms.resolve(REGISTRY, spec.scalar_form.split(".", 1)[1])
        if found is not None:
            return found
    return REGISTRY[spec.scalar_form]


def _drop_tile_only(
    ctx: FunctionContext, spec: OpSpec, tile_spec: OpSpec | None, display: str,
    pos: list[Arg], kw: dict[str, Arg], node: ast.AST,
) -> tuple[list[Arg], dict[str, Arg]]:
    """Tile-only scratch operands (``tmp``, ``tmp_tile``) on a tensor-level call: None is
    accepted and dropped, anything else raises (the lowering allocates the scratch)."""
    if tile_spec is None:
        return pos, kw
    names = {p.name for p in spec.params}
    scratch = {p.name for p in tensor_forms.scratch_params(tile_spec)} - names
    if not scratch:
        return pos, kw
    extra: dict[str, Arg] = {}
    tile_positional = [p.name for p in tile_spec.params if not p.keyword_only]
    own_positional = [p for p in spec.params if not p.keyword_only]
    if len(pos) > len(own_positional):
        surplus = [(tile_positional[i] if i < len(tile_positional) else None, a)
                   for i, a in enumerate(pos) if i >= len(own_positional)]
        if all(name in scratch for name, _ in surplus):
            extra.update({name: a for name, a in surplus})  # type: ignore[misc]
            pos = pos[:len(own_positional)]
    kept = {}
    for key, a in kw.items():
        if key in scratch:
            extra[key] = a
        else:
            kept[key] = a
    for key, a in extra.items():
        if a.value is None:
            continue
        raise ctx.error(
            InvalidOperationError,
            f"{display}: Tensor inputs must not pass {key}: the scratch tile is allocated "
            "during the tensor-to-tile lowering",
            a.node, hint=f"drop {key}=, or load the operands into tiles and call "
                         f"pl.tile.{tile_spec.short_name}",
        )
    return pos, kept


def _drop_tensor_only(
    ctx: FunctionContext, spec: OpSpec, tensor_spec: OpSpec | None, display: str,
    kw: dict[str, Arg],
) -> tuple[dict[str, Arg], Any]:
    """Tensor-only keywords on a tile-level call: the default value is accepted and
    dropped; ``out_dtype`` is kept aside to be checked against the deduced dtype;
    anything else raises (docs/design/language.md §20 dispatch)."""
    if tensor_spec is None:
        return kw, None
    names = {p.name for p in spec.params}
    kept, out_dtype = {}, None
    for key, a in kw.items():
        if key in names:
            kept[key] = a
            continue
        try:
            p = tensor_spec.param(key)
        except KeyError:
            kept[key] = a  # unknown everywhere: bind reports it
            continue
        if key == "out_dtype" and a.value is not None:
            out_dtype = a
        elif not _is_default(a.value, p.default):
            raise ctx.error(
                InvalidOperationError,
                f"{display}: '{key}' is not supported for Tile operands",
                a.node,
                hint=_TILE_REMEDY.get(key, f"'{key}' exists only for Tensor operands"),
            )
    return kept, out_dtype


_TILE_REMEDY = {
    "a_trans": "at tile level a transposed operand is a view: pass "
               "pl.tile.transpose_view(...) of the Mat tile instead",
    "b_trans": "at tile level a transposed operand is a view: pass "
               "pl.tile.transpose_view(...) of the Mat tile instead",
    "c_matrix_nz": "a tile matmul's result layout is fixed by its Acc tile",
}


def _is_default(value: Any, default: Any) -> bool:
    if isinstance(value, Const):
        value = value.value
    if isinstance(value, enum.Enum):
        value = value.value
    return type(value) is type(default) and value == default


def _check_out_dtype(ctx: FunctionContext, display: str, call: Call, arg: Arg) -> None:
    """A tile matmul's dtype is its accumulator's: ``out_dtype`` may only repeat it."""
    want = arg.value
    got = getattr(call.type, "dtype", None)
    if not isinstance(want, DataType):
        raise ctx.error(InvalidOperationError, f"{display}: out_dtype must be a dtype such as "
                        f"pl.FP32, but got {_show(want)}", arg.node)
    if got is not None and want.name != got.name:
        raise ctx.error(
            InvalidOperationError,
            f"{display}: out_dtype={want.name} is not supported for Tile operands: the result "
            f"is the {got.name} accumulator",
            arg.node,
            hint=f"drop out_dtype=, or pl.cast the result to pl.{want.name} on the vector side",
        )


def _rebind(old: OpSpec, new: OpSpec, bound: dict[str, Arg]) -> dict[str, Arg]:
    """Carry arguments over to the scalar form: by name, else by position."""
    new_names = {p.name for p in new.params}
    out: dict[str, Arg] = {}
    for i, p in enumerate(old.params):
        if p.name not in bound:
            continue
        if p.name in new_names:
            out[p.name] = bound[p.name]
        elif i < len(new.params) and new.params[i].name not in bound:
            out[new.params[i].name] = bound[p.name]
    return out


def build_call(
    ctx: FunctionContext, spec: OpSpec, display: str, bound: dict[str, Arg], node: ast.AST
) -> Call:
    """Convert bound arguments per ParamSpec kind, run the type rule, build the Call."""
    args: list[tuple[str, Any]] = []
    for p in spec.params:
        arg = bound.get(p.name)
        if arg is None:
            value = None if p.kind == "space" else _static_default(p.default)
            where: ast.AST = node
        else:
            value, where = arg.value, arg.node
        args.append((p.name, convert(ctx, spec, display, p, value, where)))
    call = Call(spec.name, tuple(args), span=ctx.span(node))
    call.type = fixed_space(spec, call, run_type_rule(ctx, spec, call_info(spec, call), node))
    if isinstance(call.type, TensorType) and any(isinstance(d, DynVar) for d in call.type.shape):
        call.type = _shape_dims(ctx, call, bound, node)
    return call


def _shape_dims(ctx: FunctionContext, call: Call, bound: dict[str, Arg], node: ast.AST
                ) -> TensorType:
    """A tensor result whose ``shape`` argument names Scalar Vars takes their dims (one
    per Var, `scalar_dim`), so windows and buffers sized by one Scalar share a type."""
    t = call.type
    shape = call.arg("shape") if any(k == "shape" for k, _ in call.args) else None
    if not isinstance(shape, tuple) or len(shape) != len(t.shape):
        return t
    items = bound["shape"].node if "shape" in bound else None
    elts = items.elts if isinstance(items, (ast.List, ast.Tuple)) and len(items.elts) == len(
        shape) else [node] * len(shape)
    dims = tuple(scalar_dim(ctx, s, e) if isinstance(d, DynVar) and isinstance(s, Var) else d
                 for d, s, e in zip(t.shape, shape, elts))
    return TensorType(dims, t.dtype, t.valid, t.pad)


def scalar_dim(ctx: FunctionContext, expr: Any, node: ast.AST) -> DynVar:
    """The dynamic dim a Scalar gives a tensor's type: one per Scalar Var, so two tensors
    sized by the same Scalar have the same dim and one type (PyPTO compares the dim
    expressions); any other expression is a dim of its own."""
    if not isinstance(expr, Var):
        return DynVar(ctx.text(node))
    known = ctx.scalar_dims.get(id(expr))
    if known is None or known[0] is not expr:
        known = ctx.scalar_dims[id(expr)] = (expr, DynVar(ctx.text(node)))
    return known[1]


def fixed_space(spec: OpSpec, call: Call, result: Any) -> Any:
    """Fill in a tile result's memory space where the op's MemRule fixes it."""
    if not isinstance(result, TileType) or result.space is not None:
        return result
    rule = spec.mem.result
    if rule is None or rule.startswith("attr:"):
        return result
    if rule.startswith("same:"):
        operand = call.arg(rule[len("same:"):])
        space = getattr(getattr(operand, "type", None), "space", None)
        return result.with_(space=space) if space else result
    return result.with_(space=rule)


def call_info(spec: OpSpec, call: Call) -> CallInfo:
    """What the op's rules see of a built Call (operand types, static values)."""
    types: dict[str, Any] = {}
    values: dict[str, Any] = {}
    for p in spec.params:
        value = call.arg(p.name)
        if p.kind in VALUE_KINDS:
            types[p.name] = value.type if isinstance(value, Expr) else None
            if isinstance(value, Const):  # literal Scalars, as the compile-time CallInfo has them
                values[p.name] = value.value
        elif p.kind == "index_list":
            values[p.name] = (
                None if value is None
                else tuple(v if isinstance(v, int) else None for v in value)
            )
        else:
            values[p.name] = value
    return CallInfo(op=spec.name, types=types, values=values)


def run_type_rule(ctx: FunctionContext, spec: OpSpec, info: CallInfo, node: ast.AST) -> Any:
    try:
        return spec.type_rule(info)
    except OpTypeError as exc:
        raise ctx.error(ParserTypeError, exc.message, node, hint=exc.hint) from None
    except OpRuleError as exc:
        raise ctx.error(InvalidOperationError, exc.message, node, hint=exc.hint) from None


def _static_default(default: Any) -> Any:
    if isinstance(default, MemorySpace):
        return default.value
    if isinstance(default, enum.Enum):
        return default.value
    return default


def convert(
    ctx: FunctionContext, spec: OpSpec, display: str, p: ParamSpec, value: Any, node: ast.AST
) -> Any:
    """One argument in its IR form (see ir.nodes for what each kind holds)."""
    where = f"argument '{p.name}' of {display}"
    if value is None and (p.optional or p.default is None or p.kind == "space"):
        return None
    kind = p.kind
    if kind in ("tile", "tensor", "array"):
        want = {"tile": "Tile", "tensor": "Tensor", "array": "Array"}[kind]
        if not (isinstance(value, Expr) and getattr(value.type, "kind", None) == want):
            raise ctx.error(
                InvalidOperationError, f"{where} must be a {want}, but got {_show(value)}", node
            )
        return value
    if kind == "handle":
        if not (isinstance(value, Expr) and isinstance(value.type, HandleType)):
            raise ctx.error(InvalidOperationError,
                            f"{where} must be a handle its producer returned, but got "
                            f"{_show(value)}", node)
        return value
    if kind == "tile_or_tensor":
        if not (isinstance(value, Expr) and getattr(value.type, "kind", None) in ("Tile", "Tensor")):
            raise ctx.error(InvalidOperationError,
                            f"{where} must be a Tile or a Tensor, but got {_show(value)}", node)
        return value
    if kind in ("scalar", "tile_or_scalar"):
        if kind == "tile_or_scalar" and isinstance(value, Expr) and isinstance(value.type, TileType):
            return value
        expr = as_scalar_expr(value, ctx.span(node))
        if expr is None:
            raise ctx.error(
                InvalidOperationError, f"{where} must be a Scalar, but got {_show(value)}", node
            )
        return expr
    if kind == "index_list":
        if p.bare_index and not isinstance(value, (list, tuple)):
            value = [value]
        if not isinstance(value, (list, tuple)):
            raise ctx.error(
                InvalidOperationError, f"{where} must be a list such as [r, 0], but got {_show(value)}",
                node,
            )
        return tuple(_index(ctx, where, v, node) for v in value)
    return _static(ctx, where, kind, value, node)


def _index(ctx: FunctionContext, where: str, v: Any, node: ast.AST) -> Any:
    if isinstance(v, Const) and isinstance(v.value, int) and not isinstance(v.value, bool):
        return v.value
    if isinstance(v, int) and not isinstance(v, bool):
        return v
    expr = as_scalar_expr(v, ctx.span(node))
    if expr is None or isinstance(v, bool) or not expr.type.dtype.is_int:  # type: ignore[union-attr]
        raise ctx.error(
            ParserTypeError,
            f"{where} takes integer indices, but got {_show(v)}",
            node,
        )
    return expr


def _static(ctx: FunctionContext, where: str, kind: str, value: Any, node: ast.AST) -> Any:
    if isinstance(value, Const):
        value = value.value
    if isinstance(value, Expr):
        raise ctx.error(
            InvalidOperationError,
            f"{where} must be known when the kernel is parsed, but got a "
            f"{type_str(value.type)} expression",
            node,
            hint="use a literal or a captured constant",
        )
    ok: bool
    if kind == "shape":
        if isinstance(value, (list, tuple)):
            for v in value:
                if isinstance(v, DynVar):
                    raise ctx.error(
                        ParserTypeError,
                        f"{where}: dimension {v.name} is dynamic, but tile shapes must be static",
                        node,
                    )
            value = tuple(v.value if isinstance(v, Const) else v for v in value)
        ok = isinstance(value, tuple) and all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        )
    elif kind == "dtype":
        ok = isinstance(value, DataType)
    elif kind == "space":
        ok = isinstance(value, MemorySpace)
        value = value.value if ok else value
    elif kind == "int":
        ok = isinstance(value, int) and not isinstance(value, bool)
    elif kind == "float":
        ok = is_number(value) and not isinstance(value, bool)
        value = float(value) if ok else value
    elif kind == "bool":
        ok = isinstance(value, bool)
    else:  # str, enum, literal
        if isinstance(value, enum.Enum):
            value = value.value
        ok = isinstance(value, (int, float, str, bool)) or value is None
        if kind == "str":
            ok = isinstance(value, str)
    if not ok:
        raise ctx.error(
            InvalidOperationError, f"{where} must be a {kind}, but got {_show(value)}", node
        )
    return value


def _show(value: Any) -> str:
    if isinstance(value, Expr):
        return type_str(value.type)
    return repr(value)


def is_tensor(value: Any) -> bool:
    return isinstance(value, Expr) and isinstance(value.type, TensorType)
