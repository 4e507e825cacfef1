"""``pypto.runtime.pto_isa``: the PTO-ISA sources a device build needs, Tier 3."""

from pytest_pypto.compat.standins import tier3_name

ensure_pto_isa_root = tier3_name("runtime.ensure_pto_isa_root", "the PTO-ISA toolchain")
pto_isa_include_dir = tier3_name("runtime.pto_isa_include_dir", "the PTO-ISA toolchain")

__all__ = ["ensure_pto_isa_root", "pto_isa_include_dir"]
