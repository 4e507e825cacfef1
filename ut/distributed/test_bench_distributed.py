"""The distributed bench computes the allreduce it times (bench/bench_distributed.py)."""

from __future__ import annotations

import numpy as np
import pytest

from bench import bench_distributed as bench


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_bench_allreduce_matches_a_plain_sum(ranks) -> None:
    sim, ref, y, x = bench.run(ranks, 2 * 4 * bench.COLS, repeat=1)
    assert sim > 0 and ref > 0
    want = np.broadcast_to(x.sum(axis=0), x.shape)
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)
    z = np.zeros_like(x)
    bench.numpy_allreduce(x, z)
    np.testing.assert_array_equal(z, want)
