"""Allocation-stable generated kernels: moves as views, matmul_acc in place, dead tiles dropped.

Outputs must stay bit-identical: each program runs on both sims, with and without
batched loops, against an independent numpy reference of the device's accumulation
order and against the previous (copying) path, which a binder restores here by
turning view moves back into copies and the in-place accumulate off.  The aliasing rule
has its negative tests: a move whose source (or result) is later written in place must
stay a copy, so the write does not reach the other tile.
"""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.compiler.api import compile
from pytest_pypto.ir.ops import matmul as matmul_ops
from pytest_pypto.runtime.loader import registry_bind
from pytest_pypto.runtime.worker import Worker

PLATFORMS = ("a2a3sim", "a5sim")
M, K, N, T = 64, 256, 64, 32  # K in 8 chunks: a matmul and 7 matmul_acc per output tile


def chain_program():
    """c = a @ b over [T, T] output tiles, K accumulated chunk by chunk (matmul_acc)."""

    @pl.program
    class Chain:
        @pl.function(type=pl.FunctionType.InCore)
        def mm(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
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
        def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
                 c: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
            c = self.mm(a, b, c)
            return c

    return Chain


def snapshot_program(write_source: bool):
    """Move an Acc tile to Vec, then write one of the two in place; store both.

    ``write_source``: accumulate into the Acc source after the move (the snapshot must
    keep the first product); otherwise write an element of the moved Vec tile (the Acc
    source must keep it)."""
    S = 16

    @pl.program
    class Snapshot:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, a: pl.Tensor[[S, S], pl.FP32], b: pl.Tensor[[S, S], pl.FP32],
              first: pl.Out[pl.Tensor[[S, S], pl.FP32]],
              final: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
            la = pl.move(pl.load(a, [0, 0], [S, S], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Left)
            rb = pl.move(pl.load(b, [0, 0], [S, S], target_memory=pl.Mem.Mat),
                         target_memory=pl.Mem.Right)
            acc = pl.matmul(la, rb)
            snap = pl.move(acc, target_memory=pl.Mem.Vec)
            if write_source:
                acc = pl.matmul_acc(acc, la, rb)
                first = pl.store(snap, [0, 0], first)
            else:
                snap = pl.tile.write(snap, [0, 0], 5.0)
                first = pl.store(snap, [0, 0], first)
            final = pl.store(acc, [0, 0], final)
            return first, final

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[S, S], pl.FP32], b: pl.Tensor[[S, S], pl.FP32],
                 first: pl.Out[pl.Tensor[[S, S], pl.FP32]],
                 final: pl.Out[pl.Tensor[[S, S], pl.FP32]]):
            first, final = self.k(a, b, first, final)
            return first, final

    return Snapshot


def chain_reference(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The device's order: per output tile, FP32 product of chunk 0, then += each chunk."""
    c = np.empty((M, N), np.float32)
    for m in range(0, M, T):
        for n in range(0, N, T):
            acc = np.ascontiguousarray(a[m:m + T, :T]) @ np.ascontiguousarray(b[:T, n:n + T])
            for k in range(T, K, T):
                acc = acc + (np.ascontiguousarray(a[m:m + T, k:k + T])
                             @ np.ascontiguousarray(b[k:k + T, n:n + T]))
            c[m:m + T, n:n + T] = acc
    return c


def kernel_source(compiled, name: str) -> str:
    return (Path(compiled.artifact_dir()) / "kernels" / f"{name}.py").read_text()


def copying_bind(op: str):
    """The previous path: every move a copy (matmul_acc's in-place path is patched off)."""
    fn = registry_bind(op)
    if op != "tile.move":
        return fn

    def move(*args, **kwargs):
        kwargs.pop("share", None)
        return fn(*args, **kwargs)

    return move


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((M, K)).astype(np.float32),
            rng.standard_normal((K, N)).astype(np.float32))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("batch_loops", [True, False])
def test_matmul_acc_chain_is_bit_identical(platform, batch_loops, monkeypatch):
    compiled = compile(chain_program(), RunConfig(platform=platform), batch_loops=batch_loops)
    source = kernel_source(compiled, "mm").split("__tasks(")[0]  # (not the task-batched one)
    assert source.count("share=True") == 4 * (2 if batch_loops else 1)  # every move a view
    assert "del move_2, move_3" in source  # the chain's temporaries die each iteration
    a, b = inputs()
    new = np.empty((M, N), np.float32)
    Worker(platform).run(compiled, a, b, new)
    expected = chain_reference(a, b)
    np.testing.assert_array_equal(new.view(np.uint32), expected.view(np.uint32))
    monkeypatch.setattr(matmul_ops, "_acc_in_place", lambda *args: False)
    old = np.empty((M, N), np.float32)
    Worker(platform, bind=copying_bind).run(compiled, a, b, old)
    np.testing.assert_array_equal(new.view(np.uint32), old.view(np.uint32))


def _allocating_bind(extra: dict[str, list[int]]):
    """A binder recording, per op call, the traced bytes allocated at the call's peak."""

    def bind(op: str):
        fn = registry_bind(op)

        def measured(*args, **kwargs):
            before = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            result = fn(*args, **kwargs)
            extra.setdefault(op, []).append(tracemalloc.get_traced_memory()[1] - before)
            return result

        return measured

    return bind


@pytest.mark.parametrize("platform", PLATFORMS)
def test_moves_and_matmul_acc_allocate_no_tile_per_iteration(platform):
    compiled = compile(chain_program(), RunConfig(platform=platform), batch_loops=False)
    a, b = inputs(1)
    c = np.empty((M, N), np.float32)
    extra: dict[str, list[int]] = {}
    worker = Worker(platform, bind=_allocating_bind(extra))
    worker.run(compiled, a, b, c)  # first run: the accumulate's scratch buffer is made
    extra.clear()
    tracemalloc.start()
    try:
        worker.run(compiled, a, b, c)
    finally:
        tracemalloc.stop()
    tile_bytes = T * T * 4
    tiles = M // T * (N // T)
    assert len(extra["tile.matmul_acc"]) == tiles * (K // T - 1)
    assert len(extra["tile.move"]) == 2 * tiles * K // T
    # a tile-sized numpy buffer per call would show; a TileValue and its view do not
    assert max(extra["tile.matmul_acc"]) < tile_bytes // 2
    assert max(extra["tile.move"]) < tile_bytes // 2
    assert min(extra["tile.load"]) >= tile_bytes  # the measure does see a tile's buffer
    np.testing.assert_array_equal(c.view(np.uint32), chain_reference(a, b).view(np.uint32))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("write_source", [True, False])
def test_move_then_in_place_write_keeps_the_other_tile(platform, write_source):
    compiled = compile(snapshot_program(write_source), RunConfig(platform=platform))
    source = kernel_source(compiled, "k")
    snap_line = next(line for line in source.splitlines() if "target_memory='Vec'" in line)
    assert "share=True" not in snap_line  # written later: the move must copy
    rng = np.random.default_rng(2)
    a, b = (rng.standard_normal((16, 16)).astype(np.float32) for _ in range(2))
    first, final = np.empty((16, 16), np.float32), np.empty((16, 16), np.float32)
    Worker(platform).run(compiled, a, b, first, final)
    product = a @ b
    if write_source:
        np.testing.assert_array_equal(first, product)  # the snapshot kept the first product
        np.testing.assert_array_equal(final, product + product)
    else:
        expected = product.copy()
        expected[0, 0] = 5.0
        np.testing.assert_array_equal(first, expected)
        np.testing.assert_array_equal(final, product)  # the write did not reach the source


def test_share_flag_makes_a_view_and_its_absence_a_copy():
    from pytest_pypto.ir.dtypes import FP32
    from pytest_pypto.ir.registry import REGISTRY
    from pytest_pypto.ir.types import TileType
    from pytest_pypto.ir.values import TileValue

    move = REGISTRY["tile.move"].execute
    src = TileValue(np.arange(16, dtype=np.float32).reshape(4, 4), (4, 4), FP32, "Mat")
    out = TileType((4, 4), FP32, "Left")
    shared, copied = move(src, target_memory="Left", out=out, share=True), move(src, out=out)
    assert shared.space == copied.space == "Left"
    assert np.shares_memory(shared.data, src.data)
    assert not np.shares_memory(copied.data, src.data)
    np.testing.assert_array_equal(copied.data, np.arange(16, dtype=np.float32).reshape(4, 4))
