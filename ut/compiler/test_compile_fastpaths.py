# SPDX-License-Identifier: Apache-2.0
"""The compile-time fast paths of session 6 (issue #13) give what the plain rules say.

`codegen_alias.last_uses` finds each tile's last mention and whether its first one binds
it on one walk; `ir.clone` copies a Call's argument pairs with the pair level inlined
and sets a copy's fields as attributes; memory-space inference types every use of a
value with the value's final type (made once); `compile` pauses the collector with a
small context manager.  The expected values are worked out by hand here from the rules
in the docstrings.
"""

from __future__ import annotations

import gc

import pytest

import pytest_pypto
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import _gc_paused, lower
from pytest_pypto.compiler.codegen_alias import last_uses, tile_names
from pytest_pypto.compiler.walk import iter_stmts, stmt_expr_list
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.clone import clone_node
from pytest_pypto.ir.dtypes import FP32, INDEX
from pytest_pypto.ir.types import ScalarType, TensorType, TileType

TILE = TileType((16, 16), FP32, "Vec")
TENSOR = TensorType((16, 16), FP32)
IDX = ScalarType(INDEX)


def v(name: str, t=TILE) -> n.Var:
    return n.Var(name, type=t)


def call(op: str, *operands: n.Expr) -> n.Call:
    return n.Call(op, tuple((f"p{i}", x) for i, x in enumerate(operands)), type=TILE)


def _kernel(body: list[n.Stmt]) -> n.Function:
    return n.Function("k", "InCore", [n.Param("x", TENSOR, n.Direction.IN)], (), body)


def _loop_kernel() -> tuple[n.Function, dict[str, n.Stmt]]:
    """a = ld(x); b = add(a, a); for i (c <- b): d = add(c, c); yield d  -> r;
    e = add(r, b0) where b0 is read first; return e."""
    s_a = n.Assign((v("a"),), call("tile.load", v("x", TENSOR)))
    s_b = n.Assign((v("b"),), call("tile.add", v("a"), v("a")))
    s_d = n.Assign((v("d"),), call("tile.add", v("c"), v("c")))
    s_y = n.Yield((v("d"),))
    loop = n.For(v("i", IDX), n.Const(0, type=IDX), n.Const(4, type=IDX), n.Const(1, type=IDX),
                 [s_d, s_y], carried=((v("c"), v("b")),), results=(v("r"),))
    s_e = n.Assign((v("e"),), call("tile.add", v("r"), v("w")))  # w: read, never bound here
    s_w = n.Assign((v("w"),), call("tile.add", v("e"), v("e")))
    ret = n.Return((v("w"),))
    fn = _kernel([s_a, s_b, loop, s_e, s_w, ret])
    return fn, {"a": s_a, "b": s_b, "d": s_d, "y": s_y, "loop": loop, "e": s_e, "w": s_w,
                "ret": ret}


def test_tile_names_are_the_tile_bindings_of_every_statement_kind() -> None:
    fn, _ = _loop_kernel()
    assert tile_names(fn) == {"a", "b", "c", "d", "r", "e", "w"}  # not x (tensor), i (index)


def test_last_uses_drops_each_tile_after_its_last_mention_when_first_bound() -> None:
    fn, s = _loop_kernel()
    got = {k: last_uses(fn).get(id(stmt)) for k, stmt in s.items()}
    assert got == {
        "a": None,
        "b": ("a",),  # a's last mention; its first (s_a) binds it
        "loop": ("b", "c"),  # b last read as c's init; c bound by the loop, owned by the body
        "d": None,
        "y": ("d",),  # inside the loop body: d bound by s_d, last read by the yield
        "e": ("r",),  # r bound by the loop, last read here
        "w": ("e",),
        "ret": None,  # w is read by s_e before s_w binds it, and last read by the return
    }


def test_last_uses_of_a_kernel_without_tiles_is_empty() -> None:
    s = n.Assign((v("k", IDX),), n.BinOp("+", n.Const(1, type=IDX), n.Const(2, type=IDX),
                                         type=IDX))
    assert last_uses(_kernel([s, n.Return(())])) == {}


def test_last_uses_in_if_arms_belong_to_the_innermost_common_list() -> None:
    t = n.Assign((v("t"),), call("tile.load", v("x", TENSOR)))
    u1 = n.Assign((v("u"),), call("tile.add", v("t"), v("t")))
    u2 = n.Assign((v("u2"),), call("tile.mul", v("t"), v("t")))
    branch = n.If(n.Var("flag", type=ScalarType(INDEX)), [u1, n.Yield((v("u"),))],
                  [u2, n.Yield((v("u2"),))], results=(v("m"),))
    use = n.Assign((v("z"),), call("tile.add", v("m"), v("m")))
    fn = _kernel([t, branch, use, n.Return((v("z"),))])
    got = last_uses(fn)
    # t is mentioned in both arms and before them: its owner is the function body,
    # where its last mention is the If
    assert got[id(branch)] == ("t",)
    assert got[id(use)] == ("m",)  # m bound by the If, last read here
    assert got[id(branch.then_body[1])] == ("u",) and got[id(branch.else_body[1])] == ("u2",)
    assert len(got) == 4


def test_pairs_with_static_values_are_shared_and_pairs_with_nodes_rebuilt() -> None:
    x = v("x", TENSOR)
    offsets = ("offsets", (0, n.Var("i", type=IDX)))
    shapes = ("shapes", (16, 16))
    c = n.Call("tile.load", (("tensor", x), offsets, shapes), type=TILE)
    got = clone_node(c)
    assert got.args[2] is shapes  # nothing to copy in it
    assert got.args[0] is not c.args[0] and got.args[0][1] is not x
    assert got.args[0][1].name == "x" and got.args[0][1].type is TENSOR
    assert got.args[1] is not offsets and got.args[1][1][1].name == "i"
    static = n.Call("tile.full", (("shape", (16, 16)), ("value", 1.0)), type=TILE)
    assert clone_node(static).args is static.args  # no node anywhere: the tuple is shared


def test_odd_argument_containers_copy_as_the_general_rule_does() -> None:
    x = v("x", TENSOR)
    c = n.Call("tile.op", [("tensor", x), ("a", "b", "c")], type=TILE)  # a list, a 3-tuple
    got = clone_node(c)
    assert isinstance(got.args, list) and got.args is not c.args
    assert got.args[0][1] is not x and got.args[0][1].name == "x"
    assert got.args[1] == ("a", "b", "c")
    keyed = n.Call("tile.op", ((1, x),), type=TILE)  # not a str key
    assert clone_node(keyed).args[0][1] is not x


def test_a_copy_has_exactly_the_fields_and_can_be_changed() -> None:
    c = n.Call("tile.add", (("lhs", v("a")), ("rhs", v("b"))), type=TILE, span=n.Span("f", 1))
    got = clone_node(c)
    assert vars(got).keys() == vars(c).keys()
    got.op = "tile.sub"
    got.extra = 1  # a copy is an ordinary instance
    assert c.op == "tile.add" and not hasattr(c, "extra")


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_every_use_of_a_value_has_its_one_final_type(platform: str) -> None:
    import st.test_st_vector_ops as module  # noqa: PLC0415  (a multi-kernel program)

    program = next(p for p in vars(module).values() if isinstance(p, n.Program))
    work, _ = lower(program, RunConfig(platform=platform))
    seen: dict[tuple[str, str], TileType] = {}
    checked = 0
    for fn in work.functions.values():
        if fn.kind != "InCore":
            continue
        for stmt in iter_stmts(fn.body):
            for e in stmt_expr_list(stmt):
                if type(e) is n.Var and isinstance(e.type, TileType):
                    assert e.type.space is not None  # every tile placed
                    first = seen.setdefault((fn.name, e.name), e.type)
                    assert first == e.type
                    checked += 1
    assert checked > 10


def test_compile_pauses_the_collector_and_restores_it() -> None:
    from st.test_st_vector_ops import VectorOps  # noqa: PLC0415

    assert gc.isenabled()
    with _gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()
    gc.disable()
    try:
        with _gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # it was off: it stays off
        pytest_pypto.compile(VectorOps, RunConfig(platform="a5sim"))
        assert not gc.isenabled()
    finally:
        gc.enable()
    with pytest.raises(ZeroDivisionError):
        with _gc_paused():
            1 / 0  # noqa: B018
    assert gc.isenabled()


def test_remembered_plans_are_the_plans_computed_afresh() -> None:
    from dataclasses import replace  # noqa: PLC0415

    from pytest_pypto.arch import spec  # noqa: PLC0415
    from pytest_pypto.compiler import tiling  # noqa: PLC0415

    a2 = spec("a2a3")
    ops = [tiling.Operand((256, 512), FP32), tiling.Operand((256, 1), FP32)]
    budget = a2.capacity["Vec"] // 2
    fresh = tiling._vector_plan((256, 512), FP32, ops, a2, budget)
    assert tiling.vector_plan((256, 512), FP32, ops, a2, budget) == fresh
    assert tiling.vector_plan((256, 512), FP32, list(ops), a2, budget) == fresh  # asked again
    assert fresh.extents != (256, 512)  # the budget cuts the rows: a plan worth remembering
    small = replace(a2, capacity={**a2.capacity, "Vec": budget // 4})  # another arch object
    assert tiling.vector_plan((256, 512), FP32, ops, small, budget // 4) == \
        tiling._vector_plan((256, 512), FP32, ops, small, budget // 4) != fresh
    m = tiling.matmul_plan(512, 512, 256, FP32, FP32, a2)
    assert m == tiling._matmul_plan(512, 512, 256, FP32, FP32, a2) and m.mn_split
    tight = replace(a2, capacity={**a2.capacity, "Acc": 1, "Left": 1})
    assert tiling.matmul_plan(512, 512, 256, FP32, FP32, tight) is None  # nothing fits
    assert tiling.matmul_plan(512, 512, 256, FP32, FP32, tight) is None  # remembered None
