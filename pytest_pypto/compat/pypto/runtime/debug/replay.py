"""``pypto.runtime.debug.replay``: run a build directory again with new tensors.

The directory is an artifact of the bundled toolchain (``ir.compile(...,
output_dir=...)``); it runs on the simulator through ``execute_compiled``.  There is no
C++ to rebuild, so ``recompile`` and ``rebuild_from_pto`` change nothing;
``validate=True`` (a ``golden.py`` next to the build) is Tier 3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_pypto.compat.execution import execute_compiled
from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.standins import unsupported

__all__ = ["invalidate_binary_cache", "replay"]


def invalidate_binary_cache(work_dir: Path | str) -> None:
    """Nothing to invalidate: the simulator builds no binaries."""


def replay(
    work_dir: Path | str,
    *tensors: Any,
    config: RunConfig | None = None,
    recompile: bool = True,
    rebuild_from_pto: bool = True,
    validate: bool = False,
) -> None:
    """Run ``work_dir``'s program with ``tensors`` (every entry argument, in order;
    results land in them) on ``config``'s platform (default ``RunConfig()``)."""
    __tracebackhide__ = True
    if validate:
        raise unsupported("runtime.debug.replay(validate=True)",
                          "golden.py validation of PyPTO build directories")
    config = config if config is not None else RunConfig()
    execute_compiled(work_dir, list(tensors), platform=config.platform,
                     device_id=config.device_id or 0)
