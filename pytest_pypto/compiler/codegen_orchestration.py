"""Code generation for the orchestration function: Python that drives the runtime
(``rt.submit`` per kernel call, ``rt.create_tensor``/``slice``/``read``/... per
orchestration tensor op), with the same SPANS/SCALARS tables as kernels
(docs/design/artifact.md §6).  Kernel modules are `codegen.py`'s."""

from __future__ import annotations

import functools

from pytest_pypto.compiler.codegen import (
    PREAMBLE_HELPERS,
    dtype_imports,
    ends_with_return,
    reads_launch,
    with_tables,
)
from pytest_pypto.compiler.codegen_stmts import Emitter
from pytest_pypto.compiler.directions import returned_params
from pytest_pypto.compiler.groups import members
from pytest_pypto.compiler.structure import GROUP_KIND
from pytest_pypto.compiler.walk import iter_calls
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.ops.cross_core import SYNCALL_OP

# Orchestration tensor ops -> (rt method, number of leading params it takes).
RT_METHODS = {
    "create_tensor": ("create_tensor", 3),
    "create": ("create_tensor", 3),
    "slice": ("slice", 4),  # + valid_shape; clamp passed by keyword (`call`)
    "reshape": ("reshape", 2),
    "transpose": ("transpose", 3),
    "read": ("read", 2),
    "write": ("write", 3),
    "dim": ("dim", 2),
    "assemble": ("assemble", 3),
}


# Orchestration-side TaskId values: arrays of them and dependency-only tasks.
_TASK_OPS = {
    "array.create": "array_create",
    "array.get_element": "array_get",
    "array.update_element": "array_set",
    "system.task_dummy": "task_dummy",
}


class OrchestrationEmitter(Emitter):
    def __init__(self, program: n.Program, registry,
                 returns: dict[str, list[int]] | None = None) -> None:
        super().__init__()
        self.pipe_slots: tuple[int, ...] = (8, 4)
        self.program = program
        self.registry = registry
        self.returns = {
            f.name: returned_params(f, memo=returns)
            for f in program.functions.values() if f.kind == "InCore"
        }
        for f in program.functions.values():
            if f.kind == GROUP_KIND:
                self.returns[f.name] = returned_params(f, program)

    @functools.cached_property
    def launch_kernels(self) -> set[str]:
        """Kernels reading their launch (`reads_launch` ops): asked only by a `pl.spmd`
        launch."""
        return {
            f.name for f in self.program.functions.values()
            if any(isinstance(e, n.Call) and reads_launch(self.registry, e.op)
                   for _, e in iter_calls(f.body))
        }

    @functools.cached_property
    def barrier_kernels(self) -> set[str]:
        """Kernels holding a `pl.system.syncall`: a launch of one runs its blocks side by
        side (runtime/lanes.py)."""
        return {
            f.name for f in self.program.functions.values()
            if any(isinstance(e, n.Call) and e.op == SYNCALL_OP for _, e in iter_calls(f.body))
        }

    def stmt(self, s: n.Stmt, depth: int, yield_to: tuple[n.Var, ...]) -> None:
        if isinstance(s, n.Assign) and isinstance(s.value, n.Call) and s.value.op not in _TASK_OPS \
                and s.value.op.rpartition(".")[2] in ("create_tensor", "create"):
            target = self.names(s.targets[0].name)
            args = self._rt_args(s.value, 3)
            manual = ", manual_dep=True" if s.value.arg("manual_dep") else ""
            self.emit(depth, f"{target} = rt.create_tensor({args}, name={s.targets[0].name!r}"
                             f"{manual})")
            return
        super().stmt(s, depth, yield_to)

    def _rt_args(self, e: n.Call, count: int) -> str:
        spec = self.registry.get(e.op)
        given = dict(e.args)
        if spec is not None:
            values = [given.get(p.name, None if p.required else p.default) for p in spec.params][:count]
        else:
            values = [v for _, v in e.args][:count]
        return ", ".join(self.expr(v) if v is not None else "None" for v in values)

    def call(self, e: n.Expr) -> str:
        if isinstance(e, n.FuncCall):
            args = [self.expr(a) for a in e.args]
            packed = "(" + ", ".join(args) + ("," if len(args) == 1 else "") + ")"
            rets = self.returns.get(e.callee, [])
            ret = "(" + ", ".join(map(str, rets)) + ("," if len(rets) == 1 else "") + ")"
            callee = self.program.functions.get(e.callee)
            if callee is not None and callee.kind == GROUP_KIND:
                group = tuple(members(self.program, callee))
                launch = ""
                if e.blocks is not None:  # pl.cluster() around pl.spmd(n): n Group tasks
                    readers = tuple(i for i, (m, _) in enumerate(group) if m in self.launch_kernels)
                    launch = f", blocks={self.expr(e.blocks)}, launch={readers!r}"
                return (f"rt.submit_group({e.callee!r}, {packed}, "
                        f"{group!r}, returns={ret}, "
                        f"slots={self.pipe_slots!r}{launch})")
            launch = ""
            if e.blocks is not None:
                launch = f", blocks={self.expr(e.blocks)}"
                if e.callee in self.launch_kernels:
                    launch += ", launch=True"
                if e.callee in self.barrier_kernels:
                    launch += ", barrier=True"
            return f"rt.submit({e.callee!r}, {packed}, returns={ret}{launch}{self._sched(e)})"
        assert isinstance(e, n.Call)
        if e.op in _TASK_OPS:
            return f"rt.{_TASK_OPS[e.op]}({self._task_op_args(e)})"
        method, count = RT_METHODS[e.op.rpartition(".")[2]]
        clamp = dict(e.args).get("clamp") if method == "slice" else None
        extra = f", clamp={self.expr(clamp)}" if clamp is not None else ""
        return f"rt.{method}({self._rt_args(e, count)}{extra})"

    def _sched(self, e: n.FuncCall) -> str:
        """The explicit-scheduling keywords of a task (docs/design/scheduling.md §2-§4)."""
        out = ""
        if e.deps:
            out += f", deps={self.expr(list(e.deps))}"
        if e.task_id:
            out += ", task_id=True"
        if e.manual:
            out += ", manual=True"
        if e.no_dep:
            out += f", no_dep={tuple(e.no_dep)!r}"
        if e.dumps:
            out += f", dumps={tuple(e.dumps)!r}"
        if e.predicate is not None:
            tensor, indices, op, target = e.predicate
            out += (f", predicate=({self.expr(tensor)}, {self.expr(list(indices))}, "
                    f"{op!r}, {target!r})")
        return out

    def _task_op_args(self, e: n.Call) -> str:
        if e.op == "system.task_dummy":
            return self.expr(list(e.arg("deps")))
        if e.op == "array.create":
            return f"{self.expr(e.arg('extent'))}, {e.arg('dtype').name!r}"
        names = ("array", "index", "value") if e.op == "array.update_element" else ("array", "index")
        return ", ".join(self.expr(e.arg(k)) for k in names)

    def dyn_binding(self, local: str, axis: int) -> str:
        return f"rt.dim({local}, {axis})"

    def module(self, entry: n.Function, header: str) -> str:
        fname = self.names(entry.name)
        params = self.bind_params(entry)
        self.body(entry.body, 2)
        if not ends_with_return(entry.body):
            self.emit(2, "return ()")
        self.prepend_dyn_bindings(2, entry.span)
        out = [
            f"# {header}",
            '"""Generated by pytest-pypto; do not edit.  Orchestration ABI: see '
            'pytest_pypto.ir.artifact."""',
            "",
            dtype_imports(self.dtypes).rstrip("\n"),
            PREAMBLE_HELPERS,
            "",
            "def make(rt):",
            f"    def {fname}({', '.join(params)}):",
        ]
        return with_tables(self, out, fname)


def uses_explicit_scheduling(entry: n.Function) -> bool:
    """Whether the orchestration states any dependency itself (deps=, manual scopes,
    no_dep_args=, predicates, TaskIds, task_dummy, manual_dep buffers): the worker then
    keeps tasks pending until a sync point, as the race detector's order facts need
    (docs/design/scheduling.md)."""
    for _, e in iter_calls(entry.body):
        if isinstance(e, n.FuncCall):
            if e.deps or e.task_id or e.manual or e.no_dep or e.predicate is not None:
                return True
        elif e.op in _TASK_OPS or (
                e.op.rpartition(".")[2] in ("create_tensor", "create") and e.arg("manual_dep")):
            return True
    return False


def orchestration_source(program: n.Program, entry: n.Function, registry, header: str,
                         returns: dict[str, list[int]] | None = None,
                         pipe_slots: tuple[int, int] = (8, 4)) -> str:
    """Orchestration module source; ``returns``: a `returned_params` memo to share;
    ``pipe_slots``: the arch's default pipe depths, passed to each Group task."""
    emitter = OrchestrationEmitter(program, registry, returns)
    emitter.pipe_slots = tuple(pipe_slots)
    return emitter.module(entry, header)
