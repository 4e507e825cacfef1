# SPDX-License-Identifier: Apache-2.0
"""Calls between functions (docs/design/language.md §6): checked calls, inlining and templates.

``self.f(args...)`` to an InCore function from orchestration is a task: arity, and
per argument the kind, dtype, rank and static dims are checked against the
callee's signature; `pl.dynamic` dims of the callee unify with the actual dims
(one DynVar binds one dim across all parameters), and the callee's return types
are specialized with those bindings.

Other calls are **spliced** at parse time (PyPTO's InlineFunctions pass, done
while parsing): an `Inline` function (`@pl.function(type=pl.FunctionType.Inline)`,
`@pl.inline`, `@pl.jit.inline`), an `Opaque` function, and an InCore function
called from InCore code.  The callee's body is parsed into the caller's statement
list with its parameters bound to the argument values; its locals get fresh names
in the caller, and its diagnostics point at the callee's own lines.

Templates (language/templates.py) are functions defined outside the program class
and called by name (`@pl.inline` functions, `@pl.jit.*` dependencies).  Their bare
`pl.Tensor` parameters take the argument's type: a template called as a task is
added to the program once per distinct argument signature.
"""

from __future__ import annotations

import ast
import copy
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import (
    Const,
    Expr,
    FuncCall,
    Param,
    ScalarCast,
    Stmt,
    Unsupported,
)
from pytest_pypto.ir.types import (
    Direction,
    DynVar,
    ScalarType,
    TensorType,
    TileType,
    TupleType,
    Type,
    type_str,
)
from pytest_pypto.language import annots, scalars
from pytest_pypto.language.calls import Arg
from pytest_pypto.language.context import FunctionContext, Header, Tier3Hit, all_bound_names
from pytest_pypto.language.expressions import ExprParser
from pytest_pypto.language.statements import BodyParser
from pytest_pypto.language.surface import AnnotationForm, Tensor
from pytest_pypto.language.templates import Template, specialize_body, with_self

if TYPE_CHECKING:  # pragma: no cover
    from pytest_pypto.language.parser import ProgramParser

# Callee kinds whose calls are spliced, by caller kind ("*": from any caller).
_SPLICED = {"Inline": "*", "Opaque": "*", "InCore": "InCore"}


def splices(caller_kind: str, callee_kind: str) -> bool:
    """Whether a call from a ``caller_kind`` function to a ``callee_kind`` one is inlined."""
    rule = _SPLICED.get(callee_kind)
    return rule == "*" or rule == caller_kind


def generic_param(form: Any) -> tuple[Type | None, Direction] | None:
    """A parameter annotation a template or inline function may leave open.

    A bare `pl.Tensor` (and `pl.Out[pl.Tensor]` / `pl.InOut[pl.Tensor]`) takes its
    type from the argument; a bare dtype (`pl.INDEX`) is `pl.Scalar[pl.INDEX]`, as
    PyPTO's JIT reads it.  None: a full annotation (parsed as usual).
    """
    if form is Tensor:
        return None, Direction.IN
    if isinstance(form, AnnotationForm) and form.form in ("Out", "InOut"):
        inner = form.args[0] if isinstance(form.args, tuple) else form.args
        if inner is Tensor:
            return None, Direction.OUT if form.form == "Out" else Direction.INOUT
    if isinstance(form, DataType):
        return ScalarType(form), Direction.SCALAR
    return None


def _subst(t: Type, binding: dict[DynVar, Any]) -> Type:
    if isinstance(t, TensorType):
        return TensorType(tuple(binding.get(d, d) if isinstance(d, DynVar) else d
                                for d in t.shape), t.dtype)
    if isinstance(t, TupleType):
        return TupleType(tuple(_subst(i, binding) for i in t.items))
    return t


def bind_args(
    ctx: FunctionContext, display: str, params: list[Param], pos: list[Arg],
    kw: dict[str, Arg], node: ast.Call,
) -> list[Arg]:
    """The arguments in parameter order (arity and keywords checked)."""
    if len(pos) > len(params):
        raise ctx.error(
            InvalidOperationError,
            f"{display} takes {len(params)} arguments, but {len(pos)} were given",
            node,
        )
    bound: list[Arg | None] = list(pos) + [None] * (len(params) - len(pos))
    index = {p.name: i for i, p in enumerate(params)}
    for key, arg in kw.items():
        if key not in index:
            raise ctx.error(
                InvalidOperationError, f"{display} has no parameter '{key}'", arg.node
            )
        if bound[index[key]] is not None:
            raise ctx.error(InvalidOperationError, f"{display} got two values for '{key}'",
                            arg.node)
        bound[index[key]] = arg
    missing = [p.name for p, a in zip(params, bound) if a is None]
    if missing:
        raise ctx.error(
            InvalidOperationError,
            f"{display} takes {len(params)} arguments; missing {', '.join(map(repr, missing))}",
            node,
        )
    return bound  # type: ignore[return-value]


def check_call(
    ctx: FunctionContext, name: str, params: list[Param], returns: tuple[Type, ...],
    pos: list[Arg], kw: dict[str, Arg], node: ast.Call, display: str | None = None,
) -> FuncCall:
    """A typed FuncCall, after checking the arguments against ``params``."""
    display = display or f"self.{name}(...)"
    bound = bind_args(ctx, display, params, pos, kw, node)
    binding: dict[DynVar, Any] = {}
    bound_by: dict[DynVar, str] = {}
    args: list[Expr] = []
    for i, (p, arg) in enumerate(zip(params, bound)):
        assert arg is not None
        where = f"argument '{p.name}' of {display} (position {i})"
        args.append(_check_arg(ctx, p, arg, where, binding, bound_by))
    types = tuple(_subst(t, binding) for t in returns)
    result: Type | None = None
    if len(types) == 1:
        result = types[0]
    elif types:
        result = TupleType(types)
    call = FuncCall(name, tuple(args), type=result, span=ctx.span(node))
    tags = getattr(ctx, "dump_tags", ())
    if tags:  # pl.dump_tag'ed values this call is passed (docs/design/scheduling.md §6)
        call.dumps = tuple(i for i, a in enumerate(args) if any(a is t for t in tags))
    return call


def _check_arg(
    ctx: FunctionContext, p: Param, arg: Arg, where: str,
    binding: dict[DynVar, Any], bound_by: dict[DynVar, str],
) -> Expr:
    value, node = arg.value, arg.node
    if isinstance(p.type, ScalarType):
        want = p.type.dtype
        if scalars.is_number(value) and not isinstance(value, bool):
            if isinstance(value, float) and not want.is_float:
                raise ctx.error(
                    ParserTypeError, f"{where} is Scalar[{want.name}], but got the float {value!r}",
                    node,
                )
            value = float(value) if want.is_float else value
            return scalars.make_const(value, want, ctx.span(node))
        expr = scalars.as_scalar_expr(value, ctx.span(node))
        if expr is None:
            raise ctx.error(ParserTypeError, f"{where} must be a Scalar, but got {_show(value)}",
                            node)
        got = expr.type.dtype  # type: ignore[union-attr]
        if got is not want and _int_like(got) and _int_like(want):
            return _coerced(expr, want)
        if got is not want:
            raise ctx.error(
                ParserTypeError, f"{where} is Scalar[{want.name}], but got Scalar[{got.name}]",
                node, hint=f"pl.cast({ctx.text(node)}, pl.{want.name})",
            )
        return expr
    assert isinstance(p.type, TensorType)
    if not (isinstance(value, Expr) and isinstance(value.type, TensorType)):
        raise ctx.error(ParserTypeError, f"{where} must be a Tensor, but got {_show(value)}", node)
    got_t: TensorType = value.type
    if got_t.dtype is not p.type.dtype:
        raise ctx.error(
            ParserTypeError,
            f"{where} has dtype {got_t.dtype.name}, but '{p.name}' is declared "
            f"{p.type.dtype.name}",
            node,
        )
    if got_t.rank != p.type.rank:
        raise ctx.error(
            ParserTypeError,
            f"{where} is rank {got_t.rank}, but '{p.name}' is declared rank {p.type.rank}",
            node,
        )
    for d, (want_d, got_d) in enumerate(zip(p.type.shape, got_t.shape)):
        if isinstance(want_d, DynVar):
            prev = binding.get(want_d)
            if prev is None:
                binding[want_d] = got_d
                bound_by[want_d] = p.name
            elif isinstance(prev, int) and isinstance(got_d, int) and prev != got_d:
                raise ctx.error(
                    ParserTypeError,
                    f"pl.dynamic dim {want_d.name} binds to {prev} (argument "
                    f"'{bound_by[want_d]}') and to {got_d} ({where}, dimension {d})",
                    node,
                )
        elif isinstance(got_d, int) and want_d != got_d:
            raise ctx.error(
                ParserTypeError,
                f"{where} has {got_d} in dimension {d}, but '{p.name}' is declared "
                f"{type_str(p.type)}",
                node,
            )
    return value


def _int_like(dtype: DataType) -> bool:
    """Integer and BOOL dtypes: the ones PyPTO passes to a kernel as the same 64-bit word."""
    return dtype.is_int or dtype.kind == "bool"


def _coerced(expr: Expr, want: DataType) -> Expr:
    """A Scalar argument converted to an integer/BOOL parameter's dtype (C conversion).

    PyPTO does not check a Scalar argument's dtype against the parameter: the task
    argument is one 64-bit word that the kernel reads as its parameter's dtype, so an
    INT64 flag reaches a BOOL parameter as "nonzero".  Between integer and BOOL
    dtypes that is a C conversion, done here; a float on either side would be a
    reinterpretation of bits, which stays an error.
    """
    if isinstance(expr, Const):
        value = bool(expr.value) if want.kind == "bool" else int(expr.value)
        return scalars.make_const(value, want, expr.span)
    return ScalarCast(expr, want, type=ScalarType(want), span=expr.span)


def _show(value: Any) -> str:
    return type_str(value.type) if isinstance(value, Expr) else repr(value)


# ------------------------------------------------------------------ splicing
class _SplicedBody(BodyParser):
    """The body of a spliced callee: its `return` hands values back, emits nothing."""

    def parse_return(self, stmt: ast.Return) -> None:
        values = [self.ep.hoist(v, stmt) if isinstance(v, Expr) else v
                  for v in self.return_values(stmt)]
        self.returned = (values, stmt)


# Context attributes the callee gets its own value of; the rest (counters others keep
# on the context, the namer) are the caller's, carried back after the splice.
_OWN = frozenset({"source", "namespace", "local_names", "strict_ssa", "expr_root", "expr_depth"})


def _callee_context(
    ctx: FunctionContext, source: Any, namespace: dict[str, Any], node: ast.FunctionDef,
    strict: bool,
) -> FunctionContext:
    cctx = copy.copy(ctx)  # the caller's function name, namer and program
    cctx.source = source
    cctx.namespace = namespace
    cctx.local_names = set(all_bound_names(node) - {"self"})
    cctx.strict_ssa = strict
    return cctx


def _carry_back(ctx: FunctionContext, cctx: FunctionContext) -> None:
    for key, value in vars(cctx).items():
        if key not in _OWN:
            setattr(ctx, key, value)


def _splice_value(
    ctx: FunctionContext, p: Param, arg: Arg, where: str,
    binding: dict[DynVar, Any], bound_by: dict[DynVar, str],
) -> Any:
    """What parameter ``p`` of a spliced callee stands for: the argument itself, checked."""
    value, node = arg.value, arg.node
    if p.type is None:  # open: any value, a tensor when annotated bare pl.Tensor
        if p.direction is not Direction.SCALAR and p.direction is not None and not (
            isinstance(value, Expr) and isinstance(value.type, TensorType)
        ):
            raise ctx.error(ParserTypeError, f"{where} must be a Tensor, but got {_show(value)}",
                            node)
        return value
    if isinstance(p.type, TileType):
        if not (isinstance(value, Expr) and isinstance(value.type, TileType)):
            raise ctx.error(ParserTypeError, f"{where} must be a Tile, but got {_show(value)}",
                            node)
        annots.check(ctx, p.type, value.type, where, node)
        return value
    checked = _check_arg(ctx, p, arg, where, binding, bound_by)
    if isinstance(p.type, ScalarType) and scalars.is_number(value):
        return value  # a literal stays a parse-time constant (it folds in the body)
    return checked


def splice(
    parser: ProgramParser, ctx: FunctionContext, name: str, header: Header,
    pos: list[Arg], kw: dict[str, Arg], node: ast.Call, sink: list[Stmt] | None,
    display: str | None = None,
) -> Any:
    """Parse ``header``'s body at the call site ``node``; its return value(s)."""
    display = display or f"self.{name}(...)"
    if sink is None:
        raise ctx.error(
            InvalidOperationError, f"{display} cannot be called here: it is inlined", node
        )
    if name in parser.splicing:
        chain = " -> ".join([*parser.splicing[parser.splicing.index(name):], name])
        raise ctx.error(
            ParserSyntaxError,
            f"{display} is recursive ({chain}); inlined calls cannot recurse",
            node,
        )
    bound = bind_args(ctx, display, header.params, pos, kw, node)
    binding: dict[DynVar, Any] = {}
    bound_by: dict[DynVar, str] = {}
    env: dict[str, Any] = {}
    types: dict[str, Type] = {}
    for i, (p, arg) in enumerate(zip(header.params, bound)):
        where = f"argument '{p.name}' of {display} (position {i})"
        value = _splice_value(ctx, p, arg, where, binding, bound_by)
        env[p.name] = value
        if isinstance(value, Expr) and isinstance(value.type, (TensorType, TileType)):
            types[p.name] = value.type
    source = header.source or parser.source
    namespace = header.namespace if header.namespace is not None else parser.namespace
    body, namespace = specialize_body(header.node, types, namespace)
    cctx = _callee_context(ctx, source, namespace, body, header.strict_ssa)
    bp = _SplicedBody(cctx, env, sink)
    parser.splicing.append(name)
    try:
        bp.block(body.body, allow_return=True)
    finally:
        parser.splicing.pop()
        _carry_back(ctx, cctx)
    if bp.returned is None:
        if header.returns:
            raise cctx.error(
                ParserSyntaxError, f"function '{name}' declares a return type but does not return",
                header.node,
            )
        return None
    values, ret = bp.returned
    if header.returns is not None:
        if len(header.returns) != len(values):
            raise cctx.error(
                ParserTypeError,
                f"function '{name}' declares {len(header.returns)} return values but returns "
                f"{len(values)}",
                ret,
            )
        for i, (ann, value) in enumerate(zip(header.returns, values)):
            got = value.type if isinstance(value, Expr) else None
            if isinstance(got, (TensorType, TileType, ScalarType)):
                annots.check(cctx, _subst(ann, binding), got, f"return value {i} of '{name}'", ret)
    return values[0] if len(values) == 1 else tuple(values)


# ----------------------------------------------------------------- templates
def template_header(parser: ProgramParser, template: Template) -> Header:
    """The (possibly generic) signature of ``template``, parsed once per program."""
    found = parser.template_headers.get(id(template))
    if found is not None:
        return found
    node = with_self(template.node)
    header = Header(
        node, kind=template.kind, strict_ssa=template.strict_ssa, decorated=True,
        source=template.source, namespace=template.namespace, open_params=True,
    )
    ctx = FunctionContext(template.source, template.namespace, template.name, parser, False,
                          set())
    tier3 = _tier3_of(template)
    if tier3 is not None:
        header.unsupported = Unsupported(tier3[0], tier3[1], template.source.span(template.node))
    else:
        try:
            parser.signature(ctx, ExprParser(ctx, {}), node, header)
        except Tier3Hit as hit:
            header.unsupported = Unsupported(hit.construct, hit.reason, ctx.span(hit.node))
    parser.template_headers[id(template)] = header
    parser.keep_alive.append(template)
    return header


def _tier3_of(template: Template) -> tuple[str, str] | None:
    """The Tier 3 construct of a standalone function's decorator, if any."""
    if template.kind not in ("Inline", "InCore", "Opaque", "Orchestration"):
        return f"pl.FunctionType.{template.kind}", "tier 3: hand-written cross-core kernels"
    for key in ("attrs", "auto_scope", "external_source"):
        if key in template.extra:
            return f"pl.function({key}=...)", "tier 3: function attributes"
    return None


def call_template(
    parser: ProgramParser, ctx: FunctionContext, template: Template,
    pos: list[Arg], kw: dict[str, Arg], node: ast.Call, sink: list[Stmt] | None,
) -> Any:
    """``f(args...)`` of a function defined outside the class: spliced, or a task."""
    display = f"{template.name}(...)"
    header = template_header(parser, template)
    if header.unsupported is not None:
        raise Tier3Hit(header.unsupported.construct, header.unsupported.reason, node)
    caller = parser.headers[ctx.function_name].kind
    if splices(caller, header.kind):
        return splice(parser, ctx, template.name, header, pos, kw, node, sink, display)
    name = _specialized(parser, ctx, template, header, pos, kw, node, display)
    concrete = parser.headers[name]
    if name in parser.in_progress:
        raise ctx.error(
            ParserSyntaxError, f"{display} is recursive; calls between functions cannot recurse",
            node,
        )
    returns = concrete.returns
    if returns is None:
        returns = parser.functions[name].returns
    return check_call(ctx, name, concrete.params, returns, pos, kw, node, display)


def _specialized(
    parser: ProgramParser, ctx: FunctionContext, template: Template, header: Header,
    pos: list[Arg], kw: dict[str, Arg], node: ast.Call, display: str,
) -> str:
    """The program function for ``template`` at these argument types (added once)."""
    bound = bind_args(ctx, display, header.params, pos, kw, node)
    params: list[Param] = []
    for i, (p, arg) in enumerate(zip(header.params, bound)):
        if p.type is not None:
            params.append(p)
            continue
        value = arg.value
        if not (isinstance(value, Expr) and isinstance(value.type, TensorType)):
            what = "must be a Tensor" if p.direction is not None else "needs a type annotation"
            raise ctx.error(
                ParserTypeError,
                f"argument '{p.name}' of {display} (position {i}) {what}, but got {_show(value)}",
                arg.node,
                hint="annotate scalar parameters as pl.Scalar[dtype]",
            )
        params.append(Param(p.name, value.type, p.direction or Direction.IN, span=p.span))
    key = (id(template), tuple((p.type, p.direction) for p in params))
    name = parser.specialized.get(key)
    if name is not None:
        return name
    name, k = template.name, 0
    while name in parser.headers:
        k += 1
        name = f"{template.name}_{k}"
    types = {p.name: p.type for p in params}
    body, namespace = specialize_body(template.node, types, template.namespace)
    parser.headers[name] = Header(
        with_self(body), kind=header.kind, strict_ssa=header.strict_ssa, params=params,
        returns=header.returns, unsupported=header.unsupported, decorated=True,
        source=template.source, namespace=namespace,
    )
    parser.specialized[key] = name
    parser.function(name)  # parsed now: the class's own functions were listed before it
    return name
