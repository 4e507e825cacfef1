"""Python codegen: kernels and the orchestration, following the ABIs of `ir.artifact`.

Generated kernels are straight-line Python over `bind(op)` callables bound once
in `make`; every tile result type is a module constant, so a call costs one
Python call into the op's numpy semantics and nothing else.  `pl.range` loops
become Python `for` loops, carried values plain rebinding.  A loop that
`compiler.batching` found to be a parallel map gets a second, batched path
(guarded at run time, the per-iteration loop as fallback): see that module.  Scalar arithmetic
keeps the DSL's semantics: int `/` truncates toward zero, `//` and `%` floor.

`pl.dynamic` dims used as values bind once at function entry from the first
tensor parameter carrying them (``M = x.shape[0]`` in kernels, ``M = rt.dim(x, 0)``
in the orchestration).  Every generated line that comes from a user statement is
mapped back to it in a trailing ``SPANS`` table, and the Scalars it reads in
``SCALARS`` (generated line -> ((user name, local), ...)), so a run-time error
names the user's file:line and the values involved (docs/design/checks.md §6).
The shared statement and scalar-expression emission is in `compiler.codegen_stmts`;
which moves may share a buffer and which locals die where, in `compiler.codegen_alias`.
"""

from __future__ import annotations

import functools
import re
from typing import Any

from pytest_pypto.compiler.batching import (
    BATCHED,
    LoopPlan,
    _covers_statically,
    _fits_statically,
    trip_bytes,
    window,
)
from pytest_pypto.compiler.codegen_alias import last_uses, shareable_moves
from pytest_pypto.compiler.codegen_stmts import Emitter, Names, _user_span, py_const  # noqa: F401
from pytest_pypto.compiler.optable import param_table
from pytest_pypto.compiler.walk import is_tile, iter_stmts, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.ops.memory import LOAD_OP, MOVE_OP, STORE_OP
from pytest_pypto.ir.types import TileType

PREAMBLE_HELPERS = '''
from pytest_pypto.ir.dtypes import round_float as _round_float

def _idiv(a, b):
    """Integer division truncating toward zero (C semantics of the DSL's int `/`)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def _div(a, b):
    """`/` on scalars whose category is known only at run time."""
    if isinstance(a, float) or isinstance(b, float):
        return a / b
    return _idiv(a, b)
'''

# A kernel calling ops that read its launch (their entries set ``reads_launch``) takes a
# hidden ``_launch=(block index, block count)`` argument, which a pl.spmd launch passes
# per block.
LAUNCH_PARAM = "_launch"


def reads_launch(registry: Any, op: str) -> bool:
    spec = registry.get(op)
    return spec is not None and spec.reads_launch


def _same(value: Any, default: Any) -> bool:
    """A static argument equal to the op's default (left out of generated calls)."""
    if isinstance(value, n.Expr) or isinstance(default, n.Expr):
        return False
    return type(value) is type(default) and value == default


def ends_with_return(body: list[n.Stmt]) -> bool:
    return bool(body) and isinstance(body[-1], n.Return)


@functools.lru_cache(maxsize=4096)
def _op_local_name(op: str) -> str:
    """The generated local bound to an op (op names are few: made once per process)."""
    return "_op_" + re.sub(r"\W", "_", op)


def dtype_imports(dtypes: set[str]) -> str:
    if not dtypes:
        return ""
    return "from pytest_pypto.ir.dtypes import " + ", ".join(sorted(dtypes)) + "\n"


# ------------------------------------------------------------------ kernels


class KernelEmitter(Emitter):
    def __init__(self, registry, plans: dict[int, LoopPlan] | None = None) -> None:
        super().__init__()
        self.registry = registry
        self.ops: dict[str, str] = {}
        self.types: dict[TileType, str] = {}
        self.plans = plans or {}
        self.batch: tuple[LoopPlan, str] | None = None  # (plan, trip-count local) inside
        self.btypes: dict[TileType, str] = {}
        self.loops = 0
        self.folded: set[int] = set()  # id(Assign) whose value a fused store computes
        self.folded_values: dict[str, n.Call] = {}  # its target name -> the value call
        self.uses_launch = False  # the body reads its block index / count (reads_launch)
        self.slot_checks = False  # a run-time pl.MemRef slot index is bounds-checked
        self.shared_moves: set[int] = set()  # id(move Call) run as a view (codegen_alias)
        self.dead_after: dict[int, tuple[str, ...]] = {}  # id(stmt) -> tiles to `del` after
        self.pending_dead: tuple[str, ...] = ()  # dels of a folded statement (after_stmt)
        self.ufuncs: dict[str, str] = {}  # op -> local of its float32 ufunc (`direct` stores)
        # id(store Assign) -> (ufunc local, operand load Assigns): computed straight from
        # the tensors' windows into the destination's (see `direct_store`)
        self.direct: dict[int, tuple[str, list[n.Assign]]] = {}
        self.direct_loads: set[int] = set()  # id(load Assign) a direct store emits itself
        self.top_btypes: set[TileType] = set()  # batched types the batched path's top sets
        self.branch_btypes: set[TileType] | None = None  # those a direct store's tile branch uses

    def op_local(self, op: str) -> str:
        local = self.ops.get(op)
        if local is None:
            local = self.ops[op] = _op_local_name(op)
        return local

    def type_const(self, t: TileType) -> str:
        name = self.types.get(t)
        if name is None:
            name = f"_T{len(self.types)}"
            self.types[t] = name
        return name

    def batched_type(self, t: TileType) -> str:
        """A local holding ``t`` with the leading batch axis (set at the batched path's top,
        or in the tile branch of a direct store when only that branch needs it)."""
        name = self.btypes.get(t)
        if name is None:
            name = f"_B{self.loops}_{len(self.btypes)}"
            self.btypes[t] = name
        (self.top_btypes if self.branch_btypes is None else self.branch_btypes).add(t)
        return name

    def call(self, e: n.Expr) -> str:
        if isinstance(e, n.FuncCall):
            raise AssertionError("InCore -> InCore calls are rejected before codegen")
        assert isinstance(e, n.Call)
        if reads_launch(self.registry, e.op):
            self.uses_launch = True
            return f"{self.op_local(e.op)}({LAUNCH_PARAM}, out=None)"
        if self.batch is not None:
            plan, count = self.batch
            access = plan.accesses.get(id(e))
            if access is not None and e.op == LOAD_OP:
                return (f"_batch.load({self.expr(e.arg('tensor'))}, {self.expr(e.arg('offsets'))}, "
                        f"{py_const(tuple(e.arg('shapes')), self.dtypes)}, {access.axis}, {count}, "
                        f"{self.batched_type(e.type)}{', copy=True' if access.copy else ''}"
                        f"{self.stride_arg(access)})")
            if access is not None and e.op == STORE_OP:
                fused = self.fused_store(e, plan, count, access)
                if fused is not None:
                    return fused
                return (f"_batch.store({self.expr(e.arg('tile'))}, "
                        f"{self.expr(e.arg('output_tensor'))}, {self.expr(e.arg('offsets'))}, "
                        f"{access.axis}, {count}{self.stride_arg(access)})")
            if plan.calls.get(id(e)) == BATCHED and is_tile(e.type):
                shape = None
                if self.registry[e.op].batched_create or self.registry[e.op].batched_shape:
                    shape = f"({count},) + {py_const(tuple(e.arg('shape')), self.dtypes)}"
                return self.op_call(e, self.batched_type(e.type), shape)
        return self.op_call(e, self.type_const(e.type) if is_tile(e.type) else "None")

    def fold_into_stores(self, body: list[n.Stmt]) -> None:
        """Find ``t = op(...)`` directly followed by a store of ``t``, ``t`` read nowhere
        else in the loop: candidates for computing the op straight into the windows."""
        uses: dict[str, int] = {}
        for st in iter_stmts(body):
            for e in stmt_expr_list(st):
                if type(e) is n.Var:
                    uses[e.name] = uses.get(e.name, 0) + 1
        for a, b in zip(body, body[1:]):
            if (isinstance(a, n.Assign) and len(a.targets) == 1 and isinstance(a.value, n.Call)
                    and isinstance(b, n.Assign) and isinstance(b.value, n.Call)
                    and b.value.op == STORE_OP):
                tile = b.value.arg("tile")
                name = a.targets[0].name
                if isinstance(tile, n.Var) and tile.name == name and uses.get(name) == 1 \
                        and self.fusable(a.value, b.value):
                    self.folded.add(id(a))
                    self.folded_values[name] = a.value
                    loads = self.direct_operands(body, a.value, b, uses)
                    if loads is not None:
                        self.direct[id(b)] = (self.ufunc_local(a.value.op), loads)
                        self.direct_loads.update(id(x) for x in loads)

    def ufunc_local(self, op: str) -> str:
        local = self.ufuncs.get(op)
        if local is None:
            local = self.ufuncs[op] = "_uf_" + self.op_local(op)[4:]
        return local

    def direct_operands(self, body: list[n.Stmt], value: n.Call, store: n.Assign,
                        uses: dict[str, int]) -> list[n.Assign] | None:
        """The load statements of a folded op whose store can skip tiles altogether.

        That holds when everything `ir.batch.store_into` checks at run time is known at
        compile time: a float32 ufunc op without attributes whose every operand is a
        batched FP32 load read only by it, of a window of the result's shape, moving
        along the store's axis, and every window in bounds (proved, or guarded by the
        batched path).  Then the generated code applies the ufunc to the tensors' own
        windows (`direct_store`); a custom binder still gets the tile path."""
        assert self.batch is not None
        plan = self.batch[0]
        if plan.strided:
            return None  # (the direct path slices adjacent windows)
        spec = self.registry.get(value.op)
        name = getattr(spec.compute, "float32_ufunc", None) if spec is not None else None
        parts, keywords = self.op_args(value, None)
        import numpy as np  # lazy: numpy, only to read a ufunc's operand count

        operands = self.value_operands(value)
        if name is None or keywords or not (getattr(np, name).nin == len(parts) == len(operands)):
            return None
        result = value.type
        if tuple(result.valid) != tuple(result.shape):
            return None
        store_access = plan.accesses[id(store.value)]
        if not self.direct_window(store.value, store_access, result.shape):
            return None
        defs = {s.targets[0].name: s for s in body
                if isinstance(s, n.Assign) and len(s.targets) == 1 and isinstance(s.value, n.Call)
                and s.value.op == LOAD_OP}
        loads = []
        for operand in operands:
            load = defs.get(operand.name) if isinstance(operand, n.Var) else None
            if load is None or uses.get(operand.name) != 1 or load in loads:
                return None
            access = plan.accesses.get(id(load.value))
            t = load.value.type
            if access is None or access.copy or access.axis != store_access.axis \
                    or t.dtype.name != "FP32" \
                    or tuple(t.valid) != tuple(t.shape) or tuple(t.shape) != tuple(result.shape) \
                    or not self.direct_window(load.value, access, result.shape):
                return None
            loads.append(load)
        return loads

    def value_operands(self, e: n.Call) -> list[Any]:
        """An op call's given value operands, in parameter order."""
        given = dict(e.args)
        return [given[p.name] for p in param_table(self.registry[e.op]).rows
                if p.is_value and p.name in given]

    def direct_window(self, call: n.Call, access: Any, shape: tuple) -> bool:
        """A load's or store's window as a plain slice of an FP32 tensor of the window's
        rank, in bounds whatever runs (proved, or the batched path's `fits` guard)."""
        tensor, extent = window(call)
        t = getattr(tensor, "type", None)
        dtype = getattr(t, "dtype", None)
        return (dtype is not None and dtype.name == "FP32" and isinstance(t.shape, tuple)
                and len(t.shape) == len(extent) == len(shape) and tuple(extent) == tuple(shape)
                and len(call.arg("offsets")) == len(shape)
                and (access.top_level or _fits_statically(
                    self.batch[0].loop, tensor, call.arg("offsets"), extent, access.axis)))

    def slices(self, call: n.Call, axis: int, count: str) -> str:
        """``tensor[o0:o0 + e0, ...]``: the batched windows of a load or store as one slice
        (the window moves ``count`` times along ``axis``); the tensor itself when they
        cover it all (known at compile time)."""
        tensor, extent = window(call)
        if _covers_statically(self.batch[0].loop, tensor, call.arg("offsets"), extent, axis):
            return self.expr(tensor)
        parts = []
        for d, (o, e) in enumerate(zip(call.arg("offsets"), extent)):
            lo = self.expr(o)
            size = f"{count} * {e}" if d == axis else str(e)
            parts.append(f"{lo}:{size}" if lo == "0" else f"{lo}:{lo} + {size}")
        return f"{self.expr(tensor)}[{', '.join(parts)}]"

    def direct_store(self, s: n.Assign, depth: int) -> None:
        """A folded store whose op runs on the tensors' windows (`direct_operands`), with
        the tile path (loads, `_batch.store_into`) for a binder that is not the registry's."""
        uf, loads = self.direct[id(s)]
        plan, count = self.batch
        store = s.value
        value = self.folded_values[store.arg("tile").name]
        axis = plan.accesses[id(store)].axis
        by_name = {load.targets[0].name: load for load in loads}
        operands = [self.slices(by_name[v.name].value, axis, count)
                    for v in self.value_operands(value)]
        target = self.names(s.targets[0].name)
        self.emit(depth, f"if {uf} is not None:")
        self.emit(depth + 1, f"{uf}({', '.join(operands)}, out={self.slices(store, axis, count)})")
        self.emit(depth + 1, f"{target} = {self.expr(store.arg('output_tensor'))}")
        self.emit(depth, "else:")
        outer = self.lines, self.spans, self.scalars
        self.lines, self.spans, self.scalars = [], [], []
        self.branch_btypes = set()
        saved = self.span
        for load in loads:
            self.span = _user_span(load) or saved
            self.emit(depth + 1, f"{self.names(load.targets[0].name)} = {self.call(load.value)}")
        self.span = saved
        self.emit(depth + 1, f"{target} = {self.call(store)}")
        self.emit(depth + 1, f"del {', '.join(self.names(x.targets[0].name) for x in loads)}")
        inner, used, self.branch_btypes = (self.lines, self.spans, self.scalars), \
            self.branch_btypes, None
        self.lines, self.spans, self.scalars = outer
        for t in sorted(used, key=self.btypes.__getitem__):
            self.emit(depth + 1, f"{self.btypes[t]} = _batch.batched_type({self.type_const(t)}, "
                                 f"{count})")
        self.lines.extend(inner[0])
        self.spans.extend(inner[1])
        self.scalars.extend(inner[2])
        gone = set(by_name)
        self.pending_dead = tuple(x for x in self.pending_dead if x not in gone)

    def fusable(self, value: n.Call, store: n.Call) -> bool:
        """A batched FP32 value op stored into an FP32 tensor (ir/batch.store_into checks
        the rest at run time)."""
        assert self.batch is not None
        plan = self.batch[0]
        spec = self.registry.get(value.op)
        dst = store.arg("output_tensor")
        dst_dtype = getattr(getattr(dst, "type", None), "dtype", None)
        return (id(store) in plan.accesses and plan.calls.get(id(value)) == BATCHED
                and spec is not None and spec.compute is not None and spec.execute is None
                and is_tile(value.type) and value.type.dtype.name == "FP32"
                and dst_dtype is not None and dst_dtype.name == "FP32")

    def stride_arg(self, access: Any, k: int | None = None) -> str:
        """``, stride=...`` of a batched access whose windows may not be adjacent (the loop's
        step in elements: ``coef * step``), else nothing."""
        plan = self.batch[0] if self.batch is not None else None
        if plan is None or not plan.strided:
            return ""
        step = plan.loop.step
        if isinstance(step, n.Const):
            return f", stride={access.coef * step.value}"
        return f", stride={access.coef} * _st{self.loops if k is None else k}"

    def fused_store(self, e: n.Call, plan: LoopPlan, count: str, access: Any) -> str | None:
        """A batched store of a batched FP32 value op's result into an FP32 tensor, as one
        `_batch.store_into` (the op may compute straight into the windows; the run-time
        helper checks the rest and otherwise runs op and store as usual)."""
        tile, dst = e.arg("tile"), e.arg("output_tensor")
        if isinstance(tile, n.Var) and tile.name in self.folded_values:
            tile = self.folded_values[tile.name]
        elif not (isinstance(tile, n.Call) and self.fusable(tile, e)):
            return None
        parts, keywords = self.op_args(tile, None)
        kw = ", ".join(f"{k!r}: {v}" for k, v in keywords)
        ops = "".join(f"{p}, " for p in parts)
        return (f"_batch.store_into({self.op_local(tile.op)}, ({ops}), {{{kw}}}, "
                f"{self.expr(dst)}, {self.expr(e.arg('offsets'))}, {access.axis}, {count}, "
                f"{self.batched_type(tile.type)}{self.stride_arg(access)})")

    def slot_check(self, s: n.Assign, depth: int) -> None:
        """Bounds-check a run-time `pl.MemRef` slot index (ir/memref.py) at its line; in a
        batched loop, for every iteration (the loop variable is re-bound afterwards)."""
        b = getattr(s.annotation, "memref", None)
        if b is None or b.index is None or isinstance(b.index, int):
            return
        self.slot_checks = True
        check = f"_check_slot({self.expr(b.index)}, {b.slots}, {b.name!r})"
        if self.batch is None:
            self.emit(depth, check)
            return
        var, k = self.names(self.batch[0].loop.var.name), self.loops
        self.emit(depth, f"for {var} in range(_lo{k}, _hi{k}, _st{k}):")
        self.emit(depth + 1, check)
        self.emit(depth, f"{var} = _lo{k}")

    def op_args(self, e: n.Call, shape: str | None) -> tuple[list[str], list[tuple[str, str]]]:
        """Positional operand sources and (keyword, source) pairs of an op call."""
        table = param_table(self.registry[e.op])
        given = dict(e.args)
        parts: list[str] = []
        keywords: list[tuple[str, str]] = []
        for p in table.rows:
            name = p.name
            if p.is_value:
                value = given.get(name)
                parts.append(self.expr(value) if value is not None else "None")
            elif name == "shape" and shape is not None:
                keywords.append(("shape", shape))
            elif name in given and (p.required or not _same(given[name], p.default)):
                keywords.append((name, self.expr(given[name])))
        known = table.names
        keywords += [(k, self.expr(given[k])) for k in given if k not in known]
        return parts, keywords

    def op_call(self, e: n.Call, out: str, shape: str | None = None) -> str:
        parts, keywords = self.op_args(e, shape)
        parts += [f"{k}={v}" for k, v in keywords]
        parts.append(f"out={out}")
        if e.op == MOVE_OP and id(e) in self.shared_moves:
            parts.append("share=True")  # the data does not change: a view (codegen_alias)
        return f"{self.op_local(e.op)}({', '.join(parts)})"

    def after_stmt(self, s: n.Stmt, depth: int) -> None:
        """Drop the tiles whose last use was ``s``, so the next allocation of the same size
        reuses their buffers.  In a batched path a folded statement runs inside the store
        after it: its operands die there, and its own value is never bound."""
        dead = self.dead_after.get(id(s), ())
        if self.batch is not None and (id(s) in self.folded or id(s) in self.direct_loads):
            self.pending_dead += dead
            return
        if not dead and not self.pending_dead:
            return  # nothing dies here (the common case)
        dead, self.pending_dead = self.pending_dead + dead, ()
        names = [self.names(x) for x in dead if self.batch is None or x not in self.folded_values]
        if names:
            self.emit(depth, f"del {', '.join(names)}")

    def stmt(self, s: n.Stmt, depth: int, yield_to: tuple[n.Var, ...]) -> None:
        if type(s) is n.Assign and self.batch is None:  # (most statements: the plain path)
            if s.annotation is not None:
                self.slot_check(s, depth)
            Emitter.stmt(self, s, depth, yield_to)
            return
        if isinstance(s, n.Assign):
            self.slot_check(s, depth)
        if self.batch is not None and (id(s) in self.folded or id(s) in self.direct_loads):
            return  # its value is computed by the store that follows (fused_store)
        if self.batch is not None and id(s) in self.direct:
            self.direct_store(s, depth)
            return
        plan = self.plans.get(id(s)) if isinstance(s, n.For) else None
        if plan is None or not plan.batched or self.batch is not None:
            super().stmt(s, depth, yield_to)
            return
        assert isinstance(s, n.For)
        k = self.loops
        lo, hi, st, count = f"_lo{k}", f"_hi{k}", f"_st{k}", f"_n{k}"
        for var, init in s.carried:
            self.emit(depth, f"{self.names(var.name)} = {self.expr(init)}")
        self.emit(depth, f"{lo}, {hi}, {st} = {self.expr(s.start)}, {self.expr(s.stop)}, "
                         f"{self.expr(s.step)}")
        bounds = (s.start, s.stop, s.step)
        trips = None
        if all(isinstance(b, n.Const) and type(b.value) is int for b in bounds) and s.step.value:
            trips = len(range(s.start.value, s.stop.value, s.step.value))
            self.emit(depth, f"{count} = {trips}")  # constant bounds: the trip count is known
        else:
            self.emit(depth, f"{count} = len(range({lo}, {hi}, {st}))")
        loop_var = self.names(s.var.name)
        self.emit(depth, f"{loop_var} = {lo}")
        # one iteration too: its loads are views, its store computes in place
        conds = [] if trips is not None and trips >= 1 else [f"{count} >= 1"]
        if plan.dynamic_step:
            conds += sorted({f"{a.coef} * {st} >= {a.extent}" for a in plan.accesses.values()})
        guard_batch, self.batch = self.batch, (plan, count)  # (for stride_arg)
        for a in plan.accesses.values():
            if a.top_level:
                c = a.call
                tensor, shape = window(c)
                if _fits_statically(s, tensor, c.arg("offsets"), shape, a.axis):
                    continue  # every window in bounds whatever the arrays: no run-time guard
                conds.append(f"_batch.fits({self.expr(tensor)}, {self.expr(c.arg('offsets'))}, "
                             f"{py_const(shape, self.dtypes)}, {a.axis}, {count}"
                             f"{self.stride_arg(a, k)})")
        self.batch = guard_batch
        pairs = [f"({self.names(w)}, {self.names(r)})" for w in plan.stored for r in plan.roots
                 if r != w]
        if pairs:
            conds.append(f"not _batch.may_alias({', '.join(pairs)})")
        guard_at = len(self.lines)
        self.emit(depth, "if " + (" and ".join(conds) or "True") + ":")
        outer = self.lines, self.spans, self.scalars
        self.lines, self.spans, self.scalars = [], [], []
        self.batch, self.btypes = (plan, count), {}
        self.fold_into_stores(s.body)
        self.body(s.body, depth + 1, tuple(v for v, _ in s.carried))
        per_trip = trip_bytes(self.btypes)
        if per_trip:  # memory in proportion: a loop whose batched tiles would be large runs per iteration
            conds.append(f"{count} * {per_trip} <= _batch.MAX_LOOP_BYTES")
            outer[0][guard_at] = "    " * depth + "if " + " and ".join(conds) + ":"
        self.folded, self.folded_values = set(), {}
        self.direct, self.direct_loads = {}, set()
        inner = self.lines, self.spans, self.scalars
        self.lines, self.spans, self.scalars = outer
        for t, name in self.btypes.items():
            if t in self.top_btypes:
                self.emit(depth + 1, f"{name} = _batch.batched_type({self.type_const(t)}, {count})")
        self.top_btypes = set()
        self.lines.extend(inner[0])
        self.spans.extend(inner[1])
        self.scalars.extend(inner[2])
        self.batch, self.loops = None, self.loops + 1
        self.emit(depth, "else:")
        bounds = f"{self.expr(s.start)}, {self.expr(s.stop)}, {self.expr(s.step)}"
        self.emit(depth + 1, f"for {loop_var} in range({bounds}):")
        self.body(s.body, depth + 2, tuple(v for v, _ in s.carried))
        for res, (var, _) in zip(s.results, s.carried):
            self.emit(depth, f"{self.names(res.name)} = {self.names(var.name)}")

    def module(self, fn: n.Function, header: str, variant: Any = None) -> str:
        """The kernel module; ``variant(self, fname)``: more lines for ``make`` (or None)."""
        fname = self.names(fn.name)
        params = self.bind_params(fn)
        self.shared_moves = shareable_moves(fn, self.registry)
        self.dead_after = last_uses(fn)
        self.body(fn.body, 2)
        if not ends_with_return(fn.body):
            self.emit(2, "return ()")
        self.prepend_dyn_bindings(2, fn.span)
        extra = variant(self, fname) if variant is not None else None
        type_lines = []
        for t, name in self.types.items():
            self.dtypes.add(t.dtype.name)
            type_lines.append(
                f"{name} = TileType({t.shape!r}, {t.dtype.name}, {t.space!r}, {tuple(t.valid)!r}, "
                f"{t.pad!r})"
            )
        launch = [f"{LAUNCH_PARAM}=(0, 1)"] if self.uses_launch else []
        out = [
            f"# {header}",
            '"""Generated by pytest-pypto; do not edit.  Kernel ABI: see pytest_pypto.ir.artifact."""',
            "",
            dtype_imports(self.dtypes) + "from pytest_pypto.ir.types import TileType"
            + ("\nfrom pytest_pypto.ir import batch as _batch" if self.loops or extra else "")
            + ("\nfrom pytest_pypto.ir import task_batch as _tasks" if extra else "")
            + ("\nfrom pytest_pypto.ir.memref import check_slot as _check_slot"
               if self.slot_checks else ""),
            "",
            *type_lines,
            PREAMBLE_HELPERS,
            "",
            "def make(bind):",
            *[f"    {local} = bind({op!r})" for op, local in self.ops.items()],
            *[f"    {local} = _batch.float32_ufunc({self.ops[op]})"
              for op, local in self.ufuncs.items()],
            "",
            f"    def {fname}({', '.join(params + launch)}):",
        ]
        return with_tables(self, out, fname, extra or ())


def with_tables(em: Emitter, head: list[str], fname: str, more: Any = ()) -> str:
    """The module: ``head``, the function body, ``more`` lines, the SPANS/SCALARS tables."""
    top = "\n".join(head) + "\n"
    first = top.count("\n") + 1
    tail = [*more, "", f"    return {fname}", "", "", *em.tables(first)]
    return top + "\n".join(em.lines + tail)


def kernel_source(fn: n.Function, registry, header: str,
                  plans: dict[int, LoopPlan] | None = None, variant: Any = None) -> str:
    """Kernel module source; ``plans`` (compiler.batching) add batched loop paths,
    ``variant`` the task-batched variant (compiler.codegen_tasks)."""
    return KernelEmitter(registry, plans).module(fn, header, variant)
