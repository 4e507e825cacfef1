"""Shared helpers of the harness' pytester tests: a clean environment, a small kernel."""

from __future__ import annotations

import pytest

# Load the toolchain in this process before any in-process pytester run: a run drops
# the modules it imported, and a second run re-importing half of the toolchain would
# see two copies of the IR classes.
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.cases  # noqa: F401
import pytest_pypto.harness.dispatch  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.registry  # noqa: F401  (tests monkeypatch its runtimes)
import pytest_pypto.runtime.worker  # noqa: F401

# A case module for inner runs: out = x + y on a 16x64 FP32 tile; the golden of
# WrongAdd is off by 1 at two hand-picked elements.
CASES = """
import numpy as np
import pytest_pypto.language as pl
from pytest_pypto.harness import DataType, PTOTestCase, TensorSpec

R, C = 16, 64


@pl.program
class Add:
    @pl.function(type=pl.FunctionType.InCore)
    def add(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        y: pl.Tensor[[R, C], pl.FP32],
        out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        a = pl.load(x, [0, 0], [R, C])
        b = pl.load(y, [0, 0], [R, C])
        out = pl.store(pl.add(a, b), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[R, C], pl.FP32],
        y: pl.Tensor[[R, C], pl.FP32],
        out: pl.Out[pl.Tensor[[R, C], pl.FP32]],
    ) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.add(x, y, out)
        return out


class AddCase(PTOTestCase):
    def get_program(self):
        return Add

    def define_tensors(self):
        return [
            TensorSpec("x", [R, C], DataType.FP32, init_value=lambda s: np.full(s, 1.5)),
            TensorSpec("y", [R, C], DataType.FP32, init_value=2.0),
            TensorSpec("out", [R, C], DataType.FP32, is_output=True),
        ]

    def compute_expected(self, tensors, params=None):
        tensors["out"][:] = tensors["x"] + tensors["y"]


class WrongAdd(AddCase):
    def compute_expected(self, tensors, params=None):
        super().compute_expected(tensors, params)
        tensors["out"][0, 3] += 1
        tensors["out"][2, 0] -= 1


class RandomAdd(AddCase):
    def define_tensors(self):
        return [
            TensorSpec("x", [R, C], DataType.FP32),
            TensorSpec("y", [R, C], DataType.FP32, init_value=lambda s, rng: rng.random(s)),
            TensorSpec("out", [R, C], DataType.FP32, is_output=True),
        ]
"""



@pytest.fixture
def cases(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester with ``kcases.py`` (the Add kernel and its cases) importable."""
    pytester.makepyfile(kcases=CASES)
    pytester.syspathinsert()
    return pytester
