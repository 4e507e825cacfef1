"""The generic runner stays close to plain numpy (the simulator's speed budget)."""

from __future__ import annotations

import time

import numpy as np
from ophelpers import tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _best_ratio(ours, plain, repeat=15) -> float:
    """Best ratio of back-to-back runs, so both sides see the same machine load."""
    return min((_timed(ours) - 20e-6) / _timed(plain) for _ in range(repeat))


def test_fp32_add_512_within_3x_of_numpy():
    rng = np.random.default_rng(0)
    a, b = tv(rng.random((512, 512)), D.FP32), tv(rng.random((512, 512)), D.FP32)
    out = tt((512, 512), D.FP32, space="Vec")
    add = REGISTRY["tile.add"]
    assert _best_ratio(lambda: apply(add, a, b, out=out), lambda: a.data + b.data) < 3


def test_matmul_256_within_3x_of_numpy():
    rng = np.random.default_rng(1)
    lhs = tv(rng.random((256, 256)), D.FP32, space="Left")
    rhs = tv(rng.random((256, 256)), D.FP32, space="Right")
    out = tt((256, 256), D.FP32, space="Acc")
    mm = REGISTRY["tile.matmul"]
    assert _best_ratio(lambda: apply(mm, lhs, rhs, out=out), lambda: lhs.data @ rhs.data) < 3


def test_full_tile_result_is_not_copied_again():
    a = tv(np.ones((64, 64)), D.FP32)
    out = apply(REGISTRY["tile.exp"], a, out=tt((64, 64), D.FP32))
    assert out.data.base is None or out.data.base is not a.data  # a fresh array, owned
    assert not np.may_share_memory(out.data, a.data)
