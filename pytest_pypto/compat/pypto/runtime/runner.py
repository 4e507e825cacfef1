"""``pypto.runtime.runner``: RunConfig (PyPTO's fields accepted), RunResult, run."""

from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.selections import compile_program
from pytest_pypto.harness.cases import RunResult
from pytest_pypto.harness.dispatch import run

__all__ = ["RunConfig", "RunResult", "compile_program", "run"]
