"""Device lease lock files and their directory are safe on a shared host (issue 26 items
6 and 8; runtime/devices.py).

Item 6: a symlink (or hard link) planted as ``davinci<N>.lock`` made the lease open and
truncate its target; a lock file of another user was used as is.  Item 8: the default
lock dir ``<tmp>/pytest-pypto-devices`` was created 0755 by the first user, and every
other user's lease then failed with a raw PermissionError.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from pytest_pypto.runtime import devices
from pytest_pypto.runtime.devices import DeviceLease, DeviceLockError


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A file of this user that a hostile lock dir points at."""
    path = tmp_path / "precious.txt"
    path.write_text("precious data\n")
    return path


def test_a_symlinked_lock_file_is_refused_and_its_target_untouched(
    tmp_path: Path, victim: Path
) -> None:
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "davinci0.lock").symlink_to(victim)
    with pytest.raises(DeviceLockError, match="symbolic link") as err:
        DeviceLease.acquire([0], lock_dir=locks, timeout=0)
    assert str(locks / "davinci0.lock") in str(err.value)
    assert victim.read_text() == "precious data\n"
    # A dangling link is not followed either (O_CREAT would create its target).
    (locks / "davinci1.lock").symlink_to(tmp_path / "created-by-the-lease")
    with pytest.raises(DeviceLockError, match="symbolic link"):
        DeviceLease.acquire([1], lock_dir=locks, timeout=0)
    assert not (tmp_path / "created-by-the-lease").exists()


def test_a_hard_linked_lock_file_is_refused(tmp_path: Path, victim: Path) -> None:
    locks = tmp_path / "locks"
    locks.mkdir()
    os.link(victim, locks / "davinci0.lock")
    with pytest.raises(DeviceLockError, match="2 links") as err:
        DeviceLease.acquire([0], lock_dir=locks, timeout=0)
    assert str(locks / "davinci0.lock") in str(err.value)
    assert victim.read_text() == "precious data\n"


def test_a_lock_file_of_another_user_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locks = tmp_path / "locks"
    locks.mkdir()
    (locks / "davinci0.lock").write_text("4242\n")
    monkeypatch.setattr(devices, "_uid", lambda: os.geteuid() + 1)  # we are someone else
    with pytest.raises(DeviceLockError, match="owned by uid") as err:
        DeviceLease.acquire([0], lock_dir=locks, timeout=0)
    assert str(locks / "davinci0.lock") in str(err.value)


def test_a_lease_never_truncates_and_records_its_pid(tmp_path: Path) -> None:
    locks = tmp_path / "locks"
    with DeviceLease.acquire([0], lock_dir=locks) as lease:
        assert lease.device_id == 0
        lock = locks / "davinci0.lock"
        assert lock.read_text().split() == [str(os.getpid())]
        assert stat.S_IMODE(lock.stat().st_mode) == 0o600
    with DeviceLease.acquire([0], lock_dir=locks) as again:  # the file is reused
        assert again.device_id == 0
        assert lock.read_text().split() == [str(os.getpid())]


@pytest.fixture
def default_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The default lock dir's temp dir, with no $PYPTO_LOCK_DIR."""
    monkeypatch.delenv("PYPTO_LOCK_DIR", raising=False)
    root = tmp_path / "tmp"
    root.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    return root


def test_the_default_lock_dir_is_per_user_and_private(default_tmp: Path) -> None:
    shared = default_tmp / "pytest-pypto-devices"
    shared.mkdir(mode=0o755)  # what another user's older version left behind
    with DeviceLease.acquire([3]) as lease:
        assert lease.device_id == 3
    mine = default_tmp / f"pytest-pypto-devices-{os.geteuid()}"
    assert (mine / "davinci3.lock").is_file()
    assert stat.S_IMODE(mine.stat().st_mode) == 0o700
    assert not list(shared.iterdir())
    mine.chmod(0o777)  # loosened since: made private again before use
    with DeviceLease.acquire([3]):
        assert stat.S_IMODE(mine.stat().st_mode) == 0o700


def test_a_default_lock_dir_of_another_user_is_a_clear_error(
    default_tmp: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = os.geteuid() + 1
    monkeypatch.setattr(devices, "_uid", lambda: other)
    theirs = default_tmp / f"pytest-pypto-devices-{other}"
    theirs.mkdir(mode=0o700)  # made by the real user: not owned by "us"
    with pytest.raises(DeviceLockError, match="owned by uid") as err:
        DeviceLease.acquire([0], timeout=0)
    assert str(theirs) in str(err.value)
    assert "PYPTO_LOCK_DIR" in str(err.value)


def test_a_symlinked_default_lock_dir_is_refused(default_tmp: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir(mode=0o700)
    (default_tmp / f"pytest-pypto-devices-{os.geteuid()}").symlink_to(elsewhere)
    with pytest.raises(DeviceLockError, match="symbolic link"):
        DeviceLease.acquire([0], timeout=0)
    assert not list(elsewhere.iterdir())


def test_a_lock_dir_that_cannot_be_made_is_a_clear_error(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("in the way\n")
    locks = tmp_path / "afile" / "locks"
    with pytest.raises(DeviceLockError) as err:
        DeviceLease.acquire([0], lock_dir=locks, timeout=0)
    message = str(err.value)
    assert message.startswith(f"device lease: cannot use the lock directory {locks}"), message
    assert "NotADirectoryError" in message or "FileExistsError" in message, message

