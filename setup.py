"""Build hook: ship pytest_pypto/compat/alias.pth as site-packages/pytest_pypto_alias.pth.

The .pth line makes ``PYPTO_ALIAS=1 python script.py`` resolve ``import pypto`` to the
bundled toolchain (docs/design/plugin.md §17); with the variable unset it reads one
environment variable and imports nothing of this package.  Everything else about the
build is in pyproject.toml.
"""

from __future__ import annotations

import os

from setuptools import setup
from setuptools.command.build_py import build_py

PTH_SOURCE = os.path.join("pytest_pypto", "compat", "alias.pth")
PTH_NAME = "pytest_pypto_alias.pth"


class BuildPyWithAliasHook(build_py):
    """build_py that also puts the alias .pth at the root of what gets installed:
    build_lib for a wheel; the unpacked wheel for an editable install (PEP 660),
    whose build commands install into it."""

    def run(self) -> None:
        super().run()
        self.copy_file(PTH_SOURCE, os.path.join(self._pth_root(), PTH_NAME))

    def _pth_root(self) -> str:
        if getattr(self, "editable_mode", False):
            return self.get_finalized_command("install").install_lib
        return self.build_lib

    def get_outputs(self, include_bytecode: bool = True) -> list[str]:
        outputs = list(super().get_outputs(include_bytecode))
        if not getattr(self, "editable_mode", False):
            outputs.append(os.path.join(self.build_lib, PTH_NAME))
        return outputs


setup(cmdclass={"build_py": BuildPyWithAliasHook})
