"""Stand-in ``pypto.ir``: ``compile`` and the callable ``CompiledProgram``.

A "device" run executes our artifact on the simulator of the platform's arch and
records (platform, device_id), so tests can see what the adapter passed.  Run
failures come out as ``RuntimeError``, as PyPTO's runtime reports them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
from pypto.backend import BackendType
from pypto.runtime import PLATFORMS, RunConfig

import pytest_pypto
from pytest_pypto.harness.tensors import torch_view
from pytest_pypto.ir.nodes import Program

compiled_programs: list[CompiledProgram] = []


def compile(  # noqa: A001
    program: Any, output_dir: str | None = None, strategy: Any = None,
    dump_passes: bool = True, backend_type: BackendType = BackendType.Ascend910B,
    platform: str | None = None, **_: Any,
) -> CompiledProgram:
    if not isinstance(program, Program):
        raise TypeError(f"compile() expects an ir.Program, got {type(program).__name__}")
    platform = platform or ("a5sim" if backend_type is BackendType.Ascend950 else "a2a3sim")
    if platform not in PLATFORMS:
        raise ValueError(f"Invalid platform {platform!r}")
    wanted = BackendType.Ascend950 if platform.startswith("a5") else BackendType.Ascend910B
    if backend_type is not wanted:
        raise ValueError(f"backend {backend_type} does not generate code for {platform}")
    ours = pytest_pypto.compile(
        program, pytest_pypto.RunConfig(platform=_sim(platform)),
        output_dir=Path(output_dir) / "standin" if output_dir else None,
    )
    compiled = CompiledProgram(program, ours, platform, output_dir)
    compiled_programs.append(compiled)
    return compiled


def _sim(platform: str) -> str:
    return platform if platform.endswith("sim") else platform + "sim"


class CompiledProgram:
    def __init__(self, program: Program, ours: Any, platform: str, output_dir: Any) -> None:
        self.program = program
        self._ours = ours
        self.platform = platform
        self.output_dir = output_dir
        self.runs: list[tuple[str, int]] = []

    @property
    def param_names(self) -> list[str]:
        return self._ours.param_names

    def __call__(self, *args: Any, config: RunConfig | None = None) -> None:
        import torch

        config = config if config is not None else RunConfig(platform=self.platform)
        if _sim(config.platform) != _sim(self.platform):
            raise RuntimeError(
                f"binary built for {self.platform} cannot run on {config.platform}"
            )
        if len(args) != len(self.param_names):
            raise TypeError(f"CompiledProgram expects {len(self.param_names)} arguments")
        arrays = []
        for arg in args:
            if isinstance(arg, np.ndarray):
                raise TypeError("Pass a torch.Tensor (host), not a numpy array")
            arrays.append(torch_view(arg) if isinstance(arg, torch.Tensor) else arg)
        self.runs.append((config.platform, config.device_id))
        try:
            pytest_pypto.run(
                self._ours, *arrays,
                config=pytest_pypto.RunConfig(platform=_sim(config.platform), runtime="sim"),
                outputs_in=True,
            )
        except Exception as exc:
            raise RuntimeError(f"run failed on device {config.device_id}: {exc}") from None
