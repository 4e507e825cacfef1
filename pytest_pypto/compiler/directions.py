"""Argument directions (docs/design/checks.md §9): who may write which tensor.

Every tensor value is traced to its root buffer (a parameter or a
`create_tensor`), through writing ops (OpSpec.writes: a store returns its
destination), zero-copy views (OpSpec.view_of: a slice, reshape, transpose or
set_validshape is its source's buffer, so a store into a window of an In
parameter is a write of that parameter), loop carries and if merges.  Then: kernels must not write In parameters; an entry's
In parameter must not reach a kernel's Out/InOut slot; kernels return only
their Out/InOut parameters (or an In parameter itself, unchanged); reading a pure Out parameter before writing it warns.
"""

from __future__ import annotations

from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.structure import CREATE_TENSOR_OPS, KERNEL_KINDS
from pytest_pypto.compiler.walk import is_tensor, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import DirectionError
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import Direction, TensorType


def written_tensor(call: n.Call) -> n.Var | None:
    """The tensor a writing op writes (its registry entry's `writes` parameter), if any."""
    spec = REGISTRY.as_dict().get(call.op)
    if spec is None or spec.writes is None:
        return None
    value = call.arg(spec.writes)
    return value if isinstance(value, n.Var) and is_tensor(value.type) else None


def viewed_tensor(call: n.Call) -> n.Var | None:
    """The tensor a zero-copy view op looks through (its entry's `view_of`), if any."""
    spec = REGISTRY.as_dict().get(call.op)
    if spec is None or spec.view_of is None:
        return None
    value = call.arg(spec.view_of)
    return value if isinstance(value, n.Var) and is_tensor(value.type) else None


class TensorRoots:
    """Maps tensor-valued names to their root buffer, walking a body in order."""

    def __init__(self, fn: n.Function, program: n.Program | None = None,
                 memo: dict[str, list[int]] | None = None) -> None:
        self.root: dict[str, str] = {p.name: p.name for p in fn.params if is_tensor(p.type)}
        self.locals: set[str] = set()
        self.program = program  # lets a kernel call's results map to the buffers passed
        self.memo = memo  # returned_params of the callees, shared (see there)

    def of(self, expr: n.Expr | None) -> str | None:
        if type(expr) is n.Var or isinstance(expr, n.Var):
            return self.root.get(expr.name)
        return None

    def assign(self, stmt: n.Assign) -> None:
        value = stmt.value
        if isinstance(value, n.FuncCall) and self.program is not None:
            callee = self.program.functions.get(value.callee)
            if callee is not None:
                positions = returned_params(callee, memo=self.memo)
                sources = tuple(value.args[i] if i < len(value.args) else None for i in positions)
                self.bind(stmt.targets, sources)
            return
        if len(stmt.targets) != 1:
            return
        target = stmt.targets[0].name
        root: str | None = None
        if isinstance(value, n.Var):
            root = self.of(value)
        elif isinstance(value, n.Call):
            if value.op in CREATE_TENSOR_OPS:
                root = target
                self.locals.add(target)
            else:
                spec = REGISTRY.as_dict().get(value.op)  # (most ops neither write nor view)
                if spec is not None and (spec.writes is not None or spec.view_of is not None):
                    root = self.of(written_tensor(value) or viewed_tensor(value))
        if root is not None:
            self.root[target] = root

    def bind(self, targets: tuple[n.Var, ...], sources: tuple[n.Expr | None, ...]) -> None:
        for t, s in zip(targets, sources):
            root = self.of(s)
            if root is not None:
                self.root[t.name] = root


def _walk(body: list[n.Stmt], roots: TensorRoots, visit) -> None:
    for stmt in body:
        visit(stmt, roots)
        if isinstance(stmt, n.Assign):
            roots.assign(stmt)
        elif isinstance(stmt, n.For):
            roots.bind(tuple(v for v, _ in stmt.carried), tuple(i for _, i in stmt.carried))
            _walk(stmt.body, roots, visit)
            roots.bind(stmt.results, tuple(v for v, _ in stmt.carried))
        elif isinstance(stmt, n.If):
            _walk(stmt.then_body, roots, visit)
            _walk(stmt.else_body, roots, visit)
            ys = stmt.then_body[-1].values if stmt.then_body and isinstance(stmt.then_body[-1], n.Yield) else ()
            roots.bind(stmt.results, tuple(ys))


def returned_params(fn: n.Function, program: n.Program | None = None, *,
                    memo: dict[str, list[int]] | None = None) -> list[int]:
    """Positions of the parameters a function returns (in return order).

    With ``program``, values bound from kernel calls are traced to the buffers passed
    in (an orchestration returning ``out = self.k(x, out)`` returns its ``out``).
    ``memo`` (function name -> positions, without ``program``) shares the answers
    between the callers of one finished IR (codegen asks about each kernel several
    times); it must not outlive a change to the IR."""
    if memo is not None and program is None:
        got = memo.get(fn.name)
        if got is None:
            got = memo[fn.name] = returned_params(fn)
        return list(got)
    positions: list[int] = []
    index = {p.name: i for i, p in enumerate(fn.params)}

    def visit(stmt: n.Stmt, roots: TensorRoots) -> None:
        if isinstance(stmt, n.Return):
            for v in stmt.values:
                root = roots.of(v)
                if root in index:
                    positions.append(index[root])

    _walk(fn.body, TensorRoots(fn, program, memo), visit)
    return positions


def check_directions(program: n.Program, ctx: PassContext) -> n.Program:
    entry = program.functions[ctx.entry] if ctx.entry else None
    for fn in program.functions.values():
        directions = {p.name: p.direction for p in fn.params}
        first_access: dict[str, str] = {}

        def visit(stmt: n.Stmt, roots: TensorRoots, fn: n.Function = fn,
                  directions: dict = directions, first_access: dict = first_access) -> None:
            for e in stmt_expr_list(stmt):
                t = type(e)
                if t is n.Call:
                    _check_call(fn, e, roots, directions, first_access, ctx)
                elif t is n.FuncCall and fn is entry:
                    _check_task(program, fn, e, roots, directions, ctx)
            if isinstance(stmt, n.Return) and fn.kind in KERNEL_KINDS:
                for v in stmt.values:
                    _check_return(fn, v, roots, directions, ctx)

        _walk(fn.body, TensorRoots(fn), visit)
    return program


def _tensor_arg(call: n.Call, name: str) -> n.Var | None:
    value = call.arg(name)
    return value if isinstance(value, n.Var) and is_tensor(value.type) else None


def _check_call(fn, call, roots, directions, first_access, ctx) -> None:
    spec = REGISTRY.as_dict().get(call.op)
    dst = viewed = None  # (`written_tensor` and `viewed_tensor`, from the one lookup)
    if spec is not None:
        if spec.writes is not None:
            dst = _tensor_arg(call, spec.writes)
        if spec.view_of is not None:
            viewed = _tensor_arg(call, spec.view_of)  # taking a view reads nothing
    dst_root = roots.of(dst)
    for _, value in call.args:
        if type(value) is not n.Var and not isinstance(value, n.Var):
            continue  # (static arguments and index lists: most of them)
        if not isinstance(value.type, TensorType) or value is dst or value is viewed:
            continue
        root = roots.of(value)
        if root is not None and root not in first_access:
            first_access[root] = "read"
            if directions.get(root) is Direction.OUT and fn.kind in KERNEL_KINDS:
                ctx.warn(
                    f"Function '{fn.name}' reads parameter '{root}' before writing it; it is "
                    f"declared Out, so its contents are undefined on entry",
                    call.span,
                    hint="declare it pl.InOut[...] if the kernel needs its initial contents",
                )
    if dst_root is None:
        return
    first_access.setdefault(dst_root, "write")
    if directions.get(dst_root) is Direction.IN:
        raise DirectionError(
            f"Function '{fn.name}' writes parameter '{dst_root}', which is declared In",
            call.span,
            hint="declare it pl.Out[...] or pl.InOut[...]",
            arch=ctx.arch.name,
        )


def _check_task(program, fn, call, roots, directions, ctx) -> None:
    callee = program.functions.get(call.callee)
    if callee is None:
        return
    if len(call.args) != len(callee.params):
        raise DirectionError(
            f"self.{call.callee}(...) takes {len(callee.params)} arguments, but got {len(call.args)}",
            call.span,
            hint=f"pass one argument per parameter of '{callee.name}'",
            arch=ctx.arch.name,
        )
    for i, (arg, param) in enumerate(zip(call.args, callee.params)):
        root = roots.of(arg)
        if root is None or not param.direction.writes:
            continue
        if directions.get(root) is Direction.IN:
            raise DirectionError(
                f"Argument '{root}' passed to self.{call.callee}(...) at position {i} is the "
                f"entry's In parameter, but '{callee.name}' declares that slot {param.direction.value}",
                call.span,
                hint=f"declare '{root}' pl.Out[...] or pl.InOut[...] in '{fn.name}', or pass a "
                f"pl.create_tensor buffer",
                arch=ctx.arch.name,
            )


def _check_return(fn, value, roots, directions, ctx) -> None:
    root = roots.of(value)
    shown = value.name if isinstance(value, n.Var) else "a value"
    if root is not None and directions.get(root) in (Direction.OUT, Direction.INOUT):
        return
    if root is not None and directions.get(root) is Direction.IN \
            and isinstance(value, n.Var) and value.name == root:
        return  # the In parameter itself, unwritten: the call gives back its argument
    if root is not None and directions.get(root) is Direction.IN:
        message = f"Function '{fn.name}' returns parameter '{root}', which is declared In"
    else:
        message = (
            f"Function '{fn.name}' returns '{shown}', which is not one of its Out/InOut parameters"
        )
    raise DirectionError(
        message,
        value.span or fn.span,
        hint="an InCore function returns only its pl.Out/pl.InOut tensors, usually the value "
        "rebound by pl.store(..., out)",
        arch=ctx.arch.name,
    )
