"""Memory-space inference and move insertion (docs/design/language.md §14, docs/design/checks.md
§4).

Each op's `MemRule` says where its tile operands must live and where its result
lands.  A retargetable producer (a load or create_tile without `target_memory`)
takes the space its consumers demand, a load clamped to the arch's load targets;
where a value's space still differs from what a consumer accepts, `tile.move`
calls are inserted along the shortest legal path of the arch's move graph plus
its cross-core (C<->V) transfers.  Explicit spaces are never overridden.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from pytest_pypto.arch import ArchSpec
from pytest_pypto.compiler.passes import MoveRecord, PassContext
from pytest_pypto.compiler.structure import kernels
from pytest_pypto.compiler.walk import (
    NameGen,
    Scope,
    all_names,
    expr_list,
    is_tile,
    space_name,
    stmt_line,
)
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.errors import ArchSupportError, MemorySpaceError
from pytest_pypto.ir.ops.memory import MOVE_OP
from pytest_pypto.ir.registry import VALUE_KINDS, OpSpec
from pytest_pypto.ir.types import TileType

# ------------------------------------------------------------------ move graph


def move_edges(arch: ArchSpec) -> dict[str, list[str]]:
    """On-chip moves: the arch's graph (DDR excluded: that is load/store) plus C<->V transfers."""
    edges: dict[str, list[str]] = {}
    for src, dsts in arch.move_graph.items():
        if src != "DDR":
            edges.setdefault(src, []).extend(d for d in dsts if d != "DDR")
    for src, dst in arch.cross_core_moves:
        if dst not in edges.setdefault(src, []):
            edges[src].append(dst)
    return edges


def is_legal_move(arch: ArchSpec, src: str, dst: str) -> bool:
    return dst in move_edges(arch).get(src, [])


def is_cross_core(arch: ArchSpec, src: str, dst: str) -> bool:
    return (src, dst) in arch.cross_core_moves


def shortest_path(arch: ArchSpec, src: str, targets: tuple[str, ...]) -> list[str] | None:
    """Spaces after ``src`` on a shortest path to any target (ties: earlier target wins)."""
    edges = move_edges(arch)
    best: list[str] | None = None
    for target in targets:
        prev: dict[str, str | None] = {src: None}
        queue = deque([src])
        while queue:
            here = queue.popleft()
            if here == target:
                break
            for nxt in edges.get(here, []):
                if nxt not in prev:
                    prev[nxt] = here
                    queue.append(nxt)
        if target not in prev:
            continue
        path = [target]
        while prev[path[-1]] is not None and prev[path[-1]] != src:
            path.append(prev[path[-1]])  # type: ignore[arg-type]
        path.reverse()
        if target == src:
            path = []
        if best is None or len(path) < len(best):
            best = path
    return best


def legal_moves_text(arch: ArchSpec, src: str) -> str:
    dsts = move_edges(arch).get(src, [])
    if not dsts:
        return "none"
    return ", ".join(f"{d} (cross-core transfer)" if is_cross_core(arch, src, d) else d for d in dsts)


# ------------------------------------------------------------------ inference


@dataclass(eq=False)
class Val:
    """One tile value's definition, as memory-space inference sees it."""

    name: str
    type: TileType
    space: str | None = None
    retarget: str | None = None  # "load" | "create" when the producer may be steered
    alias_of: Val | None = None
    demands: list[tuple[str, bool]] = field(default_factory=list)  # (space, from a move)
    final: TileType | None = field(default=None, init=False, repr=False)  # final_type's

    def root(self) -> Val:
        v = self
        while v.alias_of is not None:
            v = v.alias_of
        return v

    def resolved(self) -> str | None:
        return self.root().space

    def final_type(self) -> TileType:
        """``type`` in the resolved space (asked in phase C only, once spaces are fixed:
        one type object per value instead of one per use)."""
        got = self.final
        if got is None:
            got = self.final = self.type.with_(space=self.resolved())
        return got


def _value_params(spec: OpSpec) -> list[str]:
    return [p.name for p in spec.params if p.kind in VALUE_KINDS]


def _result_rule(spec: OpSpec) -> str | None:
    return spec.mem.result


def _is_load_like(spec: OpSpec) -> bool:
    return any(p.kind == "tensor" for p in spec.params)


class _Inference:
    def __init__(self, fn: n.Function, ctx: PassContext) -> None:
        self.fn = fn
        self.ctx = ctx
        self.arch = ctx.arch
        self.vals: dict[int, Val] = {}  # id(defining Var node) -> Val
        self.order: list[Val] = []
        self.names = NameGen(lambda: all_names(fn))

    # ---- phase A: definitions and demands
    def collect(self, body: list[n.Stmt], env: dict[str, Val]) -> None:
        for stmt in body:
            if isinstance(stmt, n.Assign):
                self._collect_assign(stmt, env)
            elif isinstance(stmt, n.For):
                for var, init in stmt.carried:
                    src = env.get(init.name) if isinstance(init, n.Var) else None
                    if src is not None:
                        self._define(var, env, Val(var.name, src.type, alias_of=src))
                self.collect(stmt.body, env)
                for res, (var, _) in zip(stmt.results, stmt.carried):
                    src = env.get(var.name)
                    if src is not None:
                        self._define(res, env, Val(res.name, src.type, alias_of=src))
            elif isinstance(stmt, n.If):
                then_env = Scope(env)
                self.collect(stmt.then_body, then_env)
                else_env = Scope(env)
                self.collect(stmt.else_body, else_env)
                yields = _final_yield(stmt.then_body)
                for i, res in enumerate(stmt.results):
                    value = yields[i] if i < len(yields) else None
                    src = then_env.get(value.name) if isinstance(value, n.Var) else None
                    if src is not None:
                        self._define(res, env, Val(res.name, src.type, alias_of=src))

    def _define(self, var: n.Var, env: dict[str, Val], val: Val) -> None:
        self.vals[id(var)] = val
        self.order.append(val)
        env[var.name] = val

    def _collect_assign(self, stmt: n.Assign, env: dict[str, Val]) -> None:
        value = stmt.value
        target = stmt.targets[0] if len(stmt.targets) == 1 else None
        if isinstance(value, n.Var):
            src = env.get(value.name)
            if src is not None and target is not None:
                self._define(target, env, Val(target.name, src.type, alias_of=src))
            return
        if not isinstance(value, n.Call) or value.op.partition(".")[0] != "tile":
            return
        spec = self.ctx.op(value)
        for param, accepted in spec.mem.operands.items():
            operand = value.arg(param)
            if isinstance(operand, n.Var) and operand.name in env and accepted:
                env[operand.name].root().demands.append((accepted[0], False))
        if value.op == MOVE_OP:
            operand = value.arg(_value_params(spec)[0])
            dst = space_name(value.arg("target_memory"))
            if isinstance(operand, n.Var) and operand.name in env and dst:
                env[operand.name].root().demands.append((dst, True))
        if target is None or not is_tile(value.type):
            return
        val = Val(target.name, value.type)  # type: ignore[arg-type]
        rule = _result_rule(spec)
        annotated = stmt.annotation.space if isinstance(stmt.annotation, TileType) else None
        if rule is None:
            pass
        elif rule.startswith("same:"):
            src_var = value.arg(rule[5:])
            if isinstance(src_var, n.Var) and src_var.name in env:
                val.alias_of = env[src_var.name]
        elif rule.startswith("attr:"):
            explicit = space_name(value.arg(rule[5:]))
            if explicit is not None:
                val.space = explicit
            elif annotated is not None:
                val.space = space_name(annotated)
            else:
                val.retarget = "load" if _is_load_like(spec) else "create"
        else:
            val.space = rule
        self._check_producer_space(value, spec, val)
        self._define(target, env, val)

    def _check_producer_space(self, call: n.Call, spec: OpSpec, val: Val) -> None:
        if val.space is None:
            return
        if not self.arch.has_space(val.space):
            raise ArchSupportError(
                f"Memory space {val.space} does not exist on the '{self.arch.name}' backend",
                call.span,
                hint="LeftScale/RightScale exist only on a5 (MX matmul)",
                arch=self.arch.name,
            )
        rule = spec.mem.result or ""
        if rule.startswith("attr:") and _is_load_like(spec) and val.space not in self.arch.load_targets:
            targets = " or ".join(self.arch.load_targets)
            path = shortest_path(self.arch, self.arch.load_targets[-1], (val.space,))
            hint = (
                f"load into pl.Mem.{self.arch.load_targets[-1]}, then "
                f"pl.move(..., target_memory=pl.Mem.{val.space})"
                if path
                else f"load into pl.Mem.{self.arch.load_targets[0]}"
            )
            raise MemorySpaceError(
                f"The operator {call.op} cannot target {val.space}: a load lands only in {targets}",
                call.span,
                hint=hint,
                arch=self.arch.name,
            )

    # ---- phase B: steer retargetable producers
    def resolve(self) -> None:
        for val in self.order:
            if val.alias_of is not None or val.retarget is None:
                continue
            if val.retarget == "load":
                val.space = self._steer_load(val.demands)
            else:
                plain = [s for s, from_move in val.demands if not from_move]
                val.space = plain[0] if plain else "Vec"

    def _steer_load(self, demands: list[tuple[str, bool]]) -> str:
        targets = self.arch.load_targets
        if not demands:
            return "Vec" if "Vec" in targets else targets[0]
        want = demands[0][0]
        if want in targets and not demands[0][1]:
            return want
        best, best_len = targets[0], None
        for t in targets:
            if t == want and demands[0][1]:
                continue  # a move needs a different source space
            path = shortest_path(self.arch, t, (want,))
            if path is not None and (best_len is None or len(path) < best_len):
                best, best_len = t, len(path)
        return best

    # ---- phase C: rewrite types, insert moves
    def rewrite(self, body: list[n.Stmt], env: dict[str, Val], yield_spaces: list[str | None]) -> list[n.Stmt]:
        out: list[n.Stmt] = []
        for stmt in body:
            if isinstance(stmt, n.Assign):
                self._fix_uses(stmt.value, env)
                if isinstance(stmt.value, n.Call) and stmt.value.op.partition(".")[0] == "tile":
                    target = stmt.targets[0] if len(stmt.targets) == 1 else None
                    self._rewrite_call(stmt.value, env, out, target)
                self._bind_targets(stmt.targets, env, stmt.value)
            elif isinstance(stmt, n.ExprStmt):
                self._fix_uses(stmt.expr, env)
                if isinstance(stmt.expr, n.Call) and stmt.expr.op.partition(".")[0] == "tile":
                    self._rewrite_call(stmt.expr, env, out, None)
            elif isinstance(stmt, n.For):
                for var, init in stmt.carried:
                    self._fix_uses(init, env)
                    self._bind_targets((var,), env)
                spaces = [self._space_of(var, env) for var, _ in stmt.carried]
                stmt.body = self.rewrite(stmt.body, Scope(env), spaces)
                self._bind_targets(stmt.results, env)
            elif isinstance(stmt, n.If):
                self._fix_uses(stmt.cond, env)
                spaces = [self._space_of(r, env, lookup_def=True) for r in stmt.results]
                stmt.then_body = self.rewrite(stmt.then_body, Scope(env), spaces)
                stmt.else_body = self.rewrite(stmt.else_body, Scope(env), spaces)
                self._bind_targets(stmt.results, env)
            elif isinstance(stmt, n.Yield):
                values = []
                for i, v in enumerate(stmt.values):
                    self._fix_uses(v, env)
                    want = yield_spaces[i] if i < len(yield_spaces) else None
                    if isinstance(v, n.Var) and v.name in env and want is not None:
                        v = self._ensure(v, env, (want,), stmt, out, consumer=None)
                    values.append(v)
                stmt.values = tuple(values)
            elif isinstance(stmt, n.Return):
                for v in stmt.values:
                    self._fix_uses(v, env)
            out.append(stmt)
        return out

    def _space_of(self, var: n.Var, env: dict[str, Val], lookup_def: bool = False) -> str | None:
        val = self.vals.get(id(var)) if lookup_def else env.get(var.name)
        if val is None:
            val = self.vals.get(id(var))
        return val.resolved() if val is not None else None

    def _bind_targets(self, targets: tuple[n.Var, ...], env: dict[str, Val], value: n.Expr | None = None) -> None:
        for t in targets:
            val = self.vals.get(id(t))
            if val is None:
                env.pop(t.name, None)
                continue
            env[t.name] = val
            t.type = val.final_type()
            if isinstance(value, n.Call) and len(targets) == 1:
                value.type = t.type

    def _fix_uses(self, expr: n.Expr, env: dict[str, Val]) -> None:
        for e in expr_list(expr):
            if type(e) is n.Var:  # (a Var has no subclasses)
                val = env.get(e.name)  # a Val, or None when the name is not in env
                if val is not None:
                    e.type = val.final_type()

    def _rewrite_call(
        self, call: n.Call, env: dict[str, Val], out: list[n.Stmt], target: n.Var | None
    ) -> None:
        spec = self.ctx.op(call)
        facts = self.ctx.facts(self.fn.name)
        if call.op == MOVE_OP:
            operand = call.arg(_value_params(spec)[0])
            dst = space_name(call.arg("target_memory"))
            src = env[operand.name].resolved() if isinstance(operand, n.Var) and operand.name in env else None
            if src is not None and dst is not None:
                self._check_explicit_move(call, src, dst)
                facts.moves.append(MoveRecord(stmt_line(call), operand.name, src, dst, inserted=False))
        rule = spec.mem.result or ""
        if rule.startswith("attr:"):
            key = rule[5:]
            val = self.vals.get(id(target)) if target is not None else None
            if val is not None and val.space is not None and call.arg(key) is None:
                call.set_arg(key, val.space)
        new_args = []
        for key, value in call.args:
            accepted = spec.mem.operands.get(key)
            if accepted and isinstance(value, n.Var) and value.name in env:
                value = self._ensure(value, env, tuple(accepted), call, out, consumer=(call, key))
            new_args.append((key, value))
        call.args = tuple(new_args)

    def _ensure(
        self,
        var: n.Var,
        env: dict[str, Val],
        accepted: tuple[str, ...],
        at: n.Node,
        out: list[n.Stmt],
        consumer: tuple[n.Call, str] | None,
    ) -> n.Var:
        """``var`` in one of ``accepted`` spaces, inserting moves before ``at`` if needed."""
        val = env[var.name]
        src = val.resolved()
        if src is None or src in accepted:
            return var
        path = shortest_path(self.arch, src, accepted)
        if path is None:
            self._no_path(src, accepted, at, consumer)
        facts = self.ctx.facts(self.fn.name)
        current = var
        for hop in path or []:
            spec = self.ctx.registry[MOVE_OP]
            new_name = self.names.fresh(f"{var.name}_{hop.lower()}")
            ttype = val.type.with_(space=hop)
            args = []
            for p in spec.params:
                if p.kind in VALUE_KINDS and not args:
                    args.append((p.name, n.Var(current.name, type=current.type, span=at.span)))
                elif p.name == "target_memory":
                    args.append((p.name, hop))
            move = n.Call(MOVE_OP, tuple(args), type=ttype, span=at.span)
            target = n.Var(new_name, type=ttype, span=at.span)
            new_val = Val(new_name, val.type, space=hop)
            self.vals[id(target)] = new_val
            self.order.append(new_val)
            out.append(n.Assign((target,), move, span=at.span))
            facts.moves.append(
                MoveRecord(stmt_line(at), var.name, current.type.space or src, hop, inserted=True)
            )
            env[new_name] = new_val
            current = n.Var(new_name, type=ttype, span=var.span)
        return current

    def _no_path(
        self, src: str, accepted: tuple[str, ...], at: n.Node, consumer: tuple[n.Call, str] | None
    ) -> None:
        arch = self.arch
        wanted = " or ".join(accepted)
        if consumer is None:
            message = f"A loop-carried or merged tile must stay in {wanted}, but got {src}"
        else:
            call, param = consumer
            message = f"The operator {call.op} requires a tile in {wanted} for '{param}', but got {src}"
        raise MemorySpaceError(
            f"{message}; no sequence of moves reaches {wanted} from {src} on the "
            f"'{arch.name}' backend",
            at.span,
            hint=f"legal moves from {src}: {legal_moves_text(arch, src)}",
            arch=arch.name,
        )

    def _check_explicit_move(self, call: n.Call, src: str, dst: str) -> None:
        arch = self.arch
        if src == dst:
            raise MemorySpaceError(
                f"tile.move from {src} to {dst}: the tile is already in {dst}",
                call.span,
                hint="drop the pl.move",
                arch=arch.name,
            )
        if not arch.has_space(dst):
            raise ArchSupportError(
                f"Memory space {dst} does not exist on the '{arch.name}' backend",
                call.span,
                hint="LeftScale/RightScale exist only on a5 (MX matmul)",
                arch=arch.name,
            )
        if is_legal_move(arch, src, dst):
            return
        path = shortest_path(arch, src, (dst,))
        hint = (
            f"move to pl.Mem.{path[0]} first"
            if path
            else f"no sequence of moves reaches {dst} from {src}"
        )
        raise MemorySpaceError(
            f"tile.move has no path from {src} to {dst} on '{arch.name}'; "
            f"legal moves from {src}: {legal_moves_text(arch, src)}",
            call.span,
            hint=hint,
            arch=arch.name,
        )


def _final_yield(body: list[n.Stmt]) -> tuple[n.Expr, ...]:
    if body and isinstance(body[-1], n.Yield):
        return body[-1].values
    return ()


def infer_memory_spaces(program: n.Program, ctx: PassContext) -> n.Program:
    """Fix every tile's memory space and insert the moves consumers need."""
    for fn in kernels(program):
        inf = _Inference(fn, ctx)
        inf.collect(fn.body, {})
        inf.resolve()
        fn.body = inf.rewrite(fn.body, {}, [])
    return program
