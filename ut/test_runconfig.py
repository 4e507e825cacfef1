"""RunConfig against docs/design/plugin.md §2, bullet by bullet."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from pytest_pypto import BackendType, ExecutionMode, RunConfig


def test_enums() -> None:
    assert {b.name for b in BackendType} == {"Ascend910B", "Ascend950"}
    assert BackendType.Ascend910B.arch_name == "a2a3"
    assert BackendType.Ascend950.arch_name == "a5"
    assert {m.name for m in ExecutionMode} == {"SIM", "ONBOARD"}


def test_default_is_a2a3sim() -> None:
    cfg = RunConfig()
    assert cfg.arch is BackendType.Ascend910B
    assert cfg.execution_mode is ExecutionMode.SIM
    assert cfg.platform == "a2a3sim"


@pytest.mark.parametrize(
    ("arch", "mode", "platform"),
    [
        (BackendType.Ascend910B, ExecutionMode.SIM, "a2a3sim"),
        (BackendType.Ascend910B, ExecutionMode.ONBOARD, "a2a3"),
        (BackendType.Ascend950, ExecutionMode.SIM, "a5sim"),
        (BackendType.Ascend950, ExecutionMode.ONBOARD, "a5"),
    ],
)
def test_construct_both_ways(arch, mode, platform) -> None:
    cfg = RunConfig(arch=arch, execution_mode=mode)
    assert cfg.platform == platform
    other = RunConfig(platform=platform)
    assert (other.arch, other.execution_mode) == (arch, mode)
    assert other == cfg


def test_keyword_only() -> None:
    with pytest.raises(TypeError):
        RunConfig(BackendType.Ascend950)  # type: ignore[misc]


def test_platform_that_disagrees_with_the_axes_is_an_error() -> None:
    """Issue 26 item 13: no longer silently 'platform wins' (ut/test_runconfig_checks.py)."""
    with pytest.raises(ValueError, match="platform='a5', arch=BackendType.Ascend910B"):
        RunConfig(arch=BackendType.Ascend910B, execution_mode=ExecutionMode.SIM, platform="a5")


def test_replace_with_platform() -> None:
    cfg = RunConfig(platform="a2a3sim", seed=3)
    moved = dataclasses.replace(cfg, platform="a5")
    assert moved.platform == "a5"
    assert moved.seed == 3
    assert dataclasses.replace(cfg, execution_mode=ExecutionMode.ONBOARD).platform == "a2a3"


def test_signature_lists_platform() -> None:
    params = inspect.signature(RunConfig).parameters
    assert "platform" in params
    assert params["platform"].kind is inspect.Parameter.KEYWORD_ONLY
    for name in (
        "arch",
        "execution_mode",
        "device_id",
        "rtol",
        "atol",
        "save_kernels",
        "save_kernels_dir",
        "dump_passes",
        "codegen_only",
        "seed",
    ):
        assert name in params
        assert params[name].default is not inspect.Parameter.empty


@pytest.mark.parametrize(
    ("kwargs", "value"),
    [
        ({"execution_mode": "sim"}, "'sim'"),
        ({"arch": "a5"}, "'a5'"),
        ({"platform": 5}, "5"),
    ],
)
def test_wrong_type_is_type_error_pointing_at_platform(kwargs, value) -> None:
    with pytest.raises(TypeError) as info:
        RunConfig(**kwargs)
    assert value in str(info.value)
    assert "platform=" in str(info.value)


def test_unknown_platform_lists_valid_ones() -> None:
    with pytest.raises(ValueError) as info:
        RunConfig(platform="a6sim")
    msg = str(info.value)
    assert "'a6sim'" in msg
    for p in ("a2a3sim", "a2a3", "a5sim", "a5"):
        assert repr(p) in msg


def test_backend_type_reads_arch() -> None:
    assert RunConfig(platform="a5sim").backend_type is BackendType.Ascend950
    assert RunConfig().backend_type is BackendType.Ascend910B


def test_other_field_defaults() -> None:
    cfg = RunConfig()
    assert (cfg.device_id, cfg.rtol, cfg.atol, cfg.seed) == (None, None, None, None)
    assert (cfg.save_kernels, cfg.dump_passes, cfg.codegen_only) == (False, False, False)
    assert cfg.save_kernels_dir is None


def test_rtol_atol_both_or_neither() -> None:
    with pytest.raises(ValueError, match="both rtol and atol"):
        RunConfig(rtol=1e-3)
    assert RunConfig(rtol=1e-3, atol=1e-5).atol == 1e-5


def test_not_collected_as_a_test() -> None:
    assert RunConfig.__test__ is False


def test_mutable_like_pypto_and_axes_stay_consistent() -> None:
    cfg = RunConfig(platform="a2a3sim")
    cfg.rtol = 1e-4  # PyPTO cases tune tolerances one field at a time
    cfg.atol = 2e-4
    assert (cfg.rtol, cfg.atol) == (1e-4, 2e-4)
    cfg.platform = "a5"
    assert (cfg.arch, cfg.execution_mode) == (BackendType.Ascend950, ExecutionMode.ONBOARD)
    cfg.backend_type = BackendType.Ascend910B
    assert cfg.platform == "a2a3"
    with pytest.raises(TypeError, match="platform="):
        cfg.arch = "a5"  # type: ignore[assignment]
    with pytest.raises(TypeError, match="platform="):
        cfg.execution_mode = "sim"  # type: ignore[assignment]
    with pytest.raises(ValueError, match="a2a3sim"):
        cfg.platform = "a7"
    assert cfg.platform == "a2a3"  # a refused assignment changes nothing


def test_pypto_only_fields_are_compat_s() -> None:
    """Our RunConfig holds our fields only; PyPTO's DFX/planner fields are compat's."""
    with pytest.raises(TypeError, match="enable_pmu"):
        RunConfig(platform="a5sim", enable_pmu=4)
    assert RunConfig().accepted_without_effect() == {}
    assert RunConfig().assembler_plans_memory is False


def test_backend_type_keyword_sets_the_arch_unless_platform_given() -> None:
    assert RunConfig(backend_type=BackendType.Ascend950).platform == "a5sim"
    with pytest.raises(ValueError, match="platform='a2a3', backend_type=BackendType.Ascend950"):
        RunConfig(platform="a2a3", backend_type=BackendType.Ascend950)
