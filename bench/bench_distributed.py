"""Simulated multi-chip collectives: an in-kernel allreduce over ranks x sizes.

    .venv/bin/python bench/bench_distributed.py [--ranks 2,4,8] [--sizes 64K,1M,4M] [--repeat 3]

Each rank copies its input into its window slice (``pld.tensor.put`` to itself), the
ranks allreduce the windows in the kernel (``pld.tensor.allreduce``, every rank meeting
the others: docs/design/distributed.md §3, §4) and copy the result out.  The table shows
the median wall time of a whole run (host orchestrator, scheduling, staging, the ranks'
kernels; compiled once beforehand) next to the same collective in plain numpy (the sum
of the ranks' arrays written back to every rank), and their ratio.  Sizes are bytes of
FP32 data per rank.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

import pytest_pypto.language as pl  # noqa: E402
import pytest_pypto.language.distributed as pld  # noqa: E402
from pytest_pypto.compat.pypto import ir  # noqa: E402
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import DistributedConfig  # noqa: E402

COLS = 1024
NR = pl.dynamic("NR")


def build(rows: int):
    """The allreduce program for ``rows`` x COLS FP32 per rank."""

    @pl.program
    class AllReduceBench:
        @pl.function(type=pl.FunctionType.InCore)
        def step(self, x: pl.Tensor[[rows, COLS], pl.FP32],
                 y: pl.Out[pl.Tensor[[rows, COLS], pl.FP32]],
                 data: pl.InOut[pld.DistributedTensor[[rows, COLS], pl.FP32]],
                 sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
                 ) -> pl.Tensor[[rows, COLS], pl.FP32]:
            me = pld.rank(pld.get_comm_ctx(data))
            pld.tensor.put(data, peer=me, src=x, atomic=pld.AtomicType.None_)
            data = pld.tensor.allreduce(data, sig, op=pld.ReduceOp.Sum)
            pld.tensor.get(y, peer=me, src=data)
            return y

        @pl.function(type=pl.FunctionType.Orchestration)
        def chip(self, x: pl.Tensor[[rows, COLS], pl.FP32],
                 y: pl.Out[pl.Tensor[[rows, COLS], pl.FP32]],
                 data: pl.InOut[pld.DistributedTensor[[rows, COLS], pl.FP32]],
                 sig: pl.InOut[pld.DistributedTensor[[NR, 1], pl.INT32]]
                 ) -> pl.Tensor[[rows, COLS], pl.FP32]:
            return self.step(x, y, data, sig)

        @pl.function(level=pl.Level.HOST, role=pl.Role.Orchestrator)
        def host(self, x: pl.Tensor[[NR, rows, COLS], pl.FP32],
                 y: pl.Out[pl.Tensor[[NR, rows, COLS], pl.FP32]]
                 ) -> pl.Tensor[[NR, rows, COLS], pl.FP32]:
            buf = pld.alloc_window_buffer(rows * COLS * pl.FP32.get_byte())
            sig_buf = pld.alloc_window_buffer(pld.world_size() * pl.INT32.get_byte())
            for r in pl.range(pld.world_size()):
                self.chip(x[r], y[r], pld.window(buf, [rows, COLS], dtype=pl.FP32),
                          pld.window(sig_buf, [pld.world_size(), 1], dtype=pl.INT32), device=r)
            return y

    return AllReduceBench


def numpy_allreduce(x: np.ndarray, y: np.ndarray) -> None:
    """The same collective in plain numpy: every rank's y is the sum of all x."""
    total = x.sum(axis=0)
    y[...] = total


def run(ranks: int, nbytes: int, repeat: int = 3, platform: str = "a2a3sim"):
    """(sim seconds, numpy seconds, outputs, inputs) for one cell of the table."""
    rows = max(1, nbytes // (4 * COLS))
    compiled = ir.compile(build(rows), platform=platform,
                          distributed_config=DistributedConfig(device_ids=list(range(ranks))))
    rng = np.random.default_rng(0)
    x = rng.standard_normal((ranks, rows, COLS), dtype=np.float32)
    y = np.zeros_like(x)
    compiled(x, y)  # warm: chip programs compiled, buffers touched
    sim, ref = [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        compiled(x, y)
        sim.append(time.perf_counter() - t0)
        z = np.zeros_like(x)
        t0 = time.perf_counter()
        numpy_allreduce(x, z)
        ref.append(time.perf_counter() - t0)
    return statistics.median(sim), statistics.median(ref), y, x


def _size(text: str) -> int:
    units = {"K": 1 << 10, "M": 1 << 20}
    return int(text[:-1]) * units[text[-1].upper()] if text[-1].upper() in units else int(text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ranks", default="2,4,8")
    ap.add_argument("--sizes", default="64K,1M,4M")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--platform", default="a2a3sim")
    args = ap.parse_args()
    print("| ranks | bytes / rank | sim (ms) | numpy (ms) | sim / numpy |")
    print("|---|---|---|---|---|")
    for ranks in (int(r) for r in args.ranks.split(",")):
        for text in args.sizes.split(","):
            sim, ref, _, _ = run(ranks, _size(text), args.repeat, args.platform)
            print(f"| {ranks} | {text} | {sim * 1e3:.1f} | {ref * 1e3:.2f} | "
                  f"{sim / ref:.0f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
