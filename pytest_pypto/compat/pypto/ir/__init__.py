"""``pypto.ir``: ``compile`` (PyPTO's signature, our compiler), ``python_print`` (a
program in the DSL's Python syntax) and the IR enums tests name."""

from __future__ import annotations

from pytest_pypto.compat.pypto.backend.soc import CoreType
from pytest_pypto.compat.selections import OptimizationStrategy, PassDumpLevel
from pytest_pypto.compat.selections import ir_compile as compile  # noqa: A001
from pytest_pypto.ir.artifact import CompiledProgram
from pytest_pypto.ir.nodes import Program
from pytest_pypto.ir.pyprint import python_print
from pytest_pypto.language.surface import FunctionType

__all__ = [
    "CompiledProgram",
    "CoreType",
    "FunctionType",
    "OptimizationStrategy",
    "PassDumpLevel",
    "Program",
    "compile",
    "python_print",
]
