# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""`with pl.at(...)` regions end to end on both sims: outlined kernels compute what the
region says, each region is one task, and the inferred directions order the tasks.

References are plain numpy written here; the task graph is read from the run record
(deps.json).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
M, N, TM = 64, 32, 16


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20240909)


def _run(program, platform, *arrays, **config):
    compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    return compiled, pytest_pypto.run(compiled, *arrays,
                                      config=RunConfig(platform=platform, **config))


@pl.program
class Axpy:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             alpha: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, optimizations=[pl.split(pl.SplitMode.UP_DOWN)]):
            for r in pl.range(0, M, TM):
                xt = pl.load(x, [r, 0], [TM, N])
                yt = pl.load(y, [r, 0], [TM, N])
                out = pl.store(pl.add(pl.mul(xt, alpha), yt), [r, 0], out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_region_is_one_task_computing_its_statements(platform, rng):
    x = rng.standard_normal((M, N)).astype(np.float32)
    y = rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    compiled, run = _run(Axpy, platform, x, y, 0.5, out)
    want = (x.astype(np.float32) * np.float32(0.5) + y).astype(np.float32)
    np.testing.assert_allclose(out, want, rtol=1e-6, atol=1e-6)
    assert [t["kernel"] for t in run.tasks] == ["main_incore_0"]
    (kernel,) = compiled.manifest.kernels
    assert [(a.name, a.direction) for a in kernel.args] == [
        ("x", "In"), ("y", "In"), ("alpha", "Scalar"), ("out", "Out")]  # order of first use


@pl.program
class Pipeline:
    """Two regions through an intermediate buffer, the second in an orchestration loop."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],
             out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        tmp = pl.create_tensor([M, N], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="square"):
            t = pl.load(x, [0, 0], [M, N])
            tmp = pl.store(pl.mul(t, t), [0, 0], tmp)
        for r in pl.range(0, M, TM):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="accumulate"):
                s = pl.load(tmp, [r, 0], [TM, N])
                o = pl.load(out, [r, 0], [TM, N])
                out = pl.store(pl.add(o, s), [r, 0], out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_regions_in_loops_chain_through_buffers_with_raw_dependencies(platform, rng):
    x = rng.standard_normal((M, N)).astype(np.float32)
    init = rng.standard_normal((M, N)).astype(np.float32)
    out = init.copy()
    compiled, run = _run(Pipeline, platform, x, out, schedule_seed=7)
    np.testing.assert_allclose(out, init + x * x, rtol=1e-6, atol=1e-6)
    kernels = {k.name: [(a.name, a.direction) for a in k.args] for k in compiled.manifest.kernels}
    assert kernels == {
        "square": [("x", "In"), ("tmp", "Out")],
        "accumulate": [("tmp", "In"), ("r", "Scalar"), ("out", "InOut")],
    }
    tasks = run.tasks
    assert [t["kernel"] for t in tasks] == ["square"] + ["accumulate"] * (M // TM)
    for t in tasks[1:]:  # every slice waits for the producer of tmp
        assert {"task": 0, "kind": "RAW"} in t["deps"]
    assert [a["value"] for t in tasks[1:] for a in t["args"] if a["name"] == "r"] == [
        0, 16, 32, 48]


@pl.program
class AtomicAccumulate:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.InOut[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        for i in pl.range(3):
            with pl.at(level=pl.Level.CORE_GROUP):
                t = pl.load(x, [0, 0], [16, 16])
                pl.store(t, [0, 0], out, atomic=pl.AtomicType.Add)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_store_statement_writes_through_the_outer_buffer(platform, rng):
    x = rng.integers(-8, 8, (16, 16)).astype(np.float32)
    init = rng.integers(-8, 8, (16, 16)).astype(np.float32)
    out = init.copy()
    _, run = _run(AtomicAccumulate, platform, x, out)
    np.testing.assert_array_equal(out, init + 3 * x)  # small ints: exact in FP32
    assert len(run.tasks) == 3
    assert run.tasks[1]["deps"] == [{"task": 0, "kind": "WAW"}]  # one writer after another


@pl.program
class ShiftExp:
    """Tensor-level code inside a region (docs/design/language.md §3's canonical example)."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 64], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]) -> pl.Tensor[[16, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="shift_exp"):
            m = pl.row_max(x)
            y = pl.row_expand_expdif(x, m)
            out = pl.assemble(out, y, [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_level_ops_inside_a_region(platform, rng):
    x = rng.standard_normal((16, 64)).astype(np.float32)
    out = np.zeros((16, 64), np.float32)
    _, run = _run(ShiftExp, platform, x, out)
    want = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-6)
    assert [t["kernel"] for t in run.tasks] == ["shift_exp"]
