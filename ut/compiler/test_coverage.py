"""Out params proven fully written skip the entry poison; anything else still sees NaN.

compiler/coverage.py marks ``ArgInfo.fully_written``; the runtime then leaves the
caller's Out array unfilled.  Each case checks the manifest fact and the observable
result against plain numpy.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile

CFG = RunConfig(platform="a2a3sim")
R, C, TR = 32, 16, 8


def add_program(stop: int, feed_out: bool = False):
    @pl.program
    class Add:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
              out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            for r in pl.range(0, stop, TR):
                xt = pl.load(x, [r, 0], [TR, C])
                yt = pl.load(y, [r, 0], [TR, C])
                out = pl.store(pl.add(xt, yt), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            if feed_out:
                out = self.k(out, y, out)  # reads its own Out: the poison must show
            else:
                out = self.k(x, y, out)
            return out

    return Add


def _facts(compiled):
    entry = {a.name: a.fully_written for a in compiled.manifest.entry_args}
    kernel = {a.name: a.fully_written for a in compiled.manifest.kernels[0].args}
    return entry, kernel


def _inputs():
    rng = np.random.default_rng(3)
    return (rng.standard_normal((R, C)).astype(np.float32),
            rng.standard_normal((R, C)).astype(np.float32))


def test_whole_tensor_store_loop_skips_the_poison(tmp_path):
    compiled = compile(add_program(R), CFG, output_dir=tmp_path)
    assert _facts(compiled) == ({"x": False, "y": False, "out": True},
                                {"x": False, "y": False, "out": True})
    x, y = _inputs()
    out = np.full((R, C), 7.0, np.float32)
    run(compiled, x, y, out, config=CFG)
    np.testing.assert_array_equal(out, x + y)


def test_partial_store_loop_keeps_the_poison_observable(tmp_path):
    compiled = compile(add_program(R // 2), CFG, output_dir=tmp_path)
    assert _facts(compiled)[0]["out"] is False and _facts(compiled)[1]["out"] is False
    x, y = _inputs()
    out = np.full((R, C), 7.0, np.float32)
    run(compiled, x, y, out, config=CFG)
    np.testing.assert_array_equal(out[: R // 2], (x + y)[: R // 2])
    assert np.isnan(out[R // 2:]).all()


def test_out_also_passed_as_an_input_is_still_poisoned(tmp_path):
    compiled = compile(add_program(R, feed_out=True), CFG, output_dir=tmp_path)
    assert _facts(compiled)[0]["out"] is False
    x, y = _inputs()
    out = np.full((R, C), 7.0, np.float32)
    run(compiled, x, y, out, config=CFG)
    assert np.isnan(out).all()  # the kernel read the poison, not the caller's 7s


def test_disabled_batching_proves_nothing(tmp_path):
    compiled = compile(add_program(R), CFG, output_dir=tmp_path, batch_loops=False)
    assert _facts(compiled)[0]["out"] is False
