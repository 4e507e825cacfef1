"""The generic runner stays close to plain numpy (the simulator's speed budget)."""

from __future__ import annotations

import time

import numpy as np
from ophelpers import tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY


def _best(fn, repeat=15):
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def test_fp32_add_512_within_3x_of_numpy():
    rng = np.random.default_rng(0)
    a, b = tv(rng.random((512, 512)), D.FP32), tv(rng.random((512, 512)), D.FP32)
    out = tt((512, 512), D.FP32, space="Vec")
    add = REGISTRY["tile.add"]
    ours = _best(lambda: apply(add, a, b, out=out))
    plain = _best(lambda: a.data + b.data)
    assert ours < 3 * plain + 50e-6


def test_matmul_256_within_3x_of_numpy():
    rng = np.random.default_rng(1)
    lhs = tv(rng.random((256, 256)), D.FP32, space="Left")
    rhs = tv(rng.random((256, 256)), D.FP32, space="Right")
    out = tt((256, 256), D.FP32, space="Acc")
    mm = REGISTRY["tile.matmul"]
    ours = _best(lambda: apply(mm, lhs, rhs, out=out), repeat=7)
    plain = _best(lambda: lhs.data @ rhs.data, repeat=7)
    assert ours < 3 * plain + 50e-6


def test_full_tile_result_is_not_copied_again():
    a = tv(np.ones((64, 64)), D.FP32)
    out = apply(REGISTRY["tile.exp"], a, out=tt((64, 64), D.FP32))
    assert out.data.base is None or out.data.base is not a.data  # a fresh array, owned
    assert not np.may_share_memory(out.data, a.data)
