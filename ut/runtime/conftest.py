"""Fixtures of the runtime's tests: a fresh loader cache, artifact directories, a seeded rng."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from runtime_artifacts import write_artifact

from pytest_pypto.runtime.loader import clear_cache


@pytest.fixture(autouse=True)
def _fresh_loader_cache() -> None:
    clear_cache()


@pytest.fixture
def artifact(tmp_path: Path) -> Callable[..., Path]:
    """``artifact(**kw)`` writes a fresh artifact directory under tmp_path."""
    count = iter(range(1000))

    def make(**kw: Any) -> Path:
        return write_artifact(tmp_path / f"art{next(count)}", **kw)

    return make


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(1234)
