"""A downstream suite: what a project that only installed the built wheel runs
(.ci/wheel-smoke copies this folder out of the checkout and runs it there)."""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import pytest_pypto
import pytest_pypto.language as pl

M, N, TM = 64, 32, 16


@pl.program
class Add:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
            out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            t = pl.add(pl.load(x, [r, 0], [TM, N]), pl.load(y, [r, 0], [TM, N]))
            out = pl.store(t, [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.add(x, y, out)
        return out


def test_the_package_is_the_installed_wheel():
    here = Path(pytest_pypto.__file__).resolve()
    assert "site-packages" in here.parts, here  # not a checkout on sys.path


def test_add_per_cell(pypto_runner, pypto_rng):
    x, y = pypto_rng.standard_normal((2, M, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    pypto_runner.run(Add, x, y, out)
    pytest_pypto.assert_close(out, x + y)


def test_the_alias_start_up_hook_is_installed(tmp_path):
    script = tmp_path / "k.py"
    script.write_text("import pypto.language as pl\nprint(pl.__name__.split('.')[0], pl.program)\n")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=dict(os.environ, PYPTO_ALIAS="1"), check=True)
    assert done.stdout.startswith("pytest_pypto <function program")  # the bundled toolchain
