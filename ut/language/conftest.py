# SPDX-License-Identifier: Apache-2.0
"""Helpers for the language tests: find the line of a marker comment in the test file."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from ut.helpers import line_finder


@pytest.fixture
def line_of(request: pytest.FixtureRequest) -> Callable[[str], int]:
    """line_of("m1") -> the 1-based line of this test file that ends with `# m1`."""
    return line_finder(request.path)
