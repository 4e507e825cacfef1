# SPDX-License-Identifier: Apache-2.0
"""`pl.system.task_dummy(deps=[...])` (docs/design/scheduling.md §3): a dependency-only
task of the orchestration.  It submits no kernel; its TaskId orders later tasks after
every task in `deps`.  The parser builds the call (language/scheduling.py); the
orchestration runtime submits it (`rt.task_dummy`)."""

from __future__ import annotations

from pytest_pypto.ir.dtypes import TASK_ID
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, ParamSpec, register
from pytest_pypto.ir.types import ScalarType


def _dummy_type(info: CallInfo) -> ScalarType:
    return ScalarType(TASK_ID)


def _dummy_execute(*_: object, **__: object) -> None:  # pragma: no cover - never in a kernel
    raise AssertionError("system.task_dummy runs in the orchestration (rt.task_dummy)")


register(OpSpec(
    name="system.task_dummy",
    params=(ParamSpec("deps", "index_list"),),
    type_rule=_dummy_type,
    mem=MemRule(),
    execute=_dummy_execute,
    spellings=(),
    tier=2,
    doc="A dependency-only task of the orchestration (`pl.system.task_dummy(deps=[...])`): "
        "no kernel runs; its TaskId stands for every task in `deps`.",
))
