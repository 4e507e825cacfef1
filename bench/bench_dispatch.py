"""Dispatch time of a cached compile vs plain numpy doing the same math, side by side.

    .venv/bin/python bench/bench_dispatch.py [--platform a2a3sim,a5sim] [--repeat 200]

Each kernel is compiled once (the cached compile), then ``pytest_pypto.run`` of the
compiled artifact and the equivalent numpy expression are timed alternately, so
both see the same machine load; the table shows the median of the repeats and the
ratio sim / numpy.  Tile sizes are the largest the arch's capacities admit.

BLAS runs single-threaded on both sides (unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS
is set): the simulator issues many small matmuls, and on a loaded machine spinning
BLAS threads make matmul timings of either side meaningless.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

import numpy as np  # noqa: E402

import pytest_pypto  # noqa: E402
from pytest_pypto import RunConfig  # noqa: E402
from pytest_pypto.arch import PLATFORMS, ExecutionMode, parse_platform, spec  # noqa: E402
from pytest_pypto.runtime.loader import registry_bind  # noqa: E402
from pytest_pypto.runtime.worker import Worker  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # repo root
from st.kernels import add_program, matmul_program, softmax_program  # noqa: E402

TARGET_RATIO = 3.0


def np_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def vec_rows(platform: str, cols: int, live_tiles: int) -> int:
    """Largest power-of-two row count whose ``live_tiles`` FP32 [rows, cols] tiles fit Vec."""
    cap = spec(parse_platform(platform)[0]).capacity["Vec"]
    rows = 1
    while live_tiles * (2 * rows) * cols * 4 <= cap:
        rows *= 2
    return rows


def cases(platform: str, rng: np.random.Generator) -> list[tuple[str, Any, tuple, Callable]]:
    x = rng.standard_normal((512, 512)).astype(np.float32)
    y = rng.standard_normal((512, 512)).astype(np.float32)
    a = rng.standard_normal((256, 256)).astype(np.float32)
    b = rng.standard_normal((256, 256)).astype(np.float32)
    s = rng.standard_normal((512, 512)).astype(np.float32)
    out = np.empty((512, 512), np.float32)
    c = np.empty((256, 256), np.float32)
    sm = np.empty((512, 512), np.float32)
    return [
        ("add 512x512 fp32", add_program(512, 512, vec_rows(platform, 512, 3)),
         (x, y, out), lambda: x + y),
        ("matmul 256x256x256 fp32", matmul_program(256, 256, 256, 128, 128, 128),
         (a, b, c), lambda: a @ b),
        ("row softmax 512x512 fp32", softmax_program(512, 512, vec_rows(platform, 512, 4)),
         (s, sm), lambda: np_softmax(s)),
    ]


def op_calls(compiled: Any, arrays: tuple, platform: str) -> int:
    """Op calls one run makes (counted through a wrapping binder on a private worker)."""
    count = [0]

    def counting_bind(op: str) -> Callable[..., Any]:
        fn = registry_bind(op)

        def counted(*a: Any, **k: Any) -> Any:
            count[0] += 1
            return fn(*a, **k)

        return counted

    Worker(platform, bind=counting_bind).run(compiled, *arrays)
    return count[0]


def measure(
    sim: Callable[[], Any], ref: Callable[[], Any], repeat: int
) -> tuple[float, float, float]:
    """Median seconds of ``sim``, of the kernels inside it, and of ``ref``, timed
    alternately after a warm-up so both see the same machine load."""
    for _ in range(3):
        sim()
        ref()
    ts_sim, ts_kernel, ts_ref = [], [], []
    for _ in range(repeat):
        t0 = time.perf_counter()
        run = sim()
        t1 = time.perf_counter()
        ref()
        t2 = time.perf_counter()
        ts_sim.append(t1 - t0)
        ts_kernel.append(run.kernel_seconds)
        ts_ref.append(t2 - t1)
    return statistics.median(ts_sim), statistics.median(ts_kernel), statistics.median(ts_ref)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sims = ",".join(p for p, (_, mode) in PLATFORMS.items() if mode is ExecutionMode.SIM)
    parser.add_argument("--platform", default=sims)
    parser.add_argument("--repeat", type=int, default=200)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    rows = []
    for platform in args.platform.split(","):
        cfg = RunConfig(platform=platform)
        for name, program, arrays, ref in cases(platform, rng):
            compiled = pytest_pypto.compile(program, cfg)
            run = pytest_pypto.run(compiled, *arrays, config=cfg)  # check before timing
            expected = ref()
            np.testing.assert_allclose(arrays[-1], expected, rtol=1e-4, atol=1e-4)
            t_sim, t_kernel, t_ref = measure(
                lambda c=compiled, a=arrays, k=cfg: pytest_pypto.run(c, *a, config=k), ref, args.repeat
            )
            ops = op_calls(compiled, arrays, platform)
            rows.append((name, platform, len(run.tasks), ops, t_sim, t_kernel, t_ref))
    print(f"{'case':<26} {'platform':<9} {'tasks':>5} {'op calls':>8} {'sim (us)':>10} "
          f"{'kernels':>9} {'numpy (us)':>11} {'ratio':>7}")
    worst = 0.0
    for name, platform, tasks, ops, t_sim, t_kernel, t_ref in rows:
        ratio = t_sim / t_ref
        worst = max(worst, ratio)
        print(f"{name:<26} {platform:<9} {tasks:>5} {ops:>8} {t_sim * 1e6:>10.1f} "
              f"{t_kernel * 1e6:>9.1f} {t_ref * 1e6:>11.1f} {ratio:>6.2f}x")
    print(f"worst ratio {worst:.2f}x (target <= {TARGET_RATIO:.0f}x); "
          f"median of {args.repeat} alternating runs, compile cached; 'kernels' is the part "
          f"spent inside generated kernel code (op calls), the rest is the runtime; "
          f"BLAS threads: {os.environ['OPENBLAS_NUM_THREADS']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
