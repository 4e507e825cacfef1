# SPDX-License-Identifier: Apache-2.0
"""RunConfig refuses, where it is built or assigned, what it used to accept silently:
a platform that disagrees with arch / execution_mode / backend_type, a device id that
is not an int, negative tolerances and seeds (issue 26, item 13)."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_pypto import RunConfig
from pytest_pypto.arch import BackendType, ExecutionMode
from pytest_pypto.compat.runconfig import RunConfig as PyptoRunConfig

CLASSES = [RunConfig, PyptoRunConfig]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("keyword", "value", "shown"), [
    ("arch", BackendType.Ascend910B, "arch=BackendType.Ascend910B"),
    ("backend_type", BackendType.Ascend910B, "backend_type=BackendType.Ascend910B"),
    ("execution_mode", ExecutionMode.ONBOARD, "execution_mode=ExecutionMode.ONBOARD"),
])
def test_platform_that_disagrees_with_an_axis_is_refused(cls, keyword, value, shown) -> None:
    with pytest.raises(ValueError) as e:
        cls(platform="a5sim", **{keyword: value})
    message = str(e.value)
    assert "platform='a5sim'" in message and shown in message
    assert "give one of them" in message


@pytest.mark.parametrize("cls", CLASSES)
def test_platform_that_agrees_with_the_axes_is_accepted(cls) -> None:
    cfg = cls(platform="a5sim", arch=BackendType.Ascend950, execution_mode=ExecutionMode.SIM)
    assert cfg.platform == "a5sim"
    assert cls(platform="a2a3", backend_type=BackendType.Ascend910B).platform == "a2a3"


@pytest.mark.parametrize("cls", CLASSES)
def test_replace_still_moves_a_config_to_another_platform(cls) -> None:
    cfg = cls(platform="a2a3sim", seed=3)
    moved = dataclasses.replace(cfg, platform="a5")
    assert moved.platform == "a5" and moved.seed == 3


BAD = [
    ("device_id", "zero", TypeError, "an int >= 0"),
    ("device_id", True, TypeError, "an int >= 0"),
    ("device_id", 1.0, TypeError, "an int >= 0"),
    ("device_id", -1, ValueError, "an int >= 0"),
    ("seed", -1, ValueError, "an int >= 0"),
    ("seed", "7", TypeError, "an int >= 0"),
    ("schedule_seed", -2, ValueError, "an int >= 0"),
    ("timeout", "5", TypeError, "seconds"),
]


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("field", "value", "error", "accepted"), BAD)
def test_bad_field_is_refused_at_construction_and_assignment(
    cls, field, value, error, accepted
) -> None:
    with pytest.raises(error) as e:
        cls(**{field: value})
    assert f"RunConfig({field}={value!r})" in str(e.value) and accepted in str(e.value)
    cfg = cls()
    with pytest.raises(error):
        setattr(cfg, field, value)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize(("rtol", "atol", "bad"), [
    (-1e-3, 1e-3, "rtol=-0.001"),
    (1e-3, -1e-5, "atol=-1e-05"),
    (float("nan"), 1e-3, "rtol=nan"),
])
def test_negative_or_nan_tolerance_is_refused(cls, rtol, atol, bad) -> None:
    with pytest.raises(ValueError) as e:
        cls(rtol=rtol, atol=atol)
    assert f"RunConfig({bad})" in str(e.value) and "a number >= 0" in str(e.value)
    cfg = cls(rtol=1e-3, atol=1e-3)
    with pytest.raises(ValueError):
        cfg.rtol = -1.0  # PyPTO cases tune tolerances by assignment


@pytest.mark.parametrize("cls", CLASSES)
def test_good_fields_are_accepted(cls) -> None:
    import numpy as np

    cfg = cls(device_id=0, seed=0, schedule_seed=np.int64(5), rtol=0, atol=0.0, timeout=1)
    cfg.rtol, cfg.atol = np.float32(1e-3), 1e-5
    cfg.device_id = None
    assert (cfg.seed, cfg.schedule_seed, cfg.timeout) == (0, 5, 1)


@pytest.mark.parametrize("cls", CLASSES)
def test_arch_and_backend_type_that_disagree_are_refused(cls) -> None:
    with pytest.raises(ValueError, match="arch=BackendType.Ascend950, backend_type="
                                         "BackendType.Ascend910B.*give one of them"):
        cls(arch=BackendType.Ascend950, backend_type=BackendType.Ascend910B)
    assert cls(arch=BackendType.Ascend950, backend_type=BackendType.Ascend950).platform == "a5sim"
