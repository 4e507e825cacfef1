# SPDX-License-Identifier: Apache-2.0
"""``pld.system.defer_wait``: deferred task completion (docs/design/distributed.md §3b).

Unlike ``pld.system.wait`` it never blocks its kernel: it registers "this rank's
signal cell at ``offsets`` is >= ``expected``" as a condition of the task it runs in
(`ir.ranks.defer`) and returns.  The task's kernel finishes, but the task counts as
complete only once every condition it registered holds: tasks that depend on it
(``deps=[waiter]``) start after that, tasks that do not run meanwhile, and the
dispatch ends only when it holds (runtime/graph.py).  PyPTO's rules: an INT32
window-bound signal, one offset per dimension, ``cmp=pld.WaitCmp.Ge`` only, a threshold
in [0, INT32_MAX], at most 64 conditions per task.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.ir import ranks
from pytest_pypto.ir.dtypes import INT32
from pytest_pypto.ir.ops._rules import OpBoundsError
from pytest_pypto.ir.ops.distributed import _cell, _int, _races, _rank, _region, _signal_type
from pytest_pypto.ir.registry import CallInfo, MemRule, OpSpec, OpTypeError, ParamSpec, register
from pytest_pypto.ir.types import TensorType

_INT32_MAX = 2**31 - 1
_GE = 1


def _check_expected(value: Any) -> None:
    if isinstance(value, int) and not isinstance(value, bool) and not 0 <= value <= _INT32_MAX:
        raise OpBoundsError(
            f"pld.system.defer_wait needs an expected value in [0, {_INT32_MAX}], got {value}",
            "counters and thresholds stay non-negative and grow monotonically")


def _type(info: CallInfo) -> TensorType:
    t = _signal_type(info, "signal")
    if t.dtype != INT32:
        raise OpTypeError(f"The operator {info.op} needs an INT32 signal, but got "
                          f"{t.dtype.name}")
    cmp = info.values.get("cmp")
    if cmp is None or _int(cmp) != _GE:
        raise OpTypeError(f"The operator {info.op} only supports pld.WaitCmp.Ge, but got "
                          f"{getattr(cmp, 'name', cmp)}",
                          "a deferred condition is 'counter >= expected': pass "
                          "cmp=pld.WaitCmp.Ge")
    try:
        _check_expected(info.values.get("expected"))
    except OpBoundsError as exc:
        raise OpTypeError(exc.message, exc.hint) from None
    return t


def _execute(signal, expected, *, offsets, cmp=_GE, out=None, **_):
    ctx = _rank()
    if ranks.window_of(signal) is None:
        raise OpBoundsError("pld.system.defer_wait needs a window-bound signal "
                            "(pld.DistributedTensor bound to pld.window(...)), but got ordinary "
                            "device memory")
    cell = tuple(s.start for s in _region("pld.system.defer_wait", "signal", offsets,
                                          (1,) * signal.ndim, signal.shape))
    want = int(expected)
    _check_expected(want)
    races = _races(ctx)

    def met() -> bool:
        # A condition found holding orders the rank's later work after the notifies that
        # made it hold, as a returning pld.system.wait does (runtime/rank_races.py).
        if int(signal[cell]) < want:
            return False
        if races is not None:
            races.wait(ctx.rank, signal[_cell(cell)])
        return True

    count = ranks.defer(met,
                        f"pld.system.defer_wait on signal cell {list(cell)} >= {want}",
                        lambda: int(signal[cell]))
    if count > ranks.MAX_DEFERRALS:
        raise OpBoundsError(f"a task registered {count} deferred conditions; at most "
                            f"{ranks.MAX_DEFERRALS} per task")
    return signal


register(OpSpec(
    name="tensor.pld_defer_wait",
    params=(ParamSpec("signal", "tensor"), ParamSpec("offsets", "index_list"),
            ParamSpec("expected", "scalar"),
            ParamSpec("cmp", "literal", keyword_only=True)),
    type_rule=_type, mem=MemRule(), execute=_execute,
    spellings=("pld.system.defer_wait",),
    doc="Defer the running task's completion until this rank's signal cell at offsets is "
        ">= expected (cmp=Ge only); its kernel returns at once.",
))
