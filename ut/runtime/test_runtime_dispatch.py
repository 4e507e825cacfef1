"""`pytest_pypto.run` on a parsed program: compile once per options, then dispatch."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.compiler.api as compiler_api
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.artifact import CompiledProgram
from pytest_pypto.runtime.protocol import DeviceFailure

R, C = 16, 32


@pl.program
class Double:
    @pl.function(type=pl.FunctionType.InCore)
    def double(
        self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        o = pl.store(pl.add(t, t), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ) -> pl.Tensor[[R, C], pl.FP32]:
        o = self.double(x, o)
        return o


@pytest.fixture
def compiles(monkeypatch):
    seen = []
    real = compiler_api.compile

    def counting(program, config, **kw):
        seen.append(config.platform)
        return real(program, config, **kw)

    monkeypatch.setattr(compiler_api, "compile", counting)
    return seen


def test_run_compiles_a_program_once_per_platform(compiles, rng):
    x = rng.standard_normal((R, C)).astype(np.float32)
    for platform in ("a2a3sim", "a5sim", "a2a3sim", "a5sim"):
        o = np.zeros_like(x)
        run = pytest_pypto.run(Double, x, o, config=RunConfig(platform=platform))
        np.testing.assert_array_equal(o, x + x)
        assert run.platform == platform
    assert sorted(compiles) == ["a2a3sim", "a5sim"]


def test_codegen_only_returns_the_artifact_without_dispatching(compiles):
    o = np.full((R, C), 7.0, np.float32)
    compiled = pytest_pypto.run(
        Double, np.zeros((R, C), np.float32), o, config=RunConfig(platform="a5", codegen_only=True)
    )
    assert isinstance(compiled, CompiledProgram)
    assert compiled.platform == "a5" and compiled.manifest.sim_backend is None
    np.testing.assert_array_equal(o, 7.0)  # nothing ran


def test_onboard_run_compiles_then_refuses_to_dispatch(compiles):
    # No installed runtime serves a2a3 here (the registry's error, a device-error).
    with pytest.raises(DeviceFailure, match="no available runtime serves a2a3.*Ascend NPU"):
        pytest_pypto.run(Double, np.zeros((R, C), np.float32), np.zeros((R, C), np.float32),
                         config=RunConfig(platform="a2a3"))
    assert compiles == ["a2a3"]  # compile checks still apply onboard (docs/design/numerics.md §1)
