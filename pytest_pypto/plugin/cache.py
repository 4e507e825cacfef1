"""The compile cache of a session: where it is, the warning when it is off, and the
summary line of hits, misses and damaged entries rebuilt (xdist workers ship their
counts; the controller sums them).  Each session also says its first failure to save
kernels afresh (harness/compiling.py).

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from pytest_pypto.plugin import workers
from pytest_pypto.plugin.keys import CACHE_KEY, CACHE_OUTPUT, CACHE_REMOTE_KEY
from pytest_pypto.plugin.options import resolved, settings
from pytest_pypto.plugin.paths import insecure_dir, probe_writable, rooted

__all__ = ["cache_summary", "cache_where", "compile_cache"]

_INSECURE = pytest.StashKey[bool]()  # the cache dir was bypassed: other users can write it


def compile_cache(config: pytest.Config) -> Any:
    """This process's `CompileCache` (root probed once; unwritable, or writable by other
    users (`insecure_dir`): no cache, with why)."""
    cache = config.stash.get(CACHE_KEY, None)
    if cache is not None:
        return cache
    from pytest_pypto.harness.cache import CompileCache  # lazy: plugin import cost

    s = settings(config)
    root = None
    why = None
    if s.no_cache:
        pass
    elif s.cache_dir is not None:
        root = rooted(config, s.cache_dir)
    elif getattr(config, "cache", None) is not None:
        try:
            root = config.cache.mkdir("pypto-compile")
        except OSError as exc:
            why = f"{type(exc).__name__}: {exc}"
            cachedir = getattr(config.cache, "_cachedir", None)  # named in the warning
            root = rooted(config, str(cachedir)) / "d" / "pypto-compile" if cachedir else None
    cache = CompileCache(root)
    if root is not None and why is None:
        why = probe_writable(root)
        if why is None and (why := insecure_dir(root)) is not None:
            config.stash[_INSECURE] = True
    if why is not None:
        cache.disable(why)
    config.stash[CACHE_KEY] = cache
    return cache


def _off(config: pytest.Config, cache: Any) -> str:
    """Why the cache with a root is off, in a few words."""
    insecure = config.stash.get(_INSECURE, False)
    return f"{cache.root} is {'writable by other users' if insecure else 'not writable'}"


def cache_where(config: pytest.Config) -> str:
    """Which compile cache this process used (its directory, or "off ..." and why)."""
    cache = compile_cache(config)
    if cache.root is None:
        return "off (--pypto-no-cache)" if settings(config).no_cache else "off"
    if cache.disabled_reason is not None:
        return f"off: {_off(config, cache)}"
    return str(cache.root)


def cache_summary(
    config: pytest.Config,
    hits: int,
    misses: int,
    damaged: int = 0,
    places: Mapping[str, Sequence[str]] | None = None,
) -> str:
    """The terminal summary's line about the compile cache (``damaged``: entries found
    damaged (rebuilt, or bypassed when unmovable), each also a miss; ``places``: `cache_where` -> the xdist
    workers that used it, named when any is not this process's cache, as with
    ``-d --tx popen//chdir=DIR``)."""
    where = cache_where(config)
    if places and set(places) != {where}:
        where = "; ".join(f"{w} on {', '.join(ids)}" for w, ids in places.items())
    rebuilt = ""
    if damaged:
        rebuilt = f", {damaged} damaged {'entry' if damaged == 1 else 'entries'} rebuilt or bypassed"
    return f"pypto compile cache: {hits} hits, {misses} misses{rebuilt} ({where})"


def header_line(config: pytest.Config) -> str:
    """The report header's line naming the cache directory (or why it is off)."""
    cache = compile_cache(config)
    if cache.root is None:
        where = "off"
    elif cache.disabled_reason is not None:
        where = f"off ({_off(config, cache)})"
    else:
        where = str(cache.root)
    return f"pytest-pypto compile cache: {where}"


def _collect(config: pytest.Config) -> dict[str, Any]:
    cache = compile_cache(config)
    return {"counts": [cache.hits, cache.misses, cache.damaged], "where": cache_where(config)}


def _fold(config: pytest.Config, worker: str, payload: dict[str, Any]) -> None:
    remote = config.stash.setdefault(CACHE_REMOTE_KEY, {"counts": [0, 0, 0], "places": {}})
    hits, misses, damaged = payload["counts"]
    remote["counts"] = [a + b for a, b in zip(remote["counts"], (hits, misses, damaged))]
    if hits or misses:
        remote["places"].setdefault(payload["where"], []).append(worker)


workers.route(workers.Traffic(CACHE_OUTPUT, _collect, _fold))


def pytest_configure(config: pytest.Config) -> None:
    if not resolved(config):
        return
    from pytest_pypto.harness import compiling  # lazy: plugin import cost

    compiling.save_failures.clear()  # a session says its first failure to save kernels
    if workers.is_worker(config):
        return  # workers find the same and stay quiet
    cache = compile_cache(config)
    if config.stash.get(_INSECURE, False):
        message = (
            f"pypto compile cache turned off: {cache.disabled_reason}: an entry planted "
            f"there would run as you, so every kernel compiles afresh; make it private "
            f"(chmod go-w, owned by you) or give another --pypto-cache-dir"
        )
    elif cache.disabled_reason is not None:
        message = (
            f"pypto compile cache turned off: {cache.root} is not writable "
            f"({cache.disabled_reason}); every kernel compiles afresh"
        )
    else:
        return
    config.issue_config_time_warning(pytest.PytestConfigWarning(message), stacklevel=2)


def pytest_report_header(config: pytest.Config) -> list[str]:
    return [header_line(config)]


def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    cache = compile_cache(config)
    remote = config.stash.get(CACHE_REMOTE_KEY, {"counts": [0, 0, 0], "places": {}})
    hits, misses, damaged = (a + b for a, b in zip(
        remote["counts"], (cache.hits, cache.misses, cache.damaged)))
    places = {where: list(ids) for where, ids in remote["places"].items()}
    if places and (cache.hits or cache.misses):
        places.setdefault(cache_where(config), []).append("the controller")
    if hits or misses:
        terminalreporter.write_line(cache_summary(config, hits, misses, damaged, places))
