"""Task-graph dispatch of N independent vs N chained tasks, side by side.

    .venv/bin/python bench/bench_graph.py [--sizes 1000,10000,30000] [--repeat 3]
                                          [--seeded | --no-seeded]

The graph is built directly through the runtime's API (no compile): an
`Orchestrator` over a `TaskGraph` submits N calls of one kernel whose body does
nothing, so the times are the runtime's own work (argument checks, RAW/WAW
tracking, ready-task selection, core placement), not kernel math.

- independent: task i reads row i of ``x`` and writes row i of ``out`` (no edges;
  every task is ready at once, the case that used to cost O(N^2));
- chained: task i reads row i of ``x`` and updates all of ``acc`` (InOut: a RAW/WAW
  chain, one ready task at a time).

Each case is dispatched in submission order and, with ``--seeded`` (default), with a
schedule seed (a seeded shuffle of the ready tasks).  The table shows the median of
the repeats of submit and drain (execute + place) seconds, and the ratio independent /
chained; the target is 3x10^4 independent tasks dispatched in under 1 s.  No timing
is asserted.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from typing import Any

import numpy as np

from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.loader import Kernel
from pytest_pypto.runtime.orchestrator import Orchestrator
from pytest_pypto.runtime.tensors import slice_view

TARGET_SECONDS = 1.0
COLS = 16
FP32 = dtype_by_name("FP32")


def _noop(*args: Any) -> None:
    return None


def _kernel(name: str, directions: tuple[str, str], shapes: tuple) -> Kernel:
    return Kernel(
        name=name, func_id=0, core_type="aiv", fn=_noop, arg_names=("a", "o"),
        directions=directions, kinds=("tensor", "tensor"), dtypes=("FP32", "FP32"),
        shapes=shapes, returns=(1,),
    )


KERNELS = {
    "row": _kernel("row", ("In", "Out"), ((1, COLS), (1, COLS))),
    "acc": _kernel("acc", ("In", "InOut"), ((1, COLS), (1, COLS))),
}


def dispatch(n: int, chained: bool, seed: int | None) -> tuple[float, float, int]:
    """(submit seconds, drain seconds, edges) of one graph of ``n`` tasks."""
    graph = TaskGraph(clusters=24, seed=seed, kernels=KERNELS)
    rt = Orchestrator(KERNELS, graph, [])
    x = rt.add_root(np.zeros((n, COLS), np.float32), FP32, "x", "In")
    rows = [slice_view(x, (1, COLS), (i, 0)) for i in range(n)]
    if chained:
        acc = rt.add_root(np.zeros((1, COLS), np.float32), FP32, "acc", "InOut")
        outs = [acc] * n
        kernel = "acc"
    else:
        out = rt.add_root(np.zeros((n, COLS), np.float32), FP32, "out", "Out")
        outs = [slice_view(out, (1, COLS), (i, 0)) for i in range(n)]
        kernel = "row"
    t0 = time.perf_counter()
    for a, o in zip(rows, outs):
        rt.submit(kernel, (a, o), returns=(1,))
    t1 = time.perf_counter()
    graph.drain()
    t2 = time.perf_counter()
    assert len(graph.executed) == n
    return t1 - t0, t2 - t1, sum(len(t.deps) for t in graph.tasks)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000,30000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--seeded", action=argparse.BooleanOptionalAction, default=True)
    args = parser.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    seeds: list[int | None] = [None, 0] if args.seeded else [None]
    print(f"{'tasks':>6} {'schedule':<10} {'case':<12} {'edges':>6} {'submit (s)':>10} "
          f"{'drain (s)':>10} {'total (s)':>10} {'vs chained':>11}")
    worst = 0.0
    for n in sizes:
        for seed in seeds:
            totals = {}
            for chained in (True, False):
                runs = [dispatch(n, chained, seed) for _ in range(args.repeat)]
                submit = statistics.median(r[0] for r in runs)
                drain = statistics.median(r[1] for r in runs)
                totals[chained] = (submit, drain, runs[0][2])
            for chained in (False, True):
                submit, drain, edges = totals[chained]
                total = submit + drain
                ratio = total / sum(totals[True][:2])
                if not chained and n >= 30000:
                    worst = max(worst, total)
                schedule = "submission" if seed is None else f"seed {seed}"
                case = "chained" if chained else "independent"
                print(f"{n:>6} {schedule:<10} {case:<12} {edges:>6} {submit:>10.3f} "
                      f"{drain:>10.3f} {total:>10.3f} {ratio:>10.2f}x")
    if worst:
        print(f"slowest 3x10^4 independent dispatch {worst:.3f} s "
              f"(target < {TARGET_SECONDS:.0f} s); median of {args.repeat} runs")
    return 0


if __name__ == "__main__":
    sys.exit(main())
