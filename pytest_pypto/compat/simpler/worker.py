"""``simpler.worker``: the single-chip runtime worker, on the simulator.

``Worker(level=2, device_id=, platform=, runtime=)``: ``init`` / ``close``,
``register(chip_callable) -> cid``, ``run(cid, orch_args, call_config)`` (the
arguments of ``compiled.build_orch_args(..., worker=this)``; results land in them) and
``unregister(cid)``.  Only level 2 (one chip) runs here.
"""

from __future__ import annotations

import itertools
from typing import Any

from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.standins import unsupported
from pytest_pypto.ir.runtime_facade import RUNTIME_NAME, ChipCallable, OrchArgs

__all__ = ["Worker"]


class Worker:
    """A runtime worker bound to one platform and runtime."""

    def __init__(self, level: int = 2, device_id: int = 0, platform: str = "a2a3sim",
                 runtime: str = RUNTIME_NAME, enable_sdma: bool = False, **_: Any) -> None:
        if level != 2:
            raise unsupported(f"simpler Worker(level={level})",
                              "distributed execution (only level 2, one chip, runs here)")
        self.level, self.device_id, self.platform, self.runtime = level, device_id, platform, runtime
        self._callables: dict[int, ChipCallable] = {}
        self._ids = itertools.count(1)
        self._open = False

    def init(self, **_: Any) -> None:
        self._open = True

    def close(self) -> None:
        self._callables.clear()
        self._open = False

    def _require_open(self, op: str) -> None:
        if not self._open:
            raise RuntimeError(f"simpler Worker.{op}() before init() or after close()")

    def register(self, chip_callable: ChipCallable) -> int:
        """Register ``compiled.chip_callable``; the id to run it by."""
        self._require_open("register")
        if not isinstance(chip_callable, ChipCallable):
            raise TypeError(f"register() takes compiled.chip_callable, got "
                            f"{type(chip_callable).__name__}")
        if chip_callable.compiled.runtime_name != self.runtime:
            raise ValueError(f"the program is compiled for runtime "
                             f"{chip_callable.compiled.runtime_name!r}, this worker runs "
                             f"{self.runtime!r}")
        cid = next(self._ids)
        self._callables[cid] = chip_callable
        return cid

    def unregister(self, cid: int) -> None:
        self._callables.pop(cid, None)

    def run(self, cid: int, orch_args: OrchArgs, config: Any = None) -> None:
        """Run the registered program with ``orch_args`` (built for this worker)."""
        self._require_open("run")
        if cid not in self._callables:
            raise KeyError(f"no program registered as {cid!r} on this worker")
        compiled = self._callables[cid].compiled
        if not isinstance(orch_args, OrchArgs) or orch_args.compiled is not compiled:
            raise ValueError("orch_args were not built by this program's build_orch_args")
        if orch_args.worker is not self:
            raise ValueError("orch_args were built for another worker (build_orch_args(worker=))")
        compiled(*orch_args.args, config=RunConfig(platform=self.platform))
