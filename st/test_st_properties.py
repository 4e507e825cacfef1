"""Differential system test: tiled elementwise kernels of random shapes vs numpy, bit for bit.

Each example builds a program from closure constants (rows, cols, tile rows),
compiles it for the cell and dispatches it.  FP32 ops round once per op, exactly as
numpy's float32 arithmetic does, so the results must be identical (docs/design/numerics.md §2).
"""

from __future__ import annotations

from typing import Any

import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import pytest_pypto.language as pl


def fma_program(R: int, C: int, TR: int) -> Any:  # noqa: N803  (DSL closure constants)
    @pl.program
    class TiledFma:
        @pl.function(type=pl.FunctionType.InCore)
        def fma(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            for r in pl.range(0, R, TR):
                xt = pl.load(x, [r, 0], [TR, C])
                yt = pl.load(y, [r, 0], [TR, C])
                out = pl.store(pl.sub(pl.mul(xt, yt), pl.mul(xt, 0.5)), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(
            self,
            x: pl.Tensor[[R, C], pl.FP32],
            y: pl.Tensor[[R, C], pl.FP32],
            out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
        ) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.fma(x, y, out)
            return out

    return TiledFma


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    tile_rows=st.sampled_from([1, 2, 4, 8, 16]),
    tiles=st.integers(1, 6),
    cols=st.sampled_from([8, 16, 24, 64, 128]),
    seed=st.integers(0, 2**32 - 1),
)
def test_tiled_elementwise_matches_numpy_exactly(pypto_runner, tile_rows, tiles, cols, seed):
    rows = tile_rows * tiles
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((rows, cols)).astype(np.float32)
    y = rng.standard_normal((rows, cols)).astype(np.float32)
    out = np.full((rows, cols), 99.0, np.float32)
    pypto_runner.run(fma_program(rows, cols, tile_rows), x, y, out)
    np.testing.assert_array_equal(out, x * y - x * np.float32(0.5))
