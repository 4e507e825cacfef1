# SPDX-License-Identifier: Apache-2.0
"""The path options (``--pypto-kernels-dir``, ``--pypto-cache-dir``) checked at configure.

A path that can never work is one `pytest.UsageError` naming the option, the value,
where it came from and why (exit status 4), instead of an INTERNALERROR from the
first test that writes there.  The rules:

- a file at the path, or a file where one of its parent directories should be, is
  always an error (for both options, whatever else is set);
- ``--pypto-kernels-dir``: when the run writes there for every test
  (``--pypto-save-kernels``, ``--pypto-dump-passes``, ``--pypto-trace``) it is created
  and probed now, and a directory that cannot be created or written is an error;
  otherwise only failing tests write there, so it is probed and removed again (a
  passing run leaves no directory behind) and one that cannot be created or written
  is a warning: failing tests then keep no artifacts (`keeping_off`);
- an explicit ``--pypto-cache-dir`` (unless ``--pypto-no-cache``) is created and probed
  now; one that cannot be written is an error.  The default cache location (pytest's
  cache dir) that cannot be written stays a warning: the cache is then off.
- a cache dir other users can write (`insecure_dir`: its mode lets group or others
  write, or another user owns it, or a directory above it lets others write without
  the sticky bit) would run an entry planted there as this user: like pip, the session
  warns once and runs without the cache (plugin/cache.py), explicit or default.

Relative paths are taken from the rootdir.  Also here: where a test keeps its
artifacts (`keep_dir_for`).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest

from pytest_pypto.plugin.keys import KEEP_OFF_KEY
from pytest_pypto.plugin.options import resolved, settings, source_of

__all__ = [
    "check_paths",
    "insecure_dir",
    "keep_dir_for",
    "keeping_off",
    "kept_name",
    "probe_writable",
    "rooted",
    "writes_kernels_dir",
]


def rooted(config: pytest.Config, raw: str) -> Path:
    """``raw`` as an absolute path (``~`` expanded; relative: from the rootdir)."""
    path = Path(raw).expanduser()
    return path if path.is_absolute() else config.rootpath / path


def writes_kernels_dir(settings: Any) -> bool:
    """Whether every test writes its artifact under the kernels dir (not only failures)."""
    return bool(settings.save_kernels or settings.dump_passes or settings.trace)


def keeping_off(config: pytest.Config) -> str | None:
    """Why failing tests keep no artifacts in this session (None: they do)."""
    return config.stash.get(KEEP_OFF_KEY, None)


def _file_in_the_way(path: Path) -> str | None:
    """Why ``path`` can never be a directory (a file at it or above it), else None."""
    if path.exists() and not path.is_dir():
        return f"{path} is a file, not a directory"
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                return f"{parent} is a file, so no directory can be created under it"
            return None
    return None


def _not_creatable(path: Path) -> str | None:
    """Why ``path`` could not be created and written; leaves nothing behind (the
    directories it creates to find out are removed again: a passing run creates none)."""
    missing = [p for p in (path, *path.parents) if not p.exists()]
    try:
        why = _probe(path)
    finally:
        for directory in missing:  # deepest first
            with contextlib.suppress(OSError):
                directory.rmdir()
    return why


def probe_writable(root: Path) -> str | None:
    """None when ``root`` can be created and written (a probe file, removed again),
    else why not."""
    try:
        root.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=root, prefix=".probe-")
        os.close(fd)
        os.unlink(name)
    except OSError as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def _probe(path: Path) -> str | None:
    """Create ``path`` and a file in it (removed again); why that failed, else None."""
    why = probe_writable(path)
    return None if why is None else f"it cannot be created or written ({why})"


def _usage_error(config: pytest.Config, name: str, raw: str, why: str) -> pytest.UsageError:
    return pytest.UsageError(
        f"--pypto-{name}: cannot use {raw!r} (from {source_of(config, name)}): {why}. "
        f"Give a directory that can be created and written (relative paths are taken "
        f"from the rootdir {config.rootpath})."
    )


def check_paths(config: pytest.Config, settings: Any, *, strict: bool = True) -> list[str]:
    """Check the path options (module docstring): raise the usage error, or return the
    warnings to show.  ``strict`` False (an xdist worker: the controller has checked)
    only decides `keeping_off`, never raises."""
    warnings = []
    raw = settings.kernels_dir
    kernels = rooted(config, raw)
    why = _file_in_the_way(kernels)
    if why is None and writes_kernels_dir(settings):
        why = _probe(kernels) if strict else None
    if why is not None:
        if strict:
            raise _usage_error(config, "kernels-dir", raw, why)
        config.stash[KEEP_OFF_KEY] = why
    elif not writes_kernels_dir(settings):
        why = _not_creatable(kernels)
        if why is not None:
            config.stash[KEEP_OFF_KEY] = why
            warnings.append(
                f"--pypto-kernels-dir {raw!r}: {why}; failing tests will keep no artifacts"
            )
    if settings.cache_dir is not None and strict:
        cache = rooted(config, settings.cache_dir)
        why = _file_in_the_way(cache)
        if why is None and not settings.no_cache:
            why = _probe(cache)
        if why is not None:
            raise _usage_error(config, "cache-dir", settings.cache_dir, why)
    return warnings


def _uid() -> int:
    return os.geteuid()


def _others_write(info: os.stat_result) -> bool:
    """Whether a directory's mode lets other users write it (group write counts, unless
    the group is this user's own private group, as ``umask 002`` systems make them)."""
    mode = stat.S_IMODE(info.st_mode)
    if mode & stat.S_IWOTH:
        return True
    if not mode & stat.S_IWGRP:
        return False
    import grp  # lazy: POSIX-only, asked only for a group-writable cache dir
    import pwd  # lazy: as above

    try:
        user = pwd.getpwuid(_uid()).pw_name
        group = grp.getgrgid(info.st_gid)
    except KeyError:
        return True
    return not (group.gr_name == user and set(group.gr_mem) <= {user})


def insecure_dir(path: Path) -> str | None:
    """Why users other than this one (and root) could plant files in the directory
    ``path``, or None when they cannot (module docstring)."""
    try:
        info = path.stat()
        above = [(p, p.stat()) for p in path.resolve().parents]
    except OSError as exc:
        return f"{path} cannot be checked ({type(exc).__name__}: {exc})"
    why = None
    if info.st_uid not in (_uid(), 0):
        why = f"owned by uid {info.st_uid}, not by uid {_uid()}"
    elif _others_write(info):
        why = f"mode {stat.S_IMODE(info.st_mode):04o}"
    else:
        for parent, pinfo in above:
            if _others_write(pinfo) and not pinfo.st_mode & stat.S_ISVTX:
                why = (f"the directory {parent} above it has mode "
                       f"{stat.S_IMODE(pinfo.st_mode):04o} and no sticky bit, so they can "
                       f"replace it")
                break
    return None if why is None else f"{path} is writable by other users ({why})"


def kept_name(nodeid: str) -> str:
    """The directory name a test keeps its artifacts under: the node id with every run of
    characters other than letters, digits, ``_``, ``.`` and ``-`` as one ``_`` (at most
    100 of them), then ``-`` and the first 8 hex digits of the SHA-256 of the exact node
    id.  The readable part alone is not one-to-one (``[a b]``, ``[a_b]`` and ``[a/b]`` all
    read ``a_b``): the hash keeps distinct tests apart, and a rerun in the same place."""
    name = re.sub(r"[^\w.\-]+", "_", nodeid).strip("_")[:100] or "test"
    return f"{name}-{hashlib.sha256(nodeid.encode()).hexdigest()[:8]}"


def keep_dir_for(config: pytest.Config, nodeid: str) -> Path:
    """Where this test's artifacts are kept: ``<kernels dir>/<kept_name(node id)>``."""
    return rooted(config, settings(config).kernels_dir) / kept_name(nodeid)


def pytest_configure(config: pytest.Config) -> None:
    """A kernels/cache dir that can never work: one usage error now (module docstring)."""
    if not resolved(config):
        return
    controller = not hasattr(config, "workerinput")
    for message in check_paths(config, settings(config), strict=controller):
        if controller:
            config.issue_config_time_warning(pytest.PytestConfigWarning(message), stacklevel=2)
