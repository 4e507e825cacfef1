# SPDX-License-Identifier: Apache-2.0
"""The compiler's per-op tables agree with the registry's kinds (OpSpec fields)."""

from __future__ import annotations

import pytest

from pytest_pypto.compiler import tensor_lowering
from pytest_pypto.compiler.codegen_orchestration import RT_METHODS
from pytest_pypto.compiler.lowering_hooks import HOOKS, hook
from pytest_pypto.compiler.structure import CREATE_TENSOR_OPS
from pytest_pypto.ir.registry import REGISTRY


def test_every_hooked_op_has_a_lowering_and_every_lowering_a_hooked_op():
    assert tensor_lowering.HOOK_MODULES  # importing the lowering fills the table
    hooked = {name for name, spec in REGISTRY.items() if spec.lowering_hook}
    assert set(HOOKS) == hooked
    assert all(callable(HOOKS[name]) for name in hooked)


def test_every_orchestration_op_has_a_runtime_method():
    allowed = {spec.short_name for spec in REGISTRY.values() if spec.in_orchestration}
    allowed |= {op.split(".", 1)[1] for op in CREATE_TENSOR_OPS}
    assert set(RT_METHODS) == allowed


def test_an_op_has_one_lowering():
    before = dict(HOOKS)
    with pytest.raises(ValueError, match="'tensor.gather' registered twice"):
        hook("tensor.gather")(lambda lw, out, call, spec: None)
    assert HOOKS == before
