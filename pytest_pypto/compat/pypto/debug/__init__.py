"""``pypto.debug``: PyPTO's torch code generator, Tier 3 (a debugging backend)."""

from pytest_pypto.compat.standins import tier3_name

torch_codegen = tier3_name("debug.torch_codegen", "the torch debugging backend")

__all__ = ["torch_codegen"]
