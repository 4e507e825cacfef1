"""Shared set-up of the compat tests: modules preloaded for in-process pytest runs."""

from __future__ import annotations

import torch  # noqa: F401  (the compat harness needs it; re-importing torch breaks)

# Load these in this process before any in-process pytester run: a run drops the
# modules it imported, and a second run re-importing half of the toolchain would see
# two copies of the IR classes (and of the compat modules the alias hands out).
import pytest_pypto.compat.alias  # noqa: F401
import pytest_pypto.compat.pypto  # noqa: F401
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.cases  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.worker  # noqa: F401

