"""``pypto.runtime.device_runner``: the on-device build step, Tier 3 (hardware)."""

from pytest_pypto.ir.tier3 import tier3_name

compile_and_assemble = tier3_name("runtime.compile_and_assemble", "on-device builds")
validate_golden = tier3_name("runtime.validate_golden", "on-device validation")

__all__ = ["compile_and_assemble", "validate_golden"]
