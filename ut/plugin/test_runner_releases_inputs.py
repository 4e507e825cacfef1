"""A test's inputs do not outlive it: the item keeps its runner for the whole session
(a failure keeps its artifact), but the runner lets the last run's arguments and graph
go once the test's report is made, so a session of large cases holds one at a time."""

from __future__ import annotations

import pytest

TESTS = '''
import gc
import weakref

import numpy as np
import pytest_pypto.language as pl

R, C = 64, 64
SEEN = []


@pl.program
class Neg:
    @pl.function(type=pl.FunctionType.InCore)
    def neg(self, a: pl.Tensor[[R, C], pl.FP32],
            o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        o = pl.store(pl.neg(pl.load(a, [0, 0], [R, C])), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[R, C], pl.FP32],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        o = self.neg(a, o)
        return o


def test_first(pypto_runner):
    a = np.ones((R, C), np.float32)
    out = np.empty_like(a)
    pypto_runner.run(Neg, a, out)
    assert (out == -1).all()
    SEEN.extend([weakref.ref(a), weakref.ref(out)])


def test_second():
    gc.collect()
    assert [ref() is None for ref in SEEN] == [True, True]
'''


def test_a_finished_tests_arrays_are_freed(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_release=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=120)
    result.assert_outcomes(passed=2)
