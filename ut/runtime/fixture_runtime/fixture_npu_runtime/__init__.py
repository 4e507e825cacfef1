# SPDX-License-Identifier: Apache-2.0
"""A pretend onboard runtime for pytest-pypto's tests: it plays an a2a3 NPU.

What it does, so the tests can rely on it:

* It serves the onboard platform ``a2a3``.  Our compiler's onboard artifact holds the
  same generated Python as a sim artifact, so ``execute`` really computes: it copies
  the artifact, retargets the copy's manifest to ``a2a3sim`` and runs it on
  pytest-pypto's own ``Worker("a2a3sim")``.  Results land in the caller's arrays.
* ``$FIXTURE_NPU_LOG`` (a file): each execute appends one JSON line with the
  ``device`` it was given, ``config.device_id`` and whether that device's lease lock
  (``$PYPTO_LOCK_DIR/davinci<N>.lock``) was held while it ran.
* ``$FIXTURE_NPU_FAIL`` set: execute raises a plain ``RuntimeError`` (a driver fault).
* ``$FIXTURE_NPU_BREAK`` set when the module is imported: it imports a driver that
  does not exist, so the runtime is *broken* (an import error).
"""

from __future__ import annotations

import dataclasses
import fcntl
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

if os.environ.get("FIXTURE_NPU_BREAK"):
    import fixture_npu_driver  # noqa: F401  (does not exist: the runtime is broken)

__version__ = "1.3.0"


class FixtureExecution:
    """What ``execute`` returns (the protocol's `Execution`)."""

    def __init__(self, platform: str, run: Any) -> None:
        self.platform = platform
        self.outputs = run.outputs
        self.returns = run.returns
        self.tasks = run.tasks


class FixtureNpuRuntime:
    name = "fixturenpu"
    version = __version__
    platforms = ("a2a3",)

    def __init__(self) -> None:
        self._worker: Any = None
        self._scratch = Path(tempfile.mkdtemp(prefix="fixture-npu-"))
        self._retargeted: dict[str, Path] = {}

    def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
        from pytest_pypto.runtime.protocol import RuntimeFailure

        source = Path(artifact.artifact_dir() if hasattr(artifact, "artifact_dir") else artifact)
        manifest = json.loads((source / "kernel_config.json").read_text())
        if config.platform not in self.platforms or manifest["platform"] != config.platform:
            raise RuntimeFailure(
                f"fixturenpu serves a2a3; artifact for {manifest['platform']}, "
                f"config for {config.platform}",
                runtime=self.name,
            )
        _log(device, config)
        if os.environ.get("FIXTURE_NPU_FAIL"):
            raise RuntimeError("the fixture NPU fell over")
        if self._worker is None:
            from pytest_pypto.runtime.worker import Worker

            self._worker = Worker(platform="a2a3sim")
        sim_config = dataclasses.replace(config, platform="a2a3sim", device_id=None)
        run = self._worker.run(
            self._retarget(source), *arrays, config=sim_config, outputs_in=outputs_in
        )
        return FixtureExecution(config.platform, run)

    def _retarget(self, source: Path) -> Path:
        """A copy of the artifact whose manifest says a2a3sim (kept per source)."""
        key = str(source.resolve())
        target = self._retargeted.get(key)
        if target is None:
            target = self._scratch / f"art{len(self._retargeted)}"
            shutil.copytree(source, target)
            path = target / "kernel_config.json"
            manifest = json.loads(path.read_text())
            manifest.update(platform="a2a3sim", mode="sim", sim_backend="numpy-functional")
            path.write_text(json.dumps(manifest))
            self._retargeted[key] = target
        return target

    def close(self) -> None:
        self._worker = None
        self._retargeted.clear()
        shutil.rmtree(self._scratch, ignore_errors=True)


def _log(device: int | None, config: Any) -> None:
    log = os.environ.get("FIXTURE_NPU_LOG")
    if not log:
        return
    record = {"device": device, "config_device": config.device_id, "locked": _locked(device)}
    with open(log, "a") as out:
        out.write(json.dumps(record) + "\n")


def _locked(device: int | None) -> bool:
    """Whether someone holds the lease lock of ``device`` (a second flock fails)."""
    if device is None:
        return False
    lock_dir = os.environ.get("PYPTO_LOCK_DIR")
    if not lock_dir:
        return False
    path = Path(lock_dir) / f"davinci{device}.lock"
    if not path.exists():
        return False
    with open(path, "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False
