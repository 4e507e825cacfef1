"""What keeps a simulated run fast at the scale of real kernels (docs/design/runtime.md §4):
the cyclic garbage collector is off while a run executes, and back on after it."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.loader import registry_bind
from pytest_pypto.runtime.worker import Worker


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: pl.Tensor[[16, 16], pl.FP32],
               o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 16])
        o = pl.store(pl.add(t, t), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.double(x, out)
        return out


def _watching_bind(seen, fail=False):
    """The registry's ops, with `tile.add` noting whether the collector is on (and failing
    when asked to)."""
    def bind(op):
        real = registry_bind(op)
        if op != "tile.add":
            return real

        def add(*args, **kwargs):
            seen.append(gc.isenabled())
            if fail:
                raise SimulationError("boom")
            return real(*args, **kwargs)
        return add
    return bind


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_the_collector_is_off_inside_a_run_and_on_after_it(platform):
    assert gc.isenabled()
    seen = []
    compiled = pytest_pypto.compile(Twice, RunConfig(platform=platform))
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = np.zeros_like(x)
    Worker(platform, bind=_watching_bind(seen)).run(compiled, x, out,
                                                    config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out, 2 * x)
    assert seen == [False]
    assert gc.isenabled()


def test_the_collector_is_back_on_after_a_failed_run():
    seen = []
    compiled = pytest_pypto.compile(Twice, RunConfig(platform="a2a3sim"))
    x = np.ones((16, 16), np.float32)
    with pytest.raises(SimulationError, match="boom"):
        Worker("a2a3sim", bind=_watching_bind(seen, fail=True)).run(
            compiled, x, np.zeros_like(x), config=RunConfig(platform="a2a3sim"))
    assert seen == [False]
    assert gc.isenabled()


def test_a_run_leaves_a_disabled_collector_disabled():
    compiled = pytest_pypto.compile(Twice, RunConfig(platform="a2a3sim"))
    x = np.ones((16, 16), np.float32)
    gc.disable()
    try:
        Worker("a2a3sim").run(compiled, x, np.zeros_like(x), config=RunConfig(platform="a2a3sim"))
        assert not gc.isenabled()
    finally:
        gc.enable()
