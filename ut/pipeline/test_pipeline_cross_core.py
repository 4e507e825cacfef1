# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Cross-core programs end to end on both sims (docs/design/language.md §9, §14).

References are plain numpy written here.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

PLATFORMS = ("a2a3sim", "a5sim")
M, K, N, NB = 16, 32, 64, 16


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261203)


def _run(program, platform, *arrays):
    compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    return compiled, pytest_pypto.run(compiled, *arrays, config=RunConfig(platform=platform))


@pl.program
class AccumulateIntoPlainParam:
    """An Opaque entry whose plain (In by default) tensor a region accumulates into."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Tensor[[M, N], pl.FP32]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(0, N // NB):
                n0 = j * NB
                prev = pl.slice(c, [M, NB], [0, n0])
                part = pl.slice(b, [K, NB], [0, n0])
                c = pl.assemble(c, pl.add(prev, pl.matmul(a, part)), [0, n0])
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_opaque_entry_parameter_written_by_a_region_becomes_inout(platform, rng):
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    want = c + a @ b
    compiled, _ = _run(AccumulateIntoPlainParam, platform, a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
    (kernel,) = compiled.manifest.kernels
    assert dict((x.name, x.direction) for x in kernel.args)["c"] == "InOut"


ROWS = pl.dynamic("ROWS")


@pl.jit
def pairs_per_block(x: pl.Tensor[[ROWS, 16, 16], pl.FP32],
                    out: pl.Out[pl.Tensor[[ROWS, 16, 16], pl.FP32]]):
    x.bind_dynamic(0, ROWS)
    out.bind_dynamic(0, ROWS)
    blocks = pl.tensor.dim(x, 0) // 2
    for g in pl.spmd(blocks, name_hint="pairs"):
        r = g * 2
        out[r : r + 1, :, :] = pl.add(x[r : r + 1, :, :], 1.0)
        out[r + 1 : r + 2, :, :] = pl.mul(x[r + 1 : r + 2, :, :], 2.0)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_window_from_r_plus_1_to_r_plus_2_is_one_row_when_r_is_dynamic(platform, rng):
    x = rng.standard_normal((6, 16, 16)).astype(np.float32)
    out = np.zeros_like(x)
    pairs_per_block(x, out, config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out[0::2], x[0::2] + np.float32(1))
    np.testing.assert_array_equal(out[1::2], x[1::2] * np.float32(2))
