# SPDX-License-Identifier: Apache-2.0
"""How lint items are cut: one per check (default) or one per (check, file).

Read by the hooks (to validate the option early) and by the manifest collector; a
module of its own so that neither imports the other.  Stdlib and pytest only.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

SPLIT_CHOICES = ("check", "file")


def split_mode(config: Any) -> str:
    """--pypto-lint-split, then PYPTO_LINT_SPLIT, then ini, then 'check'."""
    value = config.getoption("pypto_lint_split", None)
    source = "--pypto-lint-split"
    if value is None and os.environ.get("PYPTO_LINT_SPLIT"):
        value, source = os.environ["PYPTO_LINT_SPLIT"], "PYPTO_LINT_SPLIT"
    if value is None and config.getini("pypto_lint_split"):
        value, source = config.getini("pypto_lint_split"), "pypto_lint_split (ini)"
    if value is None:
        return "check"
    value = str(value).strip()
    if value not in SPLIT_CHOICES:
        raise pytest.UsageError(
            f"{source}: invalid value {value!r}; choose from {', '.join(SPLIT_CHOICES)}"
        )
    return value
