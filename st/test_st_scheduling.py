"""System test: task semantics of the simulated runtime on compiled kernels.

A write-after-read is not ordered by the runtime (as on the device): under
``strict_war`` it fails the run, naming the hazard, and a shuffled schedule (``schedule_seed``) can run
the writer first, which is exactly the class of bug those options exist to expose.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.ir.errors import SimulationError

R, C = 16, 32


@pl.program
class ReadThenOverwrite:
    @pl.function(type=pl.FunctionType.InCore)
    def snapshot(
        self, b: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(b, [0, 0], [R, C])
        s = pl.store(t, [0, 0], s)
        return s

    @pl.function(type=pl.FunctionType.InCore)
    def overwrite(
        self, x: pl.Tensor[[R, C], pl.FP32], b: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        b = pl.store(pl.neg(t), [0, 0], b)
        return b

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        buf: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
        snap: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        snap = self.snapshot(buf, snap)
        buf = self.overwrite(x, buf)
        return snap


def _run(runner, config, rng):
    x = rng.standard_normal((R, C)).astype(np.float32)
    buf = rng.standard_normal((R, C)).astype(np.float32)
    snap = np.zeros((R, C), np.float32)
    before = buf.copy()
    run = pytest_pypto.run(runner.compile(ReadThenOverwrite), x, buf, snap, config=config)
    np.testing.assert_array_equal(buf, -x)  # the overwrite always lands
    return run, snap, before, -x


def test_submission_order_reads_before_the_overwrite(pypto_runner, pypto_config, pypto_rng):
    run, snap, before, _ = _run(pypto_runner, pypto_config, pypto_rng)
    np.testing.assert_array_equal(snap, before)
    assert run.deps()["edges"] == []  # WAR is not a dependency
    assert run.war_hazards == []  # only reported when asked


def test_strict_war_fails_on_the_unordered_overwrite(pypto_runner, pypto_config, pypto_rng):
    config = dataclasses.replace(pypto_config, strict_war=True)
    buf = pypto_rng.standard_normal((R, C)).astype(np.float32)
    before = buf.copy()
    x, snap = np.ones((R, C), np.float32), np.zeros((R, C), np.float32)
    compiled = pypto_runner.compile(ReadThenOverwrite)
    with pytest.raises(SimulationError, match="write-after-read") as caught:
        pytest_pypto.run(compiled, x, buf, snap, config=config)
    (hazard,) = caught.value.war_hazards
    assert (hazard["reader"], hazard["writer"], hazard["tensor_name"]) == (0, 1, "buf")
    assert "kernel 'overwrite'" in caught.value.message
    np.testing.assert_array_equal(buf, before)  # a failed run writes nothing back


def test_shuffled_schedules_expose_the_missing_dependency(pypto_runner, pypto_config, pypto_rng):
    saw_new_data = False
    for seed in range(12):
        config = dataclasses.replace(pypto_config, schedule_seed=seed)
        run, snap, before, overwritten = _run(pypto_runner, config, pypto_rng)
        if run.deps()["execution_order"] == [1, 0]:
            saw_new_data = True
            np.testing.assert_array_equal(snap, overwritten)  # the snapshot saw the overwrite
        else:
            np.testing.assert_array_equal(snap, before)
    assert saw_new_data
