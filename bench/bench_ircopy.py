"""The compiler's program copy: `copy.deepcopy` (before) against `ir.clone` (now), side by side.

    .venv/bin/python bench/bench_ircopy.py [--repeat 7] [--ops 1000,4000,16000]

Two tables, one process, medians of ``--repeat`` timings of each row, CPU time:

* copy: the copy alone of each program (st/*.py programs summed, a 16-kernel chain,
  long straight-line kernels), deepcopy vs `clone_program`;
* lower: every compiler pass (`compiler.api.lower`, no codegen, no disk) with the copy
  made each way (the one line `lower` changed), so the ratio is the compile-side gain.
"""

from __future__ import annotations

import argparse
import copy
import gc
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
# the generated programs and the st programs: the same as the compile bench's
from bench_compile import chain_source, import_source, kernel_source, st_programs  # noqa: E402


def _cpu_pair(a: Callable[[], Any], b: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median CPU seconds of ``a`` and of ``b``, timed alternately (a load change on the
    shared machine hits both), with the collector off as `compile` runs the passes."""
    times: tuple[list[float], list[float]] = ([], [])
    for _ in range(repeat):
        for fn, out in ((a, times[0]), (b, times[1])):
            gc.collect()
            gc.disable()
            try:
                t0 = time.process_time()
                fn()
                out.append(time.process_time() - t0)
            finally:
                gc.enable()
    return statistics.median(times[0]), statistics.median(times[1])


def _count_nodes(program: Any) -> int:
    from pytest_pypto.compiler.walk import iter_exprs, iter_stmts, stmt_exprs

    total = 0
    for fn in program.functions.values():
        for stmt in iter_stmts(fn.body):
            total += 1 + sum(1 for e in stmt_exprs(stmt) for _ in iter_exprs(e))
    return total


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--ops", default="1000,4000,16000")
    args = parser.parse_args(argv)

    from pytest_pypto import RunConfig
    from pytest_pypto.compiler import api
    from pytest_pypto.ir.clone import clone_program

    tmp = Path(tempfile.mkdtemp(prefix="bench-ircopy-"))
    config = RunConfig(platform="a5sim")
    st = []
    for p in st_programs():
        try:
            api.lower(p, config)
        except Exception:  # noqa: BLE001  (a program of another arch, or a negative case)
            continue
        st.append(p)
    groups: list[tuple[str, list[Any]]] = [(f"st programs ({len(st)})", st)]
    groups.append(("chain 16 kernels",
                   [import_source("bench_ircopy_chain", chain_source(16), tmp)]))
    for n_ops in (int(s) for s in args.ops.split(",") if s):
        groups.append((f"long {n_ops} ops",
                       [import_source(f"bench_ircopy_{n_ops}", kernel_source(n_ops), tmp)]))

    def lower_all(programs: list[Any], copier: Callable[[Any], Any]) -> Callable[[], None]:
        def run() -> None:
            saved, api.clone_program = api.clone_program, copier
            try:
                for p in programs:
                    api.lower(p, config)
            finally:
                api.clone_program = saved
        return run

    print(f"CPU ms, median of {args.repeat}; one process, deepcopy and clone timed alternately")
    print(f"{'program':<20} {'nodes':>7} | {'copy: deepcopy':>14} {'clone':>8} {'ratio':>6} "
          f"| {'lower: deepcopy':>15} {'clone':>8} {'ratio':>6}")
    for name, programs in groups:
        nodes = sum(_count_nodes(p) for p in programs)
        deep, fast = _cpu_pair(lambda ps=programs: [copy.deepcopy(p) for p in ps],
                               lambda ps=programs: [clone_program(p) for p in ps], args.repeat)
        low_deep, low_fast = _cpu_pair(lower_all(programs, copy.deepcopy),
                                       lower_all(programs, clone_program), args.repeat)
        print(f"{name:<20} {nodes:>7} | {deep * 1e3:>14.2f} {fast * 1e3:>8.2f} "
              f"{fast / deep:>5.2f}x | {low_deep * 1e3:>15.2f} {low_fast * 1e3:>8.2f} "
              f"{low_fast / low_deep:>5.2f}x")
    print("ratio: clone over deepcopy (lower than 1 is faster)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
