"""``pypto.backend.pto_backend``: codegen's error (our compile errors are its kind);
the ptoas steps of PyPTO's device build are Tier 3."""

from pytest_pypto.compat.standins import tier3_name
from pytest_pypto.ir.errors import CompileError as PartialCodegenError

_WHY = "the ptoas assembler of PyPTO's device build"

_preprocess_ptoas_output = tier3_name("backend.pto_backend._preprocess_ptoas_output", _WHY)
_run_ptoas = tier3_name("backend.pto_backend._run_ptoas", _WHY)

__all__ = ["PartialCodegenError"]
