"""``pypto.runtime.runner``: RunConfig (PyPTO's fields accepted), RunResult, run,
execute_compiled and the DFX toggles (accepted, no effect here)."""

from pytest_pypto.compat.execution import _DfxOpts, execute_compiled
from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.selections import compile_program
from pytest_pypto.harness.cases import RunResult
from pytest_pypto.harness.dispatch import run

__all__ = ["RunConfig", "RunResult", "_DfxOpts", "compile_program", "execute_compiled", "run"]
