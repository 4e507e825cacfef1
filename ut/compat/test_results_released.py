"""PyPTO's ``test_runner.run`` results (inputs, goldens, outputs) do not outlive their
test: the item holds them only until its report is classified."""

from __future__ import annotations

import pytest

TESTS = '''
import gc
import weakref

import torch
import pytest_pypto.compat.pypto.language as pl
from pytest_pypto.compat.harness import DataType, PTOTestCase, TensorSpec

R, C = 32, 64
SEEN = []


@pl.program
class Double:
    @pl.function(type=pl.FunctionType.InCore)
    def dbl(self, a: pl.Tensor[[R, C], pl.FP32],
            o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(a, [0, 0], [R, C])
        o = pl.store(pl.add(t, t), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        o = self.dbl(a, o)
        return o


class DoubleCase(PTOTestCase):
    def get_name(self):
        return "double"

    def define_tensors(self):
        return [TensorSpec("a", [R, C], DataType.FP32, init_value=torch.randn),
                TensorSpec("o", [R, C], DataType.FP32, is_output=True)]

    def get_program(self):
        return Double

    def compute_expected(self, tensors, params=None):
        tensors["o"][:] = tensors["a"] * 2


def test_first(test_runner):
    result = test_runner.run(DoubleCase())
    assert result.passed, result.error
    SEEN.extend(weakref.ref(a) for a in (*result.inputs.values(), *result.outputs.values()))


def test_second():
    gc.collect()
    assert SEEN and all(ref() is None for ref in SEEN)
'''


def test_a_finished_cases_arrays_are_freed(pytester: pytest.Pytester) -> None:
    pytester.makeconftest('pytest_plugins = ["pytest_pypto.compat"]\n')
    pytester.makepyfile(test_release=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=120)
    result.assert_outcomes(passed=2)
