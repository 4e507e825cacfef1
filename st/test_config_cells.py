"""Placeholder system check until kernels can be dispatched: each cell's RunConfig."""

import pytest

from pytest_pypto import BackendType, ExecutionMode, RunConfig


@pytest.mark.parametrize(
    ("platform", "arch", "mode"),
    [
        ("a2a3sim", BackendType.Ascend910B, ExecutionMode.SIM),
        ("a2a3", BackendType.Ascend910B, ExecutionMode.ONBOARD),
        ("a5sim", BackendType.Ascend950, ExecutionMode.SIM),
        ("a5", BackendType.Ascend950, ExecutionMode.ONBOARD),
    ],
)
def test_platform_round_trip(platform, arch, mode):
    cfg = RunConfig(platform=platform)
    assert (cfg.arch, cfg.execution_mode) == (arch, mode)
    assert RunConfig(arch=arch, execution_mode=mode).platform == platform
