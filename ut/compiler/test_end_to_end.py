"""Compile hand-built IR and run it on the bundled simulator; compare with plain numpy."""

from __future__ import annotations

import numpy as np
import pytest
from kernels import axpy, matmul

from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_axpy_matches_numpy(platform, tmp_path):
    cfg = RunConfig(platform=platform)
    compiled = compile(axpy(), cfg, output_dir=tmp_path)
    rng = np.random.default_rng(0)
    x = rng.standard_normal((128, 64)).astype(np.float16)
    y = rng.standard_normal((128, 64)).astype(np.float32)
    out = np.full((128, 64), 7.0, np.float32)
    run(compiled, x, y, 0.5, out, config=cfg)
    expected = (x.astype(np.float32) * np.float32(0.5)) + y
    np.testing.assert_array_equal(out, expected)


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_matmul_matches_numpy(platform, tmp_path):
    cfg = RunConfig(platform=platform)
    compiled = compile(matmul(64, 32, 48), cfg, output_dir=tmp_path)
    rng = np.random.default_rng(1)
    a = rng.standard_normal((64, 32)).astype(np.float32)
    b = rng.standard_normal((32, 48)).astype(np.float32)
    c = np.zeros((64, 48), np.float32)
    run(compiled, a, b, c, config=cfg)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)
