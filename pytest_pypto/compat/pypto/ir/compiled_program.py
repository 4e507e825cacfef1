"""``pypto.ir.compiled_program``."""

from pytest_pypto.ir.artifact import CompiledProgram

__all__ = ["CompiledProgram"]
