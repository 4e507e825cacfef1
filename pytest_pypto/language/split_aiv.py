# SPDX-License-Identifier: Apache-2.0
"""`for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.X):` an explicit region of the two
AIV lanes of a cluster (docs/design/language.md §14b).

The simulator runs the region's body once per lane, in lane order: the body is
parsed twice in place, with ``aiv_id`` the parse-time constant 0, then 1 (what
`pl.get_subblock_idx()` gives inside it too).  Names the body binds are visible
after the region with lane 1's values.  `pl.aiv_shard(x)` and `pl.aic_gather(x)`
name the tiles crossing the region's edge and take the region's mode
(ir/ops/split_aiv.py); an `aic_gather` is emitted in lane 1's copy, with lane 0's
value beside it, so it is written directly in the region body.

Placement, as PyPTO's parser and verifier have it: a region belongs to the kernel of
a `pl.at(level=pl.Level.CORE_GROUP)` region (or a `pl.spmd` one), where it is parsed
in place; written at the top of an Opaque or Orchestration function it becomes such a
kernel of its own (as if wrapped in `pl.at`); in a function declared InCore / AIC / AIV
it is an error, and so is a region in a `pl.at` / `pl.spmd` carrying
`optimizations=[pl.split(...)]`.  Regions do not nest.  Parse-time rules: one positional argument equal
to 2, `mode=` required, none of a loop's keywords, one loop variable, no `else`, no
`break` / `continue` leaving the region.  Checked on the parsed body: no cube work
(an op whose result is in a cube space) inside a region, no row / column reduction over
a data-parallel region's split axis, no vector work (an op whose result is a Vec tile,
other than a load) outside every region of a kernel that has one, a vector tile defined
in a region reaches the cube after it only through `pl.aic_gather`, and a cube tile
defined outside the
region is read inside it only through `pl.aiv_shard`; `pl.aiv_shard` / `pl.aic_gather`
outside every region are errors at their line.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_pypto.ir.errors import InvalidOperationError, ParserSyntaxError, PlacementError
from pytest_pypto.ir.nodes import Assign, Call, ExprStmt, For, If, Stmt, Var, Yield
from pytest_pypto.ir.types import TileType
from pytest_pypto.language import calls, outline, surface
from pytest_pypto.language.calls import Arg
from pytest_pypto.language.context import Unavailable
from pytest_pypto.language.region_options import RegionOptions

if TYPE_CHECKING:
    from pytest_pypto.language.expressions import ExprParser
    from pytest_pypto.language.statements import BodyParser

__all__ = ["boundary_call", "is_split_loop", "parse_split_loop"]

HINT = ("for aiv_id in pl.split_aiv(2, mode=pl.SplitMode.NONE): n is the AIV lane count (2); "
        "mode= is required (NONE: both lanes run the full body; UP_DOWN / LEFT_RIGHT: each "
        "lane gets half of every tile crossing in); aiv_id is the lane index")
_LOOP_KEYWORDS = ("init_values", "chunk", "chunk_policy", "attrs", "step", "stage")
_CUBE_SPACES = ("Acc", "Mat", "Left", "Right", "Bias")
BOUNDARY_OPS = ("aiv_shard", "aic_gather")
# The reductions collapsing each data-parallel mode's split axis: one lane holds half of
# that axis, so it would compute a partial result.
_REDUCTIONS = ("sum", "max", "min", "prod", "argmax", "argmin")
_PARTIAL = {"UP_DOWN": {f"tile.col_{r}" for r in _REDUCTIONS},
            "LEFT_RIGHT": {f"tile.row_{r}" for r in _REDUCTIONS}}


@dataclass
class Region:
    """The region being parsed: its mode, the lane, and lane 0's gathered values."""

    mode: str
    lane: int
    depth: int  # the parser's block depth at the region's with line
    gathered: list[Any] = field(default_factory=list)
    next_gather: int = 0


def is_split_loop(bp: BodyParser, stmt: ast.For) -> bool:
    it = stmt.iter
    if not isinstance(it, ast.Call):
        return False
    try:
        return bp.ep.eval(it.func) is surface.split_aiv
    except Exception:  # noqa: BLE001 - not ours: the loop's parser reports it
        return False


def parse_split_loop(bp: BodyParser, stmt: ast.For) -> None:
    ctx = bp.ctx
    if getattr(ctx, "split_region", None) is not None:
        raise ctx.error(
            ParserSyntaxError,
            "nested 'for ... in pl.split_aiv(...)' is not allowed: a split_aiv body already "
            "stands for the two AIV lanes", stmt, hint=HINT,
        )
    mode = _options(bp, stmt)
    _reject_jumps(bp, stmt.body)
    parser = ctx.program
    name = ctx.function_name
    kind = parser.headers[name].kind
    if name not in parser.outlined:
        if kind in outline.OUTLINING_KINDS:  # a kernel of its own, as if inside pl.at
            outline.outline(bp, stmt, [stmt], RegionOptions(), what="pl.split_aiv")
            return
        raise ctx.error(
            PlacementError,
            f"pl.split_aiv opens a CORE_GROUP-level region, so it cannot be written in {kind} "
            f"function '{name}'",
            stmt, hint="write the region inside with pl.at(level=pl.Level.CORE_GROUP): or at "
            "the top of a plain @pl.function (Opaque) body",
        )
    split = getattr(ctx, "region_split", None)
    if split is not None:
        raise ctx.error(
            ParserSyntaxError,
            f"the region combines optimizations=[pl.split(pl.SplitMode.{split})] with a "
            "pl.split_aiv region: the two ways of splitting the AIV lanes exclude each other",
            stmt, hint="drop the pl.split(...) optimization (pl.cross_core_slot(slot_num=N) "
            "still sizes the pipe) or the pl.split_aiv region",
        )
    target = stmt.target.id  # type: ignore[attr-defined]
    inside: set[int] = getattr(ctx, "region_calls", set())
    if not inside:  # the first region of this kernel: it is in manual mode from now on
        ctx.region_calls = inside
        ctx.body_checks = (*getattr(ctx, "body_checks", ()), lambda body: _manual_mode(body,
                                                                                   inside))
    try:
        for lane in (0, 1):
            region = Region(mode, lane, ctx.block_depth,
                            gathered=[] if lane == 0 else ctx.split_region.gathered)
            ctx.split_region = region
            bp.env[target] = lane
            start = len(bp.out)
            bp.block(stmt.body)
            _check_lane(bp, bp.out[start:], lane, mode)
            inside.update(id(c) for s in _stmts(bp.out[start:]) for root in _roots(s)
                          for c in _calls(root))
            inside.update(id(t) for s in _stmts(bp.out[start:]) if isinstance(s, Assign)
                          and not (isinstance(s.value, Call) and s.value.op == "tile.aic_gather")
                          for t in s.targets)
    finally:
        ctx.split_region = None


def _options(bp: BodyParser, stmt: ast.For) -> str:
    """Validate the `pl.split_aiv(...)` line; the mode's name."""
    ctx = bp.ctx
    call = stmt.iter
    assert isinstance(call, ast.Call)
    if not isinstance(stmt.target, ast.Name):
        raise ctx.error(ParserSyntaxError, "for ... in pl.split_aiv(...) must use a single loop "
                        "variable", stmt.target, hint=HINT)
    if stmt.orelse:
        raise ctx.error(ParserSyntaxError, "a pl.split_aiv loop cannot have an else clause",
                        stmt, hint=HINT)
    mode_node = None
    for kw in call.keywords:
        if kw.arg is None:
            raise ctx.error(ParserSyntaxError, "pl.split_aiv() does not accept **kwargs; pass n "
                            "and mode= explicitly", kw.value, hint=HINT)
        if kw.arg in _LOOP_KEYWORDS:
            raise ctx.error(ParserSyntaxError, f"pl.split_aiv() loop form does not accept "
                            f"'{kw.arg}='", kw.value, hint=HINT)
        if kw.arg == "optimizations":
            raise ctx.error(
                ParserSyntaxError, "pl.split_aiv() does not accept 'optimizations=': the region "
                "IS the split declaration", kw.value, hint=HINT,
            )
        if kw.arg != "mode":
            raise ctx.error(ParserSyntaxError, f"pl.split_aiv() got unexpected keyword argument "
                            f"'{kw.arg}'", kw.value, hint=HINT)
        mode_node = kw.value
    if len(call.args) != 1:
        raise ctx.error(ParserSyntaxError, "pl.split_aiv() takes exactly one positional argument "
                        "(n, the AIV lane count)", call, hint=HINT)
    n = bp.ep.eval(call.args[0])
    if not (isinstance(n, int) and not isinstance(n, bool) and n == 2):
        raise ctx.error(
            ParserSyntaxError, f"pl.split_aiv(n) requires n == 2 (a cluster has two AIV lanes), "
            f"got {ctx.text(call.args[0])}", call.args[0], hint=HINT,
        )
    if mode_node is None:
        raise ctx.error(
            ParserSyntaxError, "pl.split_aiv() requires mode= (pl.SplitMode.NONE for "
            "task-parallel lanes, UP_DOWN / LEFT_RIGHT for halving)", call, hint=HINT,
        )
    mode = bp.ep.eval(mode_node)
    if not isinstance(mode, surface.SplitMode):
        raise ctx.error(ParserSyntaxError, "pl.split_aiv() mode= must be a pl.SplitMode member",
                        mode_node, hint=HINT)
    return mode.name


def _reject_jumps(bp: BodyParser, body: list[ast.stmt]) -> None:
    """`break` / `continue` directly in the region would leave it, not a loop of its own."""
    stack: list[ast.AST] = list(body)
    while stack:
        node = stack.pop()
        if isinstance(node, (ast.Break, ast.Continue)):
            word = "break" if isinstance(node, ast.Break) else "continue"
            raise bp.ctx.error(
                ParserSyntaxError, f"'{word}' inside a pl.split_aiv region has no loop to leave: "
                "the region is not a loop", node, hint="put the loop inside the region",
            )
        if isinstance(node, (ast.For, ast.While, ast.FunctionDef)):
            continue  # a jump in a loop of the region's own is that loop's
        stack.extend(ast.iter_child_nodes(node))


# ------------------------------------------------------------- the crossing ops


def boundary_call(ep: ExprParser, name: str, node: ast.Call) -> Any:
    """`pl.aiv_shard(x)` / `pl.aic_gather(x)`: the op with the region's lane and mode."""
    ctx = ep.ctx
    region: Region | None = getattr(ctx, "split_region", None)
    if region is None:
        raise ctx.error(
            InvalidOperationError,
            f"pl.{name} must be used inside a 'for aiv_id in pl.split_aiv(...)' region: it "
            "names a tile crossing the region's edge, and takes the region's split mode",
            node, hint=HINT,
        )
    if len(node.args) != 1 or node.keywords:
        raise ctx.error(
            ParserSyntaxError, f"pl.{name} takes one tile; the split mode comes from the "
            "enclosing pl.split_aiv region", node, hint=f"pl.{name}(x)",
        )
    pos, _ = ep.args_of(node)
    mode = Arg(region.mode, node)
    if name == "aiv_shard":
        return calls.op_call(ctx, "", name, pos, {"lane": Arg(region.lane, node), "mode": mode},
                             node)
    if ctx.block_depth != region.depth + 1:
        raise ctx.error(
            InvalidOperationError,
            "pl.aic_gather joins what the two AIV lanes hold: write it directly in the "
            "pl.split_aiv region's body, not inside a loop or branch of it", node,
            hint="gather after the loop, still inside the region",
        )
    value = ep.hoist(pos[0].value, node.args[0])
    if region.lane == 0:
        region.gathered.append(value)
        return Unavailable(
            "a pl.aic_gather result is the cube's: it is usable after the pl.split_aiv region",
            hint="read the gathered tile after the region (outside it, on the cube lane)",
        )
    other = region.gathered[region.next_gather]
    region.next_gather += 1
    return calls.op_call(ctx, "", name, [Arg(value, node.args[0]), Arg(other, node.args[0])],
                         {"mode": mode}, node)


# ------------------------------------------------------------- checks of one lane


def _stmts(body: list[Stmt]) -> Iterator[Stmt]:
    for s in body:
        yield s
        for attr in ("body", "then_body", "else_body"):
            yield from _stmts(getattr(s, attr, None) or [])


def _calls(e: Any) -> Iterator[Call]:
    if isinstance(e, Call):
        yield e
        for _, v in e.args:
            if isinstance(v, (tuple, list)):
                for item in v:
                    yield from _calls(item)
            else:
                yield from _calls(v)


def _check_lane(bp: BodyParser, body: list[Stmt], lane: int, mode: str) -> None:
    """Set the lane of `get_subblock_idx()`; no cube compute in the region, no reduction over
    a data-parallel region's split axis; a cube tile from outside it read only through
    `pl.aiv_shard`."""
    defined: set[str] = set()
    for s in _stmts(body):
        if isinstance(s, Assign):
            defined.update(t.name for t in s.targets)
        if isinstance(s, For):
            defined.update(v.name for v, _ in s.carried)
            defined.update(r.name for r in s.results)
        if isinstance(s, If):
            defined.update(r.name for r in s.results)
    for s in _stmts(body):
        for root in _roots(s):
            for call in _calls(root):
                _check_call(bp, call, lane, mode, defined, s)


def _roots(s: Stmt) -> tuple[Any, ...]:
    if isinstance(s, Yield):
        return tuple(s.values)
    value = s.value if isinstance(s, Assign) else s.expr if isinstance(s, ExprStmt) else None
    return (value,)


def _no_implicit_gather(call: Call, s: Stmt, inside: set[int]) -> None:
    """A vector tile a region defines reaches the cube only through `pl.aic_gather`."""
    for _, arg in call.args:
        if isinstance(arg, Var) and id(arg) in inside and isinstance(arg.type, TileType) \
                and arg.type.space == "Vec":
            raise PlacementError(
                f"'{arg.name}' is defined inside a pl.split_aiv region, but '{call.op}' reads it "
                "on the CUBE lane outside it",
                call.span or s.span,
                hint=f"gather it inside the region: {arg.name} = pl.aic_gather({arg.name})",
            )


def _manual_mode(body: list[Stmt], inside: set[int]) -> None:
    """A kernel with a region is in manual mode: its vector work sits in regions (loads and
    stores outside them are allowed)."""
    for s in _stmts(body):
        for root in _roots(s):
            for call in _calls(root):
                t = call.type
                if id(call) in inside or not isinstance(t, TileType):
                    continue
                if t.space in _CUBE_SPACES:
                    _no_implicit_gather(call, s, inside)
                if t.space != "Vec" or call.op == "tile.load":
                    continue
                raise PlacementError(
                    f"vector op '{call.op}' sits outside every pl.split_aiv region of a kernel "
                    "that has one: the regions place this kernel's vector work",
                    call.span or s.span,
                    hint="wrap that phase in its own region: for _ in pl.split_aiv(2, "
                    "mode=pl.SplitMode.NONE):",
                )


def _check_call(bp: BodyParser, call: Call, lane: int, mode: str, defined: set[str],
                stmt: Stmt) -> None:
    op = call.op
    span = call.span or stmt.span
    if op in _PARTIAL.get(mode, ()):
        axis = "rows" if mode == "UP_DOWN" else "columns"
        raise PlacementError(
            f"'{op}' reduces over the split axis of a pl.split_aiv(mode=pl.SplitMode.{mode}) "
            f"region: each AIV lane holds half of the {axis}, so it would give a partial result",
            span, hint="reduce the other axis, or pl.aic_gather the halves and reduce after the "
            "region (or use mode=pl.SplitMode.NONE)",
        )
    if op.endswith(".get_subblock_idx"):
        call.set_arg("lane", lane)
        return
    if isinstance(call.type, TileType) and call.type.space in _CUBE_SPACES \
            and op != "tile.aic_gather":
        raise PlacementError(
            f"cube op '{op}' inside a pl.split_aiv region: the region is the vector lanes' body",
            span, hint="move the cube computation out of the region, before it",
        )
    if op == "tile.aiv_shard":
        return
    for _, arg in call.args:
        if isinstance(arg, Var) and arg.name not in defined and isinstance(arg.type, TileType) \
                and arg.type.space in _CUBE_SPACES and op != "tile.aic_gather":
            raise PlacementError(
                f"'{arg.name}' is produced on the CUBE lane outside every pl.split_aiv region, "
                f"but '{op}' reads it on the VECTOR lane inside one",
                span, hint=f"read it as pl.aiv_shard({arg.name}) at the top of the region",
            )
