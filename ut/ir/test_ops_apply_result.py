"""The generic runner hands back buffers the result owns (speed lives in bench/)."""

from __future__ import annotations

import numpy as np
from ophelpers import tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.registry import REGISTRY


def test_full_tile_result_does_not_alias_its_operand():
    a = tv(np.ones((64, 64)), D.FP32)
    out = apply(REGISTRY["tile.exp"], a, out=tt((64, 64), D.FP32))
    assert not np.may_share_memory(out.data, a.data)
    np.testing.assert_array_equal(out.data, np.exp(np.ones((64, 64), np.float32)))
