"""PyPTO spellings of the case API: ScalarSpec(name, value, ctype), define_scalars, RunResult."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_pypto.harness import DataType, PTOTestCase, RunResult, ScalarSpec, TensorSpec
from pytest_pypto.harness.cases import build_inputs, expected_outputs


@pytest.mark.parametrize(
    ("spec", "dtype", "value"),
    [
        (ScalarSpec("n", DataType.INT32, 4), "INT32", 4),  # ours: (name, dtype, value)
        (ScalarSpec("n", 4, "int32"), "INT32", 4),  # PyPTO: (name, value, ctype)
        (ScalarSpec("n", 7), "INT64", 7),  # PyPTO's default ctype is int64
        (ScalarSpec(name="s", value=0.5, ctype="float"), "FP32", 0.5),
        (ScalarSpec("u", 3, ctype="uint32"), "UINT32", 3),
        (ScalarSpec("f", "float32", 1.5), "FP32", 1.5),  # numpy dtype name: ours
    ],
)
def test_scalar_spec_both_spellings(spec: ScalarSpec, dtype: str, value: object) -> None:
    assert spec.dtype is getattr(DataType, dtype)
    assert spec.value == value


def test_scalar_spec_errors_name_the_scalar() -> None:
    with pytest.raises(ValueError, match="ScalarSpec 'n': unsupported ctype 'double'"):
        ScalarSpec("n", 1.0, ctype="double")
    with pytest.raises(ValueError, match="ScalarSpec 'n' has no value"):
        ScalarSpec("n", DataType.FP32)


class ScaledAdd(PTOTestCase):
    """PyPTO style: scalars from define_scalars(), after every tensor."""

    def define_tensors(self):
        return [
            TensorSpec("x", [3], DataType.FP32, init_value=lambda s: np.array([1.0, 2.0, 4.0])),
            TensorSpec("out", [3], DataType.FP32, is_output=True),
        ]

    def define_scalars(self):
        return [ScalarSpec("k", 3, "int32"), ScalarSpec("b", 0.5, "float")]

    def compute_expected(self, tensors, params=None):
        tensors["out"][:] = tensors["x"] * params["k"] + params["b"]


def test_define_scalars_come_after_the_tensors() -> None:
    case = ScaledAdd()
    specs, tensors, scalars = build_inputs(case, np.random.default_rng(0))
    assert [s.name for s in specs] == ["x", "out", "k", "b"]
    assert scalars == {"k": 3, "b": 0.5}
    assert expected_outputs(case, specs, tensors, scalars)["out"].tolist() == [3.5, 6.5, 12.5]
    assert PTOTestCase().define_scalars() == []


def test_run_result_reads_like_pypto() -> None:
    ok = RunResult(passed=True, test_name="add", execution_time=0.125, platform="a5sim")
    bad = RunResult(
        passed=False, test_name="add", error="output 'c': 2 / 4", failure_class="mismatch"
    )
    assert str(ok) == "PASS: add (0.12s)"
    assert str(bad) == "FAIL: add - output 'c': 2 / 4"
    assert repr(ok) == "<RunResult add passed on a5sim>"
    assert repr(bad) == "<RunResult add failed: mismatch>"
    assert repr(RunResult(passed=False, test_name="x")) == "<RunResult x failed: error>"
