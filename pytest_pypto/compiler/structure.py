"""Program-shape passes: Tier 3 constructs, entry selection, placement, call flattening.

These run first: they need no arch facts, and everything after them may assume a
supported program with one entry, ops in the right kind of function, and every
op call bound to a name of its own (so moves can be inserted between calls).
"""

from __future__ import annotations

import math

from pytest_pypto.compiler.groups import check_group
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.walk import (
    NameGen,
    all_names,
    iter_calls,
    rewrite_bodies,
    stmt_expr_list,
)
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import CapacityError, PlacementError, UnsupportedFeatureError
from pytest_pypto.ir.ops.tensor_level import LOCAL_OP

ONBOARD_HINT = "this program needs a PyPTO installation; mark the test @pytest.mark.pypto_onboard"

KERNEL_KINDS = ("InCore",)
GROUP_KIND = "Group"  # one AIC and one AIV kernel run as one task (compiler/groups.py)
ENTRY_KINDS = ("Orchestration", "Opaque")
# pl.create_tensor as the parser writes it (not a registry entry); an orchestration body
# may use it and the tensor ops whose entries set ``in_orchestration`` (docs/design/language.md §8).
CREATE_TENSOR_OPS = frozenset({"tensor.create_tensor", "tensor.create"})


def _in_orchestration(ctx: PassContext, op: str) -> bool:
    spec = ctx.registry.get(op)
    return op in CREATE_TENSOR_OPS or (spec is not None and spec.in_orchestration)


def kernels(program: n.Program) -> list[n.Function]:
    return [f for f in program.functions.values() if f.kind in KERNEL_KINDS]


def check_unsupported(program: n.Program, ctx: PassContext) -> n.Program:
    """Tier 3 constructs recorded by the parser become UnsupportedFeatureError
    (docs/design/language.md §22, docs/design/checks.md §11)."""
    for fn in program.functions.values():
        u = fn.unsupported
        if u is not None:
            reason = u.reason if u.reason.startswith("tier") else f"tier 3: {u.reason}"
            raise UnsupportedFeatureError(
                f"{u.construct} is not supported by the bundled toolchain ({reason})",
                u.span or fn.span,
                hint=ONBOARD_HINT,
                arch=ctx.arch.name,
            )
        if fn.kind == GROUP_KIND:
            check_group(program, fn, ctx)
        elif fn.kind not in KERNEL_KINDS + ENTRY_KINDS:
            raise UnsupportedFeatureError(
                f"pl.FunctionType.{fn.kind} is not supported by the bundled toolchain "
                f"(tier 3: hand-specialized kernels)",
                fn.span,
                hint=ONBOARD_HINT,
                arch=ctx.arch.name,
            )
    return program


def _callees(program: n.Program) -> set[str]:
    return {
        e.callee
        for fn in program.functions.values()
        for _, e in iter_calls(fn.body)
        if isinstance(e, n.FuncCall)
    }


def select_entry(program: n.Program, ctx: PassContext) -> n.Program:
    """The unique Orchestration function, else the unique uncalled Opaque one
    (docs/design/language.md §4)."""
    orch = [f.name for f in program.functions.values() if f.kind == "Orchestration"]
    called = _callees(program)
    opaque = [
        f.name for f in program.functions.values() if f.kind == "Opaque" and f.name not in called
    ]
    if len(orch) == 1:
        ctx.entry = orch[0]
        return program
    if not orch and len(opaque) == 1:
        ctx.entry = opaque[0]
        return program
    if orch:
        names, what = orch, "Orchestration functions"
    elif opaque:
        names, what = opaque, "uncalled Opaque functions"
    else:
        names, what = [], "Orchestration or uncalled Opaque functions"
    listed = ", ".join(f"'{x}'" for x in names) or "none"
    raise PlacementError(
        f"Program '{program.name}' has no unique entry: {len(names)} {what} ({listed})",
        program.span,
        hint="give the program exactly one @pl.function(type=pl.FunctionType.Orchestration)",
        arch=ctx.arch.name,
    )


def check_placement(program: n.Program, ctx: PassContext) -> n.Program:
    """Tile ops only in InCore code; calls only to kernels (docs/design/checks.md §10).

    A `pl.create_tensor` in InCore code becomes a kernel-local tensor (`tensor.local`).
    """
    for fn in program.functions.values():
        in_core = fn.kind in KERNEL_KINDS
        for _, e in iter_calls(fn.body):
            if isinstance(e, n.FuncCall):
                _check_func_call(program, fn, e, ctx)
                continue
            assert isinstance(e, n.Call)
            level = e.op.partition(".")[0]
            if in_core and e.op in CREATE_TENSOR_OPS:
                _make_kernel_local(e, fn, ctx)
                ctx.exprs_rewritten = True  # (each call is read before it is rewritten)
                continue
            if not in_core and level == "tile":
                raise PlacementError(
                    f"tile op '{e.op}' is not allowed in {fn.kind} function '{fn.name}'",
                    e.span,
                    hint="move it into an InCore function, or wrap it in "
                    "with pl.at(level=pl.Level.CORE_GROUP):",
                    arch=ctx.arch.name,
                )
            if not in_core and level == "tensor" and not _in_orchestration(ctx, e.op):
                raise PlacementError(
                    f"Misplaced tensor op '{e.op}' in {fn.kind} function '{fn.name}': "
                    f"tensor ops run only in InCore code",
                    e.span,
                    hint="wrap it in with pl.at(level=pl.Level.CORE_GROUP): "
                    "or move it into an InCore function",
                    arch=ctx.arch.name,
                )
    return program


def _make_kernel_local(call: n.Call, fn: n.Function, ctx: PassContext) -> None:
    """`pl.create_tensor` in InCore code: a kernel-local tensor, rewritten in place.

    PyPTO lowers it to an on-chip Vec `tile.create`: its dims must be static and
    positive, it must fit Vec, and its contents start undefined (poisoned here).
    PyPTO drops ``init_value`` there (only the runtime's DDR allocations are pre-filled),
    so a kernel-local ``init_value`` warns and is ignored.
    """
    shape, dtype = call.arg("shape"), call.arg("dtype")
    dims = tuple(shape) if isinstance(shape, (tuple, list)) else ()
    if not dims or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        shown = ", ".join(_dim_text(d) for d in dims)
        raise PlacementError(
            f"pl.create_tensor([{shown}]) inside InCore function '{fn.name}' needs static "
            f"dims: a kernel-local tensor is an on-chip tile of compile-time shape",
            call.span,
            hint="use int dims here, or allocate the dynamic tensor in the orchestration "
            "function and pass it as pl.Out[...]",
            arch=ctx.arch.name,
        )
    nbytes = dtype.nbytes(math.prod(dims))
    limit = ctx.arch.capacity["Vec"]
    if nbytes > limit:
        raise CapacityError(
            f"pl.create_tensor({list(dims)}, {dtype.name}) inside InCore function '{fn.name}' "
            f"needs {nbytes} bytes of Vec, over the {limit}-byte Vec of the '{ctx.arch.name}' "
            f"backend",
            call.span,
            hint="allocate it in the orchestration function and pass it as pl.Out[...], "
            "or use a smaller kernel-local tensor",
            arch=ctx.arch.name,
        )
    if call.arg("init_value") is not None:
        ctx.warn(
            f"init_value={call.arg('init_value')!r} of pl.create_tensor inside InCore function "
            f"'{fn.name}' is ignored (PyPTO makes a kernel-local tensor an uninitialized "
            f"tile): its elements start undefined",
            call.span,
            hint="fill it with pl.full(...) / pl.assemble, or allocate it with init_value in "
            "the orchestration function and pass it as pl.InOut[...]",
        )
    call.op = LOCAL_OP  # a create_tensor in InCore code: a kernel-local tensor
    call.args = (("shape", dims), ("dtype", dtype))


def _dim_text(dim: object) -> str:
    return str(dim) if isinstance(dim, int) else getattr(dim, "name", None) or "<expr>"


def _check_func_call(
    program: n.Program, fn: n.Function, call: n.FuncCall, ctx: PassContext
) -> None:
    callee = program.functions.get(call.callee)
    if callee is None:
        raise PlacementError(
            f"Function '{fn.name}' calls self.{call.callee}(...), which is not a function "
            f"of program '{program.name}'",
            call.span,
            hint="decorate it with @pl.function",
            arch=ctx.arch.name,
        )
    group_call = callee.kind == GROUP_KIND and fn.kind in ENTRY_KINDS
    if fn.kind in KERNEL_KINDS or (callee.kind not in KERNEL_KINDS and not group_call):
        raise UnsupportedFeatureError(
            f"a call from {fn.kind} function '{fn.name}' to {callee.kind} function "
            f"'{callee.name}' is not supported by the bundled toolchain yet (tier 2: inlining)",
            call.span,
            hint="call InCore functions only from the orchestration function, or inline the "
            "callee's body by hand",
            arch=ctx.arch.name,
        )


def flatten_calls(program: n.Program, ctx: PassContext) -> n.Program:
    """Bind every nested op call to a fresh name of its own, just before its statement.

    After this pass an op call appears only as the whole value of an Assign or an
    ExprStmt, so later passes can insert moves between calls and codegen can emit
    one line per op.
    """
    for fn in program.functions.values():
        names = NameGen(lambda fn=fn: all_names(fn))

        def visit(body: list[n.Stmt], names: NameGen = names) -> list[n.Stmt]:
            out: list[n.Stmt] | None = None  # a new list from the first statement changed
            for i, stmt in enumerate(body):
                if not _nests_calls(stmt):  # (most statements: nothing to hoist)
                    if out is not None:
                        out.append(stmt)
                    continue
                hoisted: list[n.Stmt] = []
                _hoist_stmt(stmt, hoisted, names)
                if out is None:
                    out = body[:i]
                if hoisted:
                    # (names are first taken, through the memo, before anything is hoisted)
                    ctx.exprs_rewritten = True
                    out.extend(hoisted)
                out.append(stmt)
            return body if out is None else out

        rewrite_bodies(fn, visit)
    return program


def _nests_calls(stmt: n.Stmt) -> bool:
    """Whether `_hoist_stmt` has a call to hoist in ``stmt``: an op or kernel call among
    its expressions other than an assignment's or expression statement's own value
    (which `stmt_expr_list` lists last)."""
    exprs = stmt_expr_list(stmt)
    t = type(stmt)
    end = len(exprs) - 1 if t is n.Assign or t is n.ExprStmt else len(exprs)
    for i in range(end):
        te = type(exprs[i])
        if te is n.Call or te is n.FuncCall:
            return True
    return False


def _hoist_stmt(stmt: n.Stmt, hoisted: list[n.Stmt], names: NameGen) -> None:
    if isinstance(stmt, n.Assign):
        stmt.value = _hoist_children(stmt.value, hoisted, names, top=True)
    elif isinstance(stmt, n.ExprStmt):
        stmt.expr = _hoist_children(stmt.expr, hoisted, names, top=True)
    elif isinstance(stmt, (n.Yield, n.Return, n.LoopJump)):
        stmt.values = tuple(_hoist_children(v, hoisted, names) for v in stmt.values)
    elif isinstance(stmt, n.For):
        stmt.start = _hoist_children(stmt.start, hoisted, names)
        stmt.stop = _hoist_children(stmt.stop, hoisted, names)
        stmt.step = _hoist_children(stmt.step, hoisted, names)
        stmt.carried = tuple((v, _hoist_children(i, hoisted, names)) for v, i in stmt.carried)
    elif isinstance(stmt, n.If):
        stmt.cond = _hoist_children(stmt.cond, hoisted, names)


def _hoist_children(expr: n.Expr, hoisted: list[n.Stmt], names: NameGen, top: bool = False) -> n.Expr:
    """Hoist op calls below ``expr`` (and ``expr`` itself unless it is the top)."""
    t = type(expr)
    if t is n.Var or t is n.Const:
        return expr  # a leaf (the common case), dispatched first
    if t is n.Call:
        args = expr.args
        new_args = [(k, _hoist_arg(v, hoisted, names)) for k, v in args]
        if any(a[1] is not b[1] for a, b in zip(args, new_args)):
            expr.args = tuple(new_args)
    elif t is n.FuncCall:
        expr.args = tuple(_hoist_children(a, hoisted, names) for a in expr.args)
    elif isinstance(expr, (n.BinOp, n.Compare)):
        expr.lhs = _hoist_children(expr.lhs, hoisted, names)
        expr.rhs = _hoist_children(expr.rhs, hoisted, names)
    elif isinstance(expr, (n.UnaryOp, n.ScalarCast)):
        expr.operand = _hoist_children(expr.operand, hoisted, names)
    if top or not isinstance(expr, (n.Call, n.FuncCall)):
        return expr
    base = expr.op.rpartition(".")[2] if isinstance(expr, n.Call) else expr.callee
    var = n.Var(names.fresh(base), type=expr.type, span=expr.span)
    hoisted.append(n.Assign((var,), expr, span=expr.span))
    return n.Var(var.name, type=expr.type, span=expr.span)


def _hoist_arg(value: object, hoisted: list[n.Stmt], names: NameGen) -> object:
    """``value`` with its op calls hoisted: the same object when nothing changed."""
    if isinstance(value, n.Expr):
        return _hoist_children(value, hoisted, names)
    if isinstance(value, (tuple, list)):
        items = [v if type(v) is int else _hoist_arg(v, hoisted, names) for v in value]
        if all(a is b for a, b in zip(value, items)):
            return value
        return tuple(items) if isinstance(value, tuple) else items
    return value


__all__ = [
    "check_placement",
    "check_unsupported",
    "flatten_calls",
    "kernels",
    "select_entry",
]
