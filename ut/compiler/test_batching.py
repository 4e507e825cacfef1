"""Batched loop execution: bit-identical to the per-iteration loop, listed, guarded.

Each program is compiled twice, with batching on and off, and run on the same random
inputs; the outputs must be equal byte for byte (same per-op rounding).  They are
also checked against plain numpy, so both paths are right, not just equal.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile
from pytest_pypto.ir import batch

CFG = RunConfig(platform="a2a3sim")
DTYPES = {"FP32": (pl.FP32, np.float32), "FP16": (pl.FP16, np.float16),
          "BF16": (pl.BF16, ml_dtypes.bfloat16), "INT32": (pl.INT32, np.int32)}


def elementwise_program(dt, scale):
    R, C, TR = 64, 32, 8

    @pl.program
    class Elementwise:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], dt], y: pl.Tensor[[R, C], dt],
              out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            for r in pl.range(0, R, TR):
                xt = pl.load(x, [r, 0], [TR, C])
                yt = pl.load(y, [r, 0], [TR, C])
                t = pl.mul(pl.add(xt, yt), scale)
                out = pl.store(pl.maximum(t, yt), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], dt], y: pl.Tensor[[R, C], dt],
                 out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            out = self.k(x, y, out)
            return out

    return Elementwise


def column_softmax_program(dt):
    """Windows move along dim 1; the reductions read strided views of the input."""
    R, C, TC = 16, 128, 32

    @pl.program
    class ColumnBlocks:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], dt],
              out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            for c in pl.range(0, C, TC):
                t = pl.load(x, [0, c], [R, TC])
                tmp = pl.create_tile([R, TC], dt)
                m = pl.row_max(t, tmp)
                e = pl.exp(pl.row_expand_sub(t, m))
                s = pl.row_sum(e, tmp)
                out = pl.store(pl.row_expand_div(e, s), [0, c], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], dt],
                 out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            out = self.k(x, out)
            return out

    return ColumnBlocks


def matmul_program(dt):
    M, K, N, T = 64, 64, 64, 32

    @pl.program
    class Matmul:
        @pl.function(type=pl.FunctionType.InCore)
        def mm(self, a: pl.Tensor[[M, K], dt], b: pl.Tensor[[K, N], dt],
               c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            for m in pl.range(0, M, T):
                for n in pl.range(0, N, T):
                    a0 = pl.load(a, [m, 0], [T, T], target_memory=pl.Mem.Mat)
                    b0 = pl.load(b, [0, n], [T, T], target_memory=pl.Mem.Mat)
                    acc = pl.matmul(pl.move(a0, target_memory=pl.Mem.Left),
                                    pl.move(b0, target_memory=pl.Mem.Right))
                    for k in pl.range(T, K, T):
                        ak = pl.load(a, [m, k], [T, T], target_memory=pl.Mem.Mat)
                        bk = pl.load(b, [k, n], [T, T], target_memory=pl.Mem.Mat)
                        acc = pl.matmul_acc(acc, pl.move(ak, target_memory=pl.Mem.Left),
                                            pl.move(bk, target_memory=pl.Mem.Right))
                    c = pl.store(acc, [m, n], c)
            return c

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[M, K], dt], b: pl.Tensor[[K, N], dt],
                 c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            c = self.mm(a, b, c)
            return c

    return Matmul


def cast_program():
    R, C, TR = 32, 16, 4

    @pl.program
    class Cast:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32],
              out: pl.Out[pl.Tensor[[R, C], pl.FP16]]) -> pl.Tensor[[R, C], pl.FP16]:
            for r in pl.range(0, R, TR):
                t = pl.load(x, [r, 0], [TR, C])
                out = pl.store(pl.cast(pl.exp(t), pl.FP16), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[R, C], pl.FP16]]) -> pl.Tensor[[R, C], pl.FP16]:
            out = self.k(x, out)
            return out

    return Cast


def dynamic_stop_program():
    R, C, TR = 32, 16, 8

    @pl.program
    class DynStop:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], rows: pl.Scalar[pl.INDEX],
              out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            for r in pl.range(0, rows, TR):
                t = pl.load(x, [r, 0], [TR, C])
                out = pl.store(pl.adds(t, 1.0), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], rows: pl.Scalar[pl.INDEX],
                 out: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
            out = self.k(x, rows, out)
            return out

    return DynStop


def carried_sum_program():
    R, C, TR = 32, 16, 8

    @pl.program
    class Carried:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32],
              out: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
            acc = pl.load(x, [0, 0], [TR, C])
            for r in pl.range(TR, R, TR):
                acc = pl.add(acc, pl.load(x, [r, 0], [TR, C]))
            out = pl.store(acc, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[TR, C], pl.FP32]]) -> pl.Tensor[[TR, C], pl.FP32]:
            out = self.k(x, out)
            return out

    return Carried


def _both(program, inputs, out_shape, out_dtype, tmp_path):
    """Outputs with batching on and off, and the on-compile's kernel listing."""
    results, listing = [], ""
    for flag in (True, False):
        compiled = compile(program, CFG, output_dir=tmp_path / str(flag), batch_loops=flag)
        out = np.zeros(out_shape, out_dtype)
        run(compiled, *inputs, out, config=CFG)
        results.append(out)
        if flag:
            info = compiled.manifest.kernels[0]
            listing = (compiled.artifact_dir() / info.listing).read_text()
    return results[0], results[1], listing


def _same_bits(a, b):
    assert a.dtype == b.dtype and a.shape == b.shape
    assert a.view(np.uint8).tobytes() == b.view(np.uint8).tobytes()


def _random(rng, shape, npd):
    if np.dtype(npd).kind == "i":
        return rng.integers(-1000, 1000, size=shape).astype(npd)
    return rng.standard_normal(shape).astype(np.float32).astype(npd)


@pytest.mark.parametrize("seed", [0, 1])
@pytest.mark.parametrize("name", list(DTYPES))
def test_elementwise_batched_equals_per_iteration(name, seed, tmp_path):
    dt, npd = DTYPES[name]
    scale = 3 if name == "INT32" else 0.7
    rng = np.random.default_rng(seed)
    x, y = _random(rng, (64, 32), npd), _random(rng, (64, 32), npd)
    on, off, listing = _both(elementwise_program(dt, scale), (x, y), (64, 32), npd, tmp_path)
    _same_bits(on, off)
    assert "batched (" in listing
    wide = np.int64 if name == "INT32" else np.float32
    s = np.asarray(scale).astype(npd).astype(wide)  # the scalar narrows to the tile dtype first
    step = (x.astype(wide) + y.astype(wide)).astype(npd).astype(wide) * s
    expect = np.maximum(step.astype(npd).astype(wide), y.astype(wide)).astype(npd)
    _same_bits(on, expect)


@pytest.mark.parametrize("name", ["FP32", "FP16"])
def test_column_blocks_with_reductions_are_bit_identical(name, tmp_path):
    dt, npd = DTYPES[name]
    x = _random(np.random.default_rng(5), (16, 128), npd)
    on, off, listing = _both(column_softmax_program(dt), (x,), (16, 128), npd, tmp_path)
    _same_bits(on, off)
    assert "x[axis 1]" in listing
    blocks = x.astype(np.float32).reshape(16, 4, 32)
    e = np.exp(blocks - blocks.max(axis=2, keepdims=True))
    ref = (e / e.sum(axis=2, keepdims=True)).reshape(16, 128)
    np.testing.assert_allclose(on.astype(np.float32), ref, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize("name", ["FP32", "FP16", "BF16"])
def test_tiled_matmul_batched_equals_per_iteration(name, tmp_path):
    dt, npd = DTYPES[name]
    rng = np.random.default_rng(7)
    a, b = _random(rng, (64, 64), npd), _random(rng, (64, 64), npd)
    on, off, listing = _both(matmul_program(dt), (a, b), (64, 64), np.float32, tmp_path)
    _same_bits(on, off)
    assert "for m in pl.range(0, 64, 32): batched" in listing
    ref = a.astype(np.float32) @ b.astype(np.float32)
    np.testing.assert_allclose(on, ref, rtol=1e-4, atol=1e-3)


def test_cast_chain_batched_equals_per_iteration(tmp_path):
    x = _random(np.random.default_rng(2), (32, 16), np.float32)
    on, off, _ = _both(cast_program(), (x,), (32, 16), np.float16, tmp_path)
    _same_bits(on, off)
    _same_bits(on, np.exp(x).astype(np.float16))


def test_carried_tile_is_listed_as_not_batched(tmp_path):
    x = _random(np.random.default_rng(4), (32, 16), np.float32)
    on, off, listing = _both(carried_sum_program(), (x,), (8, 16), np.float32, tmp_path)
    _same_bits(on, off)
    assert "not batched: it carries 'acc" in listing
    ref = ((x[0:8] + x[8:16]) + x[16:24]) + x[24:32]
    _same_bits(on, ref)


def test_disabled_batching_is_listed(tmp_path):
    compiled = compile(cast_program(), CFG, output_dir=tmp_path, batch_loops=False)
    listing = (compiled.artifact_dir() / compiled.manifest.kernels[0].listing).read_text()
    assert "not batched: batching disabled" in listing


def test_dynamic_bound_runs_batched_or_falls_back(tmp_path, monkeypatch):
    calls = []
    real = batch.load
    monkeypatch.setattr(batch, "load", lambda *a, **k: calls.append(a[4]) or real(*a, **k))
    compiled = compile(dynamic_stop_program(), CFG, output_dir=tmp_path, batch_loops=True)
    x = _random(np.random.default_rng(6), (32, 16), np.float32)
    for rows, batched in ((32, True), (8, True), (24, True), (0, False)):  # one trip too
        calls.clear()
        out = np.full((32, 16), -5.0, np.float32)
        run(compiled, x, rows, out, config=CFG)
        expect = np.full((32, 16), -5.0, np.float32)
        expect[:rows] = x[:rows] + np.float32(1.0)
        _same_bits(out, expect)
        assert calls == ([rows // 8] if batched else [])


def test_windows_are_views_split_along_the_axis():
    t = np.arange(6 * 8).reshape(6, 8)
    w = batch.windows(t, (0, 2), (6, 3), 1, 2)
    assert w.shape == (2, 6, 3) and np.shares_memory(w, t)
    np.testing.assert_array_equal(w[1], t[:, 5:8])
    assert not batch.fits(t, (0, 2), (6, 3), 1, 3)  # 2 + 3*3 > 8


def add_program(dt):
    R, C, TR = 64, 32, 8

    @pl.program
    class Add:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], dt], y: pl.Tensor[[R, C], dt],
              out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            for r in pl.range(0, R, TR):
                xt = pl.load(x, [r, 0], [TR, C])
                yt = pl.load(y, [r, 0], [TR, C])
                out = pl.store(pl.add(xt, yt), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], dt], y: pl.Tensor[[R, C], dt],
                 out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            out = self.k(x, y, out)
            return out

    return Add


@pytest.mark.parametrize("name", ["FP32", "INT32", "FP16"])
def test_store_fusion_is_bit_identical_and_only_for_fp32(name, tmp_path, monkeypatch):
    """FP32 add computes straight into the Out windows (no separate store copy); INT32
    (int64 math, then wrapped) and FP16 (float32 math, then rounded) keep op + store."""
    dt, npd = DTYPES[name]
    stores = []
    real = batch.store
    monkeypatch.setattr(batch, "store", lambda *a, **k: stores.append(1) or real(*a, **k))
    rng = np.random.default_rng(11)
    x, y = _random(rng, (64, 32), npd), _random(rng, (64, 32), npd)
    if name == "FP32":  # specials and overflow must round the same on both paths
        x[0, :4] = [np.nan, np.inf, -np.inf, 3e38]
        y[0, :4] = [1.0, -np.inf, 1.0, 3e38]
    on, off, listing = _both(add_program(dt), (x, y), (64, 32), npd, tmp_path)
    assert "batched (" in listing
    _same_bits(on, off)
    wide = np.int64 if name == "INT32" else np.float32
    with np.errstate(all="ignore"):
        _same_bits(on, (x.astype(wide) + y.astype(wide)).astype(npd))
    # the unbatched run stores per iteration through tile.store, never batch.store
    assert stores == ([] if name == "FP32" else [1])


def _kernel_text(compiled, name: str = "k") -> str:
    return compiled.memory.text(f"kernels/{name}.py")


def test_windows_proved_in_bounds_at_compile_time_have_no_run_time_guard():
    """Static tensor shapes, constant loop bounds and offsets `[r, 0]`: every window is in
    bounds whatever arrays arrive (staging checks their shapes), so no `_batch.fits`; a
    dynamic loop bound keeps the guard.  The aliasing guard depends on the arrays: kept."""
    static = compile(add_program(pl.FP32), CFG, batch_loops=True)
    text = _kernel_text(static)
    assert "_batch.fits(" not in text and "_batch.may_alias(" in text
    dynamic = compile(dynamic_stop_program(), CFG, batch_loops=True)
    assert _kernel_text(dynamic).count("_batch.fits(") == 2  # the load of x, the store to out


def test_one_trip_loop_runs_batched_and_matches_numpy():
    x = _random(np.random.default_rng(7), (64, 32), np.float32)
    y = _random(np.random.default_rng(8), (64, 32), np.float32)

    @pl.program
    class OneTrip:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Tensor[[64, 32], pl.FP32],
              out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
            for r in pl.range(0, 64, 64):
                out = pl.store(pl.sub(pl.load(x, [r, 0], [64, 32]),
                                      pl.load(y, [r, 0], [64, 32])), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[64, 32], pl.FP32], y: pl.Tensor[[64, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
            out = self.k(x, y, out)
            return out

    for platform in ("a2a3sim", "a5sim"):
        cfg = RunConfig(platform=platform)
        compiled = compile(OneTrip, cfg, batch_loops=True)
        assert "_batch.store_into(" in _kernel_text(compiled)
        out = np.full((64, 32), 9.0, np.float32)
        run(compiled, x, y, out, config=cfg)
        _same_bits(out, x - y)
