"""A tiny IR builder for compiler tests: what the parser would produce, typed by the op registry.

Each call is typed by running its registry type rule without an arch, exactly as
the parser does at decoration time; spans point at ``FILE`` with the given line.
"""

from __future__ import annotations

import contextlib
from typing import Any

from pytest_pypto.compiler.typecheck import call_info
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import FP32, INDEX
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import Direction, ScalarType, TensorType

FILE = "tests/test_kernel.py"


def span(line: int) -> n.Span:
    return n.Span(FILE, line, 9)


def T(*shape: int, dtype=FP32) -> TensorType:
    return TensorType(tuple(shape), dtype)


def S(dtype=FP32) -> ScalarType:
    return ScalarType(dtype)


def const(v: Any) -> n.Const:
    return n.Const(v, type=ScalarType(INDEX if isinstance(v, int) else FP32))


class Fn:
    """Builds one function: params, then statements in order."""

    def __init__(self, name: str, kind: str, line: int, **params: Any) -> None:
        self.env: dict[str, Any] = {}
        plist = []
        for pname, spec in params.items():
            t, d = spec if isinstance(spec, tuple) else (spec, Direction.IN)
            if isinstance(t, ScalarType):
                d = Direction.SCALAR
            plist.append(n.Param(pname, t, d, span(line)))
            self.env[pname] = t
        self.fn = n.Function(name, kind, plist, (), [], span=span(line))
        self.stack: list[list[n.Stmt]] = [self.fn.body]

    def v(self, name: str) -> n.Var:
        return n.Var(name, type=self.env[name], span=None)

    def _value(self, x: Any) -> Any:
        if isinstance(x, str) and x in self.env:
            return self.v(x)
        if isinstance(x, (int, float)) and not isinstance(x, bool):
            return x
        return x

    def call(self, op: str, line: int, *args: Any, **kwargs: Any) -> n.Call:
        spec = REGISTRY[op]
        given = dict(zip([p.name for p in spec.params], args)) | kwargs
        items = []
        for p in spec.params:
            if p.name not in given:
                continue
            val = given[p.name]
            if p.kind in ("tile", "tensor", "scalar", "tile_or_scalar"):
                if isinstance(val, str):
                    val = self.v(val)
                elif isinstance(val, (int, float)):
                    val = const(val)
            elif p.kind == "index_list" and isinstance(val, (list, tuple)):
                val = tuple(self.v(x) if isinstance(x, str) else x for x in val)
            elif isinstance(val, list):
                val = tuple(val)
            items.append((p.name, val))
        call = n.Call(op, tuple(items), span=span(line))
        call.type = spec.type_rule(call_info(call, spec, None, {}))
        return call

    def let(self, name: str, op: str, line: int, *args: Any, annotation=None, **kwargs: Any) -> n.Var:
        call = self.call(op, line, *args, **kwargs)
        target = n.Var(name, type=call.type, span=span(line))
        self.stack[-1].append(n.Assign((target,), call, annotation, span=span(line)))
        self.env[name] = call.type
        return target

    def do(self, op: str, line: int, *args: Any, **kwargs: Any) -> None:
        call = self.call(op, line, *args, **kwargs)
        self.stack[-1].append(n.ExprStmt(call, span=span(line)))

    def task(self, targets: list[str], callee: str, line: int, *args: Any) -> None:
        vals = tuple(self.v(a) if isinstance(a, str) else const(a) for a in args)
        call = n.FuncCall(callee, vals, span=span(line))
        tvars = tuple(n.Var(t, type=self.env.get(t), span=span(line)) for t in targets)
        stmt = n.Assign(tvars, call, span=span(line)) if targets else n.ExprStmt(call, span=span(line))
        self.stack[-1].append(stmt)

    def alias(self, name: str, typ: Any) -> None:
        self.env[name] = typ

    @contextlib.contextmanager
    def loop(self, var: str, start: Any, stop: Any, step: Any, line: int,
             carry: tuple[tuple[str, str], ...] = (), results: tuple[str, ...] = ()):
        body: list[n.Stmt] = []
        self.env[var] = ScalarType(INDEX)
        carried = []
        for iv, init in carry:
            self.env[iv] = self.env[init]
            carried.append((n.Var(iv, type=self.env[init], span=span(line)), self.v(init)))
        self.stack.append(body)
        yield
        self.stack.pop()

        def ex(x: Any) -> n.Expr:
            return self.v(x) if isinstance(x, str) else const(x)

        res = []
        for (iv, _), r in zip(carry, results):
            self.env[r] = self.env[iv]
            res.append(n.Var(r, type=self.env[iv], span=span(line)))
        self.stack[-1].append(n.For(n.Var(var, type=ScalarType(INDEX)), ex(start), ex(stop), ex(step),
                                    body, tuple(carried), tuple(res), span=span(line)))

    def yield_(self, *names: str, line: int = 0) -> None:
        self.stack[-1].append(n.Yield(tuple(self.v(x) for x in names), span=span(line)))

    def ret(self, *names: str, line: int = 0) -> None:
        self.stack[-1].append(n.Return(tuple(self.v(x) for x in names), span=span(line)))


def program(*fns: Fn, name: str = "P") -> n.Program:
    return n.Program(name, {f.fn.name: f.fn for f in fns}, FILE, span=span(1))


def orchestrate(kernel: Fn, line: int = 90, name: str = "main") -> Fn:
    """An entry that passes its own params (same names, same directions) to ``kernel``."""
    params = {p.name: (p.type, p.direction) for p in kernel.fn.params}
    main = Fn(name, "Orchestration", line, **params)
    from pytest_pypto.compiler.directions import returned_params

    rets = [kernel.fn.params[i].name for i in returned_params(kernel.fn)]
    main.task(rets, kernel.fn.name, line + 1, *params)
    main.ret(*rets, line=line + 2)
    return main
