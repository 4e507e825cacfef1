"""Fixtures of the op-registry tests (helpers live in ophelpers.py)."""

from __future__ import annotations

import pytest
from ophelpers import ARCHS


@pytest.fixture(params=ARCHS, ids=lambda a: a.name)
def arch(request):
    return request.param
