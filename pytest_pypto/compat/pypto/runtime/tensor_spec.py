"""``pypto.runtime.tensor_spec``: PyPTO's specs (zeros by default, torch dtypes accepted)."""

from pytest_pypto.compat.cases import ScalarSpec, TensorSpec

__all__ = ["ScalarSpec", "TensorSpec"]
