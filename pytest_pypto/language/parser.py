# SPDX-License-Identifier: Apache-2.0
"""`@pl.program`: read the class source, parse every `@pl.function`, build an IR Program.

Bodies are parsed with `ast`, never run.  Signatures are parsed first (calls between
functions are checked against them); bodies follow in source order, a callee whose
return type is not annotated being parsed on demand.  A Tier 3 construct is recorded
in `Function.unsupported` and stops parsing that function, so decoration succeeds
and compiling raises (docs/design/language.md §22).
"""

from __future__ import annotations

import ast
import weakref
from typing import Any

from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Function, Param, Program, Stmt, Unsupported, Var
from pytest_pypto.ir.types import Direction, ScalarType, TileType, TupleType, Type
from pytest_pypto.language import (
    annots,
    cross_core,
    distributed_host,
    func_attrs,
    funcalls,
    functions,
    host_scopes,
    surface,
)
from pytest_pypto.language.class_source import class_from_inspect, locate_class
from pytest_pypto.language.context import (
    FunctionContext,
    Header,
    SourceMap,
    Tier3Hit,
    all_bound_names,
)
from pytest_pypto.language.expressions import ExprParser
from pytest_pypto.language.funcalls import check_call
from pytest_pypto.language.statements import BodyParser
from pytest_pypto.language.templates import Template, specialize_body, with_self


def parse_program(
    cls: type, namespace: dict[str, Any], where: tuple[str, int] | None = None
) -> Program:
    """Parse the `@pl.program` class ``cls``; ``namespace`` holds its closure constants.

    ``where`` is the (file, line) executing the decorator: it picks the right class
    when one file defines several classes with the same qualified name (inspect
    would always return the first).
    """
    __tracebackhide__ = True  # a failing test shows its own line and the diagnostic
    found = locate_class(cls, where)
    bound: dict[int, frozenset[str]] = {}
    if found is not None:
        file, classdef, index = found
        smap = SourceMap(file, 1, 0, index.file_lines)
        bound = index.bound
    else:
        file, classdef, smap = class_from_inspect(cls)
    parser = ProgramParser(smap, namespace, bound)
    functions = parser.parse(classdef)
    program = Program(
        cls.__name__, functions, file, span=smap.span(classdef), source_lines=smap.file_lines
    )
    _NAMESPACES[program] = namespace
    if parser.hosts or parser.sub_workers:
        distributed_host.register(program, cls, parser.hosts, parser.sub_workers,
                                  parser.host_defs, smap, namespace)
    return program


# The names a program's class saw when decorated (globals and the enclosing function's
# locals), kept beside the IR, not in it (the compiler deep-copies programs): a runtime
# that rebuilds the class with another `pl` (runtimes/pypto.py) re-executes it in them.
_NAMESPACES: weakref.WeakKeyDictionary[Program, dict[str, Any]] = weakref.WeakKeyDictionary()


def program_namespace(program: Program) -> dict[str, Any] | None:
    """The namespace ``program``'s class was decorated in (None: not parsed from a class)."""
    return _NAMESPACES.get(program)


def _self_calls(classdef: ast.ClassDef) -> set[str]:
    """Names called as ``self.<name>(...)`` anywhere in the class."""
    return {
        n.func.attr for n in ast.walk(classdef)
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
        and isinstance(n.func.value, ast.Name) and n.func.value.id == "self"
    }


class ProgramParser:
    """Parses the functions of one program class; answers `self.f(...)` calls."""

    def __init__(
        self,
        source: SourceMap,
        namespace: dict[str, Any],
        bound: dict[int, frozenset[str]] | None = None,
    ) -> None:
        self.source = source
        self.namespace = namespace
        self.bound = {} if bound is None else bound  # id(FunctionDef) -> bound names
        self.headers: dict[str, Header] = {}
        self.functions: dict[str, Function] = {}
        self.in_progress: set[str] = set()
        # Inlining and templates (language/funcalls.py): the callees being spliced,
        # template signatures, and the program function of each specialisation.
        self.splicing: list[str] = []
        self.template_headers: dict[int, Header] = {}
        self.specialized: dict[tuple[Any, ...], str] = {}
        self.keep_alive: list[Any] = []
        # Functions outlined from `with pl.at` / `pl.spmd` regions -> the function they
        # came from (language/outline.py registers their headers while parsing).
        self.outlined: dict[str, str] = {}
        self.hosts: list[str] = []  # host orchestrators (language/distributed_host.py)
        self.sub_workers: list[str] = []  # host SubWorker functions (the same)
        self.host_defs: dict[str, ast.FunctionDef] = {}  # hosts rewritten (host_scopes.py)

    def parse(self, classdef: ast.ClassDef) -> dict[str, Function]:
        for node in classdef.body:
            if isinstance(node, ast.FunctionDef):
                header = self.header(node)
                if header is not None:
                    self.headers[node.name] = header
        for name, header in list(self.headers.items()):
            if header.kind == "Host" and header.role != "SubWorker":
                rewritten = host_scopes.outline_chip_scopes(self, name, header)
                if rewritten is not None:
                    self.host_defs[name] = rewritten
        # Inline functions, and Opaque ones some function calls, are spliced where called
        # (funcalls.splice): they never become functions of the program.
        # (only an Opaque function's fate depends on it: most programs skip the walk)
        opaque = any(h.kind == "Opaque" for h in self.headers.values())
        called = _self_calls(classdef) if opaque else set()
        for name in list(self.headers):
            kind = self.headers[name].kind
            if kind == "Host":  # runs as Python when the program executes (never parsed)
                sub = self.headers[name].role == "SubWorker"
                (self.sub_workers if sub else self.hosts).append(name)
                continue
            if kind != "Inline" and not (kind == "Opaque" and name in called):
                self.function(name)
        return {name: self.functions[name] for name in self.headers if name in self.functions}

    def context(self, name: str, strict: bool, local_names: set[str]) -> FunctionContext:
        header = self.headers.get(name)
        source = header.source if header is not None and header.source else self.source
        namespace = self.namespace
        if header is not None and header.namespace is not None:
            namespace = header.namespace
        return FunctionContext(source, namespace, name, self, strict, local_names)

    # ---------------------------------------------------------- signatures
    def header(self, node: ast.FunctionDef) -> Header | None:
        ctx = self.context(node.name, False, set())
        ep = ExprParser(ctx, {})
        header = Header(node)
        try:
            for dec in node.decorator_list:
                self.decorator(ctx, ep, dec, header)
            if not header.decorated:
                return None
            if header.kind != "Host":  # a host signature is Python's (distributed_host.py)
                self.signature(ctx, ep, node, header)
            else:
                distributed_host.check_signature(ctx, node, header)
        except Tier3Hit as hit:
            if not header.decorated:
                raise ctx.error(
                    ParserSyntaxError, f"{hit.construct} is not a decorator of the DSL", hit.node
                ) from None
            header.unsupported = Unsupported(hit.construct, hit.reason, ctx.span(hit.node))
        return header

    def decorator(self, ctx: FunctionContext, ep: ExprParser, dec: ast.expr, header: Header) -> None:
        target = ep.eval(dec.func if isinstance(dec, ast.Call) else dec)
        if target is not functions.function:
            raise ctx.error(
                ParserSyntaxError,
                f"unknown decorator @{ctx.text(dec)} on a program method",
                dec,
                hint="decorate kernel functions with @pl.function(type=pl.FunctionType.X)",
            )
        header.decorated = True
        if not isinstance(dec, ast.Call):
            return
        if dec.args:
            raise ctx.error(ParserSyntaxError, "pl.function takes keyword arguments only", dec)
        for kw in dec.keywords:
            if kw.arg == "type":
                kind = ep.eval(kw.value)
                if not isinstance(kind, surface.FunctionType):
                    raise ctx.error(
                        ParserTypeError, "type= must be a pl.FunctionType member", kw.value
                    )
                header.kind = kind.value
                header.open_params = kind.value == "Inline"
                cross_core.function_kind(header)
                if kind.value not in surface.TIER1_FUNCTION_TYPES | {"Inline"} \
                        | surface.CROSS_CORE_FUNCTION_TYPES:
                    raise Tier3Hit(
                        f"pl.FunctionType.{kind.value}", "tier 3: hand-written cross-core kernels",
                        kw.value,
                    )
            elif kw.arg in ("level", "role"):  # a host function (docs/design/distributed.md §2)
                distributed_host.function_level(ctx, kw.arg, ep.eval(kw.value), kw.value, header)
            elif kw.arg == "strict_ssa":
                value = ep.eval(kw.value)
                if not isinstance(value, bool):
                    raise ctx.error(ParserTypeError, "strict_ssa= must be True or False", kw.value)
                header.strict_ssa = value
            elif kw.arg == "external_source":
                raise Tier3Hit(
                    "pl.function(external_source=...)",
                    "an external C++ kernel is compiled by PyPTO's toolchain for an NPU; the "
                    "bundled numpy simulator runs only kernels written in the DSL",
                    kw.value,
                )
            elif kw.arg == "attrs" and cross_core.is_cross_core(header):
                cross_core.function_attrs(ctx, ep, kw.value, header)
            elif kw.arg == "auto_scope":
                value = ep.eval(kw.value)
                if not isinstance(value, bool):
                    raise ctx.error(ParserTypeError, "auto_scope= must be True or False",
                                    kw.value, hint="@pl.function(..., auto_scope=False)")
                header.auto_scope = value
            elif kw.arg == "attrs":
                raise Tier3Hit(f"pl.function({kw.arg}=...)", "tier 3: function attributes", kw.value)
            else:
                raise ctx.error(
                    InvalidOperationError, f"pl.function got an unexpected keyword '{kw.arg}'",
                    kw.value if kw.value else dec,
                )

    def signature(
        self, ctx: FunctionContext, ep: ExprParser, node: ast.FunctionDef, header: Header
    ) -> None:
        a = node.args
        if a.posonlyargs or a.kwonlyargs or a.vararg or a.kwarg or a.defaults:
            raise ctx.error(
                ParserSyntaxError,
                f"function '{node.name}' takes plain positional parameters only "
                "(no defaults, *args, keyword-only or **kwargs)",
                node,
            )
        if not a.args or a.args[0].arg != "self":
            raise ctx.error(ParserSyntaxError, f"function '{node.name}' must take self first", node)
        for arg in a.args[1:]:
            if arg.annotation is None and header.open_params:
                header.params.append(Param(arg.arg, None, None, span=ctx.span(arg)))  # type: ignore[arg-type]
                continue
            if arg.annotation is None:
                raise ctx.error(
                    ParserTypeError, f"parameter '{arg.arg}' needs a type annotation", arg,
                    hint="annotate it as pl.Tensor[[...], dtype] or pl.Scalar[dtype]",
                )
            form = ep.eval(arg.annotation)
            open_form = funcalls.generic_param(form) if header.open_params else None
            if open_form is not None:  # bare pl.Tensor / dtype: typed by the call site
                t_open, d_open = open_form
                header.params.append(Param(arg.arg, t_open, d_open, span=ctx.span(arg)))  # type: ignore[arg-type]
                continue
            t, direction = annots.to_type(ctx, form, arg.annotation, param=True)
            if isinstance(t, TileType) and not header.open_params:
                raise ctx.error(
                    ParserTypeError,
                    f"parameter '{arg.arg}' is a Tile; tiles are never parameters of a kernel "
                    "or an entry",
                    arg,
                    hint="pass a pl.Tensor and pl.load it inside the kernel",
                )
            if isinstance(t, TupleType):
                raise ctx.error(ParserTypeError, f"parameter '{arg.arg}' cannot be a tuple", arg)
            if direction is None:
                direction = Direction.SCALAR if isinstance(t, ScalarType) else Direction.IN
                if getattr(form, "window", False):  # shared memory (docs/design/distributed.md §3)
                    direction = Direction.INOUT
            header.params.append(Param(arg.arg, t, direction, span=ctx.span(arg)))
        if node.returns is not None:
            t, _ = annots.to_type(ctx, ep.eval(node.returns), node.returns)
            header.returns = t.items if isinstance(t, TupleType) else (t,)
            if any(r.kind == "Array" for r in header.returns):
                raise ctx.error(
                    ParserTypeError, "an on-core array (ArrayType) cannot be in a function's "
                    "return type: arrays do not cross function boundaries", node.returns,
                    hint="return the elements you need as Scalars or store them to a tensor",
                )

    # --------------------------------------------------------------- bodies
    def function(self, name: str) -> Function:
        if name in self.functions:
            return self.functions[name]
        header = self.headers[name]
        node = header.node
        names = self.bound.get(id(node))
        if names is None:
            names = self.bound[id(node)] = frozenset(all_bound_names(node) - {"self"})
        local_names = set(names)
        ctx = self.context(name, header.strict_ssa, local_names)
        ctx.namer.taken.update(p.name for p in header.params)
        body: list[Stmt] = []
        unsupported = header.unsupported
        returns = header.returns
        if unsupported is None:
            self.in_progress.add(name)
            try:
                env: dict[str, Any] = {
                    p.name: Var(p.name, type=p.type, span=p.span) for p in header.params
                }
                bp = BodyParser(ctx, env, body)
                try:
                    bp.block(func_attrs.prologue(bp, header), allow_return=True)
                    returns = self.check_returns(ctx, header, bp)
                except Tier3Hit as hit:
                    unsupported = Unsupported(hit.construct, hit.reason, ctx.span(hit.node))
                except RecursionError:
                    # The explicit limits (MAX_EXPR_DEPTH, MAX_BLOCK_DEPTH) keep a kernel
                    # far from this; a program decorated deep inside the caller's own
                    # recursion can still get here, and deserves a diagnostic too.
                    raise ctx.error(
                        ParserSyntaxError,
                        f"function '{name}' nests too deeply to parse: Python's recursion "
                        "limit was reached",
                        node,
                        hint="split deeply nested expressions or blocks into named steps",
                    ) from None
            finally:
                self.in_progress.discard(name)
        fn = Function(
            name, header.kind, list(header.params), tuple(returns or ()), body,
            span=ctx.span(node), strict_ssa=header.strict_ssa, unsupported=unsupported,
            attrs=getattr(ctx, "attrs", None) or dict(header.attrs),
        )
        self.functions[name] = fn
        return fn

    def check_returns(
        self, ctx: FunctionContext, header: Header, bp: BodyParser
    ) -> tuple[Type, ...]:
        name = header.node.name
        if bp.returned is None:
            if header.returns:
                raise ctx.error(
                    ParserSyntaxError,
                    f"function '{name}' declares a return type but does not return",
                    header.node,
                    hint="end the body with return <value>",
                )
            return ()
        values, node = bp.returned
        inferred = tuple(v.type for v in values)
        if header.returns is None:
            return inferred  # type: ignore[return-value]
        if len(header.returns) != len(values):
            raise ctx.error(
                ParserTypeError,
                f"function '{name}' declares {len(header.returns)} return values but returns "
                f"{len(values)}",
                node,
            )
        for i, (ann, value) in enumerate(zip(header.returns, values)):
            subject = f"return value {i} of '{name}'" if len(values) > 1 else f"the return of '{name}'"
            annots.check(ctx, ann, value.type, subject, node)
        return header.returns

    # ---------------------------------------------------------------- calls
    def call(self, ctx: FunctionContext, name: str, pos: list[Any], kw: dict[str, Any],
             node: ast.Call, sink: list[Stmt] | None = None) -> Any:
        """`self.name(...)` from the function of ``ctx``: a checked FuncCall, or the
        callee's body spliced into ``sink`` (Inline, Opaque, InCore from InCore)."""
        header = self.headers.get(name)
        if header is None:
            raise ctx.error(
                InvalidOperationError,
                f"self.{name}(...): the program has no @pl.function named '{name}'",
                node,
            )
        if header.unsupported is not None:
            raise Tier3Hit(header.unsupported.construct, header.unsupported.reason, node)
        caller = self.headers[ctx.function_name].kind
        if funcalls.splices(caller, header.kind):
            return funcalls.splice(self, ctx, name, header, pos, kw, node, sink)
        returns = header.returns
        if returns is None:
            if name in self.in_progress:
                raise ctx.error(
                    ParserSyntaxError,
                    f"self.{name}(...) is recursive; calls between functions cannot recurse",
                    node,
                )
            callee = self.function(name)
            if callee.unsupported is not None:
                raise Tier3Hit(callee.unsupported.construct, callee.unsupported.reason, node)
            returns = callee.returns
        elif name == ctx.function_name or name in self.in_progress:
            raise ctx.error(
                ParserSyntaxError,
                f"self.{name}(...) is recursive; calls between functions cannot recurse",
                node,
            )
        return check_call(ctx, name, header.params, returns, pos, kw, node)

    def call_template(self, ctx: FunctionContext, target: Any, pos: list[Any],
                      kw: dict[str, Any], node: ast.Call, sink: list[Stmt] | None) -> Any:
        """``f(...)`` of a `@pl.inline` / `@pl.jit.*` function: see funcalls.call_template."""
        return funcalls.call_template(self, ctx, target.pl_template(), pos, kw, node, sink)


def program_from_template(
    template: Template, params: list[Param], constants: dict[str, Any], kind: str
) -> Program:
    """A program whose entry is ``template`` with ``params`` (a `@pl.jit` specialisation).

    ``constants``: scalar parameters whose value is folded into the body.  Functions it
    calls by name (templates) join the program as they are met.
    """
    parser = ProgramParser(template.source, template.namespace)
    types = {p.name: p.type for p in params}
    body, namespace = specialize_body(template.node, types, template.namespace, constants)
    node = with_self(body)
    header = Header(node, kind=kind, params=params, decorated=True,
                    source=template.source, namespace=namespace)
    if template.node.returns is not None:
        ctx = FunctionContext(template.source, namespace, template.name, parser, False, set())
        t, _ = annots.to_type(ctx, ExprParser(ctx, {}).eval(template.node.returns),
                              template.node.returns)
        header.returns = t.items if isinstance(t, TupleType) else (t,)
    parser.headers[template.name] = header
    parser.function(template.name)
    functions = {n: parser.functions[n] for n in parser.headers if n in parser.functions}
    source = template.source
    return Program(template.name, functions, source.file,
                   span=source.span(template.node), source_lines=source.file_lines)
