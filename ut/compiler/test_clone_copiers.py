# SPDX-License-Identifier: Apache-2.0
"""`ir.clone`'s per-class copiers: the fast paths copy exactly what the general one did.

The copier of each node class is generated from its dataclass fields; an instance
whose attributes are not exactly those fields takes the general copy.  A program's
source text is shared without a look; (name, value) pairs are rebuilt only when they
hold a node.  Every check compares against facts computed here, not by the cloner.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.clone import clone_node, clone_program
from pytest_pypto.ir.dtypes import FP32
from pytest_pypto.ir.types import Direction, TensorType, TileType

SPAN = n.Span("k.py", 3, 5)
TENSOR = TensorType((16, 64), FP32)
TILE = TileType((16, 64), FP32, "Vec")


def _program() -> n.Program:
    x = n.Var("x", type=TENSOR, span=SPAN)
    t = n.Var("t", type=TILE, span=SPAN)
    load = n.Call("tile.load", (("tensor", x), ("offsets", (0, 0)), ("shapes", (16, 64))),
                  type=TILE, span=SPAN)
    body: list[n.Stmt] = [
        n.Assign((t,), load, span=SPAN),
        n.ExprStmt(n.Call("tile.adds", (("lhs", t), ("rhs", n.Const(1.0))), type=TILE)),
        n.Return((t,), span=SPAN),
    ]
    fn = n.Function("k", "InCore", [n.Param("x", TENSOR, Direction.IN, SPAN)], (TILE,), body,
                    span=SPAN)
    return n.Program("P", {"k": fn}, "k.py", span=SPAN,
                     source_lines=tuple(f"line {i}" for i in range(300)))


def _nodes(value: Any, out: list[Any]) -> list[Any]:
    """Every node, list and dict reachable from ``value``, in a fixed order."""
    if isinstance(value, (n.Node, n.Unsupported)):
        out.append(value)
        for v in vars(value).values():
            _nodes(v, out)
    elif isinstance(value, (list, tuple)):
        if isinstance(value, list):
            out.append(value)
        for v in value:
            _nodes(v, out)
    elif isinstance(value, dict):
        out.append(value)
        for v in value.values():
            _nodes(v, out)
    return out


def _shape(value: Any) -> Any:
    """The tree without identities: class names and field values, recursively."""
    if isinstance(value, (n.Node, n.Unsupported)):
        return (type(value).__name__, tuple((k, _shape(v)) for k, v in sorted(vars(value).items())))
    if isinstance(value, (list, tuple)):
        return (type(value).__name__, tuple(_shape(v) for v in value))
    if isinstance(value, dict):
        return ("dict", tuple((k, _shape(v)) for k, v in value.items()))
    return value


def test_clone_is_equal_in_every_field_and_new_in_every_node() -> None:
    program = _program()
    copy = clone_program(program)
    assert _shape(copy) == _shape(program)
    old_ids = {id(x) for x in _nodes(program, [])}
    new = _nodes(copy, [])
    assert len(new) == len(_nodes(program, []))
    assert not old_ids & {id(x) for x in new}  # no node, list or dict is shared


def test_source_lines_types_and_spans_are_shared() -> None:
    program = _program()
    copy = clone_program(program)
    assert copy.source_lines is program.source_lines
    load = copy.functions["k"].body[0].value
    assert load.type is TILE and load.span is SPAN
    assert load.args[1] is program.functions["k"].body[0].value.args[1]  # ("offsets", (0, 0))


def test_a_pair_holding_a_node_is_rebuilt_around_the_copied_node() -> None:
    program = _program()
    copy = clone_program(program)
    old_pair = program.functions["k"].body[0].value.args[0]
    new_pair = copy.functions["k"].body[0].value.args[0]
    assert new_pair is not old_pair and new_pair[0] == "tensor"
    assert new_pair[1] is not old_pair[1] and new_pair[1].name == "x"


def test_a_node_reached_twice_is_one_node_in_the_copy() -> None:
    program = _program()
    body = program.functions["k"].body
    assert body[0].targets[0] is body[1].expr.args[0][1]  # the same Var object, by construction
    new_body = clone_program(program).functions["k"].body
    assert new_body[0].targets[0] is new_body[1].expr.args[0][1]
    assert new_body[0].targets[0] is new_body[2].values[0]


def test_an_instance_with_an_extra_attribute_takes_the_general_copy() -> None:
    var = n.Var("v", type=TILE)
    var.note = ["mutable"]  # not a dataclass field
    got = clone_node(var)
    assert got is not var and got.name == "v" and got.type is TILE
    assert got.note == ["mutable"] and got.note is not var.note


def test_changing_the_copy_leaves_the_original() -> None:
    program = _program()
    before = _shape(program)
    copy = clone_program(program)
    fn = copy.functions["k"]
    fn.body[0].targets[0].type = TileType((16, 64), FP32, "Mat")
    fn.body[0].value.args = ()
    fn.body.append(n.Return(()))
    assert _shape(program) == before
