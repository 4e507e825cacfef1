"""Dispatch time of a cached compile vs plain numpy doing the same math, side by side.

    .venv/bin/python bench/bench_dispatch.py [--platform a2a3sim,a5sim] [--repeat 200]
        [--budget 1.5] [--fresh 5] [--only REGEX]

Each kernel is compiled once (the cached compile), then ``pytest_pypto.run`` of the
compiled artifact and the equivalent numpy expression are timed alternately, so
both see the same machine load; the table shows the median of the repeats and the
ratio sim / numpy.  Tile sizes are the largest the arch's capacities admit.

The sweep: add 128^2 .. 4096^2, matmul 128^3 .. 1024^3 (128^3 tiles), row softmax
256x512 .. 4096^2.  Repeats per case: ``--repeat`` at most, fewer for large cases
(about ``--budget`` seconds of timing each, at least 5).  The ``fresh`` rows run one
measurement per child process (``--fresh`` children, a fresh interpreter each: the
allocator has seen nothing but the compile), and report the median of the children's
medians.

To measure another tree (e.g. a ``git archive`` of an older commit), run this script
with ``PYTHONPATH=<tree>``: the header names the ``pytest_pypto`` actually imported.

BLAS runs single-threaded on both sides (unless OPENBLAS_NUM_THREADS / OMP_NUM_THREADS
is set): the simulator issues many small matmuls, and on a loaded machine spinning
BLAS threads make matmul timings of either side meaningless.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
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

TARGET_RATIO = 1.5  # from 512^2 up (issue #13)
TARGET_SMALL = 5.0  # add 128^2

ADD_SIZES = (128, 256, 512, 1024, 2048, 4096)
MATMUL_SIZES = (128, 256, 512, 1024)
SOFTMAX_SHAPES = ((256, 512), (512, 512), (1024, 1024), (2048, 2048), (4096, 4096))


def np_softmax(x: np.ndarray) -> np.ndarray:
    m = x.max(axis=1, keepdims=True)
    e = np.exp(x - m)
    return e / e.sum(axis=1, keepdims=True)


def vec_rows(platform: str, rows: int, cols: int, live_tiles: int) -> int:
    """Largest power-of-two row count (at most ``rows``) whose ``live_tiles`` FP32
    [rows, cols] tiles fit Vec."""
    cap = spec(parse_platform(platform)[0]).capacity["Vec"]
    tile = 1
    while tile < rows and live_tiles * (2 * tile) * cols * 4 <= cap:
        tile *= 2
    return tile


Case = tuple[str, Any, tuple, Callable[[], Any]]


def make_case(name: str, platform: str, rng: np.random.Generator) -> Case:
    """One sweep row by name: 'add N', 'matmul N', 'softmax RxC'."""
    kind, size = name.split()
    f32 = np.float32
    if kind == "add":
        n = int(size)
        x, y = (rng.standard_normal((n, n)).astype(f32) for _ in range(2))
        out = np.empty((n, n), f32)
        program = add_program(n, n, vec_rows(platform, n, n, 3))
        return f"add {n}x{n}", program, (x, y, out), lambda: x + y
    if kind == "matmul":
        n = int(size)
        a, b = (rng.standard_normal((n, n)).astype(f32) for _ in range(2))
        c = np.empty((n, n), f32)
        t = min(n, 128)
        return f"matmul {n}x{n}x{n}", matmul_program(n, n, n, t, t, t), (a, b, c), lambda: a @ b
    if kind == "softmax":
        r, c_ = (int(v) for v in size.split("x"))
        s = rng.standard_normal((r, c_)).astype(f32)
        out = np.empty((r, c_), f32)
        program = softmax_program(r, c_, vec_rows(platform, r, c_, 4))
        return f"softmax {r}x{c_}", program, (s, out), lambda: np_softmax(s)
    raise ValueError(f"unknown case {name!r}")


def sweep_names() -> list[str]:
    return (
        [f"add {n}" for n in ADD_SIZES]
        + [f"matmul {n}" for n in MATMUL_SIZES]
        + [f"softmax {r}x{c}" for r, c in SOFTMAX_SHAPES]
    )


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
    sim: Callable[[], Any], ref: Callable[[], Any], repeat: int, budget: float
) -> tuple[float, float, float, float, int]:
    """Median seconds of ``sim``, of the kernels inside it, and of ``ref``, timed
    alternately after a warm-up so both see the same machine load; of ``ref`` alone
    (a loop of its own: what the simulator's allocations between the calls do to numpy
    shows as the difference); and the repeats."""
    t0 = time.perf_counter()
    sim()
    ref()
    once = time.perf_counter() - t0
    repeat = max(5, min(repeat, int(budget / max(once, 1e-9))))
    for _ in range(2):
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
    ts_alone = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        ref()
        ts_alone.append(time.perf_counter() - t0)
    return (statistics.median(ts_sim), statistics.median(ts_kernel),
            statistics.median(ts_ref), statistics.median(ts_alone), repeat)


def run_case(name: str, platform: str, repeat: int, budget: float, count_ops: bool) -> dict:
    """Compile, check against numpy, time; one table row as a dict."""
    cfg = RunConfig(platform=platform)
    label, program, arrays, ref = make_case(name, platform, np.random.default_rng(0))
    compiled = pytest_pypto.compile(program, cfg)
    run = pytest_pypto.run(compiled, *arrays, config=cfg)  # check before timing
    np.testing.assert_allclose(arrays[-1], ref(), rtol=1e-4, atol=1e-4)
    t_sim, t_kernel, t_ref, t_alone, n = measure(
        lambda: pytest_pypto.run(compiled, *arrays, config=cfg), ref, repeat, budget
    )
    ops = op_calls(compiled, arrays, platform) if count_ops else -1
    return {"case": label, "platform": platform, "tasks": len(run.tasks), "ops": ops,
            "sim": t_sim, "kernel": t_kernel, "numpy": t_ref, "alone": t_alone, "repeat": n}


def fresh_row(name: str, platform: str, children: int, repeat: int, budget: float) -> dict:
    """The median over ``children`` fresh child processes of each one's median row."""
    rows = []
    for _ in range(children):
        out = subprocess.run(
            [sys.executable, os.path.abspath(__file__), "--child", name, "--platform", platform,
             "--repeat", str(repeat), "--budget", str(budget)],
            capture_output=True, text=True, check=True, cwd=os.path.dirname(__file__),
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    ratios = [r["sim"] / r["numpy"] for r in rows]
    mid = rows[sorted(range(len(rows)), key=ratios.__getitem__)[len(rows) // 2]]
    return {**mid, "case": f"{mid['case']} fresh", "repeat": f"{children}x{mid['repeat']}"}


def target_of(label: str) -> float | None:
    """The issue's target ratio of a row (None: no target)."""
    if label.startswith("add 128x128"):
        return TARGET_SMALL
    size = int(re.findall(r"\d+", label)[0])
    return TARGET_RATIO if size >= 512 else None


def print_table(rows: list[dict], header: str) -> None:
    print(header)
    print(f"{'case':<28} {'platform':<8} {'tasks':>5} {'ops':>6} {'repeat':>7} {'sim (us)':>11} "
          f"{'kernels':>11} {'numpy (us)':>11} {'alone':>9} {'ratio':>7} {'target':>7}")
    for r in rows:
        ratio = r["sim"] / r["numpy"]
        target = target_of(r["case"])
        mark = "" if target is None else (f"<={target:g}" + (" ok" if ratio <= target else " !!"))
        ops = "" if r["ops"] < 0 else r["ops"]
        print(f"{r['case']:<28} {r['platform']:<8} {r['tasks']:>5} {ops:>6} {r['repeat']!s:>7} "
              f"{r['sim'] * 1e6:>11.1f} {r['kernel'] * 1e6:>11.1f} {r['numpy'] * 1e6:>11.1f} "
              f"{r['alone'] * 1e6:>9.1f} "
              f"{ratio:>6.2f}x {mark:>7}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sims = ",".join(p for p, (_, mode) in PLATFORMS.items() if mode is ExecutionMode.SIM)
    parser.add_argument("--platform", default=sims)
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--budget", type=float, default=1.5,
                        help="seconds of timing per case, roughly (large cases repeat less)")
    parser.add_argument("--fresh", type=int, default=5, help="child processes per fresh row")
    parser.add_argument("--only", default="", help="regex over case names, e.g. 'add|matmul 256'")
    parser.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:  # one fresh-process measurement, printed as JSON
        print(json.dumps(run_case(args.child, args.platform, args.repeat, args.budget, False)))
        return 0
    names = [n for n in sweep_names() if re.search(args.only, n)]
    print(f"pytest_pypto from {os.path.dirname(pytest_pypto.__file__)}; "
          f"load average {os.getloadavg()[0]:.2f}")
    rows = []
    for platform in args.platform.split(","):
        for name in names:
            rows.append(run_case(name, platform, args.repeat, args.budget, True))
        if re.search(args.only, "matmul 256") and args.fresh:
            rows.append(fresh_row("matmul 256", platform, args.fresh, args.repeat, args.budget))
    print_table(rows, "")
    print(f"median of alternating runs (at most {args.repeat}, about {args.budget:g} s per "
          f"case), compile cached; 'kernels' is the part spent inside generated kernel code "
          f"(op calls), the rest is the runtime; 'alone': numpy in a loop of its own (not "
          f"between simulator runs); 'fresh': one child process per measurement, "
          f"median of {args.fresh}; BLAS threads: {os.environ['OPENBLAS_NUM_THREADS']}; "
          f"load average after {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
