"""Which Out tensors are completely overwritten before anything reads them.

The runtime poisons a pure Out at entry (docs/design/numerics.md §6) so a kernel reading it sees
NaN.
When the compiler proves the poison can never be observed -- the first task touching
the entry's Out param is a kernel that stores every element of it before any read --
the runtime may skip the fill (``ArgInfo.fully_written``).

The proof is deliberately narrow: the kernel's param is mentioned only as the carried
init of one top-level batched loop (compiler.batching: no `if`, no reads of what it
writes, fully valid, non-atomic stores) with static bounds ``range(0, stop, step)``
whose single store of that tensor has offset ``v`` along its moving dim, 0 elsewhere,
and windows tiling the whole static tensor.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.compiler.batching import LoopPlan
from pytest_pypto.compiler.walk import iter_exprs, iter_stmts, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.ops.memory import STORE_OP
from pytest_pypto.ir.types import Direction, TensorType


def _int(e: Any) -> int | None:
    if isinstance(e, n.Const):
        e = e.value
    return e if isinstance(e, int) and not isinstance(e, bool) else None


def _refs(body: list[n.Stmt], name: str) -> list[n.Stmt]:
    """Statements (program order) whose own expressions mention Var ``name``."""
    out = []
    for s in iter_stmts(body):
        out += [s for e in stmt_expr_list(s) if type(e) is n.Var and e.name == name]
    return out


def fully_written_params(fn: n.Function, plans: dict[int, LoopPlan]) -> set[int]:
    """Positions of ``fn``'s Out tensor params that it overwrites entirely before reading."""
    found: set[int] = set()
    if not any(plan.batched for plan in plans.values()):
        return found  # the proof needs a batched loop (_covered)
    for i, p in enumerate(fn.params):
        if isinstance(p.type, TensorType) and p.direction is Direction.OUT \
                and _covered(fn.body, p, plans):
            found.add(i)
    return found


def _covered(body: list[n.Stmt], p: n.Param, plans: dict[int, LoopPlan]) -> bool:
    refs = _refs(body, p.name)
    if len(refs) != 1 or not isinstance(refs[0], n.For) or refs[0] not in body:
        return False
    loop = refs[0]
    plan = plans.get(id(loop))
    if plan is None or not plan.batched or any(
        isinstance(init, n.Var) and init.name == p.name
        for init in (e for top in (loop.start, loop.stop, loop.step) for e in iter_exprs(top))
    ):
        return False
    start, stop, step = _int(loop.start), _int(loop.stop), _int(loop.step)
    shape = tuple(_int(d) for d in p.type.shape)
    if start != 0 or stop is None or not step or step < 0 or None in shape:
        return False
    stores = [a for a in plan.accesses.values()
              if a.root == p.name and a.call.op == STORE_OP]
    if len(stores) != 1 or not stores[0].top_level:
        return False
    access = stores[0]
    tile_shape = tuple(access.call.arg("tile").type.shape)
    offsets = tuple(access.call.arg("offsets"))
    if len(offsets) != len(shape) or len(tile_shape) != len(shape):
        return False
    for d, (o, e, s) in enumerate(zip(offsets, tile_shape, shape)):
        if d == access.axis:
            if not (isinstance(o, n.Var) and o.name == loop.var.name and access.coef == 1
                    and step == e and len(range(0, stop, step)) * e == s):
                return False
        elif _int(o) != 0 or e != s:
            return False
    return True


def entry_fully_written(entry: n.Function, kernel_facts: dict[str, set[int]]) -> set[int]:
    """Positions of the entry's Out params whose first task is a kernel that overwrites
    them entirely (``kernel_facts``: kernel name -> its fully written param positions)."""
    found: set[int] = set()
    if not any(kernel_facts.values()):
        return found  # no kernel overwrites a param entirely (most programs)
    for i, p in enumerate(entry.params):
        if not (isinstance(p.type, TensorType) and p.direction is Direction.OUT):
            continue
        refs = _refs(entry.body, p.name)
        if not refs or refs[0] not in entry.body:
            continue
        first = refs[0]
        if refs.count(first) != 1:
            continue  # passed twice, or mentioned again in the same statement
        call = first.value if isinstance(first, n.Assign) else (
            first.expr if isinstance(first, n.ExprStmt) else None)
        if not isinstance(call, n.FuncCall):
            continue
        positions = [k for k, a in enumerate(call.args)
                     if isinstance(a, n.Var) and a.name == p.name]
        if len(positions) == 1 and positions[0] in kernel_facts.get(call.callee, set()):
            found.add(i)
    return found
