# SPDX-License-Identifier: Apache-2.0
"""Which tile moves the generated kernel may run as views (no copy), and which locals die.

A `tile.move` changes where a tile lives, not its data, so the simulator can hand the
moved tile the source's buffer -- unless one of the two is later written in place,
when the other would see the write (a move followed by `tile.write` on its source must
leave the moved copy as it was).  `shareable_moves` decides that per kernel, flow-
insensitively and conservatively:

* buffers are grouped into alias classes (union-find over local names): a move's result
  joins its source; an op whose result is ``same:<param>`` (views and in-place writes,
  `MemRule`) joins its result to that operand; assignments, loop-carried values, yields
  and `if` results join what they bind;
* a class is *written* when any of its names is the ``same:<param>`` operand of an
  in-place op.  A view (``MemRule.view``: slice, reshape, transpose_view, ...) writes
  nothing, it only joins the class: a later in-place write through the view names the
  view, whose class holds its source too;
* a move shares its buffer only when its class is not written.

`last_uses` gives, per statement list, the tile locals a `del` may drop right after a
statement: names only that list mentions, whose last mention is that statement, so
each loop iteration frees its temporaries before the next one allocates (the freed
buffers are then reused instead of fresh memory being faulted in).
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_pypto.compiler.walk import child_bodies, is_tile, iter_calls, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.ops.memory import MOVE_OP


class _Classes:
    """Union-find over local names."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, name: str) -> str:
        root = self.parent.setdefault(name, name)
        while root != self.parent[root]:
            root = self.parent[root]
        while name != root:  # path compression
            self.parent[name], name = root, self.parent[name]
        return root

    def union(self, a: str, names: Iterable[str]) -> None:
        for b in names:
            ra, rb = self.find(a), self.find(b)
            if ra != rb:
                self.parent[rb] = ra


def _same_param(registry, op: str) -> str | None:
    spec = registry.get(op)
    result = spec.mem.result if spec is not None else None
    if isinstance(result, str) and result.startswith("same:"):
        return result[len("same:"):]
    return None


def _written_param(registry, op: str) -> str | None:
    """The operand an in-place op writes (a ``same:`` op that is not a view)."""
    spec = registry.get(op)
    if spec is None or spec.mem.view:
        return None
    return _same_param(registry, op)


def _aliases(expr, registry) -> set[str]:
    """Names whose buffer the value of ``expr`` may share."""
    if isinstance(expr, n.Var):
        return {expr.name}
    if isinstance(expr, n.Call):
        param = "tile" if expr.op == MOVE_OP else _same_param(registry, expr.op)
        if param is not None:
            return _aliases(expr.arg(param), registry)
    return set()


def shareable_moves(fn: n.Function, registry) -> set[int]:
    """``id`` of every `tile.move` call in ``fn`` that may return a view of its source."""
    if not any(type(e) is n.Call and e.op == MOVE_OP for _, e in iter_calls(fn.body)):
        return set()  # no move at all (most kernels): nothing to classify
    classes = _Classes()
    written: list[str] = []
    moves: list[tuple[int, set[str]]] = []

    def visit_exprs(stmt: n.Stmt) -> None:
        for e in stmt_expr_list(stmt):
            if type(e) is not n.Call:
                continue
            if e.op == MOVE_OP:
                moves.append((id(e), _aliases(e, registry)))
            param = _written_param(registry, e.op)
            if param is not None:
                written.extend(_aliases(e.arg(param), registry))

    def walk(body: list[n.Stmt], targets: tuple[n.Var, ...], loop: tuple[n.Var, ...]) -> None:
        for s in body:
            visit_exprs(s)
            if isinstance(s, n.Assign):
                got = _aliases(s.value, registry)
                for t in s.targets:
                    classes.union(t.name, got)
            elif isinstance(s, (n.Yield, n.LoopJump)):
                to = targets if isinstance(s, n.Yield) else loop
                for t, v in zip(to, s.values):
                    classes.union(t.name, _aliases(v, registry))
            elif isinstance(s, n.For):
                carried = tuple(v for v, _ in s.carried)
                for (var, init), res in zip(s.carried, s.results):
                    classes.union(var.name, _aliases(init, registry) | {res.name})
                walk(s.body, carried, carried)
            elif isinstance(s, n.If):
                for inner in child_bodies(s):
                    walk(inner, s.results, loop)

    walk(fn.body, (), ())
    dirty = {classes.find(w) for w in written}
    shared = set()
    for call_id, names in moves:
        if not any(classes.find(x) in dirty for x in names):
            shared.add(call_id)
    return shared


def _bound(stmt: n.Stmt) -> set[str]:
    """Names a statement binds itself (not inside nested bodies)."""
    if isinstance(stmt, n.Assign):
        return {t.name for t in stmt.targets}
    if isinstance(stmt, n.For):
        names = {v.name for v, _ in stmt.carried} | {r.name for r in stmt.results}
        return names | ({stmt.var.name} if stmt.var is not None else set())
    if isinstance(stmt, n.If):
        return {r.name for r in stmt.results}
    return set()


def tile_names(fn: n.Function) -> set[str]:
    """Names bound to tile values anywhere in ``fn`` (what a `del` may drop)."""
    found: set[str] = set()

    def walk(body: list[n.Stmt]) -> None:
        for s in body:
            t = type(s)  # by exact type first: assignments are most statements
            if t is n.Assign:
                for v in s.targets:
                    if is_tile(v.type):
                        found.add(v.name)
            elif isinstance(s, n.For):
                found.update([v.name for v, _ in s.carried if is_tile(v.type)])
                found.update([v.name for v in s.results if is_tile(v.type)])
                walk(s.body)
            elif isinstance(s, n.If):
                found.update([v.name for v in s.results if is_tile(v.type)])
                walk(s.then_body)
                walk(s.else_body)

    walk(fn.body)
    return found


def last_uses(fn: n.Function) -> dict[int, tuple[str, ...]]:
    """``id(stmt)`` -> tile names to `del` right after it (see the module docstring).

    A name belongs to the innermost statement list enclosing every statement that
    mentions it; it is dropped after that list's last statement mentioning it (nested
    mentions included), provided the list's first statement mentioning it binds it
    (an assignment not reading it, a loop's carried value or result, an `if` result),
    so a later loop iteration rebinds it before any read.
    """
    tiles = tile_names(fn)
    if not tiles:
        return {}  # nothing a `del` could drop
    lists: list[tuple[list[n.Stmt], int | None]] = []  # (body, parent list index)
    # per list: for each statement, the tile names it mentions (nested bodies included)
    sets: list[list[set[str]]] = []
    # per list: for each statement, the tile names it binds itself without reading them
    # (nested bodies excluded), found on the same walk
    binders: list[list[set[str]]] = []
    direct_in: dict[str, set[int]] = {}  # name -> lists with a statement mentioning it

    def collect(body: list[n.Stmt], parent: int | None) -> set[str]:
        index = len(lists)
        lists.append((body, parent))
        mine_list: list[set[str]] = []
        sets.append(mine_list)
        binds_list: list[set[str]] = []
        binders.append(binds_list)
        union: set[str] = set()
        for s in body:
            t = type(s)
            reads = [e.name for e in stmt_expr_list(s) if type(e) is n.Var and e.name in tiles]
            if t is n.Assign:  # (by exact type: no subclasses)
                bound = {v.name for v in s.targets if v.name in tiles}
            elif t is n.For or t is n.While or t is n.If:
                bound = _bound(s) & tiles
            else:
                bound = _NONE
            mine = bound.union(reads)
            binds_list.append(bound.difference(reads) if reads else bound)
            for name in mine:
                got = direct_in.get(name)
                if got is None:
                    direct_in[name] = {index}
                else:
                    got.add(index)
            if t is n.For or t is n.While or t is n.If:
                for inner in child_bodies(s):
                    mine = mine | collect(inner, index)
            mine_list.append(mine)
            union |= mine
        return union

    collect(fn.body, None)
    by_owner: dict[int, set[str]] = {}
    for name, found in direct_in.items():
        o = next(iter(found)) if len(found) == 1 else _common_list(sorted(found), lists)
        got = by_owner.get(o)
        if got is None:
            by_owner[o] = {name}
        else:
            got.add(name)
    result: dict[int, tuple[str, ...]] = {}
    for index, mine in by_owner.items():
        body = lists[index][0]
        # One forward pass: each name's first and last mentioning statement.  A name is
        # dropped after its last one when its first one binds it (so a long body costs
        # linear time, not names x statements), and never after a return or a jump.
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        for i, names in enumerate(sets[index]):
            for name in names:
                if name in mine:
                    if name not in first:
                        first[name] = i
                    last[name] = i
        dead: dict[int, list[str]] = {}
        for name, i in last.items():
            if name in binders[index][first[name]] and not isinstance(
                    body[i], (n.Return, n.LoopJump)):
                got_dead = dead.get(i)
                if got_dead is None:
                    dead[i] = [name]
                else:
                    got_dead.append(name)
        for i, names_dead in dead.items():
            result[id(body[i])] = tuple(sorted(names_dead))
    return result


_NONE: frozenset[str] = frozenset()  # what a statement binding nothing binds


def _common_list(found: list[int], lists: list[tuple[list[n.Stmt], int | None]]) -> int:
    """The innermost statement list enclosing every list in ``found``."""

    def chain(i: int | None) -> list[int]:
        out = []
        while i is not None:
            out.append(i)
            i = lists[i][1]
        return out[::-1]  # outermost first

    common = chain(found[0])
    for other in found[1:]:
        path = chain(other)
        k = 0
        while k < min(len(common), len(path)) and common[k] == path[k]:
            k += 1
        common = common[:k]
    return common[-1]
