"""pld.system.defer_wait: deferred task completion on simulated ranks
(docs/design/distributed.md §3b)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.ir.errors import PyptoError
from pytest_pypto.runtime.devices_sim import DeadlockError
from ut.distributed import defer_programs as d
from ut.helpers import line_of

SOURCE = Path(d.__file__)


def _compile(program, ranks: int, platform: str = "a2a3sim"):
    return ir.compile(program, platform=platform,
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


def _inputs(ranks: int, epoch: int) -> torch.Tensor:
    x = (torch.arange(ranks, dtype=torch.int32) * 10 + 100).reshape(ranks, 1, 1)
    x = x.expand(ranks, 1, d.W).contiguous()
    x[:, :, 0] = epoch
    return x


def _expected(x: torch.Tensor, waiters: int) -> np.ndarray:
    ranks = x.shape[0]
    prev = np.roll(x.numpy(), 1, axis=0)  # rank r receives rank r-1's row
    return np.broadcast_to(prev, (ranks, waiters, d.W))


@pytest.mark.parametrize("ranks", [2, 4])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_consumers_wait_for_the_deferred_condition_while_the_publisher_runs(ranks, platform):
    waiters = 16
    x = _inputs(ranks, 1)
    out = torch.full((ranks, waiters, d.W), -1, dtype=torch.int32)
    _compile(d.handoff(waiters), ranks, platform)(x, out)
    np.testing.assert_array_equal(out.numpy(), _expected(x, waiters))


def test_persistent_windows_across_epochs_and_an_already_ready_counter():
    compiled = _compile(d.handoff(2), 2)
    out = torch.full((2, 2, d.W), -1, dtype=torch.int32)
    with compiled.prepare(persistent=True, reset_persistent_windows=False) as worker:
        for epoch in (1, 2, 3, 3):  # the last call registers on a counter already at 3
            x = _inputs(2, epoch)
            out.fill_(-1)
            worker(x, out)
            np.testing.assert_array_equal(out.numpy(), _expected(x, 2))


def test_a_deferred_condition_nobody_meets_is_a_deadlock_naming_op_and_line():
    with pytest.raises(DeadlockError) as info:
        _compile(d.NeverSet, 2)(torch.zeros(2, 1, 1, dtype=torch.int32))
    text = str(info.value)
    assert "rank(s) 0, 1 wait" in text
    assert "pld.system.defer_wait on signal cell [0, 0] >= 1 (holds 0)" in text
    assert f"defer_programs.py:{line_of(SOURCE, 'NEVER-LINE')}" in text


@pytest.mark.parametrize(("kind", "message"), [
    ("eq", "only supports pld.WaitCmp.Ge"),
    ("offsets", "takes one offset per dimension"),
    ("negative", "in [0, 2147483647]"),
    ("dtype", "INT32 signal"),
])
def test_misuse_is_an_error_at_the_users_line(kind, message):
    with pytest.raises(PyptoError, match=re.escape(message)) as info:
        _compile(d.misuse(kind), 1)(torch.zeros(1, 1, 1))
    assert info.value.span is not None
    assert info.value.span.line == line_of(SOURCE, "MISUSE")
