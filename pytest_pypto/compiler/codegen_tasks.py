"""The task-batched variant of a kernel: one call standing for ``n`` tasks' calls.

The runtime (runtime/task_batches.py) groups ready tasks of one kernel that have equal
scalar arguments and equal window shapes, and calls this variant once with, for every
tensor parameter, the stack of the tasks' windows (leading axis ``n``).  The variant is
the kernel body with every tile carrying that leading axis: loads and stores address
the same window of every stacked task (`ir.task_batch`), every other op is one the
registry marks ``batchable`` (its numpy semantics map over a leading axis with the same
per-element rounding) or a tile creation (``batched_create``).  Scalars are the same
for every task of a batch, so control flow on them (`if`, loop bounds) and the dynamic
dims are batch-invariant and stay as in the per-task kernel.

A kernel qualifies when (`variant_reason` returns None): it calls no other function,
reads no launch, and every op is a load (no clamp; valid_shapes come from scalars), a
plain store (no atomic, no partition, a fully valid tile of the tensor's rank), a
batchable op or a tile creation on fully valid tiles, or an op marked
``task_batchable`` (views, fillpad: valid regions map over the task axis too), each
with a tile result.  Otherwise the kernel
has no variant and its tasks run one by one (docs/design/runtime.md §6).
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.compiler.batching import inplace_param, trip_bytes
from pytest_pypto.compiler.codegen import KernelEmitter
from pytest_pypto.compiler.codegen_stmts import py_const
from pytest_pypto.compiler.walk import is_tile, iter_stmts, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.ops.memory import LOAD_OP, STORE_OP
from pytest_pypto.ir.types import Direction, TensorType, TileType

SUFFIX = "__tasks"  # the variant's name: the kernel's + this
COUNT = "_n"  # the variant's first parameter: the number of tasks


def _full(t: Any) -> bool:
    return not isinstance(t, TileType) or (
        None not in t.valid and tuple(t.valid) == tuple(t.shape))


def variant_reason(fn: n.Function, registry: Any) -> str | None:
    """Why ``fn`` gets no task-batched variant (None: it gets one)."""
    for s in iter_stmts(fn.body):
        if not isinstance(s, (n.Assign, n.ExprStmt, n.Yield, n.For, n.If, n.Return,
                              n.LoopJump)):
            return f"it contains a {type(s).__name__} statement"
        if isinstance(s, n.Assign) and getattr(s.annotation, "memref", None) is not None:
            return "it places a tile at a pl.MemRef"
        for e in stmt_expr_list(s):
            if isinstance(e, n.FuncCall):
                return "it calls another function"
            if type(e) is not n.Call:
                continue
            why = _call_reason(e, registry)
            if why is not None:
                return why
    return None


def _call_reason(e: n.Call, registry: Any) -> str | None:
    if e.op == LOAD_OP:  # (valid_shapes: from scalars, the same for every task)
        tensor = e.arg("tensor")
        if e.arg("clamp"):
            return "a load clamps its window"
        if not isinstance(getattr(tensor, "type", None), TensorType):
            return "a load reads no tensor"
        return None
    if e.op == STORE_OP:
        tile, dst = e.arg("tile"), e.arg("output_tensor")
        atomic = e.arg("atomic")
        if atomic is not None and str(getattr(atomic, "name", atomic)) not in ("None_", "None",
                                                                               "0"):
            return "a store is atomic"
        if e.arg("shapes") is not None:
            return "a store names its partition"
        t, d = getattr(tile, "type", None), getattr(dst, "type", None)
        if not isinstance(t, TileType) or not isinstance(d, TensorType) or not _full(t) \
                or len(t.shape) != len(d.shape):
            return "a store writes a partially valid tile or one of another rank"
        return None
    spec = registry.get(e.op)
    if spec is None or spec.reads_launch or not (
            spec.batchable or spec.batched_create or spec.task_batchable):
        return f"op {e.op} is not batchable"
    if not is_tile(e.type):
        return f"op {e.op} yields no tile"
    if not _full(e.type) and not spec.task_batchable:
        return f"{e.op} yields a partially valid tile"
    for _, v in e.args:
        if isinstance(getattr(v, "type", None), TensorType):
            return f"op {e.op} takes a tensor operand"
        if isinstance(getattr(v, "type", None), TileType) and not _full(v.type) \
                and not spec.task_batchable:
            return f"op {e.op} reads a partially valid tile"
    return None


class TaskEmitter(KernelEmitter):
    """Emits the variant's body, sharing the kernel module's op locals and tile types."""

    def __init__(self, main: KernelEmitter) -> None:
        super().__init__(main.registry, {})
        self.ops, self.types, self.dtypes = main.ops, main.types, main.dtypes
        self.loops = main.loops + 1  # (its batched-type locals: a name space of their own)
        self.shared_moves = main.shared_moves  # (a move that may be a view stays one)
        self.views: set[str] = set()  # parameters loaded as views (`_read_only`)

    def dyn_binding(self, local: str, axis: int) -> str:
        return f"{local}.shape[{axis + 1}]"  # (behind the task axis)

    def call(self, e: n.Expr) -> str:
        assert isinstance(e, n.Call)
        if e.op == LOAD_OP:
            space = e.type.space or "Vec"
            valid = e.arg("valid_shapes")
            tensor = e.arg("tensor")
            valid = "" if valid is None else f", valid={self.expr(tuple(valid))}"
            view = ", view=True" if isinstance(tensor, n.Var) and tensor.name in self.views \
                else ""
            return (f"_tasks.load({self.expr(tensor)}, {self.expr(e.arg('offsets'))}, "
                    f"{py_const(tuple(e.arg('shapes')), self.dtypes)}, "
                    f"{self.batched_type(e.type)}, {space!r}{valid}{view})")
        if e.op == STORE_OP:
            return (f"_tasks.store({self.expr(e.arg('tile'))}, "
                    f"{self.expr(e.arg('output_tensor'))}, {self.expr(e.arg('offsets'))})")
        shape = None
        spec = self.registry[e.op]
        if spec.batched_create or spec.batched_shape:
            shape = f"({COUNT},) + {py_const(tuple(e.arg('shape')), self.dtypes)}"
        return self.op_call(e, self.batched_type(e.type), shape)

    def variant(self, fn: n.Function, fname: str) -> list[str]:
        """The variant's lines (inside ``make``), then its attachment to the kernel."""
        self.views = _read_only(fn, self.registry)
        params = self.bind_params(fn)
        self.dead_after = {}
        self.body(fn.body, 2)
        if not fn.body or not isinstance(fn.body[-1], n.Return):
            self.emit(2, "return ()")
        self.prepend_dyn_bindings(2, None)
        top = [f"        {name} = _batch.batched_type({self.type_const(t)}, {COUNT})"
               for t, name in self.btypes.items()]
        per_task = max(trip_bytes(self.btypes, dynamic_dim=1024), 1)
        return ["", f"    def {fname}{SUFFIX}({', '.join([COUNT, *params])}):", *top,
                *self.lines, "",
                f"    {fname}.tasks = {fname}{SUFFIX}",
                f"    {fname}.task_bytes = {per_task}",
                f"    {fname}.task_fills = {_filled(fn)!r}"]


def _read_only(fn: n.Function, registry: Any) -> set[str]:
    """Tensor parameters the variant may load as views of their stacks: used only as a
    load's tensor, in a kernel that updates no tile in place (a stack is the variant's
    own copy, so a view of one is as good as a per-task load's copy)."""
    names = {p.name for p in fn.params if isinstance(p.type, TensorType)}
    uses: dict[str, int] = {}
    loads: dict[str, int] = {}
    for s in iter_stmts(fn.body):
        for e in stmt_expr_list(s):
            if type(e) is n.Var and e.name in names:
                uses[e.name] = uses.get(e.name, 0) + 1
            elif type(e) is n.Call:
                spec = registry[e.op]
                if e.op != LOAD_OP and e.op != STORE_OP and inplace_param(spec) \
                        and not spec.task_batchable:  # (a view op shares, never writes)
                    return set()
                tensor = e.arg("tensor") if e.op == LOAD_OP else None
                if isinstance(tensor, n.Var) and tensor.name in names:
                    loads[tensor.name] = loads.get(tensor.name, 0) + 1
    return {name for name in names if uses.get(name, 0) == loads.get(name, 0)}


def _filled(fn: n.Function) -> dict[int, tuple[int, ...]]:
    """Out parameters every call overwrites before anything reads them: position -> the
    window shape the one store covers (a top-level store at offset 0, the parameter's
    only use, and no early return).  The runtime gives those no gathered stack when the
    task's window has that shape."""
    returns = [s for s in iter_stmts(fn.body) if isinstance(s, n.Return)]
    if returns and (len(returns) > 1 or fn.body[-1] is not returns[0]):
        return {}
    found: dict[int, tuple[int, ...]] = {}
    for pos, p in enumerate(fn.params):
        if not isinstance(p.type, TensorType) or p.direction is not Direction.OUT:
            continue
        uses = [e for s in iter_stmts(fn.body) for e in stmt_expr_list(s)
                if type(e) is n.Var and e.name == p.name]
        stores = [s for s in fn.body if isinstance(s, n.Assign) and type(s.value) is n.Call
                  and s.value.op == STORE_OP and s.value.arg("output_tensor") in uses]
        if len(uses) != 1 or len(stores) != 1:
            continue
        call = stores[0].value
        offsets = call.arg("offsets")
        shape = tuple(call.arg("tile").type.shape)
        if all(_zero(o) for o in offsets) and all(type(d) is int for d in shape):
            found[pos] = shape
    return found


def _zero(o: Any) -> bool:
    return (type(o) is int and o == 0) or (isinstance(o, n.Const) and o.value == 0
                                           and type(o.value) is int)


def task_variant(fn: n.Function, main: KernelEmitter, fname: str) -> list[str] | None:
    """The variant's lines for the kernel module, or None when ``fn`` has none."""
    if variant_reason(fn, main.registry) is not None:
        return None
    return TaskEmitter(main).variant(fn, fname)
