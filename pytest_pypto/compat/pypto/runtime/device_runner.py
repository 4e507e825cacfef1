"""``pypto.runtime.device_runner``: the on-device build step, Tier 3 (hardware)."""

from pytest_pypto.compat.standins import tier3_name

compile_and_assemble = tier3_name("runtime.compile_and_assemble", "on-device builds")
validate_golden = tier3_name("runtime.validate_golden", "on-device validation")
execute_on_device = tier3_name("runtime.execute_on_device", "on-device execution")
build_orch_args_from_inputs = tier3_name(
    "runtime.build_orch_args_from_inputs", "on-device execution"
)

__all__ = [
    "build_orch_args_from_inputs",
    "compile_and_assemble",
    "execute_on_device",
    "validate_golden",
]
