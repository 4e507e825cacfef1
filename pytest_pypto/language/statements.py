# SPDX-License-Identifier: Apache-2.0
"""Statements of a kernel body: assignments (SSA renaming), calls, `return`, `with`.

Loops and conditionals live in `control.py`.  The environment maps each source name
to its current SSA `Var` or parse-time constant; rebinding a name makes a new `Var`
(`out`, `out_1`, ...), or is an error under `strict_ssa=True`.
"""

from __future__ import annotations

import ast
from typing import Any

from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, ParserTypeError
from pytest_pypto.ir.nodes import Assign, Call, DynDim, Expr, ExprStmt, Return, Stmt, Var
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import DynVar, ScalarType, TileType, TupleType, Type
from pytest_pypto.language import (
    annots,
    calls,
    cluster,
    control,
    cross_core,
    launch,
    loops,
    outline,
    returns,
    scalars,
    scheduling,
    split_aiv,
)
from pytest_pypto.language.arrays import write_element
from pytest_pypto.language.context import FunctionContext, Unavailable
from pytest_pypto.language.expressions import ExprParser
from pytest_pypto.language.subscripts import reject_strict, write_subscript
from pytest_pypto.language.surface import DslFunction, at

# Nested for / if blocks of one function (an elif is an if nested in the else arm,
# in the IR and in the generated code alike).  Deeper nesting is a ParserSyntaxError:
# the IR passes walk blocks recursively and the generated kernel module, one
# indentation level per block, must stay under Python's limit of 100.
MAX_BLOCK_DEPTH = 64


class YieldInfo:
    """A trailing `targets = pl.yield_(values)` of a loop body or if arm."""

    def __init__(self, values: list[Expr], targets: list[str] | None, node: ast.stmt) -> None:
        self.values = values
        self.targets = targets
        self.node = node


class BodyParser:
    """Parses one block of statements into `out`, updating `env`."""

    def __init__(self, ctx: FunctionContext, env: dict[str, Any], out: list[Stmt]) -> None:
        self.ctx = ctx
        self.env = env
        self.out = out
        self.ep = ExprParser(ctx, env, out)
        self.last_bound: dict[str, ast.AST] = {}
        self.returned: tuple[list[Expr], ast.Return] | None = None
        self.terminated = False  # the block ended in break/continue (loops.py)

    def child(self, env: dict[str, Any], out: list[Stmt]) -> BodyParser:
        return BodyParser(self.ctx, env, out)

    # ---------------------------------------------------------------- blocks
    def block(
        self, stmts: list[ast.stmt], *, allow_yield: bool = False, allow_return: bool = False
    ) -> YieldInfo | None:
        ctx = self.ctx
        if ctx.block_depth > MAX_BLOCK_DEPTH:  # the function body itself is depth 0
            raise ctx.error(
                ParserSyntaxError,
                f"blocks nested more than {MAX_BLOCK_DEPTH} levels deep, over the nesting "
                "limit of kernel code (each for and if body is a level, an elif too)",
                stmts[0] if stmts else None,
                hint="flatten the elif chain, or split the kernel into several functions",
            )
        if allow_return:
            stmts = returns.lift(ctx, stmts)  # `return` inside if arms
        ctx.block_depth += 1
        try:
            return self._block(stmts, allow_yield=allow_yield, allow_return=allow_return)
        finally:
            ctx.block_depth -= 1

    def _block(
        self, stmts: list[ast.stmt], *, allow_yield: bool, allow_return: bool
    ) -> YieldInfo | None:
        for i, stmt in enumerate(stmts):
            last = i == len(stmts) - 1
            if self.terminated:
                raise self.ctx.error(
                    ParserSyntaxError,
                    "this statement is unreachable: it follows a break or continue in the "
                    "same block",
                    stmt,
                    hint="remove it, or move the break/continue into an if",
                )
            if self.is_yield(stmt):
                if not (allow_yield and last):
                    raise self.ctx.error(
                        ParserSyntaxError,
                        "pl.yield_ must be the last statement of a loop body or an if arm",
                        stmt,
                    )
                return self.parse_yield(stmt)
            if isinstance(stmt, ast.Return):
                if not (allow_return and last):
                    raise self.ctx.error(
                        ParserSyntaxError,
                        "return must be the last statement of the function body",
                        stmt,
                    )
                self.parse_return(stmt)
                continue
            self.ctx.continuations.append((stmts, i))
            try:
                self.stmt(stmt)
            finally:
                self.ctx.continuations.pop()
        return None

    def is_yield(self, stmt: ast.stmt) -> bool:
        call = stmt.value if isinstance(stmt, (ast.Expr, ast.Assign, ast.AnnAssign)) else None
        if not isinstance(call, ast.Call):
            return False
        func = call.func
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if name != "yield_":
            return False
        target = self.ep.eval(func)
        return isinstance(target, DslFunction) and target.name == "yield_"

    def parse_yield(self, stmt: ast.stmt) -> YieldInfo:
        call = stmt.value  # type: ignore[attr-defined]
        if call.keywords:
            raise self.ctx.error(InvalidOperationError, "pl.yield_ takes positional values", call)
        values = [self.materialize(self.ep.eval(a), a) for a in call.args]
        targets = None
        if isinstance(stmt, ast.AnnAssign):  # `r: pl.Scalar[pl.INT64] = pl.yield_(v)`
            if not isinstance(stmt.target, ast.Name) or len(values) != 1:
                raise self.ctx.error(
                    ParserSyntaxError, "an annotated pl.yield_ binds one name to one value", stmt
                )
            ann, _ = annots.to_type(self.ctx, self.ep.eval(stmt.annotation), stmt.annotation)
            values[0] = scalars.retype_index(values[0], ann, self.ctx.span(stmt.value))
            annots.check(self.ctx, ann, values[0].type, f"'{stmt.target.id}'", stmt)
            return YieldInfo(values, [stmt.target.id], stmt)
        if isinstance(stmt, ast.Assign):
            if len(stmt.targets) != 1:
                raise self.ctx.error(ParserSyntaxError, "chained assignment", stmt)
            targets = self.target_names(stmt.targets[0])
            if len(targets) != len(values):
                raise self.ctx.error(
                    ParserTypeError,
                    f"pl.yield_ yields {len(values)} values into {len(targets)} targets",
                    stmt,
                )
        return YieldInfo(values, targets, stmt)

    def target_names(self, target: ast.expr) -> list[str]:
        if isinstance(target, ast.Name):
            return [target.id]
        if isinstance(target, (ast.Tuple, ast.List)) and all(
            isinstance(e, ast.Name) for e in target.elts
        ):
            return [e.id for e in target.elts]  # type: ignore[attr-defined]
        raise self.ctx.error(
            ParserSyntaxError, "assignment targets must be names or a tuple of names", target
        )

    # ------------------------------------------------------------ statements
    def stmt(self, stmt: ast.stmt) -> None:
        method = getattr(self, f"_{type(stmt).__name__}", None)
        if method is None:
            handler = getattr(control, f"stmt_{type(stmt).__name__}", None)
            if handler is not None:
                handler(self, stmt)
                return
            word = type(stmt).__name__.lower()
            raise self.ctx.error(
                ParserSyntaxError, f"'{word}' statements are not supported in kernel code", stmt
            )
        method(stmt)

    def _Pass(self, stmt: ast.Pass) -> None:
        return None

    def _Expr(self, stmt: ast.Expr) -> None:
        if isinstance(stmt.value, ast.Constant) and isinstance(stmt.value.value, str):
            return  # docstring
        value = self.ep.eval(stmt.value)
        if isinstance(value, (Call, Expr)) and not isinstance(value, Var):
            self.out.append(ExprStmt(value, span=self.ctx.span(stmt)))

    def _Assign(self, stmt: ast.Assign) -> None:
        if len(stmt.targets) != 1:
            raise self.ctx.error(
                ParserSyntaxError, "chained assignment (a = b = ...) is not supported", stmt
            )
        target = stmt.targets[0]
        if isinstance(target, ast.Subscript):
            self.subscript_write(target, stmt.value, stmt)
            return
        value = self.ep.eval(stmt.value)
        names = self.target_names(target)
        if isinstance(target, ast.Name):
            self.bind(names[0], value, stmt)
        else:
            self.bind_many(names, value, stmt)

    def _AnnAssign(self, stmt: ast.AnnAssign) -> None:
        if not isinstance(stmt.target, ast.Name):
            raise self.ctx.error(ParserSyntaxError, "only names can be annotated", stmt)
        if stmt.value is None:
            raise self.ctx.error(
                ParserSyntaxError, "an annotation needs a value (x: T = expr)", stmt
            )
        name = stmt.target.id
        ann, _ = annots.to_type(self.ctx, self.ep.eval(stmt.annotation), stmt.annotation)
        value = self.ep.eval(cross_core.typed_pop(self.ep, stmt))
        if scalars.is_number(value) and isinstance(ann, ScalarType):
            if scalars.category(scalars.literal_dtype(value)) == scalars.category(ann.dtype):
                value = scalars.make_const(value, ann.dtype, self.ctx.span(stmt.value))
        value = scalars.retype_index(value, ann, self.ctx.span(stmt.value))
        value_type = self.type_of(value)
        if isinstance(ann, TileType) and ann.space and isinstance(value, Call):
            self.apply_space(value, ann.space, name, stmt)
            value_type = value.type
        annots.check(self.ctx, ann, value_type, f"'{name}'", stmt)
        self.bind(name, value, stmt, annotation=ann)

    def _AugAssign(self, stmt: ast.AugAssign) -> None:
        if not isinstance(stmt.target, ast.Name):
            raise self.ctx.error(ParserSyntaxError, "augmented assignment needs a name", stmt)
        op = scalars.BINOPS.get(type(stmt.op))
        if op is None:
            raise self.ctx.error(ParserSyntaxError, "unsupported augmented operator", stmt)
        current = self.ep.eval(ast.Name(stmt.target.id, ast.Load(), **_pos(stmt.target)))
        value = scalars.binop(self.ctx, op, current, self.ep.eval(stmt.value), stmt)
        self.bind(stmt.target.id, value, stmt)

    def _With(self, stmt: ast.With) -> None:
        if scheduling.is_manual_scope(self, stmt):
            scheduling.parse_manual_scope(self, stmt)
            return
        if cluster.is_cluster(self, stmt):
            cluster.parse_cluster(self, stmt)
            return
        kind = outline.region_kind(self, stmt)  # pl.manual_scope ... raise or record here
        if kind is at:
            outline.parse_at(self, stmt)
            return
        if kind is not None:
            launch.parse_spmd_with(self, stmt)
            return
        raise self.ctx.error(
            ParserSyntaxError,
            "with statements are not supported in kernel code (only with pl.at(...) and "
            "with pl.spmd(...))",
            stmt,
        )

    def _For(self, stmt: ast.For) -> None:
        if launch.is_spmd_loop(self, stmt):
            launch.parse_spmd_loop(self, stmt)
            return
        if split_aiv.is_split_loop(self, stmt):
            split_aiv.parse_split_loop(self, stmt)
            return
        control.stmt_For(self, stmt)

    def _While(self, stmt: ast.While) -> None:
        loops.stmt_While(self, stmt)

    def _Break(self, stmt: ast.stmt) -> None:
        loops.jump(self, stmt)

    _Continue = _Break

    def return_values(self, stmt: ast.Return) -> list[Any]:
        """The values ``stmt`` returns; a call giving several values gives each of them."""
        if stmt.value is None:
            return []
        if isinstance(stmt.value, ast.Tuple):
            return [self.ep.eval(e) for e in stmt.value.elts]
        value = self.ep.eval(stmt.value)
        if isinstance(value, Expr) and isinstance(value.type, TupleType):
            span = self.ctx.span(stmt)
            items = [Var(self.ctx.namer.fresh("ret"), type=t, span=span)
                     for t in value.type.items]
            self.out.append(Assign(tuple(items), value, span=span))
            return items
        return [value]

    def parse_return(self, stmt: ast.Return) -> None:
        exprs = [self.materialize(v, stmt) for v in self.return_values(stmt)]
        self.returned = (exprs, stmt)
        self.out.append(Return(tuple(exprs), span=self.ctx.span(stmt)))

    # --------------------------------------------------------------- binding
    def bind(
        self, name: str, value: Any, node: ast.AST, annotation: Type | None = None
    ) -> None:
        """Bind ``name`` to a value: an Assign for IR expressions, nothing for constants."""
        self.check_rebind(name, node)
        self.last_bound[name] = node
        if isinstance(value, Var):
            if isinstance(getattr(node, "value", None), ast.Call):
                scheduling.untag(self.ctx, value)  # a call's result: a new, untagged value
            self.env[name] = value
            return
        if isinstance(value, Expr):
            if value.type is None:
                raise self.ctx.error(
                    ParserTypeError, f"the value assigned to '{name}' produces nothing", node
                )
            var = Var(self.ctx.namer.fresh(name), type=value.type, span=self.ctx.span(node))
            self.out.append(
                Assign((var,), value, annotation=annotation, span=self.ctx.span(node))
            )
            self.env[name] = var
            return
        if value is None:
            assigned = getattr(node, "value", None)
            if isinstance(assigned, ast.Constant) and assigned.value is None \
                    and scheduling.in_orchestration(self.ctx):
                # `prev_tid = None`: the TaskId of no task (docs/design/scheduling.md §2)
                self.bind(name, scheduling.invalid_task_id(self.ctx.span(node)), node)
                return
            raise self.ctx.error(
                ParserTypeError, f"the value assigned to '{name}' produces nothing", node
            )
        self.env[name] = value

    def bind_many(self, names: list[str], value: Any, node: ast.AST) -> None:
        if isinstance(value, Expr) and isinstance(value.type, TupleType):
            items = value.type.items
            if len(items) != len(names):
                raise self.ctx.error(
                    ParserTypeError,
                    f"cannot unpack {len(items)} values into {len(names)} names",
                    node,
                )
            targets = []
            for name, t in zip(names, items):
                self.check_rebind(name, node)
                self.last_bound[name] = node
                var = Var(self.ctx.namer.fresh(name), type=t, span=self.ctx.span(node))
                targets.append(var)
                self.env[name] = var
            self.out.append(Assign(tuple(targets), value, span=self.ctx.span(node)))
            scheduling.note_submit(self.ctx, value, targets)  # predicate= producers
            return
        if isinstance(value, (tuple, list)) and len(value) == len(names):
            for name, v in zip(names, value):
                self.bind(name, v, node)
            return
        raise self.ctx.error(
            ParserTypeError, f"cannot unpack this value into {len(names)} names", node
        )

    def check_rebind(self, name: str, node: ast.AST) -> None:
        if not self.ctx.strict_ssa:
            return
        if name in self.env and not isinstance(self.env[name], Unavailable):
            raise self.ctx.error(
                ParserSyntaxError,
                f"'{name}' is already bound; strict_ssa=True rejects rebinding",
                node,
                hint=f"give the new value a new name (e.g. {name}_next)",
            )

    def materialize(self, value: Any, node: ast.AST) -> Expr:
        """A value as an IR expression (constants become Const / DynDim)."""
        if isinstance(value, Expr):
            return self.ep.hoist(value, node)
        if isinstance(value, DynVar):
            return DynDim(value, type=ScalarType(scalars.dtypes.INDEX), span=self.ctx.span(node))
        if scalars.is_number(value):
            return scalars.make_const(value, span=self.ctx.span(node))
        if value is None and isinstance(node, ast.Constant) \
                and scheduling.in_orchestration(self.ctx):  # a None TaskId seed
            return scheduling.invalid_task_id(self.ctx.span(node))
        raise self.ctx.error(
            ParserTypeError,
            f"{value!r} is a parse-time value, not a run-time one: it cannot be carried, "
            "merged or returned",
            node,
        )

    def type_of(self, value: Any) -> Type | None:
        if isinstance(value, Expr):
            return value.type
        if scalars.is_number(value):
            return ScalarType(scalars.literal_dtype(value))
        return None

    # ------------------------------------------------------- special writes
    def subscript_write(self, target: ast.Subscript, value_node: ast.expr, stmt: ast.stmt) -> None:
        reject_strict(self.ep, stmt)
        if not isinstance(target.value, ast.Name):
            raise self.ctx.error(
                ParserSyntaxError, "subscript writes need a named target (dst[...] = v)", target
            )
        base = self.ep.eval(target.value)
        kind = getattr(getattr(base, "type", None), "kind", None)
        if not isinstance(base, Expr) or kind not in ("Tile", "Tensor", "Array"):
            raise self.ctx.error(
                ParserTypeError, "only tiles, tensors and arrays take subscript writes", target
            )
        if kind == "Array":
            call = write_element(self.ep, base, target, self.ep.eval(value_node), value_node)
        else:
            call = write_subscript(self.ep, base, target, self.ep.eval(value_node), value_node)
        if call.type is None:
            self.out.append(ExprStmt(call, span=self.ctx.span(stmt)))
        else:
            self.bind(target.value.id, call, stmt)

    def apply_space(self, call: Call, space: str, name: str, node: ast.AST) -> None:
        """A Tile annotation's memory space: retarget a movable producer, else must agree."""
        spec = REGISTRY.get(call.op) if call.op in REGISTRY else None
        rule = spec.mem.result if spec else None
        if spec and rule and rule.startswith("attr:"):
            param = rule[len("attr:"):]
            if call.arg(param) is None:
                call.set_arg(param, space)
                call.type = calls.run_type_rule(self.ctx, spec, calls.call_info(spec, call), node)
                if isinstance(call.type, TileType) and call.type.space is None:
                    call.type = call.type.with_(space=space)
                return
        fixed = getattr(call.type, "space", None)
        if fixed is None and rule and not rule.startswith(("attr:", "same:")):
            fixed = rule
        if fixed is None and rule and rule.startswith("same:"):
            operand = call.arg(rule[len("same:"):])
            fixed = getattr(getattr(operand, "type", None), "space", None)
        if fixed is not None and fixed != space:
            raise self.ctx.error(
                ParserTypeError,
                f"Type annotation for '{name}' says memory space {space}, but the value is in "
                f"{fixed}",
                node,
                hint=f"annotate it as {annots.spelling(call.type)[:-1]}, pl.Mem.{fixed}] "
                f"or pl.move it to {space}",
            )


def _pos(node: ast.AST) -> dict[str, int]:
    return {
        "lineno": node.lineno,  # type: ignore[attr-defined]
        "col_offset": node.col_offset,  # type: ignore[attr-defined]
    }
