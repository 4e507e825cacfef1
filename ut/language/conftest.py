# SPDX-License-Identifier: Apache-2.0
"""Helpers for the language tests: find the line of a marker comment in the test file."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest


@pytest.fixture
def line_of(request: pytest.FixtureRequest) -> Callable[[str], int]:
    """line_of("m1") -> the 1-based line of this test file that ends with `# m1`."""
    lines = Path(request.path).read_text(encoding="utf-8").splitlines()

    def find(marker: str) -> int:
        hits = [i + 1 for i, text in enumerate(lines) if text.rstrip().endswith(f"# {marker}")]
        assert len(hits) == 1, f"marker {marker!r} found {len(hits)} times"
        return hits[0]

    return find
