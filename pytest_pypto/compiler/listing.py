"""Readable listings: kernels with their memory map, the orchestration task list.

Listings are for people reading an artifact (or a failure report): every line
carries the user's source line, and every listing starts with the header line
naming the platform and the simulator backend (docs/design/artifact.md §8).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.compiler.capacity import buffer_row
from pytest_pypto.compiler.passes import KernelFacts
from pytest_pypto.compiler.walk import iter_exprs, stmt_exprs
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.types import type_str


def header(what: str, platform: str, sim_backend: str | None) -> str:
    return f"# {what} -- platform: {platform}, sim_backend: {sim_backend or 'null'}"


def render_value(value: Any) -> str:
    if isinstance(value, n.Expr):
        return render_expr(value)
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(render_value(v) for v in value) + "]"
    if hasattr(value, "bits") and hasattr(value, "name"):  # DataType
        return f"pl.{value.name}"
    return repr(getattr(value, "value", value))


def render_expr(e: n.Expr) -> str:
    if isinstance(e, n.Var):
        return e.name
    if isinstance(e, n.Const):
        return repr(e.value)
    if isinstance(e, n.DynDim):
        return str(e.var.name)
    if isinstance(e, n.Call):
        args = [
            f"{k}={render_value(v)}" if not isinstance(v, n.Expr) else render_value(v)
            for k, v in e.args
            if v is not None
        ]
        return f"{e.op}({', '.join(args)})"
    if isinstance(e, n.FuncCall):
        launch = f" [spmd {render_expr(e.blocks)}]" if e.blocks is not None else ""
        return f"self.{e.callee}({', '.join(render_expr(a) for a in e.args)}){launch}"
    if isinstance(e, (n.BinOp, n.Compare)):
        if e.op in ("max", "min"):
            return f"{e.op}({render_expr(e.lhs)}, {render_expr(e.rhs)})"
        return f"({render_expr(e.lhs)} {e.op} {render_expr(e.rhs)})"
    if isinstance(e, n.UnaryOp):
        return f"({e.op} {render_expr(e.operand)})"
    if isinstance(e, n.ScalarCast):
        return f"cast({render_expr(e.operand)}, {render_value(e.dtype)})"
    return repr(e)


def _slot(s: n.Assign) -> str:
    """`` in pl.MemRef("ub", slots=2)[(i % 2)]``: the annotation's declared allocation."""
    b = getattr(s.annotation, "memref", None)
    if b is None:
        return ""
    slot = "" if b.index is None else f"[{render_value(b.index)}]"
    return f" in {b.declaration}{slot}"


def _line(node: n.Node) -> str:
    return f"{node.span.line:>5}" if node.span else "    -"


def render_body(body: list[n.Stmt], depth: int = 1) -> list[str]:
    """The statements of a body, one per line, prefixed by the user's source line."""
    pad = "  " * depth
    out: list[str] = []
    for s in body:
        if isinstance(s, n.Assign):
            targets = ", ".join(t.name for t in s.targets)
            ty = " : " + ", ".join(type_str(t.type) for t in s.targets)
            out.append(f"{_line(s)} |{pad}{targets} = {render_expr(s.value)}{ty}{_slot(s)}")
        elif isinstance(s, n.ExprStmt):
            out.append(f"{_line(s)} |{pad}{render_expr(s.expr)}")
        elif isinstance(s, n.For):
            carried = ", ".join(f"{v.name}={render_expr(i)}" for v, i in s.carried)
            extra = f" carry({carried})" if carried else ""
            head = (f"while {render_expr(s.cond)}" if isinstance(s, n.While) else
                    f"for {s.var.name} in pl.{s.kind}({render_expr(s.start)}, "
                    f"{render_expr(s.stop)}, {render_expr(s.step)})")
            out.append(f"{_line(s)} |{pad}{head}{extra}:")
            out.extend(render_body(s.body, depth + 1))
            if s.results:
                out.append(f"{_line(s)} |{pad}-> {', '.join(r.name for r in s.results)}")
        elif isinstance(s, n.If):
            out.append(f"{_line(s)} |{pad}if {render_expr(s.cond)}:")
            out.extend(render_body(s.then_body, depth + 1))
            if s.else_body:
                out.append(f"{_line(s)} |{pad}else:")
                out.extend(render_body(s.else_body, depth + 1))
            if s.results:
                out.append(f"{_line(s)} |{pad}-> {', '.join(r.name for r in s.results)}")
        elif isinstance(s, n.LoopJump):
            word = "break" if isinstance(s, n.Break) else "continue"
            vals = ", ".join(render_expr(v) for v in s.values)
            out.append(f"{_line(s)} |{pad}{word}" + (f" with {vals}" if vals else ""))
        elif isinstance(s, n.Yield):
            out.append(f"{_line(s)} |{pad}yield {', '.join(render_expr(v) for v in s.values)}")
        elif isinstance(s, n.Return):
            out.append(f"{_line(s)} |{pad}return {', '.join(render_expr(v) for v in s.values)}")
    return out


def signature(fn: n.Function) -> str:
    params = ", ".join(f"{p.name}: {p.direction.value} {type_str(p.type)}" for p in fn.params)
    rets = ", ".join(type_str(t) for t in fn.returns)
    return f"{fn.kind} {fn.name}({params})" + (f" -> {rets}" if rets else "")


def render_function(fn: n.Function) -> str:
    return "\n".join([signature(fn), *render_body(fn.body)])


def render_program(program: n.Program) -> str:
    """A plain rendering of the whole program (used when the IR printer is unavailable)."""
    parts = [f"program {program.name}"]
    parts.extend(render_function(f) for f in program.functions.values())
    return "\n\n".join(parts) + "\n"


def kernel_listing(
    fn: n.Function, facts: KernelFacts, func_id: int, platform: str, sim_backend: str | None,
    loops: list[str] | tuple[str, ...] = (), tasks: str = "",
) -> str:
    """The kernel listing; ``loops`` are the batching decisions (compiler/batching.py),
    ``tasks`` whether it has a task-batched variant (compiler/codegen_tasks.py)."""
    lines = [
        header(f"kernel {fn.name}", platform, sim_backend),
        f"signature: {signature(fn)}",
        f"func_id: {func_id}",
        f"core type: {facts.core_type}",
        "",
        "memory map (name, space, type, bytes, offset, live range in statement points, line):",
    ]
    lines += [f"  {buffer_row(b)}" for b in sorted(facts.buffers, key=lambda b: (b.space, b.offset, b.start))]
    if not facts.buffers:
        lines.append("  (no tiles)")
    if facts.peak:
        lines.append("peak bytes: " + ", ".join(f"{s} {v}" for s, v in sorted(facts.peak.items())))
    lines += ["", "moves:"]
    for m in facts.moves:
        how = "inserted" if m.inserted else "explicit"
        route = f", cross-core {m.route}" if m.route else ""
        lines.append(f"  line {m.line}: {m.var} {m.src} -> {m.dst} ({how}{route})")
    if not facts.moves:
        lines.append("  (none)")
    lines += ["", "cast chains:"]
    for line, var, chain in facts.casts:
        lines.append(f"  line {line}: {var} {' -> '.join(chain)}")
    if not facts.casts:
        lines.append("  (none)")
    lines += ["", "batched loops:"]
    lines += [f"  {d}" for d in loops] or ["  (no candidate loops)"]
    if tasks:
        lines += ["", f"task-batched variant: {tasks}"]
    lines += ["", "ops (source line | statement):", *render_body(fn.body)]
    return "\n".join(lines) + "\n"


def orchestration_listing(
    program: n.Program,
    entry: n.Function,
    func_ids: dict[str, int],
    facts: dict[str, KernelFacts],
    platform: str,
    sim_backend: str | None,
) -> str:
    lines = [
        header(f"orchestration of {program.name} (entry {entry.name})", platform, sim_backend),
        f"signature: {signature(entry)}",
        "",
        "tasks (one line per submission site):",
    ]

    def walk(body: list[n.Stmt], loops: list[str]) -> None:
        for s in body:
            for e in _calls_of(s):
                if isinstance(e, n.FuncCall) and e.callee in func_ids:
                    callee = program.functions[e.callee]
                    args = ", ".join(
                        f"{render_expr(a)}:{p.direction.value}" for a, p in zip(e.args, callee.params)
                    )
                    where = f" in loop over {', '.join(loops)}" if loops else ""
                    lines.append(
                        f"  task {e.callee} func_id={func_ids[e.callee]} "
                        f"core={facts[e.callee].core_type} args=({args}) line "
                        f"{e.span.line if e.span else '?'}{where}"
                    )
            if isinstance(s, n.For):
                walk(s.body, [*loops, s.var.name])
            elif isinstance(s, n.If):
                walk(s.then_body, loops)
                walk(s.else_body, loops)

    walk(entry.body, [])
    lines += ["", "body:", *render_body(entry.body)]
    return "\n".join(lines) + "\n"


def _calls_of(s: n.Stmt) -> list[n.Expr]:
    return [e for top in stmt_exprs(s) for e in iter_exprs(top)]
