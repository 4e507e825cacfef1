"""NPU discovery, device ranges, leases and the onboard-runtime lookup (stdlib only)."""

from __future__ import annotations

import fcntl
import multiprocessing
from pathlib import Path

import pytest

from pytest_pypto.runtime import devices
from pytest_pypto.runtime.devices import (
    DeviceLease,
    discover_npus,
    format_device_list,
    onboard_status,
    parse_device_list,
)


@pytest.mark.parametrize(
    ("text", "ids"),
    [
        ("0", (0,)),
        ("0-7", tuple(range(8))),
        ("0,2,5", (0, 2, 5)),
        ("6, 0-2 ,2", (0, 1, 2, 6)),
        ("3-3", (3,)),
    ],
)
def test_parse_device_list(text: str, ids: tuple[int, ...]) -> None:
    assert parse_device_list(text) == ids


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "'' is not a device id or range"),
        ("x", "'x' is not a device id or range"),
        ("1-", "'1-' is not a device id or range"),
        ("-1", "'-1' is not a device id or range"),
        ("3-1", "range '3-1' is empty"),
        ("1,,2", "'' is not a device id or range"),  # the empty item, not the whole text
        ("0x1", "'0x1' is not a device id or range"),
        ("1.5", "'1.5' is not a device id or range"),
    ],
)
def test_parse_device_list_rejects(text: str, why: str) -> None:
    with pytest.raises(ValueError) as info:
        parse_device_list(text)
    assert str(info.value).startswith(why)


def test_format_device_list() -> None:
    assert format_device_list([5, 0, 1, 2, 3, 7]) == "0-3,5,7"
    assert format_device_list([]) == ""


@pytest.fixture
def dev(tmp_path: Path) -> Path:
    root = tmp_path / "dev"
    root.mkdir()
    for n in (0, 1, 2, 3, 4, 5, 6, 7, 12):
        (root / f"davinci{n}").touch()
    for other in ("davinci_manager", "davinci", "devmm_svm", "davinci3x"):
        (root / other).touch()
    return root


def test_discover(dev: Path) -> None:
    assert discover_npus(dev, env={}) == (0, 1, 2, 3, 4, 5, 6, 7, 12)


def test_discover_env_root(dev: Path) -> None:
    assert discover_npus(env={"PYPTO_DEV_ROOT": str(dev)}) == (0, 1, 2, 3, 4, 5, 6, 7, 12)


def test_discover_missing_root(tmp_path: Path) -> None:
    assert discover_npus(tmp_path / "nope", env={}) == ()


def test_visible_devices_narrow(dev: Path) -> None:
    env = {"ASCEND_RT_VISIBLE_DEVICES": "2,3,9,12"}
    assert discover_npus(dev, env=env) == (2, 3, 12)
    assert discover_npus(dev, env=env, requested=(3, 4, 12)) == (3, 12)
    assert discover_npus(dev, env={"ASCEND_RT_VISIBLE_DEVICES": ""}) == ()
    assert discover_npus(dev, env={"ASCEND_RT_VISIBLE_DEVICES": "0-1"}) == (0, 1)


def test_onboard_status_reports_what_is_missing(
    dev: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The installed runtimes are pinned both ways, so neither branch depends on this host.
    none = devices.RuntimeCensus(serving={"a2a3": (), "a5": ()}, installed="sim")
    monkeypatch.setattr(devices, "onboard_runtimes", lambda: none)
    status = onboard_status(dev_root=tmp_path, env={})
    assert (status.devices, status.runtimes) == ((), ())
    assert status.missing() == (
        f"no NPU visible (no {tmp_path}/davinci<N> device node); "
        "no onboard runtime (no available runtime of entry-point group "
        "'pytest_pypto.runtimes' serves it; installed: sim)"
    )
    narrowed = onboard_status(dev_root=tmp_path, env={"ASCEND_RT_VISIBLE_DEVICES": "1"},
                              requested=(0, 1))
    assert narrowed.missing().startswith(
        f"no NPU visible (no {tmp_path}/davinci<N> device node with "
        "ASCEND_RT_VISIBLE_DEVICES='1' in --pypto-device 0-1); "
    )
    with_npus = onboard_status(dev_root=dev, env={}, requested=(1, 2))
    assert with_npus.devices == (1, 2)
    assert with_npus.missing("a5").startswith("no onboard runtime serving a5 (")
    # A runtime serving a5 only: a5 cells can run, a2a3 cells still cannot.
    a5_only = devices.RuntimeCensus(serving={"a2a3": (), "a5": ("fake",)}, installed="fake, sim")
    monkeypatch.setattr(devices, "onboard_runtimes", lambda: a5_only)
    ready = onboard_status(dev_root=dev, env={}, requested=(1, 2))
    assert ready.runtimes == ("fake",)
    assert ready.missing("a5") is None and ready.missing() is None
    assert ready.missing("a2a3").startswith("no onboard runtime serving a2a3 (")
    # A broken third-party runtime might serve anything: its cells run and fail, naming it.
    broken = devices.RuntimeCensus(serving={"a2a3": (), "a5": ()}, broken=("bad",))
    monkeypatch.setattr(devices, "onboard_runtimes", lambda: broken)
    assert onboard_status(dev_root=dev, env={}).missing("a2a3") is None


def test_lease_is_exclusive_and_released(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    with DeviceLease.acquire([4, 5], lock_dir=locks) as first:
        assert first.device_id == 4
        with DeviceLease.acquire([4, 5], lock_dir=locks) as second:
            assert second.device_id == 5
            with pytest.raises(TimeoutError, match="no device free among 4-5"):
                DeviceLease.acquire([4, 5], lock_dir=locks, timeout=0.1)
    with DeviceLease.acquire([4, 5], lock_dir=locks, timeout=0.1) as again:
        assert again.device_id == 4


def test_lease_start_spreads_workers(tmp_path: Path) -> None:
    with DeviceLease.acquire([0, 1, 2], start=4, lock_dir=tmp_path) as lease:
        assert lease.device_id == 1


def _hold(path: str, ready, done) -> None:
    with open(path, "a+") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        ready.set()
        done.wait(10)


def test_lease_sees_other_processes(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    ready, done = ctx.Event(), ctx.Event()
    proc = ctx.Process(target=_hold, args=(str(tmp_path / "davinci0.lock"), ready, done))
    proc.start()
    try:
        assert ready.wait(10)
        with DeviceLease.acquire([0, 1], lock_dir=tmp_path, timeout=1) as lease:
            assert lease.device_id == 1
    finally:
        done.set()
        proc.join(10)
    with DeviceLease.acquire([0, 1], lock_dir=tmp_path, timeout=1) as lease:
        assert lease.device_id == 0  # the lease died with its process


def test_lease_needs_devices(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no device"):
        DeviceLease.acquire([], lock_dir=tmp_path)
