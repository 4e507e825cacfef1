"""TensorSpec / ScalarSpec / DataType / PTOTestCase: inputs from specs, goldens from copies."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto.harness import DataType, PTOTestCase, RunResult, ScalarSpec, TensorSpec
from pytest_pypto.harness.cases import build_inputs, expected_outputs, resolve_dtype


def test_datatype_names_are_the_dsl_dtypes() -> None:
    assert DataType.FP32 is pl.FP32
    assert DataType.BF16 is pl.BF16
    assert DataType("INT32") is pl.INT32
    assert resolve_dtype("float16") is pl.FP16
    assert resolve_dtype(np.dtype(np.int8)) is pl.INT8
    assert resolve_dtype(ml_dtypes.bfloat16) is pl.BF16
    with pytest.raises(TypeError, match="unsupported tensor dtype"):
        resolve_dtype("float64")


def test_init_values() -> None:
    rng = np.random.default_rng(3)
    assert (TensorSpec("a", [2, 3], DataType.FP32, init_value=1.5).create(rng) == 1.5).all()
    arr = np.arange(6).reshape(2, 3)
    got = TensorSpec("a", [2, 3], DataType.INT32, init_value=arr).create(rng)
    assert got.dtype == np.int32 and (got == arr).all() and got is not arr
    row = TensorSpec("a", [2, 3], DataType.FP16, init_value=[1, 2, 3]).create(rng)
    assert row.dtype == np.float16 and row.tolist() == [[1, 2, 3], [1, 2, 3]]
    # callables: fn(shape), fn(), fn(shape, rng), fn(rng=...)
    assert TensorSpec("a", [2], DataType.FP32, init_value=np.ones).create(rng).tolist() == [1, 1]
    assert TensorSpec("a", [2], DataType.FP32, init_value=lambda: [4, 5]).create(rng).tolist() == [
        4,
        5,
    ]
    seeded = TensorSpec("a", [3], DataType.FP32, init_value=lambda s, g: g.random(s))
    want = np.random.default_rng(9).random(3).astype(np.float32)
    assert (seeded.create(np.random.default_rng(9)) == want).all()
    kw = TensorSpec("a", [3], DataType.FP32, init_value=lambda shape, rng: rng.random(shape))
    assert (kw.create(np.random.default_rng(9)) == want).all()
    with pytest.raises(ValueError, match=r"shape \(4,\).*\(2, 3\)"):
        TensorSpec("a", [2, 3], DataType.FP32, init_value=np.zeros(4)).create(rng)


def test_default_data_outputs_zero_inputs_seeded() -> None:
    out = TensorSpec("o", [4], DataType.FP32, is_output=True).create(np.random.default_rng(0))
    assert out.tolist() == [0, 0, 0, 0]
    x1 = TensorSpec("x", [64], DataType.FP32).create(np.random.default_rng(1))
    x2 = TensorSpec("x", [64], DataType.FP32).create(np.random.default_rng(1))
    assert (x1 == x2).all() and x1.std() > 0.5
    ints = TensorSpec("i", [256], DataType.INT32).create(np.random.default_rng(1))
    assert ints.dtype == np.int32 and ints.min() >= -8 and ints.max() < 8
    u = TensorSpec("u", [256], DataType.UINT8).create(np.random.default_rng(1))
    assert u.min() >= 0


class Saxpy(PTOTestCase):
    def define_tensors(self):
        return [
            TensorSpec("x", [4], DataType.FP32, init_value=lambda s: np.arange(4.0)),
            ScalarSpec("alpha", DataType.FP32, 2.0),
            TensorSpec("y", [4], DataType.FP32, init_value=1.0, is_output=True),
        ]

    def compute_expected(self, tensors, params=None):
        tensors["y"][:] = params["alpha"] * tensors["x"] + tensors["y"]
        tensors["x"][:] = -1  # a careless golden must not disturb the inputs


def test_goldens_come_from_copies_and_is_output() -> None:
    case = Saxpy()
    specs, tensors, scalars = build_inputs(case, np.random.default_rng(0))
    assert [s.name for s in specs] == ["x", "alpha", "y"]
    assert scalars == {"alpha": 2.0}
    expected = expected_outputs(case, specs, tensors, scalars)
    assert list(expected) == ["y"]
    assert expected["y"].tolist() == [1, 3, 5, 7]
    assert tensors["x"].tolist() == [0, 1, 2, 3] and tensors["y"].tolist() == [1, 1, 1, 1]


def test_case_without_outputs_or_with_duplicates_is_an_error() -> None:
    class NoOut(PTOTestCase):
        def define_tensors(self):
            return [TensorSpec("out", [2], DataType.FP32)]

    class Dup(PTOTestCase):
        def define_tensors(self):
            return [
                TensorSpec("a", [2], DataType.FP32),
                TensorSpec("a", [2], DataType.FP32, is_output=True),
            ]

    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="NoOut: no TensorSpec has is_output=True"):
        build_inputs(NoOut(), rng)
    with pytest.raises(ValueError, match="Dup: duplicate tensor name"):
        build_inputs(Dup(), rng)


def test_pypto_style_defaults() -> None:
    case = Saxpy(None, platform="a5sim")
    assert case.get_name() == "Saxpy" and case.options == {"platform": "a5sim"}
    assert Saxpy.__test__ is False
    r = RunResult(passed=True, test_name="Saxpy")
    assert r.error is None and r.outputs == {}
