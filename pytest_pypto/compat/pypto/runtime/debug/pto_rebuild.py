"""``pypto.runtime.debug.pto_rebuild``: rebuilding device code with ptoas, Tier 3."""

from pytest_pypto.compat.standins import tier3_name

rebuild_kernel_cpp_from_pto = tier3_name(
    "runtime.debug.pto_rebuild.rebuild_kernel_cpp_from_pto", "ptoas rebuilds of device code"
)

__all__ = ["rebuild_kernel_cpp_from_pto"]
