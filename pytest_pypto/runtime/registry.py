# SPDX-License-Identifier: Apache-2.0
"""The runtime registry: which `Runtime` executes a cell, found through entry points.

Every runtime, the bundled ones included, is an entry point in the group
``pytest_pypto.runtimes`` whose target is called with no arguments and returns a
`Runtime` (see `pytest_pypto.runtime.protocol`).  Discovery reads package metadata
only; a runtime's module is imported and the runtime constructed the first time a
session needs it (a cell dispatches, the report header lists versions), once per
process (xdist workers have their own), then checked with `protocol_problems`.

Status of an installed runtime:

* ``ok``: constructed and conforming;
* ``unavailable``: its constructor raised `RuntimeUnavailable` (it cannot work on
  this host, e.g. the PyPTO adapter without PyPTO); never chosen;
* ``broken``: importing or constructing it raised anything else, or it violates the
  protocol.  The reason is one paragraph, stated once per session (header and
  summary); each affected test fails with one line (`RuntimeSelectionError`).

Selection (`runtime_for`): the config's ``runtime`` when set (installed, available,
serving the platform, else a `DeviceFailure` naming the runtimes that serve it);
otherwise the in-process simulator ``sim`` where it serves the platform, then
third-party runtimes before bundled ones, by name.  Source checkouts without our
package metadata still find the bundled runtimes (`BUNDLED`).
"""

from __future__ import annotations

import atexit
import importlib
import threading
from collections.abc import Iterable
from typing import Any, NamedTuple

from pytest_pypto.runtime.protocol import DeviceFailure, RuntimeUnavailable, protocol_problems

__all__ = [
    "BUNDLED",
    "GROUP",
    "Registry",
    "RuntimeInfo",
    "RuntimeSelectionError",
    "close_all",
    "default_registry",
    "installed",
    "names",
    "refresh",
    "runtime_for",
]

GROUP = "pytest_pypto.runtimes"

# The runtimes this package ships (also declared in its pyproject.toml).
BUNDLED: dict[str, str] = {
    "sim": "pytest_pypto.runtime.simulator:SimRuntime",
    "isolated": "pytest_pypto.runtime.isolated:IsolatedRuntime",
    "pypto": "pytest_pypto.runtimes.pypto:PyptoRuntime",
}

# Chosen first wherever it serves the platform: the in-process simulator.
PREFERRED: tuple[str, ...] = ("sim",)

OK, UNAVAILABLE, BROKEN = "ok", "unavailable", "broken"


class RuntimeInfo(NamedTuple):
    """What the registry knows of one installed runtime (after loading it)."""

    name: str
    version: str  # "" when it could not be constructed
    platforms: tuple[str, ...]  # () unless ok
    status: str  # "ok", "unavailable" or "broken"
    reason: str = ""  # why unavailable or broken
    target: str = ""  # the entry point's "module:attr"
    bundled: bool = False

    def describe(self) -> str:
        """``sim 0.2.0 (a2a3sim, a5sim)`` / ``pypto unavailable (why)`` (report header)."""
        if self.status == OK:
            return f"{self.name} {self.version} ({', '.join(self.platforms)})"
        return f"{self.name} {self.status} ({self.reason})"


class RuntimeSelectionError(DeviceFailure):
    """No usable runtime for a cell (a device-error).  Its message is one line and a
    failing test reports only that line: the reason is the session's, not the test's."""

    one_line = True


class _Entry(NamedTuple):
    name: str
    target: str
    load: Any  # () -> the factory
    bundled: bool


def _metadata_entries() -> list[_Entry]:
    from importlib.metadata import entry_points  # lazy: costly, read once per session

    found: dict[str, _Entry] = {}
    for ep in entry_points(group=GROUP):
        if ep.name not in found:  # the first distribution on sys.path wins
            bundled = BUNDLED.get(ep.name) == ep.value
            found[ep.name] = _Entry(ep.name, ep.value, ep.load, bundled)
    for name, target in BUNDLED.items():  # a source checkout without our metadata
        if name not in found:
            found[name] = _Entry(name, target, _importer(target), True)
    return list(found.values())


def _importer(target: str) -> Any:
    def load() -> Any:
        module, _, attr = target.partition(":")
        obj = importlib.import_module(module)
        for part in attr.split(".") if attr else ():
            obj = getattr(obj, part)
        return obj

    return load


def _entry_of(ep: Any) -> _Entry:
    """An entry from an `importlib.metadata.EntryPoint`-like object (tests pass their own)."""
    value = getattr(ep, "value", "")
    return _Entry(ep.name, value, ep.load, BUNDLED.get(ep.name) == value)


class Registry:
    """Installed runtimes, loaded on demand and kept for the process.

    ``entry_points``: objects with ``name``, ``value`` and ``load()`` (like
    `importlib.metadata.EntryPoint`) to use instead of the installed ones.
    """

    def __init__(self, entry_points: Iterable[Any] | None = None) -> None:
        self._given = None if entry_points is None else [_entry_of(ep) for ep in entry_points]
        self._entries: dict[str, _Entry] | None = None
        self._loaded: dict[str, tuple[RuntimeInfo, Any]] = {}
        self._chosen: dict[tuple[str, str | None], Any] = {}  # (platform, name) -> runtime
        self._lock = threading.RLock()

    # ---------------------------------------------------------------- discovery
    def _all(self) -> dict[str, _Entry]:
        if self._entries is None:
            entries = self._given if self._given is not None else _metadata_entries()
            self._entries = {e.name: e for e in entries}
        return self._entries

    def names(self) -> tuple[str, ...]:
        """Installed runtime names, sorted (metadata only: nothing is imported)."""
        return tuple(sorted(self._all()))

    def is_bundled(self, name: str) -> bool:
        entry = self._all().get(name)
        return entry is not None and entry.bundled

    # ---------------------------------------------------------------- loading
    def info(self, name: str) -> RuntimeInfo:
        """The runtime's status, loading it on first use (KeyError: not installed)."""
        return self._load(name)[0]

    def installed(self) -> list[RuntimeInfo]:
        """Every installed runtime with its status, sorted by name (loads them all)."""
        return [self.info(name) for name in self.names()]

    def loaded_infos(self) -> list[RuntimeInfo]:
        """The runtimes loaded so far (nothing is imported), sorted by name."""
        with self._lock:
            return [info for _, (info, _) in sorted(self._loaded.items())]

    def _load(self, name: str) -> tuple[RuntimeInfo, Any]:
        with self._lock:
            done = self._loaded.get(name)
            if done is None:
                entry = self._all()[name]
                done = self._loaded[name] = _construct(entry)
                if done[1] is not None:
                    _register_atexit()
            return done

    def get(self, name: str) -> Any:
        """The constructed runtime ``name`` (RuntimeSelectionError if unusable)."""
        if name not in self._all():
            raise RuntimeSelectionError(
                f"runtime '{name}' is not installed; installed: {self._listing()}",
                runtime=name,
            )
        info, runtime = self._load(name)
        if runtime is None:
            raise RuntimeSelectionError(
                f"runtime '{name}' is {info.status}: {info.reason}", runtime=name
            )
        return runtime

    # ---------------------------------------------------------------- selection
    def serving(self, platform: str) -> list[str]:
        """Available runtimes serving ``platform``, in the order the default picks them."""
        ok = [i for i in self.installed() if i.status == OK and platform in i.platforms]
        return [i.name for i in sorted(ok, key=self._preference)]

    def _preference(self, info: RuntimeInfo) -> tuple[int, bool, str]:
        rank = PREFERRED.index(info.name) if info.name in PREFERRED else len(PREFERRED)
        return (rank, info.bundled, info.name)

    def broken_third_party(self) -> list[RuntimeInfo]:
        """Broken runtimes not shipped by this package (they may serve any platform)."""
        return [i for i in self.installed() if i.status == BROKEN and not i.bundled]

    def runtime_for(self, config: Any) -> Any:
        """The runtime that executes ``config``'s cell (module docstring); a choice is
        remembered until `close_all` (it is on every dispatch's path)."""
        platform = config.platform
        name = getattr(config, "runtime", None) or None
        chosen = self._chosen.get((platform, name))
        if chosen is None:
            chosen = self._chosen[(platform, name)] = self._choose(platform, name)
        return chosen

    def _choose(self, platform: str, name: str | None) -> Any:
        if name:
            if name not in self._all():
                raise RuntimeSelectionError(
                    f"runtime '{name}' (RunConfig.runtime / --pypto-runtime) is not "
                    f"installed; runtimes serving {platform}: {self._serving_text(platform)}",
                    runtime=name,
                )
            info, runtime = self._load(name)
            if runtime is None:
                raise RuntimeSelectionError(
                    f"runtime '{name}' is {info.status} ({info.reason}); runtimes serving "
                    f"{platform}: {self._serving_text(platform)}",
                    runtime=name,
                )
            if platform not in info.platforms:
                raise RuntimeSelectionError(
                    f"runtime '{name}' serves {', '.join(info.platforms)}, not {platform}; "
                    f"runtimes serving {platform}: {self._serving_text(platform)}",
                    runtime=name,
                )
            return runtime
        candidates = self.serving(platform)
        if candidates:
            return self._load(candidates[0])[1]
        broken = self.broken_third_party()
        if broken:
            first = broken[0]
            raise RuntimeSelectionError(
                f"no available runtime serves {platform}: runtime '{first.name}' is broken "
                f"(the report header and summary say why)",
                runtime=first.name,
            )
        raise RuntimeSelectionError(
            f"no available runtime serves {platform} (it needs an Ascend NPU and an onboard "
            f"runtime: an entry point in group '{GROUP}'); installed: {self._listing()}",
            runtime="",
            hint="compile only (RunConfig(codegen_only=True)), or run on a sim platform",
        )

    def _serving_text(self, platform: str) -> str:
        return ", ".join(self.serving(platform)) or "none"

    def _listing(self) -> str:
        return "; ".join(i.describe() for i in self.installed()) or "none"

    # ---------------------------------------------------------------- lifetime
    def close_all(self) -> None:
        """Close every constructed runtime and forget them (and the discovery), so the
        next use constructs afresh; safe to call more than once."""
        with self._lock:
            loaded, self._loaded = self._loaded, {}
            self._entries = None
            self._chosen = {}
        for _, runtime in loaded.values():
            if runtime is not None:
                try:
                    runtime.close()
                except Exception:  # noqa: BLE001  (closing the others matters more)
                    pass


def _construct(entry: _Entry) -> tuple[RuntimeInfo, Any]:
    """Import and construct one runtime; never raises (the status says what went wrong)."""

    def failed(status: str, reason: str, version: str = "") -> tuple[RuntimeInfo, Any]:
        info = RuntimeInfo(entry.name, version, (), status, reason, entry.target, entry.bundled)
        return info, None

    try:
        factory = entry.load()
    except Exception as exc:  # noqa: BLE001  (an ImportError, or the module's own error)
        return failed(BROKEN, f"cannot import {entry.target}: {_describe(exc)}")
    try:
        runtime = factory()
    except RuntimeUnavailable as exc:
        return failed(UNAVAILABLE, str(exc) or "its constructor says it cannot work here")
    except Exception as exc:  # noqa: BLE001
        return failed(BROKEN, f"{entry.target}() raised {_describe(exc)}")
    problems = protocol_problems(runtime)
    name = getattr(runtime, "name", None)
    if isinstance(name, str) and name != entry.name:
        problems.append(f"its name {name!r} differs from its entry point {entry.name!r}")
    version = getattr(runtime, "version", "")
    version = version if isinstance(version, str) else ""
    if problems:
        try:
            runtime.close()
        except Exception:  # noqa: BLE001
            pass
        return failed(
            BROKEN,
            f"{entry.target} does not implement the Runtime protocol: {'; '.join(problems)}",
            version,
        )
    info = RuntimeInfo(
        entry.name, version, tuple(runtime.platforms), OK, "", entry.target, entry.bundled
    )
    return info, runtime


def _describe(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {_first_line(str(exc))}" if str(exc) else type(exc).__name__


def _first_line(text: str) -> str:
    return text.strip().splitlines()[0] if text.strip() else text


# -------------------------------------------------------------------- the process's
_default: Registry | None = None
_atexit_registered = False


def default_registry() -> Registry:
    """This process's registry of the installed runtimes."""
    global _default
    if _default is None:
        _default = Registry()
    return _default


def _register_atexit() -> None:
    global _atexit_registered
    if not _atexit_registered:
        _atexit_registered = True
        atexit.register(close_all)


def names() -> tuple[str, ...]:
    """Installed runtime names (metadata only)."""
    return default_registry().names()


def installed() -> list[RuntimeInfo]:
    """Every installed runtime and its status (loads them)."""
    return default_registry().installed()


def runtime_for(config: Any) -> Any:
    """The runtime executing ``config``'s cell (`Registry.runtime_for`)."""
    return default_registry().runtime_for(config)


def close_all() -> None:
    """Close the process's runtimes (session end, and at exit)."""
    if _default is not None:
        _default.close_all()


def refresh() -> None:
    """Close the runtimes and re-read the installed entry points (a new session)."""
    close_all()
