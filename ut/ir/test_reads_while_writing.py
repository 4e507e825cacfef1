"""`OpSpec.reads_while_writing`: which operands stay live while an op writes its result.

The expectations are computed from the registry by op family (the hardware reads
a broadcast vector, a reduction's input, a gather's source... while it writes), so
a new member of a family without the field fails here; capacity reads the field
through `no_alias_operands`.
"""

from __future__ import annotations

import pytest

from pytest_pypto.compiler.capacity import no_alias_operands
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir import nodes as n
from pytest_pypto.ir.registry import REGISTRY
from pytest_pypto.ir.types import TileType

TILE = TileType((16, 16), D.FP32, "Vec")


def _resolved(name: str, types=None, result=None):
    return REGISTRY[name].live_while_writing(types or {}, result)


def _tile_params(name: str) -> set[str]:
    return {p.name for p in REGISTRY[name].params if p.kind == "tile"}


def test_named_operands_are_tile_params_of_the_op():
    for name, spec in REGISTRY.items():
        rule = spec.reads_while_writing
        assert isinstance(rule, bool) or isinstance(rule, tuple) or callable(rule), name
        if isinstance(rule, tuple):
            assert rule, f"{name}: an empty tuple should be False"
            assert set(rule) <= _tile_params(name), (name, rule)


def test_reductions_with_a_required_scratch_keep_all_operands_live():
    reductions = [
        k for k, s in REGISTRY.items()
        if k.startswith(("tile.row_", "tile.col_")) and "expand" not in k
        and any(p.name == "tmp_tile" and p.required for p in s.params)
    ]
    assert {"tile.row_sum", "tile.row_argmin", "tile.col_argmax"} <= set(reductions)
    for name in reductions:
        assert _resolved(name) is True, name


def test_broadcast_expands_keep_their_vector_and_scratch_live():
    expands = [k for k in REGISTRY if k.startswith(("tile.row_expand", "tile.col_expand"))]
    assert len(expands) >= 16
    for name in expands:
        vec = "row_vec" if name.startswith("tile.row_") else "col_vec"
        live = _resolved(name)
        assert isinstance(live, tuple) and vec in live, name
        assert ("tmp" in live) == ("tmp" in _tile_params(name)), name
        assert "tile" not in live, name  # the target may be overwritten in place


def test_gathers_and_sorts_into_a_fresh_tile_keep_all_operands_live():
    family = [
        k for k, s in REGISTRY.items()
        if s.level == "tile" and ("gather" in k or "sort" in k)
        and not (s.mem.result or "").startswith("same:")
    ]
    assert {"tile.gather", "tile.mgather", "tile.sort32", "tile.mrgsort"} <= set(family)
    for name in family:
        assert _resolved(name) is True, name


def test_scalar_forms_of_and_or_xor_and_fmod_keep_their_operands_live():
    for vector in ("tile.and", "tile.or", "tile.xor", "tile.fmod"):
        scalar = REGISTRY[vector].scalar_form
        assert scalar is not None
        assert _resolved(scalar) is True, scalar
    assert _resolved("tile.fmod") is True
    for vector in ("tile.and", "tile.or", "tile.xor", "tile.shl", "tile.shr"):
        assert _resolved(vector) is False, vector  # the vector forms are in-place safe


@pytest.mark.parametrize(
    "name",
    ["tile.recip", "tile.rsqrt", "tile.prelu", "tile.fillpad_expand", "tile.move",
     "tile.transpose", "tile.extract", "tile.concat"],
)
def test_layout_changing_and_multi_pass_ops_keep_all_operands_live(name):
    assert _resolved(name) is True


def test_selects_keep_the_mask_live_but_not_the_data():
    assert _resolved("tile.sel") == ("mask", "tmp")
    assert _resolved("tile.sels") == ("mask",)


def test_plain_elementwise_ops_default_to_in_place_safe():
    for name in ("tile.add", "tile.mul", "tile.exp", "tile.adds", "tile.gather_row"):
        assert _resolved(name) is False, name


@pytest.mark.parametrize(
    ("src", "dst", "live"),
    [(D.FP16, D.FP32, ("tile",)), (D.INT8, D.INT32, ("tile",)),
     (D.FP32, D.FP16, ()), (D.FP32, D.INT32, ())],
)
def test_only_a_widening_cast_keeps_its_source_live(src, dst, live):
    types = {"tile": TileType((16, 16), src, "Vec")}
    assert tuple(_resolved("tile.cast", types, TileType((16, 16), dst, "Vec"))) == live


def _var(name: str, t=TILE) -> n.Var:
    return n.Var(name, type=t)


def test_capacity_reads_the_field_from_the_registry():
    a, row, tmp = _var("a"), _var("row", TileType((16, 1), D.FP32, "Vec")), _var("tmp")
    call = n.Call(op="tile.row_expand_add", args=(("tile", a), ("row_vec", row), ("tmp", tmp)),
                  type=TILE)
    assert [v.name for v in no_alias_operands(call, REGISTRY)] == ["row", "tmp"]
    rec = n.Call(op="tile.recip", args=(("tile", a), ("high_precision", False)), type=TILE)
    assert [v.name for v in no_alias_operands(rec, REGISTRY)] == ["a"]
    add = n.Call(op="tile.add", args=(("lhs", a), ("rhs", tmp)), type=TILE)
    assert no_alias_operands(add, REGISTRY) == []
    half = _var("h", TileType((16, 16), D.FP16, "Vec"))
    widen = n.Call(op="tile.cast", args=(("tile", half), ("target_type", D.FP32)), type=TILE)
    assert [v.name for v in no_alias_operands(widen, REGISTRY)] == ["h"]
