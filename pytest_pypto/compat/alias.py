"""Zero-edit mode (``--pypto-alias``): ``import pypto...`` resolves to the compat surface.

A PyPTO test file keeps ``import pypto.language as pl`` and gets
``pytest_pypto.compat.pypto.language`` -- the *same* module object, registered in
``sys.modules`` under the ``pypto...`` name as well, so identity checks and
``isinstance`` across the two spellings hold.  The finder is importlib's own
machinery (a `MetaPathFinder` whose loader hands back the existing module), not a
``sys.modules`` pre-fill, so only what a test imports is loaded.

A real PyPTO always wins: `configure` installs nothing when ``pypto`` is importable,
and the finder defers to any other finder that can load a top-level ``pypto``
(e.g. one that only appears on ``sys.path`` at collection).  A bare directory
named ``pypto`` (a namespace package) is not an installation and does not count.

The plugin loads this module by name when ``--pypto-alias`` is on (a plugin of its
own: `pytest_report_header` adds the alias's header line) and calls `configure`.
Outside pytest, ``PYPTO_ALIAS=1`` installs the same finder in any Python process: the
``.pth`` file the package installs (pytest_pypto/compat/alias.pth, copied to
site-packages by setup.py) reads the variable at start-up and, only when it is on,
calls `install_from_env`; ``python -m pytest_pypto run script.py`` calls `install`
itself (docs/design/plugin.md §17).  Cheap to import (stdlib only; pytest is imported
by the pytest-facing functions, which only a session calls); a compat module loads
when a ``pypto`` import asks for it.  (PYTEST_DONT_REWRITE: a plugin module without
asserts; the unit tests import it before a session loads it.)
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import pytest

__all__ = [
    "ENV_SWITCH",
    "active",
    "configure",
    "header_lines",
    "install",
    "install_backend",
    "install_from_env",
    "real_pypto",
    "uninstall",
    "uninstall_backend",
]

ALIAS = "pypto"
TARGET = "pytest_pypto.compat.pypto"
# PyPTO's runtime backend package: aliased along with pypto, and by the compat plugin on
# its own (`install_backend`), each only when no real one is importable.
BACKEND = "simpler"
BACKEND_TARGET = "pytest_pypto.compat.simpler"
# Its tools package (the dump viewer), aliased the same way.
TOOLS = "simpler_setup"
TOOLS_TARGET = "pytest_pypto.compat.simpler_setup"
# The variable that turns the alias on (pytest's PYPTO_ALIAS switch, and the .pth hook).
ENV_SWITCH = "PYPTO_ALIAS"
_ON = ("1", "true", "yes", "on")

# What `configure` decided for a session: None = installed (or already active),
# else the path of the real PyPTO that made it stand down (made on first use).
_state_key: list[Any] = []


def _key() -> Any:
    if not _state_key:
        import pytest  # lazy: scripts install the finder without loading pytest

        _state_key.append(pytest.StashKey["str | None"]())
    return _state_key[0]


def _is_real(spec: importlib.machinery.ModuleSpec | None) -> bool:
    """A spec of an actual ``pypto`` package or module (not a bare namespace dir)."""
    if spec is None:
        return False
    return spec.origin not in (None, "namespace") and not isinstance(spec.loader, _AliasLoader)


def _location(spec: importlib.machinery.ModuleSpec) -> str:
    origin = Path(str(spec.origin))
    return str(origin.parent if origin.name.startswith("__init__.") else origin)


def real_pypto() -> str | None:
    """Where an importable real PyPTO lives (None: there is none besides the alias)."""
    module = sys.modules.get(ALIAS)
    if module is not None and _is_alias(module):
        return None
    try:
        spec = importlib.util.find_spec(ALIAS)
    except (ImportError, ValueError):  # a broken or spec-less sys.modules entry
        return None
    return _location(spec) if spec is not None and _is_real(spec) else None


def _is_alias(module: ModuleType, target: str = TARGET) -> bool:
    """Is this ``sys.modules[<top>]`` the compat package (i.e. put there by the alias)?"""
    return getattr(module, "__name__", None) == target


class _AliasLoader(importlib.abc.Loader):
    """Returns the already-imported compat module instead of executing anything."""

    def __init__(self, finder: _AliasFinder, target: str) -> None:
        self.finder = finder
        self.target = target

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        # importlib keeps a module's own __name__/__spec__/__path__ when
        # create_module returns it, so the compat module is not altered.
        module = importlib.import_module(self.target)
        self.finder.added[spec.name] = module
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: the compat module is fully imported by `create_module`."""


class _AliasFinder(importlib.abc.MetaPathFinder):
    """Maps ``pypto[.X]`` to ``pytest_pypto.compat.pypto[.X]`` and ``simpler[.X]`` to
    ``pytest_pypto.compat.simpler[.X]`` (``targets``; first on sys.meta_path)."""

    def __init__(self, targets: dict[str, str] | None = None) -> None:
        self.targets = dict(targets or {ALIAS: TARGET, BACKEND: BACKEND_TARGET,
                                        TOOLS: TOOLS_TARGET})
        self.added: dict[str, ModuleType] = {}  # sys.modules entries this finder created

    def find_spec(
        self, fullname: str, path: Any = None, target: Any = None
    ) -> importlib.machinery.ModuleSpec | None:
        name = fullname.partition(".")[0]
        if name not in self.targets:
            return None
        if fullname == name:
            if self._real_elsewhere(fullname):
                return None
            counterpart = self.targets[name]
        else:
            top = sys.modules.get(name)
            if top is None or not _is_alias(top, self.targets[name]):
                return None  # a real one got imported; its submodules are its own
            # Map through the parent's real name: pypto.language is pytest_pypto.language,
            # so pypto.language.parser must be pytest_pypto.language.parser, not a copy.
            parent, _, tail = fullname.rpartition(".")
            if parent not in sys.modules:
                return None  # importlib imports the parent first; a bare probe gets None
            counterpart = f"{sys.modules[parent].__name__}.{tail}"
        if counterpart not in sys.modules and importlib.util.find_spec(counterpart) is None:
            raise ModuleNotFoundError(
                f"No module named {fullname!r}: the pypto alias maps {name} to "
                f"{self.targets[name]}, and the bundled compat surface has no module "
                f"{counterpart!r}",
                name=fullname,
            )
        return importlib.machinery.ModuleSpec(fullname, _AliasLoader(self, counterpart))

    def _real_elsewhere(self, fullname: str) -> bool:
        """Can a later finder load a real top-level pypto (never shadow one)?"""
        for finder in sys.meta_path:
            if finder is self or not hasattr(finder, "find_spec"):
                continue
            try:
                spec = finder.find_spec(fullname, None, None)
            except ImportError:
                continue
            if _is_real(spec):
                return True
        return False


_finder: _AliasFinder | None = None


def active() -> bool:
    """Is the alias finder installed in this process?"""
    return _finder is not None and _finder in sys.meta_path


def install() -> bool:
    """Install the finder (idempotent); False when it was active already or a real
    PyPTO is importable (checked before anything is installed)."""
    global _finder
    if active() or real_pypto() is not None:
        return False
    _finder = _AliasFinder()
    # First, so ``pypto.X`` never reaches the path finder, which would load the compat
    # file a second time under the ``pypto.X`` name.
    sys.meta_path.insert(0, _finder)
    return True


def install_from_env() -> bool:
    """The ``.pth`` hook: `install` when ``PYPTO_ALIAS`` is on (1/true/yes/on)."""
    if os.environ.get(ENV_SWITCH, "").strip().lower() not in _ON:
        return False
    return install()


_backend_finder: _AliasFinder | None = None


def install_backend() -> bool:
    """Make ``import simpler`` (and ``simpler_setup``) resolve to the compat stand-ins (the
    compat plugin does, for tests that drive PyPTO's runtime backend by hand); False when
    the alias covers it already, it is installed, or real ones are importable."""
    global _backend_finder
    if active() or (_backend_finder is not None and _backend_finder in sys.meta_path):
        return False
    if _importable(BACKEND):  # a real backend brings its own tools
        return False
    targets = {BACKEND: BACKEND_TARGET}
    if not _importable(TOOLS):
        targets[TOOLS] = TOOLS_TARGET
    _backend_finder = _AliasFinder(targets)
    sys.meta_path.insert(0, _backend_finder)
    return True


def _importable(name: str) -> bool:
    """Whether a real (not aliased) top-level module ``name`` can be imported."""
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    return _is_real(spec)


def uninstall_backend() -> None:
    """Undo `install_backend` (idempotent)."""
    global _backend_finder
    finder, _backend_finder = _backend_finder, None
    _remove(finder)


def uninstall() -> None:
    """Remove the finder and the ``pypto*`` sys.modules entries it created (idempotent)."""
    global _finder
    finder, _finder = _finder, None
    _remove(finder)


def _remove(finder: _AliasFinder | None) -> None:
    if finder is None:
        return
    while finder in sys.meta_path:
        sys.meta_path.remove(finder)
    for name, module in finder.added.items():
        if sys.modules.get(name) is module:
            del sys.modules[name]
    finder.added.clear()


def configure(config: pytest.Config) -> None:
    """pytest_configure with ``--pypto-alias`` on (controller and every xdist worker):
    install the finder unless a real PyPTO is importable, and load the compat plugin
    so ``test_runner``/``test_config`` exist without a conftest line."""
    real = real_pypto()
    config.stash[_key()] = real
    if real is not None:
        return
    if install():
        config.add_cleanup(uninstall)  # in-process runs (pytester) leave no finder behind
    # Register the already-imported package (this module lives in it) under the name
    # import_plugin uses, so a conftest's pytest_plugins line later is a no-op and
    # ``-p no:pytest_pypto.compat`` still wins; import_plugin itself would warn that
    # the module is already imported and cannot be assertion-rewritten.
    manager, name = config.pluginmanager, "pytest_pypto.compat"
    if not manager.is_blocked(name) and manager.get_plugin(name) is None:
        manager.register(importlib.import_module(name), name)


def header_lines(config: pytest.Config) -> list[str]:
    """The report-header line of the alias (none when ``--pypto-alias`` is off)."""
    if _key() not in config.stash:
        return []
    real = config.stash[_key()]
    if real is None:
        return [f"pypto alias: active (import {ALIAS} -> {TARGET})"]
    return [f"pypto alias: requested but a real PyPTO is installed at {real}; not aliasing"]


def pytest_report_header(config: pytest.Config) -> list[str]:
    return header_lines(config)
