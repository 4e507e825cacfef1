"""PyPTO's ``harness.core.harness`` surface (the compat import rule's target).

``from harness.core.harness import PTOTestCase, TensorSpec, DataType, PLATFORMS``
becomes ``from pytest_pypto.compat.harness import ...``.  The objects are
`pytest_pypto.compat.cases` (PyPTO's case semantics on our runner);
``PLATFORMS`` and friends list the cells the running session requested.
"""

from __future__ import annotations

from typing import Any

from pytest_pypto.compat import cases as _cases
from pytest_pypto.compat.cases import (
    ALL_PLATFORM_IDS,
    ONBOARD_PLATFORM_IDS,
    SIM_PLATFORM_IDS,
    DataType,
    PTOTestCase,
    ScalarSpec,
    TensorSpec,
    platform_to_backend,
)
from pytest_pypto.harness.cases import RunResult

__all__ = [
    "ALL_PLATFORM_IDS",
    "ONBOARD_PLATFORMS",  # noqa: F822  (module __getattr__: made when read)
    "ONBOARD_PLATFORM_IDS",
    "PLATFORMS",  # noqa: F822
    "PTOTestCase",
    "RunResult",
    "SIM_PLATFORMS",  # noqa: F822
    "SIM_PLATFORM_IDS",
    "DataType",
    "ScalarSpec",
    "TensorSpec",
    "platform_to_backend",
]


def __getattr__(name: str) -> Any:
    return getattr(_cases, name)
