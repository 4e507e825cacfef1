# SPDX-License-Identifier: Apache-2.0
"""AutoL0: a hand-written Mat-operand matmul larger than L0 is cut into L0 tiles
(docs/design/checks.md §7a).

A ``tile.matmul``, ``tile.matmul_acc`` or ``tile.matmul_bias`` whose matrix operands are
static 2-D tiles in Mat (the bias in Mat or Bias) is given the tile ``(m, n, k)`` of
`compiler/l0_chooser.py`.  When that is the whole problem, nothing changes.  Otherwise:

* the output fits L0C (``m == M``, ``n == N``): the K axis is cut; each block extracts
  ``[M, k]`` of the left operand into Left and ``[k, N]`` of the right into Right, the
  first block starts the accumulator (``matmul``, or ``matmul_bias`` so the bias is added
  once), the others accumulate (``matmul_acc``); two or more full blocks are a two-stage
  ``pl.pipeline(0, K', k)`` carrying a fresh Acc tile (block 0 starts it in an
  ``if ko == 0`` branch) or the caller's accumulator (every block accumulates); a K that
  ``k`` does not divide ends with a narrower last block after the loop;
* the output does not fit (a fresh ``matmul`` or ``matmul_bias`` whose only use is one
  ``tile.store``): the output is cut into ``[m, n]`` tiles (a narrower last row and column
  of tiles where ``m``/``n`` do not divide), each reduced over K as above and stored
  straight into its window of the store's tensor, the stores chained; a Mat bias is read
  per tile as its ``[1, n]`` window;
* the output (fitting L0C or not) has one use, a ``pl.cast(c, BF16 or FP16, mode="rint")``
  whose every use is a matmul operand: the tiles are written, converted with round half to
  even (what the cube's Acc -> Mat write-back does), into a scratch of the cast dtype,
  which is read whole into Mat in place of the cast (and may be cut in turn).

The chooser may pick any loop order (A-, B- or output-stationary) but one accumulator at
a time: the generated code holds one ``[m, n]`` Acc tile.

A Vec left operand of ``matmul``/``matmul_acc`` is moved to Mat once, before its blocks
are extracted; its output is only cut along K.  Everything else is left as written (a Vec
right or a Left/Right operand, a dynamic or partly valid shape, a K off the cube fractal,
an accumulator in another use, a Bias-resident bias that would need cutting along N); if
it does not fit, the capacity check reports it at the user's line.  Generated statements
carry the span of the user's matmul.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_pypto.compiler.capacity import tile_bytes
from pytest_pypto.compiler.l0_chooser import L0TileResult, choose_l0_tile, config_for
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.structure import kernels
from pytest_pypto.compiler.tensor_valid import combine
from pytest_pypto.compiler.typecheck import call_info, convert_rule_error
from pytest_pypto.compiler.walk import NameGen, all_names, iter_stmts, rewrite_bodies, stmt_uses
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.casts import mode_name
from pytest_pypto.ir.dtypes import BOOL, INDEX
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.ops.cast import CAST_OP
from pytest_pypto.ir.ops.memory import LOAD_OP, MOVE_OP, STORE_OP
from pytest_pypto.ir.ops.tensor_level import LOCAL_OP
from pytest_pypto.ir.registry import OpRuleError
from pytest_pypto.ir.types import ScalarType, TileType

DBC_ATTR = "pipeline_double_buffer_c"  # PyPTO's loop attr for the alternating accumulators
MATMUL_OPS = ("tile.matmul", "tile.matmul_acc", "tile.matmul_bias")
OPERAND_BYTES = {"INT8": 1, "FP16": 2, "BF16": 2, "FP32": 4}

Index = Any  # an int or an INDEX-typed Expr
_CHOSEN: dict[tuple[Any, ...], tuple[Any, L0TileResult | None]] = {}


@dataclass(frozen=True)
class _Plan:
    """One matmul to cut: its operands, the problem and the chosen tile."""

    stmt: n.Assign
    call: n.Call
    lhs: n.Var
    rhs: n.Var
    acc: n.Var | None
    bias: n.Var | None
    M: int  # noqa: N815
    N: int  # noqa: N815
    K: int  # noqa: N815
    m: int
    n: int
    k: int
    dbc: bool = False  # the chooser's two alternating accumulators

    @property
    def k_only(self) -> bool:
        return self.m == self.M and self.n == self.N


def auto_tile_l0(program: n.Program, ctx: PassContext) -> n.Program:
    """Cut every Mat-operand matmul larger than L0 of every kernel (module docstring)."""
    for fn in kernels(program):
        if not any(isinstance(s, n.Assign) and isinstance(s.value, n.Call)
                   and s.value.op in MATMUL_OPS for s in iter_stmts(fn.body)):
            continue
        tiler = _Tiler(fn, ctx)
        rewrite_bodies(fn, tiler.visit)
        if tiler.changed:
            ctx.exprs_rewritten = True
    return program


def _choose(ctx: PassContext, M: int, N: int, K: int, dtype: str,  # noqa: N803
            max_n: int = 0) -> L0TileResult | None:
    """The chooser's tile for [M, K] @ [K, N] of ``dtype`` (None: no legal tile),
    remembered: tensor lowering and this pass ask for the same matmuls."""
    key = (M, N, K, dtype, max_n, ctx.l0c_double_buffer, id(ctx.arch))
    got = _CHOSEN.get(key)
    if got is not None and got[0] is ctx.arch:
        return got[1]
    if len(_CHOSEN) >= 1024:
        _CHOSEN.clear()  # bounded: a long session sees many distinct shapes
    choice = _CHOSEN[key] = (ctx.arch, _choose_now(ctx, M, N, K, dtype, max_n))
    return choice[1]


def _choose_now(ctx: PassContext, M: int, N: int, K: int, dtype: str,  # noqa: N803
                max_n: int) -> L0TileResult | None:
    cfg = config_for(ctx.arch, M, N, K, bytes_a=OPERAND_BYTES[dtype],
                     bytes_b=OPERAND_BYTES[dtype],
                     acc_dtype="INT32" if dtype == "INT8" else "FP32", max_n=max_n)
    cfg.allow_a_stationary = cfg.allow_b_stationary = True
    cfg.allow_double_buffer_c = ctx.l0c_double_buffer
    try:
        return choose_l0_tile(cfg)
    except ValueError:
        return None


def places_whole(ctx: PassContext, M: int, N: int, K: int, dtype: str, *,  # noqa: N803
                 stored: bool) -> bool:
    """Whether a fresh ``tile.matmul`` of whole Mat operands [M, K] @ [K, N] compiles
    through this pass: it fits L0 as it is, only its K is cut, or its output is cut into
    a grid (``stored``: its one use is a store right after it).  Tensor lowering
    (compiler/tensor_lowering.py) leaves such a matmul whole, as PyPTO's does."""
    frac = ctx.arch.cube_fractal
    if dtype not in OPERAND_BYTES or K % frac or min(M, N, K) < frac:
        return False
    choice = _choose(ctx, M, N, K, dtype)
    return choice is not None and (stored or (choice.m, choice.n) == (M, N))


def cuts(ctx: PassContext, M: int, N: int, K: int, dtype: str) -> bool:  # noqa: N803
    """Whether this pass cuts a Mat-operand matmul [M, K] @ [K, N] of ``dtype``."""
    choice = _choose(ctx, M, N, K, dtype) if dtype in OPERAND_BYTES else None
    return choice is not None and (choice.m, choice.n, choice.k) != (M, N, K)


def _static_2d(t: Any) -> bool:
    return (isinstance(t, TileType) and len(t.shape) == 2
            and all(isinstance(d, int) for d in t.shape) and tuple(t.valid) == tuple(t.shape))


class _Tiler:
    def __init__(self, fn: n.Function, ctx: PassContext) -> None:
        self.fn = fn
        self.ctx = ctx
        self.names = NameGen(lambda: all_names(fn))
        self.uses: dict[str, int] = {}
        self.operand_uses: dict[str, int] = {}  # as lhs/rhs of a matmul
        self.defined: dict[str, n.Span | None] = {}  # where a tile is defined
        for stmt in iter_stmts(fn.body):
            if isinstance(stmt, n.Assign):
                for t in stmt.targets:
                    self.defined.setdefault(t.name, stmt.span)
            for name in stmt_uses(stmt):
                self.uses[name] = self.uses.get(name, 0) + 1
            call = stmt.value if isinstance(stmt, n.Assign) else None
            if isinstance(call, n.Call) and call.op in MATMUL_OPS:
                for key in ("lhs", "rhs"):
                    v = call.arg(key)
                    if isinstance(v, n.Var):
                        self.operand_uses[v.name] = self.operand_uses.get(v.name, 0) + 1
        self.span: n.Span | None = None
        self.changed = False
        self.retyped: dict[str, TileType] = {}  # a cast replaced by a Mat scratch tile

    # ------------------------------------------------------------------ driver
    def visit(self, body: list[n.Stmt]) -> list[n.Stmt]:
        out: list[n.Stmt] = []
        waiting: dict[str, _Plan] = {}  # an output too big for L0C, cut at its store or cast
        for pos, stmt in enumerate(body):
            call = stmt.value if isinstance(stmt, n.Assign) else None
            if isinstance(call, n.Call) and call.op in (STORE_OP, CAST_OP):
                src = call.arg("tile")
                if isinstance(src, n.Var) and src.name in waiting:
                    plan = waiting.pop(src.name)
                    out.extend(self.grid(plan, stmt) if call.op == STORE_OP
                               else self.scratch(plan, stmt))
                    continue
            plan = self.plan(stmt) if isinstance(call, n.Call) and call.op in MATMUL_OPS \
                else None
            if plan is None:
                out.append(stmt)
            elif self.cast_for_matmuls(plan, body[pos + 1:]) or (
                    not plan.k_only and self.stored_once(plan, body[pos + 1:])):
                waiting[plan.stmt.targets[0].name] = plan
            elif plan.k_only:
                out.extend(self.k_only(plan))
            else:
                out.append(stmt)  # no placement: the capacity check reports it
        return out

    def stored_once(self, plan: _Plan, rest: list[n.Stmt]) -> bool:
        """The result's one use is a later 2-D `tile.store` of this body (a fresh
        matmul only: an accumulator threaded in by the caller is not cut)."""
        name = plan.stmt.targets[0].name
        if plan.acc is not None or self.uses.get(name, 0) != 1:
            return False
        for pos, stmt in enumerate(rest):
            call = stmt.value if isinstance(stmt, n.Assign) else None
            if isinstance(call, n.Call) and call.op == STORE_OP:
                src, offsets = call.arg("tile"), call.arg("offsets")
                if isinstance(src, n.Var) and src.name == name:
                    return offsets is not None and len(offsets) == 2 and \
                        len(stmt.targets) == 1 and self.movable_past(rest[:pos])
        return False

    def movable_past(self, between: list[n.Stmt]) -> bool:
        """The matmul may be computed later, at its store or cast: nothing in between can
        write a buffer in place (only plain calls whose result is a buffer of its own)."""
        for stmt in between:
            call = stmt.value if isinstance(stmt, n.Assign) else None
            if not isinstance(call, n.Call):
                return False
            spec = self.ctx.registry.get(call.op)
            if spec is None or (spec.mem.result or "").startswith("same:"):
                return False
        return True

    def cast_for_matmuls(self, plan: _Plan, rest: list[n.Stmt]) -> bool:
        """The result's one use is a later round-half-to-even cast of this body to BF16 or
        FP16 whose every use is a matmul operand: the tiles go through a scratch of the
        cast dtype (the cube's Acc -> Mat write-back converts with that rounding)."""
        name = plan.stmt.targets[0].name
        if plan.acc is not None or self.uses.get(name, 0) != 1:
            return False
        for pos, stmt in enumerate(rest):
            call = stmt.value if isinstance(stmt, n.Assign) else None
            if not (isinstance(call, n.Call) and call.op == CAST_OP):
                continue
            src = call.arg("tile")
            if not (isinstance(src, n.Var) and src.name == name):
                continue
            dtype = getattr(call.arg("target_type"), "name", None)
            if dtype not in ("BF16", "FP16") or mode_name(call.arg("mode") or "round") != "rint":
                return False
            cast = stmt.targets[0].name
            return 0 < self.uses.get(cast, 0) == self.operand_uses.get(cast, 0) and \
                self.movable_past(rest[:pos])
        return False

    # ------------------------------------------------------------------ choice
    def plan(self, stmt: n.Assign) -> _Plan | None:
        call: n.Call = stmt.value  # type: ignore[assignment]
        if len(stmt.targets) != 1:
            return None
        lhs, rhs, acc, bias = (self.typed(call.arg(key)) for key in ("lhs", "rhs", "acc", "bias"))
        operands = [v for v in (lhs, rhs, acc, bias) if v is not None]
        if not all(isinstance(v, n.Var) and _static_2d(v.type) for v in operands):
            return None
        self.check_placed(call, lhs, "lhs", "Left", "L0A")
        self.check_placed(call, rhs, "rhs", "Right", "L0B")
        if call.op == "tile.matmul_acc" and call.arg("init_cond") is not None:
            return None
        lt, rt = lhs.type, rhs.type
        vec_left = lt.space == "Vec" and call.op != "tile.matmul_bias"
        if (lt.space != "Mat" and not vec_left) or rt.space != "Mat":
            return None
        if bias is not None and bias.type.space not in ("Mat", "Bias"):
            return None
        nbytes = OPERAND_BYTES.get(lt.dtype.name)
        M, K = lt.shape  # noqa: N806
        N = rt.shape[1]  # noqa: N806
        frac = self.ctx.arch.cube_fractal
        if nbytes is None or rt.dtype.name != lt.dtype.name or rt.shape[0] != K \
                or K % frac or min(M, N, K) < frac:
            return None
        max_n = self.ctx.arch.capacity["Bias"] // 4 if bias is not None else 0
        choice = _choose(self.ctx, M, N, K, lt.dtype.name, max_n)
        if choice is None:
            return None
        m, n_, k = choice.m, choice.n, choice.k
        if (m, n_, k) == (M, N, K):
            return None
        if bias is not None and bias.type.space == "Bias" and n_ < N:
            return None  # a Bias tile is not cut into windows
        if vec_left and (m, n_) != (M, N):
            return None  # a Vec left operand: only K is cut
        return _Plan(stmt, call, lhs, rhs, acc, bias, M, N, K, m, n_, k,
                     dbc=choice.double_buffer_c and (m, n_) != (M, N))

    def typed(self, value: Any) -> Any:
        """``value``, with the type of a scratch tile when it names a replaced cast."""
        if isinstance(value, n.Var) and value.name in self.retyped:
            return n.Var(value.name, type=self.retyped[value.name], span=value.span)
        return value

    def check_placed(self, call: n.Call, var: n.Var, role: str, space: str, unit: str) -> None:
        """An operand the user already put in Left/Right that cannot fit there by itself is
        an error at its definition: AutoL0 cuts only Mat operands."""
        t: TileType = var.type  # type: ignore[assignment]
        if t.space != space:
            return
        need, limit = tile_bytes(t, self.ctx.arch), self.ctx.arch.capacity[space]
        if need <= limit:
            return
        dims = ", ".join(map(str, t.shape))
        raise CapacityError(
            f"{call.op}'s {role} operand '{var.name}' is already in {space} ({unit}) as "
            f"[{dims}] {t.dtype.name}: {need} bytes, over the {limit} bytes of the "
            f"'{self.ctx.arch.name}' backend; AutoL0 does not cut tiles already placed in "
            f"Left or Right",
            self.defined.get(var.name) or call.span,
            hint=f"keep it in Mat and pass it to {call.op} directly, so it is cut into L0 "
                 f"tiles, or extract a smaller {space} tile by hand",
            arch=self.ctx.arch.name,
        )

    # ---------------------------------------------------------------- building
    def ref(self, var: n.Var) -> n.Var:
        return n.Var(var.name, type=var.type, span=var.span)

    def index(self, value: Index) -> n.Expr:
        if isinstance(value, int):
            return n.Const(value, type=ScalarType(INDEX), span=self.span)
        return value

    def emit(self, out: list[n.Stmt], base: str, op: str, **args: Any) -> n.Var:
        """``base_i = op(**args)``, typed by the op's rule."""
        spec = self.ctx.registry[op]
        given = {k: self.ref(v) if isinstance(v, n.Var) else v for k, v in args.items()}
        call = n.Call(op, tuple((p.name, given.get(p.name, None if p.required else p.default))
                                for p in spec.params), span=self.span)
        try:
            result = spec.type_rule(call_info(call, spec, None, {}))
        except OpRuleError as exc:
            raise convert_rule_error(exc, call, self.ctx) from None
        rule = spec.mem.result or ""
        if isinstance(result, TileType) and result.space is None and rule:
            if rule.startswith("same:"):
                result = result.with_(space=getattr(call.arg(rule[5:]).type, "space", None))
            elif not rule.startswith("attr:"):
                result = result.with_(space=rule)
        call.type = result
        var = n.Var(self.names.fresh(base), type=result, span=self.span)
        out.append(n.Assign((var,), call, span=self.span))
        return var

    def loop(self, out: list[n.Stmt], start: int, stop: int, step: int, carried: n.Var,
             body: Callable[[list[n.Stmt], n.Expr, n.Var], n.Var], name: str = "ko",
             dbc: bool = False, pipeline: bool = False) -> n.Var:
        """``for i in range(start, stop, step)`` carrying one value; inline for one trip.
        ``pipeline``: a two-stage pipeline (the K blocks); ``dbc``: one whose accumulators
        alternate (module docstring)."""
        if stop - start <= step:
            return body(out, self.index(start), carried)
        var = n.Var(self.names.fresh(name), type=ScalarType(INDEX), span=self.span)
        inner = n.Var(self.names.fresh(carried.name), type=carried.type, span=self.span)
        stmts: list[n.Stmt] = []
        nxt = body(stmts, var, inner)
        stmts.append(n.Yield((self.ref(nxt),), span=self.span))
        result = n.Var(self.names.fresh(carried.name), type=carried.type, span=self.span)
        kind, attrs = ("pipeline", {"stage": 2, DBC_ATTR: True}) if dbc else \
            ("pipeline", {"stage": 2}) if pipeline else ("range", {})
        out.append(n.For(var, self.index(start), self.index(stop), self.index(step), stmts,
                         carried=((inner, self.ref(carried)),), results=(result,),
                         span=self.span, kind=kind, attrs=attrs))
        return result

    def segments(self, out: list[n.Stmt], length: int, extent: int, carried: n.Var,
                 body: Callable[[list[n.Stmt], Index, int, n.Var], n.Var], name: str,
                 dbc: bool = False) -> n.Var:
        """Full tiles of ``extent`` over ``[0, length)`` in a loop, then the narrower rest."""
        full = length - length % extent
        if full:
            carried = self.loop(out, 0, full, extent,
                                carried, lambda s, i, c: body(s, i, extent, c), name, dbc)
        if full < length:
            carried = body(out, full, length - full, carried)
        return carried

    # ------------------------------------------------------------------ the K chain
    def reduce_k(self, out: list[n.Stmt], p: _Plan, row: Index, col: Index, tm: int,
                 tn: int, bias: n.Var | None) -> n.Var:
        """The ``[tm, tn]`` output tile at (row, col) reduced over K in blocks of ``p.k``:
        the full blocks (a two-stage pipeline from 0 when there are two or more), then a
        narrower last block where ``k`` does not divide K."""

        def operands(stmts: list[n.Stmt], k0: Index, width: int) -> tuple[n.Var, n.Var]:
            left = self.emit(stmts, f"{p.lhs.name}_left", "tile.extract", tile=p.lhs,
                             index_row=self.index(row), index_col=self.index(k0),
                             shape=(tm, width), target_memory="Left")
            right = self.emit(stmts, f"{p.rhs.name}_right", "tile.extract", tile=p.rhs,
                              index_row=self.index(k0), index_col=self.index(col),
                              shape=(width, tn), target_memory="Right")
            return left, right

        def mad(stmts: list[n.Stmt], lr: tuple[n.Var, n.Var], acc: n.Var | None) -> n.Var:
            base = p.stmt.targets[0].name
            left, right = lr
            if acc is not None:
                return self.emit(stmts, base, "tile.matmul_acc", acc=acc, lhs=left, rhs=right)
            if bias is not None:
                return self.emit(stmts, base, "tile.matmul_bias", lhs=left, rhs=right,
                                 bias=bias)
            return self.emit(stmts, base, "tile.matmul", lhs=left, rhs=right)

        full, tail = divmod(p.K, p.k)
        if full == 1:
            acc = mad(out, operands(out, 0, p.k), p.acc)
        elif p.acc is not None:  # the caller's accumulator: every block accumulates
            acc = self.loop(out, 0, full * p.k, p.k, p.acc,
                            lambda s, k0, c: mad(s, operands(s, k0, p.k), c), pipeline=True)
        else:  # a fresh Acc tile, started by block 0
            acc_t: TileType = p.call.type  # type: ignore[assignment]
            init = self.emit(out, f"{p.stmt.targets[0].name}_l0", "tile.create",
                             shape=(tm, tn), dtype=acc_t.dtype, target_memory="Acc")

            def first_or_rest(stmts: list[n.Stmt], k0: n.Expr, c: n.Var) -> n.Var:
                lr = operands(stmts, k0, p.k)
                then_body: list[n.Stmt] = []
                first = mad(then_body, lr, None)
                then_body.append(n.Yield((self.ref(first),), span=self.span))
                else_body: list[n.Stmt] = []
                rest = mad(else_body, lr, c)
                else_body.append(n.Yield((self.ref(rest),), span=self.span))
                merged = n.Var(self.names.fresh(p.stmt.targets[0].name), type=first.type,
                               span=self.span)
                cond = n.Compare("==", self.ref(k0), self.index(0),  # type: ignore[arg-type]
                                 type=ScalarType(BOOL), span=self.span)
                stmts.append(n.If(cond, then_body, else_body, results=(merged,),
                                  span=self.span))
                return merged

            acc = self.loop(out, 0, full * p.k, p.k, init, first_or_rest, pipeline=True)
        if tail:
            acc = mad(out, operands(out, full * p.k, tail), acc)
        return acc

    def k_only(self, p: _Plan) -> list[n.Stmt]:
        self.span = p.call.span or p.stmt.span
        self.changed = True
        out: list[n.Stmt] = []
        p = self.staged(out, p)
        acc = self.reduce_k(out, p, 0, 0, p.M, p.N, p.bias)
        out.append(n.Assign(p.stmt.targets, self.ref(acc), span=p.stmt.span))
        return out

    def staged(self, out: list[n.Stmt], p: _Plan) -> _Plan:
        """A Vec left operand moved to Mat once, before its blocks are extracted."""
        if p.lhs.type.space != "Vec":  # type: ignore[union-attr]
            return p
        mat = self.emit(out, f"{p.lhs.name}_mat", MOVE_OP, tile=p.lhs, target_memory="Mat")
        return dataclasses.replace(p, lhs=mat)

    # ------------------------------------------------------------------ the output grid
    def grid(self, p: _Plan, store: n.Assign) -> list[n.Stmt]:
        """Every ``[m, n]`` output tile stored into its window of the store's tensor."""
        call: n.Call = store.value  # type: ignore[assignment]
        row, col = call.arg("offsets")
        out: list[n.Stmt] = []
        final = self.grid_into(out, p, call.arg("output_tensor"), row, col, call.arg("atomic"))
        out.append(n.Assign(store.targets, self.ref(final), span=store.span))
        return out

    def scratch(self, p: _Plan, cast: n.Assign) -> list[n.Stmt]:
        """Every ``[m, n]`` output tile written, converted, into a scratch of the cast's
        dtype, which is then read whole into Mat for the matmuls that use the cast."""
        self.span = p.call.span or p.stmt.span
        out: list[n.Stmt] = []
        dtype = cast.value.arg("target_type")  # type: ignore[attr-defined]
        tensor = self.emit(out, f"{cast.targets[0].name}_scratch", LOCAL_OP,
                           shape=(p.M, p.N), dtype=dtype)
        final = self.grid_into(out, p, tensor, 0, 0, None)
        tile = self.emit(out, cast.targets[0].name, LOAD_OP, tensor=final,
                         offsets=(self.index(0), self.index(0)), shapes=(p.M, p.N),
                         target_memory="Mat")
        target = cast.targets[0]
        self.retyped[target.name] = tile.type
        out.append(n.Assign((n.Var(target.name, type=tile.type, span=target.span),),
                            self.ref(tile), span=cast.span))
        return out

    def grid_into(self, out: list[n.Stmt], p: _Plan, dst: n.Var, base_row: Index,
                  base_col: Index, atomic: Any) -> n.Var:
        """The output tiles reduced over K and stored at (base_row, base_col) of ``dst``."""
        self.span = p.call.span or p.stmt.span
        self.changed = True
        p = self.staged(out, p)

        def rows(stmts: list[n.Stmt], i: Index, tm: int, dst1: n.Var) -> n.Var:
            def cols(inner: list[n.Stmt], j: Index, tn: int, dst2: n.Var) -> n.Var:
                bias = p.bias
                if bias is not None and p.n < p.N:
                    bias = self.emit(inner, f"{bias.name}_win", "tile.slice", tile=bias,
                                     shape=(1, tn), offset=(self.index(0), self.index(j)))
                acc = self.reduce_k(inner, p, i, j, tm, tn, bias)
                return self.emit(inner, dst2.name, STORE_OP, tile=acc,
                                 offsets=(self.index(combine("+", base_row, i, self.span)),
                                          self.index(combine("+", base_col, j, self.span))),
                                 output_tensor=dst2, atomic=atomic)

            return self.segments(stmts, p.N, p.n, dst1, cols, "ni", dbc_cols)

        # two alternating accumulators: the innermost loop of two or more full tiles
        dbc_cols = p.dbc and p.N // p.n >= 2
        dbc_rows = p.dbc and not dbc_cols and p.M // p.m >= 2
        return self.segments(out, p.M, p.m, dst, rows, "mi", dbc_rows)
