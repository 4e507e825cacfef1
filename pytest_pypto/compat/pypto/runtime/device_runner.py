"""``pypto.runtime.device_runner``: ``compile_and_assemble`` reads a compiled chip
program back from its output directory (docs/design/distributed.md §8); the on-device
steps stay Tier 3 (hardware)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_pypto.compat.standins import tier3_name
from pytest_pypto.ir.artifact import MANIFEST_NAME, CompiledProgram
from pytest_pypto.ir.runtime_facade import RUNTIME_NAME, ChipCallable

validate_golden = tier3_name("runtime.validate_golden", "on-device validation")
execute_on_device = tier3_name("runtime.execute_on_device", "on-device execution")
build_orch_args_from_inputs = tier3_name(
    "runtime.build_orch_args_from_inputs", "on-device execution"
)


def compile_and_assemble(work_dir: Any, platform: str) -> tuple[ChipCallable, str, dict[str, Any]]:
    """``(chip_callable, runtime_name, runtime_config)`` of the chip program compiled into
    ``work_dir`` (``ir.compile(..., output_dir=work_dir)``): nothing is compiled again."""
    work_dir = Path(work_dir)
    if not (work_dir / MANIFEST_NAME).is_file():
        raise FileNotFoundError(f"{work_dir} holds no compiled chip program (no "
                                f"{MANIFEST_NAME}); compile one there with "
                                "ir.compile(program, output_dir=...)")
    compiled = CompiledProgram.from_dir(work_dir, platform=platform)
    return compiled.chip_callable, RUNTIME_NAME, dict(compiled.runtime_config)


__all__ = [
    "build_orch_args_from_inputs",
    "compile_and_assemble",
    "execute_on_device",
    "validate_golden",
]
