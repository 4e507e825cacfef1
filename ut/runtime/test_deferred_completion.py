"""Deferred task completion in the task graph (docs/design/distributed.md §3b): a task whose
kernel registered a condition (`ir.ranks.defer`, what pld.system.defer_wait does) has run
but is complete only when the condition holds; its dependents wait, other tasks run."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest

from pytest_pypto.ir import ranks
from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.runtime.graph import IN, OUT, TaskGraph
from pytest_pypto.runtime.tensors import whole_root

FP32 = dtype_by_name("FP32")


def _kernel(name, directions, fn):
    return SimpleNamespace(
        name=name, func_id=0, core_type="aiv", fn=fn,
        arg_names=[f"a{i}" for i in range(len(directions))], directions=list(directions),
        returns=[i for i, d in enumerate(directions) if d != IN])


class _Peer:
    """A rank context whose waits let a 'peer' set the counter (and count the waits)."""

    rank, nranks = 0, 2

    def __init__(self, counter):
        self.counter = counter
        self.waits = []

    def block_until(self, pred, what, span=None):
        self.waits.append(what)
        assert not pred()
        self.counter[0] = 1  # the peer publishes
        assert pred()


def _program(graph, roots, counter, log):
    token = whole_root(roots, np.zeros(4, np.float32), FP32, "token", "create_tensor")
    out = whole_root(roots, np.zeros(4, np.float32), FP32, "out", "Out")
    side = whole_root(roots, np.zeros(4, np.float32), FP32, "side", "Out")

    def waiter(t):
        log.append("waiter")
        ranks.defer(lambda: counter[0] >= 1, "counter >= 1", lambda: counter[0])
        t[...] = 1
        return (t,)

    def consumer(t, o):
        log.append(("consumer", counter[0]))
        o[...] = t + counter[0]
        return (o,)

    def other(s):
        log.append("other")
        s[...] = 5
        return (s,)

    graph.submit(_kernel("waiter", [OUT], waiter), [token.array], [token])
    graph.submit(_kernel("consumer", [IN, OUT], consumer), [token.array, out.array], [token, out])
    graph.submit(_kernel("other", [OUT], other), [side.array], [side])
    return out


@pytest.mark.parametrize("seed", [None, 0, 1, 2, 3])
@pytest.mark.parametrize("eager", [True, False])
def test_dependents_wait_for_the_condition_and_other_tasks_do_not(seed, eager):
    counter = [0]
    peer = _Peer(counter)
    ranks.set_current(peer)
    try:
        graph, roots, log = TaskGraph(clusters=2, seed=seed, deferred=True, eager=eager), [], []
        out = _program(graph, roots, counter, log)
        graph.drain()
    finally:
        ranks.set_current(None)
    assert ("consumer", 1) in log and ("consumer", 0) not in log
    assert log.index("other") < log.index(("consumer", 1))  # it did not wait for the condition
    assert peer.waits == ["counter >= 1 (holds 0), task 0 (kernel 'waiter')"]
    np.testing.assert_array_equal(out.array, np.full(4, 2, np.float32))
    assert graph.completions.used and not graph.completions.unmet
    assert graph.to_json(roots, {})["tasks"][0]["deferred_completion"] == ["counter >= 1"]


def test_a_condition_that_already_holds_never_waits():
    counter = [1]
    peer = _Peer(counter)
    ranks.set_current(peer)
    try:
        graph, roots, log = TaskGraph(clusters=2, deferred=True, eager=True), [], []
        _program(graph, roots, counter, log)
        graph.drain()
    finally:
        ranks.set_current(None)
    assert log == ["waiter", ("consumer", 1), "other"]
    assert peer.waits == []
