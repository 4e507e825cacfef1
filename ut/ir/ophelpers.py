"""Helpers of the op-registry tests: run-time tiles, call infos, reference rounding."""

from __future__ import annotations

import ml_dtypes
import numpy as np

from pytest_pypto.arch import spec
from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.registry import CallInfo
from pytest_pypto.ir.types import TileType
from pytest_pypto.ir.values import TileValue

ARCHS = (spec("a2a3"), spec("a5"))
TIER1_DTYPES = (D.FP32, D.FP16, D.BF16, D.INT8, D.INT16, D.INT32)
STORAGE = {
    "FP32": np.float32, "FP16": np.float16, "BF16": ml_dtypes.bfloat16,
    "INT8": np.int8, "INT16": np.int16, "INT32": np.int32,
}
POISON_INT = {"INT8": -0x5B, "INT16": -0x5A5B, "INT32": -0x5A5A5A5B}  # 0xA5 bytes


def tv(array, dtype, valid=None, space="Vec", pad=None) -> TileValue:
    """A run-time tile holding ``array``; everything outside ``valid`` is poisoned."""
    data = np.array(array).astype(STORAGE.get(dtype.name, dtype.np))
    t = TileValue(data, tuple(valid or data.shape), dtype, space, pad)
    t.invalidate_outside()
    return t


def info(op, types=None, values=None, arch=None) -> CallInfo:
    return CallInfo(op, dict(types or {}), dict(values or {}), arch)


def tt(shape, dtype, valid=None, space=None) -> TileType:
    return TileType(tuple(shape), dtype, space, tuple(valid) if valid else None)


def random_data(rng, shape, dtype):
    """Values that exercise rounding (floats) or the whole range (ints) of ``dtype``."""
    if dtype.is_float:
        return (rng.standard_normal(shape) * 8).astype(np.float32).astype(STORAGE[dtype.name])
    info_ = np.iinfo(STORAGE[dtype.name])
    return rng.integers(info_.min, info_.max, size=shape, endpoint=True).astype(
        STORAGE[dtype.name]
    )


def round_once(wide, dtype):
    """Reference rounding: float32 math rounded once (RNE), or int64 math wrapped."""
    wide = np.asarray(wide)
    with np.errstate(over="ignore", invalid="ignore"):
        if dtype.is_float:
            return wide.astype(np.float32).astype(STORAGE[dtype.name])
        return wide.astype(np.int64).astype(STORAGE[dtype.name])


def assert_poisoned_outside(t: TileValue) -> None:
    mask = np.ones(t.data.shape, dtype=bool)
    mask[tuple(slice(0, v) for v in t.valid)] = False
    outside = t.data[mask]
    if t.dtype.is_float:
        assert np.isnan(outside.astype(np.float32)).all()
    else:
        assert (outside.astype(np.int64) == POISON_INT[t.dtype.name]).all()
