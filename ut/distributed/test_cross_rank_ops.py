"""In-kernel cross-rank ops on simulated ranks (docs/design/distributed.md §3, §4):
notify/wait, remote load, rank queries; deadlocks and window bounds as errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import torch

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.devices_sim import DeadlockError
from ut.distributed import programs as p
from ut.helpers import line_of


def _compile(program, ranks: int, platform: str = "a2a3sim"):
    return ir.compile(program, platform=platform,
                      distributed_config=DistributedConfig(device_ids=list(range(ranks))))


@pytest.mark.parametrize("ranks", [1, 2, 4])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_mesh_sum_with_signals_and_remote_loads(ranks, platform) -> None:
    x = torch.randn(ranks, 1, p.N)
    y = torch.zeros(ranks, 1, p.N)
    _compile(p.MeshSum, ranks, platform)(x, y)
    want = np.broadcast_to(x.numpy().sum(axis=0), y.shape)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)


def test_a_wait_no_rank_satisfies_is_a_deadlock_naming_rank_op_and_line() -> None:
    y = torch.zeros(2, 1, p.N)
    with pytest.raises(DeadlockError) as info:
        _compile(p.WaitForever, 2)(y)
    text = str(info.value)
    assert "rank(s) 0 wait" in text
    assert "pld.system.wait on signal cell [0, 0] == 1 (holds 0)" in text
    assert f"programs.py:{line_of(Path(p.__file__), 'WAIT-LINE')}" in text
    assert "finished: rank(s) 1" in text


def test_a_remote_read_outside_the_window_is_a_bounds_error_at_the_users_line() -> None:
    y = torch.zeros(2, 1, p.N)
    with pytest.raises(SimulationError, match=r"outside the peer's window \[2, 32\]") as info:
        _compile(p.ReadPastWindow, 2)(y)
    assert info.value.span is not None
    assert info.value.span.line == line_of(Path(p.__file__), "BOUNDS-LINE")


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_ring_put_moves_each_row_one_rank_on(ranks) -> None:
    x = torch.randn(ranks, 1, p.N)
    y = torch.zeros(ranks, 1, p.N)
    _compile(p.RingPut, ranks)(x, y)
    np.testing.assert_array_equal(y.numpy(), np.roll(x.numpy(), 1, axis=0))


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_in_kernel_allreduce_after_a_barrier(ranks) -> None:
    x = torch.randn(ranks, 4, p.N)
    y = torch.zeros(ranks, 4, p.N)
    _compile(p.KernelCollectives, ranks)(x, y)
    want = np.broadcast_to(x.numpy().sum(axis=0), y.shape)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-5, atol=1e-5)


def test_allgather_reduce_scatter_broadcast_all_to_all_in_kernels() -> None:
    ranks = 4
    x = torch.randn(ranks, 4, p.N)
    outs = [torch.zeros(ranks, 4, p.N) for _ in range(4)]
    _compile(p.Exchanges, ranks)(x, *outs)
    xs = x.numpy()
    g, s, b, a = (o.numpy() for o in outs)
    for r in range(ranks):
        np.testing.assert_array_equal(g[r], np.stack([xs[q, q] for q in range(ranks)]))
        np.testing.assert_array_equal(s[r, r], xs[:, r].max(axis=0))  # row r: rank r's chunk
        np.testing.assert_array_equal(b[r], xs[1])
        np.testing.assert_array_equal(a[r], np.stack([xs[q, r] for q in range(ranks)]))


def test_all_to_all_v_moves_blocks_and_publishes_clamped_counts() -> None:
    x = torch.randn(2, 4, p.N)
    counts = torch.tensor([[[1], [5]], [[2], [0]]], dtype=torch.int32)  # rank r -> rank d
    y = torch.zeros(2, 4, p.N)
    got = torch.zeros(2, 2, 1, dtype=torch.int32)
    _compile(p.AllToAllV, 2)(x, counts, y, got)
    xs = x.numpy()
    for d in range(2):
        for s in range(2):  # block s of rank d = block d of rank s (whole 2-row blocks move)
            np.testing.assert_array_equal(y.numpy()[d, 2 * s:2 * s + 2], xs[s, 2 * d:2 * d + 2])
    # recv[d][s] = counts[s][d] cut at the block size (2)
    assert got.numpy()[:, :, 0].tolist() == [[1, 2], [2, 0]]
