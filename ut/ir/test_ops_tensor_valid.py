# SPDX-License-Identifier: Apache-2.0
"""Registry entries for tensor valid regions: tensor.set_validshape, the valid region of
tensor slices/reshapes/transposes/loads, and tensor.assemble's transfer and dtype rules."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from ophelpers import ARCHS, info

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.registry import REGISTRY, OpArchError, OpTypeError
from pytest_pypto.ir.types import ScalarType, TensorType

A2A3, A5 = ARCHS


def rule(name, types, values, arch=None):
    return REGISTRY[name].type_rule(info(name, types, values, arch))


def test_set_validshape_sets_metadata_over_the_same_buffer():
    x = TensorType((16, 8), D.FP32)
    t = rule("tensor.set_validshape", {"tensor": x}, {"valid_rows": 10, "valid_cols": 4})
    assert (t.shape, t.valid) == ((16, 8), (10, 4))
    dyn = rule("tensor.set_validshape", {"tensor": x, "valid_rows": ScalarType(D.INDEX)},
               {"valid_rows": None, "valid_cols": 8})
    assert dyn.valid == (None, 8)
    a = np.arange(128, dtype=np.float32).reshape(16, 8)
    assert REGISTRY["tensor.set_validshape"].execute(a, 10, 4) is a  # no data moves
    with pytest.raises(OpTypeError, match="requires a 2-D tensor, but got rank 3"):
        rule("tensor.set_validshape", {"tensor": TensorType((2, 16, 8), D.FP32)},
             {"valid_rows": 1, "valid_cols": 1})
    with pytest.raises(OpTypeError, match="integer 'valid_cols', but got FP32"):
        rule("tensor.set_validshape", {"tensor": x, "valid_cols": ScalarType(D.FP32)},
             {"valid_rows": 1, "valid_cols": None})


def test_views_carry_the_valid_region():
    x = TensorType((16, 8), D.FP32, (10, 4))
    s = rule("tensor.slice", {"tensor": x}, {"shape": (8, 4), "offset": (4, 2)})
    assert s.valid == (6, 2)  # the source's region shifted by the offset
    s = rule("tensor.slice", {"tensor": x}, {"shape": (8, 8), "offset": (4, 0),
                                             "valid_shape": (3, 8)})
    assert s.valid == (3, 4)  # the request cut by the source's region
    s = rule("tensor.slice", {"tensor": x}, {"shape": (4, 8), "offset": (12, 0)})
    assert s.valid == (0, 4)  # entirely past the valid rows: nothing valid
    assert rule("tensor.transpose", {"tensor": x}, {"axis1": 0, "axis2": 1}).valid == (4, 10)
    assert rule("tensor.reshape", {"tensor": TensorType((16, 8), D.FP32, (16, 4))},
                {"shape": (1, 16, 8)}).valid == (1, 16, 4)
    with pytest.raises(OpTypeError, match="cannot map valid region"):
        rule("tensor.reshape", {"tensor": x}, {"shape": (8, 16)})
    with pytest.raises(OpTypeError, match="can drop only fully valid axes, but dimension 0 has no valid element"):
        rule("tensor.slice", {"tensor": x}, {"shape": (1, 8), "offset": (12, 0),
                                             "drop_dims": (0,)})
    tile = rule("tile.load", {"tensor": x}, {"offsets": (8, 0), "shapes": (8, 8)})
    assert tile.valid == (2, 4)  # a load reads only the valid region


def test_assemble_transfers_the_source_valid_region():
    src = TensorType((16, 8), D.FP32, (16, 4))
    t = rule("tensor.assemble", {"target": TensorType((16, 4), D.FP32), "source": src},
             {"offset": (0, 0)})
    assert t.shape == (16, 4) and not t.narrowed
    with pytest.raises(OpTypeError, match="offset 1 \\+ source valid extent 16 > target extent"):
        rule("tensor.assemble", {"target": TensorType((16, 4), D.FP32), "source": src},
             {"offset": (1, 0)})


def test_assemble_converts_only_accumulator_dtypes():
    fp32, bf16 = TensorType((4, 4), D.FP32), TensorType((4, 4), D.BF16)
    assert rule("tensor.assemble", {"target": bf16, "source": fp32}, {"offset": (0, 0)}) == bf16
    with pytest.raises(OpTypeError, match="source and target in one dtype, but got FP16 and "
                       "FP32"):
        rule("tensor.assemble", {"target": fp32, "source": TensorType((4, 4), D.FP16)},
             {"offset": (0, 0)})
    for arch in ARCHS:  # both accumulator stores reach BF16; only a2a3 adds into it
        REGISTRY["tensor.assemble"].arch_rule(
            arch, info("tensor.assemble", {"target": bf16, "source": fp32}, {"offset": (0, 0)}))
    with pytest.raises(OpArchError, match="atomically adds into a BF16 tensor"):
        REGISTRY["tensor.assemble"].arch_rule(A5, info(
            "tensor.assemble", {"target": bf16, "source": fp32},
            {"offset": (0, 0), "atomic": "Add"}))
    dst = np.zeros((2, 4), ml_dtypes.bfloat16)
    src = np.full((2, 4), 1.0 + 2.0 ** -9, np.float32)  # halfway below: RNE rounds to 1.0
    REGISTRY["tensor.assemble"].execute(dst, src, offset=(0, 0))
    assert (dst.astype(np.float32) == 1.0).all()
    # atomic: 1 + src rounded once (2 + 2^-7 + 2^-12 -> up); rounding src first would tie
    # at 2 + 2^-7 and go to the even 2.0
    src = np.full((2, 4), 1.0 + 2.0 ** -7 + 2.0 ** -12, np.float32)
    REGISTRY["tensor.assemble"].execute(dst, src, offset=(0, 0), atomic="Add")
    assert (dst.astype(np.float32) == 2.0 + 2.0 ** -6).all()
