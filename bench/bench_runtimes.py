"""Per-dispatch cost of the process-isolating runtime against the in-process simulator.

    .venv/bin/python bench/bench_runtimes.py [--platform a5sim] [--repeat 100]

Each kernel is compiled once; then runtime ``sim`` (in-process `Worker`) and runtime
``isolated`` (the same simulator in a child process, arrays over a pipe) execute the
same artifact alternately, so both see the same machine load.  The table shows the
medians and their difference (the isolation overhead per dispatch) and ratio.  A
second table shows how long a fresh child takes to answer its first run with each
multiprocessing start method (a child is started once per process and after every
crash or timeout).

BLAS runs single-threaded (unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS is set), as
in bench_dispatch.py.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

import numpy as np  # noqa: E402

import pytest_pypto  # noqa: E402
import pytest_pypto.language as pl  # noqa: E402
from pytest_pypto import RunConfig  # noqa: E402
from pytest_pypto.runtime.isolated import IsolatedRuntime  # noqa: E402
from pytest_pypto.runtime.simulator import SimRuntime  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # repo root
from st.kernels import add_program, matmul_program  # noqa: E402

PR, PC = 128, 128  # the pipeline's tensors


@pl.program
class FourStage:
    """out = exp((x * 3 - 1) + y) in four kernels chained through create_tensor buffers."""

    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, x: pl.Tensor[[PR, PC], pl.FP32],
              t: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        t = pl.store(pl.mul(pl.load(x, [0, 0], [PR, PC]), 3.0), [0, 0], t)
        return t

    @pl.function(type=pl.FunctionType.InCore)
    def shift(self, a: pl.Tensor[[PR, PC], pl.FP32],
              t: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        t = pl.store(pl.sub(pl.load(a, [0, 0], [PR, PC]), 1.0), [0, 0], t)
        return t

    @pl.function(type=pl.FunctionType.InCore)
    def plus(self, a: pl.Tensor[[PR, PC], pl.FP32], y: pl.Tensor[[PR, PC], pl.FP32],
             t: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        s = pl.add(pl.load(a, [0, 0], [PR, PC]), pl.load(y, [0, 0], [PR, PC]))
        t = pl.store(s, [0, 0], t)
        return t

    @pl.function(type=pl.FunctionType.InCore)
    def expo(self, a: pl.Tensor[[PR, PC], pl.FP32],
             out: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        out = pl.store(pl.exp(pl.load(a, [0, 0], [PR, PC])), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[PR, PC], pl.FP32], y: pl.Tensor[[PR, PC], pl.FP32],
             out: pl.Out[pl.Tensor[[PR, PC], pl.FP32]]) -> pl.Tensor[[PR, PC], pl.FP32]:
        t1 = pl.create_tensor([PR, PC], pl.FP32)
        t1 = self.scale(x, t1)
        t2 = pl.create_tensor([PR, PC], pl.FP32)
        t2 = self.shift(t1, t2)
        t3 = pl.create_tensor([PR, PC], pl.FP32)
        t3 = self.plus(t2, y, t3)
        out = self.expo(t3, out)
        return out


def cases(rng: np.random.Generator) -> list[tuple[str, Any, tuple]]:
    x, y = rng.standard_normal((2, 128, 128), dtype=np.float32)
    a, b = rng.standard_normal((2, 128, 128), dtype=np.float32)
    px, py = rng.uniform(-1, 1, (2, PR, PC)).astype(np.float32)
    return [
        ("add 128x128 fp32", add_program(128, 128, 32), (x, y, np.empty_like(x))),
        ("matmul 128x128x128 fp32", matmul_program(128, 128, 128, 64, 64, 64),
         (a, b, np.empty_like(a))),
        ("4-kernel pipeline 128x128", FourStage, (px, py, np.empty_like(px))),
    ]


def timed(runtime: Any, compiled: Any, arrays: Any, config: RunConfig) -> float:
    """Seconds one ``runtime.execute`` takes."""
    start = time.perf_counter()
    runtime.execute(compiled, arrays, config=config)
    return time.perf_counter() - start


def dispatch_table(platform: str, repeat: int) -> None:
    config = RunConfig(platform=platform)
    sim, isolated = SimRuntime(), IsolatedRuntime()
    rows = []
    for name, program, arrays in cases(np.random.default_rng(0)):
        compiled = pytest_pypto.compile(program, config)
        here = [np.copy(a) for a in arrays]
        there = [np.copy(a) for a in arrays]
        for _ in range(3):  # warm both (build, first child)
            sim.execute(compiled, here, config=config)
            isolated.execute(compiled, there, config=config)
        np.testing.assert_array_equal(here[-1], there[-1])  # the same simulator, both sides
        t_sim, t_iso = [], []
        for _ in range(repeat):
            t_sim.append(timed(sim, compiled, here, config))
            t_iso.append(timed(isolated, compiled, there, config))
        rows.append((name, statistics.median(t_sim), statistics.median(t_iso)))
    isolated.close()
    print(f"per-dispatch medians on {platform}, {repeat} alternating runs each "
          f"(start method {isolated.start_method})")
    print(f"{'kernel':28} {'sim (ms)':>10} {'isolated (ms)':>14} {'overhead (ms)':>14} "
          f"{'ratio':>7}")
    for name, s, i in rows:
        print(f"{name:28} {s * 1e3:10.3f} {i * 1e3:14.3f} {(i - s) * 1e3:14.3f} {i / s:7.2f}")


def startup_table(platform: str, repeat: int) -> None:
    import multiprocessing

    config = RunConfig(platform=platform)
    name, program, arrays = cases(np.random.default_rng(0))[0]
    compiled = pytest_pypto.compile(program, config)
    print(f"\nfresh child: first {name} answered (median of {repeat})")
    print(f"{'start method':14} {'ms':>10}")
    for method in ("fork", "forkserver", "spawn"):
        if method not in multiprocessing.get_all_start_methods():
            continue
        times = []
        for _ in range(repeat):
            rt = IsolatedRuntime(start_method=method)
            times.append(timed(rt, compiled, arrays, config))
            rt.close()
        print(f"{method:14} {statistics.median(times) * 1e3:10.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="a5sim")
    parser.add_argument("--repeat", type=int, default=100)
    parser.add_argument("--startups", type=int, default=5)
    args = parser.parse_args()
    dispatch_table(args.platform, args.repeat)
    startup_table(args.platform, args.startups)


if __name__ == "__main__":
    main()
