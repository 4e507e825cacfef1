"""``pypto.backend``: the backend type and PyPTO's process-wide backend selection."""

from pytest_pypto.arch import BackendType
from pytest_pypto.compat.pypto.backend import pto_backend
from pytest_pypto.compat.pypto.backend.soc import (
    Backend,
    Backend910B,
    Backend950,
    Cluster,
    Core,
    Die,
    SoC,
    get_backend_instance,
)
from pytest_pypto.compat.selections import (
    get_backend_type,
    is_backend_configured,
    reset_for_testing,
    set_backend_type,
)

__all__ = [
    "Backend",
    "Backend910B",
    "Backend950",
    "Cluster",
    "Core",
    "Die",
    "SoC",
    "get_backend_instance",
    "BackendType",
    "get_backend_type",
    "is_backend_configured",
    "pto_backend",
    "reset_for_testing",
    "set_backend_type",
]
