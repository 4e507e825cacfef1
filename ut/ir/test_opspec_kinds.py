# SPDX-License-Identifier: Apache-2.0
"""The op kinds the compiler and the runtime ask the registry about (OpSpec fields).

Each field is set in the op's own entry; these tests pin what each kind promises, so a
wrong flag on a new entry fails here rather than as a miscompiled kernel.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_pypto.ir.ops._rules import lowered_by_compiler
from pytest_pypto.ir.registry import REGISTRY, VALUE_KINDS


def _with(field: str) -> list[str]:
    return sorted(name for name, spec in REGISTRY.items() if getattr(spec, field))


def test_every_kind_has_members():
    for field in ("matmul_result", "lowering_hook", "hook_tiles_dynamic", "regroups",
                  "in_orchestration", "reads_launch", "partial_combine", "batched_create",
                  "wide_safe"):
        assert _with(field), field


@pytest.mark.parametrize("name", _with("matmul_result"))
def test_a_matmul_result_is_a_tensor_op_whose_tile_form_accumulates_in_acc(name):
    spec = REGISTRY[name]
    assert spec.level == "tensor"
    mem = REGISTRY[f"tile.{spec.short_name}"].mem
    space = mem.result or ""
    if space.startswith("same:"):  # matmul_acc: in place on its acc operand
        space = mem.operands[space[len("same:"):]][0]
    assert space == "Acc"


def test_hooked_and_regrouping_ops_are_tensor_ops():
    for name in _with("lowering_hook") + _with("regroups") + _with("in_orchestration"):
        assert REGISTRY[name].level == "tensor", name
    assert set(_with("hook_tiles_dynamic")) <= set(_with("lowering_hook"))


@pytest.mark.parametrize("name", _with("in_orchestration"))
def test_orchestration_ops_run_on_the_host(name):
    """The orchestration runs them itself: none may need the tensor lowering."""
    spec = REGISTRY[name]
    assert not spec.lowering_hook and not spec.matmul_result
    assert spec.execute is not lowered_by_compiler


@pytest.mark.parametrize("name", _with("wide_safe") + _with("batched_create"))
def test_wide_safe_and_batched_creates_are_memory_ops(name):
    """Value ops (``compute``) are widened by `apply` itself; only ``execute`` ops ask."""
    spec = REGISTRY[name]
    assert spec.level == "tile"
    assert spec.execute is not None and spec.compute is None
    if spec.batched_create:
        assert not spec.batchable
        assert spec.param("shape").kind == "shape"


@pytest.mark.parametrize("name", _with("reads_launch"))
def test_launch_readers_take_the_launch_and_no_operands(name):
    spec = REGISTRY[name]
    assert spec.params == ()
    assert spec.execute((3, 8), out=None) == (3 if name.endswith("idx") else 8)


@pytest.mark.parametrize("name", _with("partial_combine"))
def test_partial_results_combine_into_the_whole_reduction(name):
    spec = REGISTRY[name]
    combine = REGISTRY[spec.partial_combine]
    assert spec.level == combine.level == "tile"
    assert [p.name for p in combine.params if p.kind in VALUE_KINDS] == ["lhs", "rhs"]
    axis = -1 if spec.short_name.startswith("row_") else -2
    x = np.random.default_rng(7).integers(1, 4, size=(4, 6)).astype(np.float32)
    tiles = sum(p.kind == "tile" and p.required for p in spec.params)
    if spec.compute is not None:
        def reduce(a):
            return spec.compute(*[a] * tiles)
    else:  # col_sum runs in device order (execute): its sum is what it combines
        reduce = {"tile.col_sum": lambda a: a.sum(axis, keepdims=True)}[name]
    first, second = np.split(x, [2] if axis == -2 else [3], axis=axis)
    got = combine.compute(reduce(first), reduce(second))
    np.testing.assert_array_equal(got, reduce(x))
