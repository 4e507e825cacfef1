"""PyPTO's kernel_config.py beside our kernel_config.json when ir.compile gets an output_dir."""

from __future__ import annotations

import runpy

import pytest_pypto.language as pl
from pytest_pypto.compat.selections import ir_compile


@pl.program
class Hinted:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="FetchRows"):
            t = pl.add(pl.load(a, [0, 0], [16, 16]), 1.0)
            out = pl.store(t, [0, 0], out)
        return out


def test_output_dir_gets_a_kernel_config_py_naming_the_hinted_kernel(tmp_path):
    compiled = ir_compile(Hinted, tmp_path, platform="a2a3sim")
    config = runpy.run_path(str(tmp_path / "kernel_config.py"))
    (kernel,) = config["KERNELS"]
    assert kernel["name"] == "FetchRows"
    assert kernel["func_id"] == compiled.manifest.kernel("FetchRows").func_id
    assert config["ORCHESTRATION"]["function_name"] == "main"
    assert config["RUNTIME_CONFIG"]["runtime"] == "tensormap_and_ringbuffer"
    assert (tmp_path / "kernel_config.json").is_file()  # our manifest is still there


def test_without_output_dir_nothing_is_written(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    ir_compile(Hinted, platform="a2a3sim")
    assert not list(tmp_path.iterdir())
