"""tile.matmul_acc on fully valid float32 tiles: the in-place accumulation is numpy's
float32 product added in float32, bit for bit (batched lhs included), and tiles that are
not fully valid still accumulate over their valid region only."""

from __future__ import annotations

import numpy as np
import pytest
from ophelpers import random_data, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY as R


@pytest.mark.parametrize("lead", [(), (3,)])
@pytest.mark.parametrize("init", [None, False, True])
def test_fully_valid_fp32_accumulates_exactly_as_numpy(lead, init):
    rng = np.random.default_rng(7)
    a = random_data(rng, (*lead, 16, 32), D.FP32)
    b = random_data(rng, (32, 8), D.FP32)
    start = random_data(rng, (*lead, 16, 8), D.FP32)
    a.reshape(-1)[:3] = [np.inf, np.nan, -0.0]
    acc = tv(start.copy(), D.FP32, space="Acc")
    args = () if init is None else (init,)
    res = apply(R["tile.matmul_acc"], acc, tv(a, D.FP32, space="Left"),
                tv(b, D.FP32, space="Right"), *args)
    assert res is acc
    with np.errstate(all="ignore"):
        product = np.matmul(a, b)
        want = product if init else start + product
    assert acc.data.tobytes() == want.astype(np.float32).tobytes()


def test_partly_valid_operands_accumulate_over_the_valid_region():
    rng = np.random.default_rng(8)
    a = random_data(rng, (16, 32), D.FP32)
    b = random_data(rng, (32, 8), D.FP32)
    start = random_data(rng, (16, 8), D.FP32)
    acc = tv(start.copy(), D.FP32, space="Acc")
    apply(R["tile.matmul_acc"], acc, tv(a, D.FP32, valid=(10, 20), space="Left"),
          tv(b, D.FP32, valid=(20, 8), space="Right"))
    want = start[:10] + a[:10, :20].astype(np.float64) @ b[:20]
    np.testing.assert_allclose(acc.data[:10], want, rtol=1e-5, atol=1e-4)
    assert acc.data[10:].tobytes() == start[10:].tobytes()  # rows outside: untouched
