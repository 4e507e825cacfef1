"""Comm domains (docs/design/distributed.md §3a): a window buffer serves the ranks its
dispatches go to, and ranks, peers and collectives on it count within that group."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.ir.errors import SimulationError
from ut.distributed import group_programs as g
from ut.helpers import line_of


def _compile(program, ranks: int, platform: str = "a2a3sim"):
    return ir.compile(program, platform=platform,
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


def _expected(x: np.ndarray, groups, ranks: int) -> np.ndarray:
    want = np.zeros((len(groups), ranks, 1, g.N), np.float32)
    for k, (a, b) in enumerate(groups):
        for r in (a, b):
            partner = a + b - r
            want[k, r] = x[partner] + 10 * (r - a) + 2
    return want


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_two_disjoint_groups_swap_with_group_relative_peers_and_ranks(platform) -> None:
    x = torch.arange(4 * g.N, dtype=torch.float32).reshape(4, 1, g.N)
    y = torch.zeros(2, 4, 1, g.N)
    _compile(g.DISJOINT, 4, platform)(x, y)
    np.testing.assert_array_equal(y.numpy(), _expected(x.numpy(), ((0, 1), (2, 3)), 4))


def test_overlapping_groups_keep_separate_windows_on_the_shared_rank() -> None:
    x = torch.tensor([10.0, 11.0, 12.0]).reshape(3, 1, 1).expand(3, 1, g.N).contiguous()
    y = torch.zeros(2, 3, 1, g.N)
    _compile(g.OVERLAPPING, 3)(x, y)
    want = _expected(x.numpy(), ((0, 1), (1, 2)), 3)
    np.testing.assert_array_equal(y.numpy(), want)
    assert not y[0, 2].any() and not y[1, 0].any()  # ranks outside a group are untouched


def test_in_kernel_allreduce_meets_only_the_ranks_of_its_window() -> None:
    x = torch.randn(4, 1, g.N)
    y = torch.zeros(4, 1, g.N)
    _compile(g.SubsetAllreduce, 4)(x, y)
    total = x.numpy()[1:].sum(axis=0)
    np.testing.assert_array_equal(y.numpy()[0], x.numpy()[0])
    for r in (1, 2, 3):
        np.testing.assert_allclose(y.numpy()[r], total, rtol=1e-6, atol=1e-6)


def test_a_window_whose_ranks_change_after_use_is_an_error_at_the_dispatch() -> None:
    with pytest.raises(SimulationError) as info:
        _compile(g.GrowingDomain, 4)(torch.zeros(1, g.N))
    text = str(info.value)
    assert "serves ranks 0, 1" in text and "not rank 2" in text
    assert f"group_programs.py:{line_of(Path(g.__file__), 'GROW-LINE')}" in text
