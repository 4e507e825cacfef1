"""Batched loop execution: find loops whose iterations are a parallel map.

Per-iteration simulation pays Python overhead per op call, so a 512x512 add tiled
into 32 row blocks costs ~128 calls where numpy makes one.  A `pl.range`/`pl.parallel`
loop of an InCore kernel qualifies for a second, batched code path when:

* every load/store whose window moves with the loop variable ``v`` moves along one
  dim ``d`` only, with offset ``a*v + b`` (``a`` a static int, ``b`` free of ``v``)
  and stride ``a*step`` at least the window extent (disjoint windows: tiling the range,
  or with gaps, as a `pl.spmd` block's loop over every n-th row block);
  every store moves with ``v``; no load/store is atomic, clamped or partially valid;
* every other op is marked ``batchable`` in the registry, every tile is fully valid,
  and no scalar operand depends on ``v``;
* the loop carries nothing but the rebound output tensors, reads a tensor it writes
  only through the windows it stores (copies), stores each tensor through one mapping,
  and mutates in place only tiles it defines itself; it has no `if`.

The batched path (codegen) gives each tile that changes per iteration a leading axis
of the trip count ``n``; loop-invariant tiles are computed once and broadcast.  It is
guarded at run time (``n >= 1``, stride, windows in bounds, no aliasing between a
written tensor and another one) and falls back to the per-iteration loop otherwise.
Numerics are identical: every op rounds per element exactly as per iteration.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.compiler.listing import render_expr
from pytest_pypto.compiler.walk import arg_exprs, iter_exprs, iter_stmts, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.ops.memory import LOAD_OP, STORE_OP  # batched by the compiler (windows)
from pytest_pypto.ir.registry import VALUE_KINDS, OpSpec
from pytest_pypto.ir.types import TensorType, TileType

ENV_VAR = "PYPTO_BATCH_LOOPS"
LOOP_KINDS = ("range", "parallel")
BATCHED, INVARIANT = "batched", "invariant"


def enabled_by_env() -> bool:
    """Batching is on unless ``PYPTO_BATCH_LOOPS`` is 0/false/off/no."""
    return os.environ.get(ENV_VAR, "1").strip().lower() not in ("0", "false", "off", "no")


@dataclass
class Access:
    """A batched load or store: its window moves along ``axis`` by ``coef * v``."""

    axis: int
    coef: int
    root: str  # the kernel tensor parameter behind the accessed tensor
    extent: int
    top_level: bool  # offsets computable at loop entry (for the in-bounds guard)
    call: n.Call
    # A load of a tensor the loop also writes, through the store's own window mapping:
    # it copies its windows (a view would see the loop's later stores).
    copy: bool = False
    mapping: tuple[int, int, str] | None = None  # (axis, coef, offsets) of a moving window


@dataclass
class LoopPlan:
    """The decision for one candidate loop."""

    loop: n.For
    reason: str | None = None  # None: batched
    calls: dict[int, str] = field(default_factory=dict)  # id(Call) -> BATCHED | INVARIANT
    accesses: dict[int, Access] = field(default_factory=dict)  # id(load/store Call)
    stored: list[str] = field(default_factory=list)
    roots: list[str] = field(default_factory=list)  # every tensor root touched
    dynamic_step: bool = False
    # The windows may not tile their range edge to edge (a step of more than one window,
    # e.g. a `pl.spmd` block's loop over every n-th row block): the batched path passes
    # each access its stride, and takes no shortcut that assumes adjacent windows.
    strided: bool = False

    @property
    def batched(self) -> bool:
        return self.reason is None

    def describe(self) -> str:
        line = self.loop.span.line if self.loop.span else "-"
        head = (f"line {line}: for {self.loop.var.name} in pl.{self.loop.kind}("
                f"{render_expr(self.loop.start)}, {render_expr(self.loop.stop)}, "
                f"{render_expr(self.loop.step)})")
        if self.batched:
            axes = sorted({f"{a.root}[axis {a.axis}]" for a in self.accesses.values()})
            return f"{head}: batched ({', '.join(axes)}; per-iteration fallback)"
        return f"{head}: not batched: {self.reason}"


class Reject(Exception):
    pass


def plan_kernel(fn: n.Function, registry: Mapping[str, OpSpec], enabled: bool = True
                ) -> dict[int, LoopPlan]:
    """Plans of every candidate loop of ``fn`` by id(For); inner loops of a batched loop
    are part of its plan, inner loops of a rejected one are candidates themselves."""
    plans: dict[int, LoopPlan] = {}
    roots = {p.name: p.name for p in fn.params if isinstance(p.type, TensorType)}
    _scan(fn.body, registry, roots, plans, enabled)
    return plans


def _scan(body: list[n.Stmt], registry, roots: dict[str, str], plans: dict[int, LoopPlan],
          enabled: bool) -> None:
    for s in body:
        _track_roots(s, roots)
        if isinstance(s, n.For):
            if s.kind in LOOP_KINDS:
                plan = LoopPlan(s)
                if not enabled:
                    plan.reason = f"batching disabled ({ENV_VAR}=0 or batch_loops=False)"
                else:
                    try:
                        _Analysis(s, registry, roots, plan).run()
                    except Reject as exc:
                        plan.reason = str(exc)
                plans[id(s)] = plan
                if plan.batched:
                    continue
            _scan(s.body, registry, roots, plans, enabled)
        elif isinstance(s, n.If):
            _scan(s.then_body, registry, roots, plans, enabled)
            _scan(s.else_body, registry, roots, plans, enabled)


def _track_roots(s: n.Stmt, roots: dict[str, str]) -> None:
    """Follow tensor names back to kernel parameters (store results, carried tensors)."""
    if isinstance(s, n.Assign) and len(s.targets) == 1 and isinstance(s.value, n.Call):
        if s.value.op == STORE_OP:
            dst = s.value.arg("output_tensor")
            if isinstance(dst, n.Var) and dst.name in roots:
                roots[s.targets[0].name] = roots[dst.name]
    elif isinstance(s, n.For):
        for (var, init), res in zip(s.carried, s.results or (None,) * len(s.carried)):
            if isinstance(init, n.Var) and init.name in roots:
                roots[var.name] = roots[init.name]
                if res is not None:
                    roots[res.name] = roots[init.name]


def window(call: n.Call) -> tuple[Any, tuple]:
    """The tensor a load or store addresses and the shape of its window."""
    if call.op == LOAD_OP:
        return call.arg("tensor"), tuple(call.arg("shapes"))
    return call.arg("output_tensor"), tuple(call.arg("tile").type.shape)


def _names(e: Any) -> set[str]:
    out = set()
    for root in arg_exprs(e):
        for sub in iter_exprs(root):
            if isinstance(sub, n.Var):
                out.add(sub.name)
    return out


def _affine(e: Any, var: str) -> tuple[int, bool]:
    """(a, ok): ``e`` as ``a*var + b`` with ``b`` free of ``var``; ok False otherwise."""
    if isinstance(e, n.Var):
        return (1, True) if e.name == var else (0, True)
    if isinstance(e, (int, n.Const)) or not isinstance(e, n.BinOp):
        return (0, var not in _names(e)) if isinstance(e, n.Expr) else (0, True)
    (a1, ok1), (a2, ok2) = _affine(e.lhs, var), _affine(e.rhs, var)
    if not (ok1 and ok2):
        return 0, False
    if e.op == "+":
        return a1 + a2, True
    if e.op == "-":
        return a1 - a2, True
    if e.op == "*":
        if a1 and a2:
            return 0, False
        k = e.rhs if a1 else e.lhs
        if a1 == 0 and a2 == 0:
            return 0, True
        if isinstance(k, n.Const) and isinstance(k.value, int) and not isinstance(k.value, bool):
            return (a1 or a2) * k.value, True
        return 0, False
    return (0, True) if a1 == 0 and a2 == 0 else (0, False)


def _full(t: Any) -> bool:
    return not isinstance(t, TileType) or (
        None not in t.valid and tuple(t.valid) == tuple(t.shape)
    )


class _Analysis:
    def __init__(self, loop: n.For, registry, roots: dict[str, str], plan: LoopPlan) -> None:
        self.loop, self.registry, self.plan = loop, registry, plan
        self.var = loop.var.name
        self.roots = dict(roots)
        self.kind: dict[str, str] = {}
        self.dep = {self.var}
        self.defined: set[str] = set()
        self.loaded: set[str] = set()
        self.invariant_loads: set[str] = set()  # roots loaded through a window that stays
        self.store_maps: dict[str, tuple[int, int, str]] = {}
        self.store_shapes: dict[str, tuple[int, ...]] = {}
        self.depth = 0
        self.inplace = self._inplace_targets(loop.body)

    def _inplace_targets(self, body: list[n.Stmt]) -> set[str]:
        names: set[str] = set()
        for s in iter_stmts(body):
            for e in stmt_expr_list(s):
                if type(e) is n.Call and e.op in self.registry:
                    p = inplace_param(self.registry[e.op])
                    if p and isinstance(e.arg(p), n.Var):
                        names.add(e.arg(p).name)
        for s in iter_stmts(body):  # inner carried tiles reach back to their inits
            if isinstance(s, n.For):
                for var, init in s.carried:
                    if var.name in names and isinstance(init, n.Var):
                        names.add(init.name)
        return names

    # ---------------------------------------------------------------- statements
    def run(self) -> None:
        loop = self.loop
        for var, init in loop.carried:
            if not isinstance(var.type, TensorType):
                raise Reject(f"it carries '{var.name}', which is not an output tensor")
            root = self.roots.get(init.name) if isinstance(init, n.Var) else None
            if root is None:
                raise Reject(f"carried tensor '{var.name}' is not a kernel parameter")
            self.roots[var.name] = root
        self.body(loop.body, loop.carried)
        for root in sorted(self.loaded & set(self.store_maps)):
            self.read_own_windows(root)
        if not self.store_maps:
            raise Reject("it stores nothing")
        if not self.plan.accesses:
            raise Reject("no window moves with the loop variable")
        self.plan.stored = sorted(self.store_maps)
        self.plan.roots = sorted(self.loaded | set(self.store_maps))
        if not isinstance(loop.step, n.Const):
            self.plan.dynamic_step = True

    def read_own_windows(self, root: str) -> None:
        """A tensor the loop both reads and writes: batched only when every load of it
        reads exactly the window the same iteration stores (same axis, step, offsets and
        shape), so no iteration reads what another one writes; those loads copy."""
        accesses = [a for a in self.plan.accesses.values() if a.root == root]
        loads = [a for a in accesses if a.call.op == LOAD_OP]
        if root in self.invariant_loads or not loads or not all(
                a.top_level for a in accesses):  # (offsets fixed for the whole iteration)
            raise Reject(f"it reads tensor '{root}', which it also writes")
        for a in loads:
            if a.mapping != self.store_maps[root] or tuple(a.call.arg("shapes")) != \
                    self.store_shapes[root]:
                raise Reject(f"it reads tensor '{root}', which it also writes, through "
                             "another window than its stores")
            a.copy = True

    def body(self, stmts: list[n.Stmt], carried: tuple[tuple[n.Var, n.Expr], ...]) -> None:
        for s in stmts:
            if isinstance(s, n.Assign):
                self.assign(s)
            elif isinstance(s, n.ExprStmt):
                self.value(s.expr, ())
            elif isinstance(s, n.Yield):
                for (var, _), v in zip(carried, s.values):
                    self.carried_value(var, v)
            elif isinstance(s, n.For):
                self.inner_for(s)
            elif isinstance(s, n.If):
                raise Reject("it contains an if statement")
            else:
                raise Reject(f"it contains a {type(s).__name__} statement")

    def carried_value(self, var: n.Var, v: n.Expr) -> None:
        if isinstance(var.type, TensorType):
            if not isinstance(v, n.Var) or self.roots.get(v.name) != self.roots.get(var.name):
                raise Reject(f"carried tensor '{var.name}' is rebound to another tensor")
            return
        got = self.kind_of(v)
        if got == BATCHED and self.kind.get(var.name) != BATCHED:
            raise Reject(f"carried tile '{var.name}' starts loop-invariant but changes per "
                         "iteration")

    def assign(self, s: n.Assign) -> None:
        if len(s.targets) != 1:
            raise Reject("it unpacks a tuple")
        target = s.targets[0]
        self.defined.add(target.name)
        if isinstance(s.value, n.Call):
            got = self.value(s.value, (target.name,))
            if got.startswith("tensor:"):
                self.roots[target.name] = got[7:]
            else:
                self.kind[target.name] = got
        elif isinstance(s.value, n.FuncCall):
            raise Reject("it calls another function")
        else:
            if _names(s.value) & self.dep:
                self.dep.add(target.name)
            self.kind[target.name] = INVARIANT

    def inner_for(self, s: n.For) -> None:
        if (_names(s.start) | _names(s.stop) | _names(s.step)) & self.dep:
            raise Reject(f"inner loop over '{s.var.name}' has bounds that depend on "
                         f"'{self.var}'")
        self.defined.add(s.var.name)
        self.kind[s.var.name] = INVARIANT
        for var, init in s.carried:
            self.defined.add(var.name)
            if isinstance(var.type, TensorType):
                root = self.roots.get(init.name) if isinstance(init, n.Var) else None
                if root is None:
                    raise Reject(f"inner carried tensor '{var.name}' is not a kernel parameter")
                self.roots[var.name] = root
            elif isinstance(var.type, TileType):
                self.kind[var.name] = self.kind_of(init)
            else:
                raise Reject(f"inner loop carries scalar '{var.name}'")
        self.depth += 1
        self.body(s.body, s.carried)
        self.depth -= 1
        for res, (var, _) in zip(s.results, s.carried):
            self.defined.add(res.name)
            if var.name in self.roots:
                self.roots[res.name] = self.roots[var.name]
            else:
                self.kind[res.name] = self.kind[var.name]

    # ------------------------------------------------------------------ values
    def kind_of(self, e: Any) -> str:
        if isinstance(e, n.Call):
            return self.value(e, ())
        if isinstance(e, n.Var):
            if e.name in self.roots:
                return "tensor:" + self.roots[e.name]
            return self.kind.get(e.name, INVARIANT)
        return INVARIANT

    def value(self, call: n.Expr, targets: tuple[str, ...]) -> str:
        if not isinstance(call, n.Call):
            raise Reject("it evaluates a non-op expression for its effect")
        spec = self.registry[call.op]
        if not _full(call.type):
            raise Reject(f"{call.op} yields a partially valid tile")
        if call.op in (LOAD_OP, STORE_OP):
            got = self.memory(call)
        elif spec.batched_create:
            got = BATCHED if set(targets) & self.inplace else INVARIANT
        elif not spec.batchable:
            raise Reject(f"op {call.op} is not batchable")
        else:
            got = INVARIANT
            for p in spec.params:
                arg = call.arg(p.name)
                if arg is None or p.kind not in VALUE_KINDS:
                    if isinstance(arg, n.Expr) and _names(arg) & self.dep:
                        raise Reject(f"{call.op} argument '{p.name}' depends on '{self.var}'")
                    continue
                k = self.kind_of(arg)
                if k.startswith("tensor:"):
                    raise Reject(f"{call.op} takes a tensor operand")
                if isinstance(getattr(arg, "type", None), TileType):
                    if not _full(arg.type):
                        raise Reject(f"{call.op} reads a partially valid tile")
                    if k == BATCHED:
                        got = BATCHED
                elif _names(arg) & self.dep:
                    raise Reject(f"{call.op} scalar operand '{p.name}' depends on '{self.var}'")
            p = inplace_param(spec)
            if p is not None:
                acc = call.arg(p)
                if not isinstance(acc, n.Var) or acc.name not in self.defined:
                    raise Reject(f"{call.op} updates a tile defined outside the loop")
                if got == BATCHED and self.kind.get(acc.name) != BATCHED:
                    raise Reject(f"{call.op} updates a loop-invariant tile with per-iteration "
                                 "values")
        self.plan.calls[id(call)] = got if not got.startswith("tensor:") else BATCHED
        return got

    def memory(self, call: n.Call) -> str:
        is_load = call.op == LOAD_OP
        tensor = call.arg("tensor" if is_load else "output_tensor")
        root = self.roots.get(tensor.name) if isinstance(tensor, n.Var) else None
        if root is None:
            raise Reject(f"{call.op} accesses a tensor that is not a kernel parameter")
        offsets = call.arg("offsets")
        if is_load:
            shapes = tuple(call.arg("shapes"))
            valid = call.arg("valid_shapes")
            if call.arg("clamp"):
                raise Reject("a load clamps its window")
            if valid is not None and tuple(valid) != shapes:
                raise Reject("a load has a partial valid_shapes")
        else:
            tile = call.arg("tile")
            if not isinstance(getattr(tile, "type", None), TileType) or not _full(tile.type):
                raise Reject("a store writes a partially valid tile")
            shapes = tuple(tile.type.shape)
            self.kind_of(tile)  # classifies a nested producer call
            atomic = call.arg("atomic")
            if atomic is not None and str(getattr(atomic, "name", atomic)) not in ("None_",
                                                                                  "None", "0"):
                raise Reject("a store is atomic")
            part = call.arg("shapes")
            if part is not None:
                part = tuple(part)
                lead = len(part) - len(shapes)
                if lead < 0 or part[lead:] != shapes or any(d != 1 for d in part[:lead]):
                    raise Reject("a store reshapes its tile into another partition")
        moving = []
        for d, o in enumerate(offsets):
            names = _names(o)
            if names & self.dep:
                a, ok = _affine(o, self.var)
                if not ok or a == 0 or (names - {self.var}) & self.dep:
                    raise Reject(f"{call.op} offset {render_expr(o)} is not affine in "
                                 f"'{self.var}'")
                moving.append((d, a, names))
        if len(moving) > 1:
            raise Reject(f"{call.op} window moves along more than one dim")
        if not moving:
            if is_load:
                self.loaded.add(root)
                self.invariant_loads.add(root)
                return INVARIANT
            raise Reject(f"a store to '{root}' does not move with '{self.var}'")
        d, a, names = moving[0]
        extent = shapes[d]
        step = self.loop.step
        if isinstance(step, n.Const) and a * step.value < extent:
            raise Reject(f"{call.op} windows of '{root}' move by {a * step.value} along dim "
                         f"{d} but span {extent} (they overlap)")
        if not isinstance(step, n.Const) or a * step.value != extent:
            self.plan.strided = True  # gaps between the windows (or maybe: a run-time step)
        top = self.depth == 0 and not (_names(offsets) - {self.var}) & self.defined
        base = "|".join(render_expr(o) if isinstance(o, n.Expr) else repr(o) for o in offsets)
        mapping = (d, a, base)
        self.plan.accesses[id(call)] = Access(d, a, root, extent, top, call, mapping=mapping)
        if is_load:
            self.loaded.add(root)
            return BATCHED
        if self.store_maps.setdefault(root, mapping) != mapping or \
                self.store_shapes.setdefault(root, shapes) != shapes:
            raise Reject(f"tensor '{root}' is stored through two different window mappings")
        return "tensor:" + root


def inplace_param(spec: OpSpec) -> str | None:
    """The operand an ``execute`` op updates in place (MemRule result "same:<param>")."""
    result = spec.mem.result
    if spec.execute is not None and isinstance(result, str) and result.startswith("same:"):
        return result[5:]
    return None


def _covers_statically(loop: n.For, tensor: Any, offsets: Any, shape: tuple, axis: int) -> bool:
    """Whether the windows of a batched access are the whole tensor, known at compile time
    (in bounds, from offset 0, and as large as the tensor in every dim)."""
    spans = _static_spans(loop, tensor, offsets, shape, axis)
    return spans is not None and all(first == 0 and end == extent for first, end, extent in spans)


def trip_bytes(btypes: Any, dynamic_dim: int = 1) -> int:
    """Bytes one iteration (or one task, for a task-batched variant) adds to a batched
    path: every tile type it batches, counted at 4 bytes an element at least (arithmetic
    widens to FP32), a dynamic dim as ``dynamic_dim``."""
    total = 0
    for t in btypes:
        count = 1
        for d in t.shape:
            count *= d if isinstance(d, int) else dynamic_dim
        total += count * max(4, t.dtype.itemsize)
    return total


def _fits_statically(loop: n.For, tensor: Any, offsets: Any, shape: tuple, axis: int) -> bool:
    """Whether all windows of a batched access are in bounds, known at compile time (else
    the run-time `_batch.fits` guard stays)."""
    spans = _static_spans(loop, tensor, offsets, shape, axis)
    return spans is not None and all(first >= 0 and end <= extent for first, end, extent in spans)


def _static_spans(loop: n.For, tensor: Any, offsets: Any, shape: tuple,
                  axis: int) -> list[tuple[int, int, int]] | None:
    """Per dim, (first index, end, tensor extent) covered by all windows of a batched
    access, when compile time knows them: a tensor of static shape, constant loop bounds
    with at least one trip, and each offset a constant or the loop variable itself."""
    bounds = (loop.start, loop.stop, loop.step)
    size = getattr(getattr(tensor, "type", None), "shape", None)
    if not all(isinstance(b, n.Const) and type(b.value) is int for b in bounds) \
            or not isinstance(size, tuple) or len(size) != len(shape) \
            or not all(type(d) is int for d in size + tuple(shape)):
        return None
    start, stop, step = (b.value for b in bounds)
    trips = len(range(start, stop, step))
    if trips < 1 or len(offsets) != len(shape):
        return None
    spans = []
    for d, (o, e, extent) in enumerate(zip(offsets, shape, size)):
        if type(o) is int:
            first = o
        elif isinstance(o, n.Const) and type(o.value) is int:
            first = o.value
        elif isinstance(o, n.Var) and o.name == loop.var.name and d == axis and step == e:
            first = start  # (windows edge to edge: a larger step leaves gaps)
        else:
            return None
        spans.append((first, first + (trips * e if d == axis else e), extent))
    return spans
