"""Every artifact directory holds debug/run.py, a script that runs it again
(docs/design/artifact.md §10; PyPTO's JIT debug runner, issue 25 item 4)."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

REPO = Path(__file__).resolve().parents[2]
M = pl.dynamic("M")


@pl.program
class Mixed:
    @pl.function(type=pl.FunctionType.InCore)
    def k(
        self,
        x: pl.Tensor[[16, 16], pl.FP32],
        s: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        return pl.store(pl.mul(pl.load(x, [0, 0], [16, 16]), s), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[16, 16], pl.FP32],
        ids: pl.Tensor[[M, 8], pl.INT32],
        s: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[16, 16], pl.FP32]],
    ) -> pl.Tensor[[16, 16], pl.FP32]:
        return self.k(x, s, y)


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    return env


def test_the_script_names_every_argument_with_its_shape_and_dtype(tmp_path: Path) -> None:
    compiled = pytest_pypto.compile(Mixed, RunConfig(platform="a5sim"), output_dir=tmp_path)
    text = (compiled.output_dir / "debug" / "run.py").read_text()
    ast.parse(text)
    assert "x = torch.randn((16, 16), dtype=torch.float32)" in text
    assert "ids = torch.randint(0, 8, (1, 8), dtype=torch.int32)  # dynamic dims" in text
    assert "s = 1.0  # scalar (FP32)" in text
    assert "y = torch.zeros((16, 16), dtype=torch.float32)" in text
    assert "PLATFORM = 'a5sim'" in text and "def _user_compare(x, ids, s, y):" in text


def test_the_script_runs_the_artifact_and_hands_the_results_to_user_compare(
    tmp_path: Path,
) -> None:
    compiled = pytest_pypto.compile(Mixed, RunConfig(platform="a2a3sim"), output_dir=tmp_path)
    script = compiled.output_dir / "debug" / "run.py"
    text = script.read_text().replace(
        '    """Called after the run; Out and InOut tensors hold the results."""\n',
        '    assert torch.equal(y, x * s), "wrong result"\n    print("compared")\n',
    )
    assert "compared" in text
    script.write_text(text)
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, env=_env(),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["compared", f"ran {tmp_path} on a2a3sim"]


def test_a_memory_only_compile_does_not_render_the_script() -> None:
    compiled = pytest_pypto.compile(Mixed, RunConfig(platform="a2a3sim"))
    assert callable(compiled.memory._texts["debug/run.py"])  # rendered only when written
    x = np.ones((16, 16), np.float32)
    pytest_pypto.run(compiled, x, np.zeros((2, 8), np.int32), 2.0, y := np.zeros_like(x))
    assert np.all(y == 2.0)
