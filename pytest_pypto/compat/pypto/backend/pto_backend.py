"""``pypto.backend.pto_backend``: codegen's error (our compile errors are its kind), and the
PTO assembler's helpers, which only a PyPTO installation has (Tier 3 stand-ins)."""

from pytest_pypto.compat.standins import tier3_name
from pytest_pypto.ir.errors import CompileError as PartialCodegenError

_run_ptoas = tier3_name("backend.pto_backend._run_ptoas", "the PTO assembler (ptoas)")
_preprocess_ptoas_output = tier3_name(
    "backend.pto_backend._preprocess_ptoas_output", "the PTO assembler (ptoas)"
)

__all__ = ["PartialCodegenError"]
