"""``pypto.backend.pto_backend``: codegen's error (our compile errors are its kind)."""

from pytest_pypto.ir.errors import CompileError as PartialCodegenError

__all__ = ["PartialCodegenError"]
