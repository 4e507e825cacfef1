"""Compiler checks and codegen on programs written in the DSL (parsed by `@pl.program`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile, lower
from pytest_pypto.ir.errors import (
    BoundsError,
    CapacityError,
    DirectionError,
    MemorySpaceError,
    PlacementError,
)
from ut.helpers import line_finder

HERE = Path(__file__).resolve()
PLATFORMS = ["a2a3sim", "a5sim"]


line_of = line_finder(__file__)


@pl.program
class BigMatmul:
    @pl.function(type=pl.FunctionType.InCore)
    def mm(self, a: pl.Tensor[[256, 16], pl.FP32], b: pl.Tensor[[16, 256], pl.FP32],
           c: pl.Out[pl.Tensor[[256, 256], pl.FP32]]) -> pl.Tensor[[256, 256], pl.FP32]:
        ta = pl.load(a, [0, 0], [256, 16])
        tb = pl.load(b, [0, 0], [16, 256])
        acc = pl.matmul(ta, tb)  # big-acc
        c = pl.store(acc, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[256, 16], pl.FP32], b: pl.Tensor[[16, 256], pl.FP32],
             c: pl.Out[pl.Tensor[[256, 256], pl.FP32]]) -> pl.Tensor[[256, 256], pl.FP32]:
        c = self.mm(a, b, c)
        return c


def test_256x256_fp32_acc_compiles_for_a5_and_runs(tmp_path):
    cfg = RunConfig(platform="a5sim")
    compiled = compile(BigMatmul, cfg, output_dir=tmp_path)
    rng = np.random.default_rng(3)
    a = rng.standard_normal((256, 16)).astype(np.float32)
    b = rng.standard_normal((16, 256)).astype(np.float32)
    c = np.zeros((256, 256), np.float32)
    run(compiled, a, b, c, config=cfg)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-4)


def test_256x256_fp32_acc_is_over_capacity_on_a2a3():
    with pytest.raises(CapacityError) as info:
        compile(BigMatmul, RunConfig(platform="a2a3sim"))
    err = info.value
    for quoted in ("'mm'", "Acc", "262144", "131072", "'a2a3'"):
        assert quoted in err.message
    assert (Path(err.file).resolve(), err.line) == (HERE, line_of("big-acc"))
    assert "target a5 (Acc 256 KiB)" in err.hint
    assert "Error: Function 'mm': Acc peak usage" in str(err)


@pl.program
class VecToLeft:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 32], pl.FP32],
          y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [32, 32], target_memory=pl.Mem.Vec)
        pl.move(t, target_memory=pl.Mem.Left)  # vec-to-left
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        y = self.k(x, y)
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_move_vec_to_left_fails_naming_the_legal_route(platform):
    cfg = RunConfig(platform=platform)
    with pytest.raises(MemorySpaceError) as info:
        compile(VecToLeft, cfg)
    err = info.value
    arch = platform.removesuffix("sim")
    assert f"tile.move has no path from Vec to Left on '{arch}'" in err.message
    assert "legal moves from Vec: Mat (cross-core transfer)" in err.message
    assert "pl.Mem.Mat" in err.hint
    assert err.line == line_of("vec-to-left")


@pl.program
class CrossCore:
    """Both cross-core transfers written explicitly: Vec -> Mat, then Acc -> Vec."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
          y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        va = pl.load(a, [0, 0], [32, 32], target_memory=pl.Mem.Vec)
        ea = pl.exp(va)
        ma = pl.move(ea, target_memory=pl.Mem.Mat)
        la = pl.move(ma, target_memory=pl.Mem.Left)
        mb = pl.load(b, [0, 0], [32, 32], target_memory=pl.Mem.Mat)
        rb = pl.move(mb, target_memory=pl.Mem.Right)
        acc = pl.matmul(la, rb)
        v = pl.move(acc, target_memory=pl.Mem.Vec)
        r = pl.relu(v)
        y = pl.store(r, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[32, 32], pl.FP32], b: pl.Tensor[[32, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        y = self.k(a, b, y)
        return y


@pytest.mark.parametrize("platform,route", [("a2a3sim", "via GM"), ("a5sim", "direct")])
def test_vec_to_mat_and_acc_to_vec_compile_and_run_on_both(platform, route, tmp_path):
    cfg = RunConfig(platform=platform)
    compiled = compile(CrossCore, cfg, output_dir=tmp_path)
    assert compiled.manifest.kernel("k").core_type == "mix"
    listing = (tmp_path / "kernels" / "k.txt").read_text()
    assert f"Vec -> Mat (explicit, cross-core {route})" in listing
    assert f"Acc -> Vec (explicit, cross-core {route})" in listing
    rng = np.random.default_rng(5)
    a = rng.standard_normal((32, 32)).astype(np.float32)
    b = rng.standard_normal((32, 32)).astype(np.float32)
    y = np.zeros((32, 32), np.float32)
    run(compiled, a, b, y, config=cfg)
    np.testing.assert_allclose(y, np.maximum(np.exp(a) @ b, 0), rtol=1e-5, atol=1e-4)


@pl.program
class Softmax:
    @pl.function(type=pl.FunctionType.InCore)
    def softmax(self, x: pl.Tensor[[256, 128], pl.FP32],
                out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]) -> pl.Tensor[[256, 128], pl.FP32]:
        for r in pl.range(0, 256, 64):
            t = pl.load(x, [r, 0], [64, 128])
            tmp = pl.create_tile([64, 128], pl.FP32)
            m = pl.row_max(t, tmp)
            e = pl.row_expand_expdif(t, m)
            s = pl.row_sum(e, tmp)
            out = pl.store(pl.row_expand_div(e, s), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[256, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[256, 128], pl.FP32]]) -> pl.Tensor[[256, 128], pl.FP32]:
        out = self.softmax(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_row_softmax_matches_numpy(platform, tmp_path):
    cfg = RunConfig(platform=platform)
    compiled = compile(Softmax, cfg, output_dir=tmp_path)
    x = np.random.default_rng(7).standard_normal((256, 128)).astype(np.float32)
    out = np.zeros_like(x)
    run(compiled, x, out, config=cfg)
    e = np.exp(x - x.max(axis=1, keepdims=True))
    np.testing.assert_allclose(out, e / e.sum(axis=1, keepdims=True), rtol=1e-6, atol=1e-7)


@pl.program
class Tail:
    @pl.function(type=pl.FunctionType.InCore)
    def tail(self, x: pl.Tensor[[128, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        for r in pl.range(0, 128, 32):
            t = pl.load(x, [r, 0], [64, 64])  # tail-load
            y = pl.store(t, [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 64], pl.FP32],
             y: pl.Out[pl.Tensor[[128, 64], pl.FP32]]) -> pl.Tensor[[128, 64], pl.FP32]:
        y = self.tail(x, y)
        return y


def test_load_past_the_end_in_a_loop_is_a_bounds_error():
    with pytest.raises(BoundsError) as info:
        lower(Tail, RunConfig(platform="a5sim"))
    assert "offset 96 + extent 64 > source extent 128" in info.value.message
    assert info.value.line == line_of("tail-load")


@pl.program
class WritesIn:
    @pl.function(type=pl.FunctionType.InCore)
    def axpy(self, x: pl.Tensor[[32, 32], pl.FP32],
             y: pl.Tensor[[32, 32], pl.FP32]) -> pl.Tensor[[32, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [32, 32])
        y = pl.store(t, [0, 0], y)  # writes-in
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        y = self.axpy(x, y)
        return y


def test_kernel_writing_an_in_parameter():
    with pytest.raises(DirectionError) as info:
        lower(WritesIn, RunConfig(platform="a2a3sim"))
    assert "Function 'axpy' writes parameter 'y', which is declared In" in info.value.message
    assert info.value.line == line_of("writes-in")


@pl.program
class LoadInEntry:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 32], pl.FP32],
          y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        t = pl.load(x, [0, 0], [32, 32])
        y = pl.store(t, [0, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 32], pl.FP32],
             y: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        pl.load(x, [0, 0], [32, 32])  # load-in-entry
        y = self.k(x, y)
        return y


def test_tile_op_in_orchestration_is_misplaced():
    with pytest.raises(PlacementError) as info:
        lower(LoadInEntry, RunConfig(platform="a2a3sim"))
    assert "tile op 'tile.load' is not allowed in Orchestration function 'main'" in info.value.message
    assert info.value.line == line_of("load-in-entry")


@pl.program
class Branchy:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[64, 32], pl.FP32], n: pl.Scalar[pl.INDEX],
          y: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        for i in pl.range(0, 4):
            t = pl.load(x, [i * 16, 0], [16, 32])
            if i % 2 == 1:
                u = pl.muls(t, 2.0)
            else:
                u = pl.adds(t, 1.0)
            row = (n - i) / 2 * 16  # int `/` truncates toward zero: n=1 gives rows 0, 0, 0, -16
            if row >= 0:
                y = pl.store(u, [i * 16, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[64, 32], pl.FP32],
             y: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        y = self.k(x, 1, y)
        return y


@pytest.mark.parametrize("platform", PLATFORMS)
def test_ifs_merge_values_and_int_division_truncates(platform, tmp_path):
    cfg = RunConfig(platform=platform)
    compiled = compile(Branchy, cfg, output_dir=tmp_path)
    x = np.random.default_rng(9).standard_normal((64, 32)).astype(np.float32)
    y = np.full_like(x, -5.0)
    run(compiled, x, y, config=cfg)
    expected = np.full_like(x, -5.0)
    for i in range(4):
        # (1 - i) / 2 truncates: 0, 0, 0 (not -1 as floor would), then -1 for i = 3
        if int((1 - i) / 2) * 16 >= 0:
            block = x[i * 16:(i + 1) * 16]
            expected[i * 16:(i + 1) * 16] = block * 2 if i % 2 else block + 1
    np.testing.assert_array_equal(y, expected)
    assert np.all(y[48:] == -5.0)  # i = 3: -2 / 2 = -1 -> skipped
