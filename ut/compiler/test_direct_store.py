"""Direct stores: a batched FP32 ufunc op whose operands are only loads runs on the
tensors' windows (no tiles), bit-identical to numpy float32, and a custom binder still
gets the tile path."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig, run
from pytest_pypto.compiler.api import compile
from pytest_pypto.ir import batch
from pytest_pypto.runtime.loader import registry_bind
from pytest_pypto.runtime.worker import Worker

PLATFORMS = ("a2a3sim", "a5sim")
OPS = {"add": (pl.add, np.add), "sub": (pl.sub, np.subtract), "mul": (pl.mul, np.multiply),
       "div": (pl.div, np.divide), "maximum": (pl.maximum, np.maximum),
       "minimum": (pl.minimum, np.minimum)}


def binary_program(op, *, rows=64, cols=32, tile_rows=8, dt=pl.FP32, first=0):
    R, C, TR, R0 = rows, cols, tile_rows, first

    @pl.program
    class Binary:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], dt], y: pl.Tensor[[R, C], dt],
              out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            for r in pl.range(R0, R, TR):
                xt = pl.load(x, [r, 0], [TR, C])
                yt = pl.load(y, [r, 0], [TR, C])
                out = pl.store(op(xt, yt), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], dt], y: pl.Tensor[[R, C], dt],
                 out: pl.Out[pl.Tensor[[R, C], dt]]) -> pl.Tensor[[R, C], dt]:
            out = self.k(x, y, out)
            return out

    return Binary


def column_program():
    """Windows move along dim 1, and x's rows start at a constant offset of 4."""

    @pl.program
    class Columns:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[20, 128], pl.FP32], y: pl.Tensor[[16, 128], pl.FP32],
              out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            for c in pl.range(0, 128, 32):
                xt = pl.load(x, [4, c], [16, 32])
                yt = pl.load(y, [0, c], [16, 32])
                out = pl.store(pl.sub(xt, yt), [0, c], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[20, 128], pl.FP32], y: pl.Tensor[[16, 128], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 128], pl.FP32]]) -> pl.Tensor[[16, 128], pl.FP32]:
            out = self.k(x, y, out)
            return out

    return Columns


def reused_load_program():
    """``xt`` is read twice: its tile must exist, so the store is not direct."""

    @pl.program
    class Reused:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 32], pl.FP32],
              out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            for r in pl.range(0, 32, 8):
                xt = pl.load(x, [r, 0], [8, 32])
                out = pl.store(pl.mul(xt, xt), [r, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, 32], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
            out = self.k(x, out)
            return out

    return Reused


def _text(compiled) -> str:
    return compiled.memory.text("kernels/k.py")


def _specials(rng, shape):
    x = rng.standard_normal(shape).astype(np.float32)
    y = rng.standard_normal(shape).astype(np.float32)
    x[0, :8] = [np.nan, np.inf, -np.inf, 3e38, 0.0, -0.0, 1.0, 0.0]
    y[0, :8] = [1.0, -np.inf, 1.0, 3e38, 0.0, 0.0, 0.0, -0.0]
    return x, y


def _count_tile_loads(monkeypatch) -> list:
    loads = []
    real = batch.load
    monkeypatch.setattr(batch, "load", lambda *a, **k: loads.append(1) or real(*a, **k))
    return loads


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("name", list(OPS))
def test_direct_store_is_numpy_float32_bit_for_bit(name, platform, monkeypatch):
    dsl_op, np_op = OPS[name]
    cfg = RunConfig(platform=platform)
    compiled = compile(binary_program(dsl_op), cfg, batch_loops=True)
    assert f"_uf_tile_{name}(x, y, out=out_1)" in _text(compiled)  # the windows cover it all
    loads = _count_tile_loads(monkeypatch)
    x, y = _specials(np.random.default_rng(3), (64, 32))
    out = np.full((64, 32), 7.0, np.float32)
    run(compiled, x, y, out, config=cfg)
    with np.errstate(all="ignore"):
        want = np_op(x, y)
    assert out.tobytes() == want.tobytes()
    assert loads == []  # no tile was made


@pytest.mark.parametrize("platform", PLATFORMS)
def test_windows_covering_part_of_the_tensor_are_sliced(platform):
    cfg = RunConfig(platform=platform)
    compiled = compile(binary_program(pl.mul, first=24), cfg, batch_loops=True)
    assert "_uf_tile_mul(x[r:r + _n0 * 8, 0:32], y[r:r + _n0 * 8, 0:32], " \
        "out=out_1[r:r + _n0 * 8, 0:32])" in _text(compiled)
    x, y = _specials(np.random.default_rng(4), (64, 32))
    out = np.zeros((64, 32), np.float32)
    run(compiled, x, y, out, config=cfg)
    with np.errstate(all="ignore"):
        assert out[24:].tobytes() == (x[24:] * y[24:]).tobytes()
    assert np.isnan(out[:24]).all()  # never written: the undefined-memory value


@pytest.mark.parametrize("platform", PLATFORMS)
def test_windows_along_dim_1_at_a_constant_offset(platform, monkeypatch):
    cfg = RunConfig(platform=platform)
    compiled = compile(column_program(), cfg, batch_loops=True)
    assert "x[4:4 + 16, c:c + _n0 * 32]" in _text(compiled)
    loads = _count_tile_loads(monkeypatch)
    rng = np.random.default_rng(5)
    x = rng.standard_normal((20, 128)).astype(np.float32)
    y = rng.standard_normal((16, 128)).astype(np.float32)
    out = np.zeros((16, 128), np.float32)
    run(compiled, x, y, out, config=cfg)
    assert out.tobytes() == (x[4:] - y).tobytes()
    assert loads == []


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_custom_binder_gets_the_tile_path_with_the_same_bits(platform):
    """The registry's binding is what makes the ufunc the op's semantics; a binder that
    wraps ops (counting here; precise mode, fault injection) must see its op called."""
    calls: list[str] = []

    def counting(op: str):
        fn = registry_bind(op)
        return lambda *a, **k: calls.append(op) or fn(*a, **k)

    cfg = RunConfig(platform=platform)
    compiled = compile(binary_program(pl.div), cfg, batch_loops=True)
    x, y = _specials(np.random.default_rng(9), (64, 32))
    out = np.zeros((64, 32), np.float32)
    Worker(platform, bind=counting).run(compiled, x, y, out, config=cfg)
    with np.errstate(all="ignore"):
        assert out.tobytes() == np.divide(x, y).tobytes()
    assert calls.count("tile.div") == 1  # one batched call of the op itself


def test_not_direct_when_a_tile_is_needed_or_the_math_is_not_float32():
    cfg = RunConfig(platform="a2a3sim")
    assert "_uf_" not in _text(compile(reused_load_program(), cfg, batch_loops=True))
    assert "_uf_" not in _text(compile(binary_program(pl.add, dt=pl.FP16), cfg, batch_loops=True))
    assert "_uf_" not in _text(compile(binary_program(pl.add), cfg, batch_loops=False))


def test_reused_load_still_computes_the_product():
    cfg = RunConfig(platform="a5sim")
    x = np.random.default_rng(2).standard_normal((32, 32)).astype(np.float32)
    out = np.zeros_like(x)
    run(compile(reused_load_program(), cfg, batch_loops=True), x, out, config=cfg)
    assert out.tobytes() == (x * x).tobytes()
