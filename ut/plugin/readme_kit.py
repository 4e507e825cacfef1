"""Kernel sources the plugin tests write into pytester projects, kept in one place.

The README's example is read from README.md itself, so those tests exercise exactly
what a reader copies.
"""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def readme_example() -> str:
    """The README's first ```python block that defines a test, verbatim."""
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    return next(block for block in blocks if "def test_" in block)


README_EXAMPLE = readme_example()
# The imports, sizes and the `Add` program, without the README's test.
ADD_PROGRAM = README_EXAMPLE[: README_EXAMPLE.index("def test_")]

# A one-kernel program (out = 2 * x on 16x16) and a passing and a failing test of it.
TWICE_PROGRAM = """
import numpy as np
import pytest_pypto
import pytest_pypto.language as pl

@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, x: pl.Tensor[[16, 16], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.add(pl.load(x, [0, 0], [16, 16]), pl.load(x, [0, 0], [16, 16]))
        return pl.store(t, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.twice(x, out)
        return out
"""
TWICE_TESTS = TWICE_PROGRAM + """
def _run(pypto_runner, pypto_rng):
    x = pypto_rng.standard_normal((16, 16), dtype=np.float32)
    out = np.empty((16, 16), np.float32)
    pypto_runner.run(Twice, x, out)
    return x, out

def test_good(pypto_runner, pypto_rng):
    x, out = _run(pypto_runner, pypto_rng)
    pytest_pypto.assert_close(out, 2 * x)

def test_bad(pypto_runner, pypto_rng):
    x, out = _run(pypto_runner, pypto_rng)
    pytest_pypto.assert_close(out, 3 * x)
"""
