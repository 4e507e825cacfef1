"""The harness: cases, comparison and runner.  Public names are served lazily, so
importing this package stays cheap (numpy loads on first use of a name)."""

from __future__ import annotations

from typing import Any

# Public names served lazily: name -> module that defines it.
_LAZY = {
    "PTOTestCase": "pytest_pypto.harness.cases",
    "TensorSpec": "pytest_pypto.harness.cases",
    "ScalarSpec": "pytest_pypto.harness.cases",
    "DataType": "pytest_pypto.harness.cases",
    "RunResult": "pytest_pypto.harness.cases",
    "assert_close": "pytest_pypto.harness.compare",
    "assert_all_close": "pytest_pypto.harness.compare",
    "MismatchError": "pytest_pypto.harness.compare",
}

__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'pytest_pypto.harness' has no attribute {name!r}")
    import importlib  # lazy: plugin import cost (numpy loads on first use of a name)

    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
