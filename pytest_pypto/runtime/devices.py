"""NPU discovery, device ranges, device leases and the onboard-runtime lookup.

Stdlib only: the plugin reads these while collecting, before (and often without)
loading the toolchain.

- NPUs are the device nodes ``/dev/davinci<N>``.  The directory is injectable
  (``dev_root=`` or the ``PYPTO_DEV_ROOT`` environment variable) so tests can fake
  ``davinci0..7`` files in a temporary directory.
- ``ASCEND_RT_VISIBLE_DEVICES`` narrows them (like ``CUDA_VISIBLE_DEVICES``: set but
  empty hides every device).  Device ids here are the ``/dev/davinci<N>`` numbers;
  ``--pypto-device`` narrows further in the same numbering.
- A lease is an exclusive ``fcntl`` lock on ``<lock dir>/davinci<N>.lock``: every
  process of the user on the host (xdist workers, parallel pytest runs) sees it, and it
  dies with its process.  The lock dir is ``$PYPTO_LOCK_DIR`` or, by default, the
  per-user ``<tmp>/pytest-pypto-devices-<uid>`` (mode 0700, its owner checked; loosened
  modes are tightened again): one shared dir let the first user lock everyone else out,
  and let others plant lock files.  Users do not see each other's leases (nor could they
  share locks safely).  A lock file is opened without following a symbolic link and
  never truncated; one that is not this user's regular, singly linked file is refused.
  Every such problem is a `DeviceLockError` naming the path.
- An onboard runtime is an available runtime of the registry
  (`pytest_pypto.runtime.registry`, entry-point group ``pytest_pypto.runtimes``)
  serving an onboard platform; the bundled ones (``sim``, ``isolated``) only simulate.
  Looking them up imports them, so it happens only when onboard cells are requested.
"""

from __future__ import annotations

import contextlib
import os
import re
import stat
import tempfile
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from pytest_pypto.arch import ONBOARD_PLATFORMS
from pytest_pypto.runtime.registry import default_registry

DEV_ROOT_ENV = "PYPTO_DEV_ROOT"
VISIBLE_ENV = "ASCEND_RT_VISIBLE_DEVICES"
LOCK_DIR_ENV = "PYPTO_LOCK_DIR"
RUNTIME_GROUP = "pytest_pypto.runtimes"

_NODE = re.compile(r"davinci(\d+)")
_ITEM = re.compile(r"\s*(\d+)\s*(?:-\s*(\d+)\s*)?")

__all__ = [
    "DEV_ROOT_ENV",
    "LOCK_DIR_ENV",
    "RUNTIME_GROUP",
    "VISIBLE_ENV",
    "DeviceLease",
    "DeviceLockError",
    "OnboardStatus",
    "RuntimeCensus",
    "discover_npus",
    "format_device_list",
    "onboard_runtimes",
    "onboard_status",
    "parse_device_list",
]


def parse_device_list(text: str) -> tuple[int, ...]:
    """Parse ``0``, ``0-7``, ``0,2,5`` or a mix into sorted unique ids.

    ValueError says which part is wrong, so the option error can quote it.
    """
    ids: set[int] = set()
    parts = str(text).split(",")
    for part in parts:
        match = _ITEM.fullmatch(part)
        if not match:
            raise ValueError(
                f"{part.strip()!r} is not a device id or range; use e.g. 0, 0-7, 0,2,5"
            )
        lo = int(match.group(1))
        hi = int(match.group(2)) if match.group(2) is not None else lo
        if hi < lo:
            raise ValueError(f"range {part.strip()!r} is empty (end before start)")
        ids.update(range(lo, hi + 1))
    return tuple(sorted(ids))


def format_device_list(ids: Iterable[int]) -> str:
    """Compact form of a device list for headers and skip reasons: ``0-3,5``."""
    ids = sorted(set(ids))
    runs: list[str] = []
    i = 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        runs.append(str(ids[i]) if i == j else f"{ids[i]}-{ids[j]}")
        i = j + 1
    return ",".join(runs)


def _dev_root(dev_root: str | os.PathLike[str] | None, env: Mapping[str, str]) -> Path:
    if dev_root is not None:
        return Path(dev_root)
    return Path(env.get(DEV_ROOT_ENV) or "/dev")


def discover_npus(
    dev_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    requested: Sequence[int] | None = None,
) -> tuple[int, ...]:
    """Ids of the NPUs this process may use.

    The ``davinci<N>`` nodes under ``dev_root`` (default ``$PYPTO_DEV_ROOT`` or
    ``/dev``), narrowed by ``ASCEND_RT_VISIBLE_DEVICES`` and by ``requested``
    (``--pypto-device``; None = all).  A malformed visibility variable hides nothing
    rather than guessing.
    """
    env = os.environ if env is None else env
    try:
        names = os.listdir(_dev_root(dev_root, env))
    except OSError:
        return ()
    found = {int(m.group(1)) for name in names if (m := _NODE.fullmatch(name))}
    visible = env.get(VISIBLE_ENV)
    if visible is not None:
        if not visible.strip():
            found = set()
        else:
            try:
                found &= set(parse_device_list(visible))
            except ValueError:
                pass
    if requested is not None:
        found &= set(requested)
    return tuple(sorted(found))


class RuntimeCensus(NamedTuple):
    """The installed runtimes as onboard cells see them."""

    serving: Mapping[str, tuple[str, ...]]  # onboard platform -> available runtimes
    broken: tuple[str, ...] = ()  # third-party runtimes that failed to load (may serve any)
    installed: str = ""  # "isolated, pypto (unavailable), sim" for messages


def onboard_runtimes() -> RuntimeCensus:
    """Which available runtimes serve each onboard platform (loads the runtimes)."""
    registry = default_registry()
    listing = ", ".join(
        i.name if i.status == "ok" else f"{i.name} ({i.status})" for i in registry.installed()
    )
    return RuntimeCensus(
        serving={p: tuple(registry.serving(p)) for p in ONBOARD_PLATFORMS},
        broken=tuple(i.name for i in registry.broken_third_party()),
        installed=listing,
    )


@dataclass(frozen=True)
class OnboardStatus:
    """What onboard cells have to work with on this host; computed once per session."""

    devices: tuple[int, ...]
    runtimes: tuple[str, ...]  # available runtimes serving some onboard platform
    dev_root: str
    visible_env: str | None
    requested: tuple[int, ...] | None
    serving: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    broken: tuple[str, ...] = ()
    installed: str = ""

    def missing(self, platform: str | None = None) -> str | None:
        """Why onboard cells (of ``platform``; None: of any) cannot run here (None when
        they can).  A broken third-party runtime is not "missing": the cells run and
        fail, naming it, rather than skip it silently."""
        reasons = []
        if not self.devices:
            where = f"no {self.dev_root}/davinci<N> device node"
            if self.visible_env is not None:
                where += f" with {VISIBLE_ENV}={self.visible_env!r}"
            if self.requested is not None:
                where += f" in --pypto-device {format_device_list(self.requested)}"
            reasons.append(f"no NPU visible ({where})")
        serving = self.serving.get(platform, ()) if platform is not None else self.runtimes
        if not serving and not self.broken:
            which = f" serving {platform}" if platform is not None else ""
            installed = f"; installed: {self.installed}" if self.installed else ""
            reasons.append(
                f"no onboard runtime{which} (no available runtime of entry-point group "
                f"{RUNTIME_GROUP!r} serves it{installed})"
            )
        return "; ".join(reasons) or None


def onboard_status(
    requested: Sequence[int] | None = None,
    dev_root: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
) -> OnboardStatus:
    """Discover NPUs and onboard runtimes in one go (for skips and the report header)."""
    env = os.environ if env is None else env
    census = onboard_runtimes()
    return OnboardStatus(
        devices=discover_npus(dev_root, env, requested),
        runtimes=tuple(sorted({n for names in census.serving.values() for n in names})),
        serving=dict(census.serving),
        broken=census.broken,
        installed=census.installed,
        dev_root=str(_dev_root(dev_root, env)),
        visible_env=env.get(VISIBLE_ENV),
        requested=tuple(requested) if requested is not None else None,
    )


class DeviceLockError(OSError):
    """The lease's lock directory or a lock file in it cannot be used (names the path)."""


def _uid() -> int:
    return os.geteuid()


def _default_lock_dir() -> Path:
    return Path(tempfile.gettempdir(), f"pytest-pypto-devices-{_uid()}")


def _lock_dir(lock_dir: str | os.PathLike[str] | None) -> Path:
    """The lock directory, created (and for the default per-user one, checked)."""
    given = lock_dir if lock_dir is not None else os.environ.get(LOCK_DIR_ENV)
    directory = Path(given) if given else _default_lock_dir()
    why = "it cannot be created"
    try:
        if given:
            directory.mkdir(mode=0o700, parents=True, exist_ok=True)
            return directory
        with contextlib.suppress(FileExistsError):
            directory.mkdir(mode=0o700)
        why = "it cannot be checked"
        info = directory.lstat()
        if stat.S_ISLNK(info.st_mode):
            why = "it is a symbolic link, not a directory of this user"
        elif not stat.S_ISDIR(info.st_mode):
            why = "it is not a directory"
        elif info.st_uid != _uid():
            why = f"it is owned by uid {info.st_uid}, not by this user (uid {_uid()})"
        else:
            if stat.S_IMODE(info.st_mode) & 0o077:
                why = "its mode cannot be made 0700"
                directory.chmod(0o700)
            return directory
        raise DeviceLockError(
            f"device lease: cannot use the lock directory {directory}: {why}; remove it, "
            f"or set {LOCK_DIR_ENV} to a directory of your own"
        )
    except DeviceLockError:
        raise
    except OSError as exc:
        raise DeviceLockError(
            f"device lease: cannot use the lock directory {directory}: {why} "
            f"({type(exc).__name__}: {exc.strerror or exc}); set {LOCK_DIR_ENV} to a "
            f"directory you can write"
        ) from exc


def user_lock_file(name: str) -> int:
    """An fd of ``name`` in this user's lock directory (the devices' one, checked the same
    way): for machine-wide locks of this user's sessions, e.g. `harness.admission`."""
    return _open_lock(_lock_dir(None) / name)


_OPEN = os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


def _open_lock(path: Path) -> int:
    """An fd of the lock file ``path`` (created 0600 when missing), never through a
    symbolic link; refused unless it is this user's regular file with one link."""
    try:
        try:
            fd = os.open(path, _OPEN | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            fd = os.open(path, _OPEN)
    except OSError as exc:
        why = f"{type(exc).__name__}: {exc.strerror or exc}"
        if path.is_symlink():
            why = "it is a symbolic link (not followed)"
        raise DeviceLockError(f"device lease: cannot use the lock file {path}: {why}") from exc
    info = os.fstat(fd)
    why = None
    if not stat.S_ISREG(info.st_mode):
        why = "it is not a regular file"
    elif info.st_uid != _uid():
        why = f"it is owned by uid {info.st_uid}, not by this user (uid {_uid()})"
    elif info.st_nlink != 1:
        why = f"it has {info.st_nlink} links (a hard link to another file)"
    if why is not None:
        os.close(fd)
        raise DeviceLockError(
            f"device lease: refusing the lock file {path}: {why}; remove it, or set "
            f"{LOCK_DIR_ENV} to a directory of your own"
        )
    return fd


class DeviceLease:
    """An exclusive, process-wide lease of one NPU, held until ``release()``.

    ``acquire`` tries every device without blocking, starting at ``start`` (so xdist
    workers spread out), and polls until one is free or ``timeout`` seconds pass.
    The lock is an ``fcntl.flock`` on a per-device file, so it vanishes if the
    holder dies.  Use as a context manager.
    """

    def __init__(self, device_id: int, fd: int) -> None:
        self.device_id = device_id
        self._fd: int | None = fd

    @classmethod
    def acquire(
        cls,
        devices: Sequence[int],
        *,
        start: int = 0,
        lock_dir: str | os.PathLike[str] | None = None,
        timeout: float | None = None,
        poll: float = 0.05,
    ) -> DeviceLease:
        """Lease one of ``devices``; TimeoutError names them when none frees up in time,
        `DeviceLockError` names a lock dir or file that cannot be used safely."""
        import fcntl  # lazy: POSIX-only, asked only by a device lease

        if not devices:
            raise ValueError("no device to lease")
        directory = _lock_dir(lock_dir)
        order = [devices[(start + k) % len(devices)] for k in range(len(devices))]
        deadline = None if timeout is None else time.monotonic() + timeout
        while True:
            for dev in order:
                fd = _open_lock(directory / f"davinci{dev}.lock")
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError:
                    os.close(fd)
                    continue
                os.pwrite(fd, f"{os.getpid():<10}\n".encode(), 0)  # fixed width: no truncate
                return cls(dev, fd)
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(
                    f"no device free among {format_device_list(devices)} after {timeout}s "
                    f"(locks in {directory})"
                )
            time.sleep(poll)

    def release(self) -> None:
        """Give the device back (idempotent)."""
        if self._fd is not None:
            import fcntl  # lazy: POSIX-only, asked only by a device lease

            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def __enter__(self) -> DeviceLease:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
