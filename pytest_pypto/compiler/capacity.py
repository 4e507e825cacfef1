"""Per-arch capacity (docs/design/checks.md §7): peak live bytes per memory space, and the memory
map.

Buffers: each tile-producing op allocates one, except views and in-place ops
(result rule ``same:<param>``), which share their operand's buffer, and loop
carries / if merges, which share their initial value's.  The value a loop body
yields for a carry is written straight into the carry's buffer when the carry is
not read after that value's definition (PyPTO's semantic aliases).

Reuse follows PyPTO's default memory planner: a statement reads its operands
before it writes its result, so a result may take the buffer of an operand whose
last use is that statement (``c = pl.add(a, b)`` with ``a`` dying needs no third
buffer).  Program points are therefore half-statements: statement ``k`` reads at
``2k`` and writes at ``2k + 1``; a buffer lives from the write of its definition
to the read of its last use.  Ops that read an operand while writing their result
(``OpSpec.reads_while_writing``) keep that operand live through the write.  Used inside a loop it
was defined outside of (or carried by it), a buffer lives over the whole loop.
The peak is a lower bound of PyPTO's allocator (which can also fail by
fragmentation).
"""

from __future__ import annotations

import bisect
import heapq
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_pypto.arch import ARCH_SPECS, ArchSpec
from pytest_pypto.compiler.passes import PassContext
from pytest_pypto.compiler.structure import kernels
from pytest_pypto.compiler.walk import Scope, is_tile, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.dtypes import DataType
from pytest_pypto.ir.errors import CapacityError
from pytest_pypto.ir.registry import OpSpec
from pytest_pypto.ir.types import TileType, type_str


def _read(point: int) -> int:
    """The half-point at which statement ``point`` reads its operands."""
    return 2 * point


def _write(point: int) -> int:
    """The half-point at which statement ``point`` writes its result."""
    return 2 * point + 1


def no_alias_operands(call: n.Call, registry: Mapping[str, OpSpec]) -> list[n.Var]:
    """The tile operands of ``call`` its result may not share a buffer with.

    The op's registry entry says which (`OpSpec.reads_while_writing`).
    """
    spec = registry.get(call.op)
    if spec is None:
        return []
    types = {k: v.type for k, v in call.args if isinstance(v, n.Var)}
    params = spec.live_while_writing(types, call.type)
    if params is True:
        return [v for _, v in call.args if isinstance(v, n.Var) and is_tile(v.type)]
    if not params:
        return []
    return [v for v in (call.arg(p) for p in params) if isinstance(v, n.Var)]


def tile_bytes(t: TileType, arch: ArchSpec) -> int:
    """Bytes a tile occupies: Acc M rounded to the arch's row alignment, then space alignment."""
    return shape_bytes(t.shape, t.dtype, t.space, arch)


# (shape, dtype name, space, id(arch)) -> (arch, bytes): the tiling planner prices the
# same few shapes thousands of times; the arch is kept to check the id is still its.
_BYTES: dict[tuple[Any, ...], tuple[ArchSpec, int]] = {}


def shape_bytes(shape: Sequence[int], dtype: DataType, space: str | None, arch: ArchSpec) -> int:
    """`tile_bytes` of a tile of ``shape``, ``dtype`` in ``space`` (no TileType needed)."""
    key = (tuple(shape), dtype.name, space, id(arch))
    got = _BYTES.get(key)
    if got is not None and got[0] is arch:
        return got[1]
    dims = list(shape)
    if space == "Acc" and len(dims) >= 2:
        align = arch.acc_m_align.get(dtype.name, 1)
        dims[-2] = math.ceil(dims[-2] / align) * align
    raw = dtype.nbytes(math.prod(dims))
    align = arch.alignment.get(space or "", 1)
    value = math.ceil(raw / align) * align
    if len(_BYTES) >= 4096:
        _BYTES.clear()  # bounded: a long session prices many distinct shapes
    _BYTES[key] = (arch, value)
    return value


@dataclass(eq=False)
class Buffer:
    """One allocation (an alias class of tile values) and its live range in half-points.

    ``start`` is the write of its first definition, ``end`` the last half-point it
    must hold its value (loops included); ``last_read`` is the same without the loop
    extension, which decides whether a loop's yielded value may write into it.
    """

    name: str
    type: TileType
    nbytes: int
    start: int
    end: int
    span: n.Span | None
    members: list[str] = field(default_factory=list)
    parent: Buffer | None = None
    offset: int = 0
    last_read: int = -1

    @property
    def space(self) -> str:
        return self.type.space or "Vec"

    @property
    def line(self) -> int:
        return self.span.line if self.span else 0

    def find(self) -> Buffer:
        b = self
        while b.parent is not None:
            b = b.parent
        return b

    def describe(self) -> str:
        dims = ", ".join(map(str, self.type.shape))
        return f"{self.name} ({self.space} [{dims}] {self.type.dtype.name}, {self.nbytes} bytes, line {self.line})"


class Liveness:
    """Buffers of one kernel with live ranges over half-points of pre-order statements."""

    def __init__(self, fn: n.Function, ctx: PassContext) -> None:
        self.ctx = ctx
        self.arch = ctx.arch
        self.points = 0
        self.loop_range: dict[int, tuple[int, int]] = {}
        self._number(fn.body)
        self.buffers: list[Buffer] = []
        self.point = 0
        self._walk(fn.body, {}, [])

    def _number(self, body: list[n.Stmt]) -> None:
        for stmt in body:
            start = self.points
            self.points += 1
            if isinstance(stmt, n.For):
                self._number(stmt.body)
                self.loop_range[id(stmt)] = (start, self.points - 1)
            elif isinstance(stmt, n.If):
                self._number(stmt.then_body)
                self._number(stmt.else_body)

    @property
    def half_points(self) -> int:
        return 2 * self.points

    def _use(self, buf: Buffer, loops: list[tuple[int, int]]) -> None:
        root = buf.find()
        self._hold(root, _read(self.point))
        for lo, hi in loops:
            if root.start < _read(lo):  # defined before the loop: needed again next iteration
                root.end = max(root.end, _write(hi))

    @staticmethod
    def _hold(root: Buffer, until: int) -> None:
        root.end = max(root.end, until)
        root.last_read = max(root.last_read, until)

    def _union(self, a: Buffer, b: Buffer) -> Buffer:
        ra, rb = a.find(), b.find()
        if ra is rb:
            return ra
        rb.parent = ra
        ra.start, ra.end = min(ra.start, rb.start), max(ra.end, rb.end)
        ra.last_read = max(ra.last_read, rb.last_read)
        ra.nbytes = max(ra.nbytes, rb.nbytes)
        ra.members.extend(rb.members)
        return ra

    def _walk(
        self, body: list[n.Stmt], env: dict[str, Buffer] | Scope, loops: list[tuple[int, int]]
    ) -> None:
        for stmt in body:
            for e in stmt_expr_list(stmt):  # (`stmt_uses`; env holds no None)
                if type(e) is n.Var:
                    buf = env.get(e.name)
                    if buf is not None:
                        self._use(buf, loops)
            if isinstance(stmt, n.Assign):
                self._assign(stmt, env)
            self.point += 1
            if isinstance(stmt, n.For):
                lo_hi = self.loop_range[id(stmt)]
                for var, init in stmt.carried:
                    if isinstance(init, n.Var) and init.name in env:
                        buf = env[init.name]
                        env[var.name] = buf
                        self._use(buf, [*loops, lo_hi])
                self._walk(stmt.body, env, [*loops, lo_hi])
                self._alias_yields(stmt, env, lo_hi[0])
                for res, (var, _) in zip(stmt.results, stmt.carried):
                    if var.name in env:
                        env[res.name] = env[var.name]
            elif isinstance(stmt, n.If):
                then_env, else_env = Scope(env), Scope(env)
                self._walk(stmt.then_body, then_env, loops)
                self._walk(stmt.else_body, else_env, loops)
                ty = _yields(stmt.then_body)
                ey = _yields(stmt.else_body)
                for i, res in enumerate(stmt.results):
                    bufs = [
                        e[v.name]
                        for e, vs in ((then_env, ty), (else_env, ey))
                        if i < len(vs) and isinstance((v := vs[i]), n.Var) and v.name in e
                    ]
                    if bufs:
                        root = bufs[0]
                        for other in bufs[1:]:
                            root = self._union(root, other)
                        env[res.name] = root

    def _alias_yields(self, loop: n.For, env: dict[str, Buffer] | Scope, lo: int) -> None:
        """Write each value the body yields straight into its carry's buffer, as PyPTO does.

        Only a value defined in the body, in the carry's space, and written after the
        carry's last read in the body (else writing it into the carry would clobber a
        value still needed; PyPTO then copies it with a move and keeps both buffers).
        """
        for (var, _), value in zip(loop.carried, _yields(loop.body)):
            if not (isinstance(value, n.Var) and var.name in env and value.name in env):
                continue
            carry, yielded = env[var.name].find(), env[value.name].find()
            if carry is yielded or carry.space != yielded.space or yielded.start < _read(lo):
                continue
            if carry.last_read < yielded.start:
                self._union(carry, yielded)

    def _assign(self, stmt: n.Assign, env: dict[str, Buffer] | Scope) -> None:
        value = stmt.value
        if len(stmt.targets) != 1:
            return
        target = stmt.targets[0]
        if isinstance(value, n.Var):
            if value.name in env:
                env[target.name] = env[value.name]
            return
        if not isinstance(value, n.Call) or not is_tile(value.type):
            env.pop(target.name, None)
            return
        spec = self.ctx.registry.get(value.op)
        rule = (spec.mem.result if spec else None) or ""
        if rule.startswith("same:"):
            src = value.arg(rule[5:])
            if isinstance(src, n.Var) and src.name in env:
                env[target.name] = env[src.name]
                env[target.name].find().members.append(target.name)
                return
        t: TileType = value.type  # type: ignore[assignment]
        buf = Buffer(
            target.name, t, tile_bytes(t, self.arch), _write(self.point), _write(self.point),
            value.span or stmt.span, members=[target.name],
        )
        self.buffers.append(buf)
        for operand in no_alias_operands(value, self.ctx.registry):
            held = env.get(operand.name)
            if held is not None and held.find().space == buf.space:
                self._hold(held.find(), buf.start)  # read while the result is written
        env[target.name] = buf

    def roots(self) -> list[Buffer]:
        return [b for b in self.buffers if b.parent is None]


def _yields(body: list[n.Stmt]) -> tuple[n.Expr, ...]:
    return body[-1].values if body and isinstance(body[-1], n.Yield) else ()


def assign_offsets(buffers: list[Buffer], arch: ArchSpec) -> None:
    """First-fit offsets per space among buffers whose live ranges overlap (the listing's map).

    Buffers are placed in (start, name) order, so every placed buffer starts no later
    than the current one and overlaps it exactly when it ends at or after the current
    start: the candidates are the placed buffers not yet expired, kept sorted by
    offset, and expired ones leave through a heap ordered by end.  O(n log n) plus the
    first-fit scan over the buffers live at once.
    """
    active: dict[str, list[tuple[int, int, Buffer]]] = {}  # space -> sorted (offset, seq, buf)
    ending: dict[str, list[tuple[int, int, int]]] = {}  # space -> heap of (end, offset, seq)
    for seq, buf in enumerate(sorted(buffers, key=lambda b: (b.start, b.name))):
        space = buf.space
        live = active.setdefault(space, [])
        heap = ending.setdefault(space, [])
        while heap and heap[0][0] < buf.start:
            _, off, old = heapq.heappop(heap)
            del live[bisect.bisect_left(live, (off, old))]  # (off, old) sorts just before its entry
        align = arch.alignment.get(space, 1)
        offset = 0
        for o_offset, _, o in live:
            if offset + buf.nbytes <= o_offset:
                break
            offset = max(offset, math.ceil((o_offset + o.nbytes) / align) * align)
        buf.offset = offset
        bisect.insort(live, (offset, seq, buf))  # seq is unique: buffers are never compared
        heapq.heappush(heap, (buf.end, offset, seq))


def _kib(nbytes: int) -> str:
    return f"{nbytes // 1024} KiB" if nbytes % 1024 == 0 else f"{nbytes} bytes"


_COUNT_WORDS = {2: "two", 3: "three", 4: "four", 8: "eight"}


def _hint(space: str, peak: int, live: list[Buffer], arch: ArchSpec) -> str:
    limit = arch.capacity[space]
    options = []
    big = max(live, key=lambda b: (b.nbytes, -b.start))
    cols = big.type.shape[-1] if big.type.shape else 1
    for k in (2, 4, 8, 3):
        if cols % k:
            continue
        smaller = big.type.with_(shape=(*big.type.shape[:-1], cols // k), valid=None)
        if peak - big.nbytes + tile_bytes(smaller, arch) <= limit:
            dim = "N" if space in ("Acc", "Right") else f"{big.name}'s last dimension"
            options.append(f"split {dim} into {_COUNT_WORDS.get(k, str(k))} {cols // k}-column tiles")
            break
    if not options:
        options.append(f"use smaller tiles in {space} or end some tiles' lifetimes earlier")
    for other in ARCH_SPECS.values():
        if other.name != arch.name and other.capacity.get(space, 0) >= peak:
            options.append(f"target {other.name} ({space} {_kib(other.capacity[space])})")
    return ", or ".join(options)


def _peak(buffers: list[Buffer], points: int) -> tuple[int, int]:
    """(first program point of the maximum, maximum) of the live bytes over ``points``.

    A running sum over the start/end events only (the live bytes change nowhere else)
    instead of summing every buffer at every point: O(buffers log buffers).
    """
    delta: dict[int, int] = {}
    for b in buffers:
        lo, hi = max(b.start, 0), min(b.end, points - 1)
        if lo <= hi:
            delta[lo] = delta.get(lo, 0) + b.nbytes
            delta[hi + 1] = delta.get(hi + 1, 0) - b.nbytes
    peak_point, peak, total = 0, 0, 0
    for p in sorted(delta):  # (an end event lies at most at ``points``, past every start)
        total += delta[p]
        if total > peak:
            peak_point, peak = p, total
    return peak_point, peak


def check_capacity(program: n.Program, ctx: PassContext) -> n.Program:
    """Peak live bytes per space must fit the arch's usable capacity."""
    arch = ctx.arch
    for fn in kernels(program):
        live = Liveness(fn, ctx)
        roots = live.roots()
        facts = ctx.facts(fn.name)
        facts.buffers = roots
        spaces = sorted({b.space for b in roots})
        for space in spaces:
            in_space = [b for b in roots if b.space == space]
            peak_point, peak = _peak(in_space, live.half_points)
            facts.peak[space] = peak
            limit = arch.capacity.get(space)
            if limit is None or peak <= limit:
                continue
            at_peak = sorted(
                (b for b in in_space if b.start <= peak_point <= b.end), key=lambda b: b.start
            )
            blame = at_peak[-1]
            raise CapacityError(
                f"Function '{fn.name}': {space} peak usage is {peak} bytes, over the "
                f"{limit}-byte limit of the '{arch.name}' backend",
                blame.span or fn.span,
                notes=["live at the peak: " + "; ".join(b.describe() for b in at_peak)],
                hint=_hint(space, peak, at_peak, arch),
                arch=arch.name,
            )
        assign_offsets(roots, arch)
    return program


def buffer_row(buf: Buffer) -> str:
    """One memory-map line of the kernel listing."""
    aliases = [m for m in buf.members if m != buf.name]
    alias = f"  aliases: {', '.join(aliases)}" if aliases else ""
    return (
        f"{buf.name:<12} {buf.space:<5} {type_str(buf.type):<40} {buf.nbytes:>8} B  "
        f"@{buf.offset:<8} live [{buf.start // 2}, {buf.end // 2}] line {buf.line}{alias}"
    )


