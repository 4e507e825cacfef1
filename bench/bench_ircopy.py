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
import importlib
import importlib.util
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def _long_source(n_ops: int) -> str:
    t = "pl.Tensor[[16, 64], pl.FP32]"
    sig = f"self, x: {t}, y: {t}, out: pl.Out[{t}]"
    chain = ("t = pl.add(t, b)", "t = pl.mul(t, a)", "t = pl.adds(t, 1.0)", "t = pl.sub(t, b)")
    lines = [
        "import pytest_pypto.language as pl", "", "", "@pl.program", "class Long:",
        "    @pl.function(type=pl.FunctionType.InCore)",
        f"    def k({sig}) -> {t}:",
        "        a = pl.load(x, [0, 0], [16, 64])",
        "        b = pl.load(y, [0, 0], [16, 64])",
        "        t = pl.add(a, b)",
        *(f"        {chain[i % len(chain)]}" for i in range(n_ops - 4)),
        "        out = pl.store(t, [0, 0], out)",
        "        return out", "",
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        f"    def main({sig}) -> {t}:",
        "        out = self.k(x, y, out)",
        "        return out", "",
    ]
    return "\n".join(lines)


def _chain_source(n_kernels: int) -> str:
    t = "pl.Tensor[[16, 64], pl.FP32]"
    lines = ["import pytest_pypto.language as pl", "", "", "@pl.program", "class Chain:"]
    for i in range(n_kernels):
        lines += [
            "    @pl.function(type=pl.FunctionType.InCore)",
            f"    def k{i}(self, x: {t}, out: pl.Out[{t}]) -> {t}:",
            "        v = pl.load(x, [0, 0], [16, 64])",
            "        out = pl.store(pl.adds(v, 1.0), [0, 0], out)",
            "        return out", "",
        ]
    lines += ["    @pl.function(type=pl.FunctionType.Orchestration)",
              f"    def main(self, x: {t}, out: pl.Out[{t}]) -> {t}:"]
    prev = "x"
    for i in range(n_kernels - 1):
        lines += [f"        t{i} = pl.create_tensor([16, 64], pl.FP32)",
                  f"        t{i} = self.k{i}({prev}, t{i})"]
        prev = f"t{i}"
    lines += [f"        out = self.k{n_kernels - 1}({prev}, out)", "        return out", ""]
    return "\n".join(lines)


def _import(name: str, source: str, directory: Path) -> Any:
    path = directory / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds the class source through the module
    spec.loader.exec_module(module)
    return next(v for v in vars(module).values() if hasattr(v, "functions"))


def _st_programs() -> list[Any]:
    from pytest_pypto.ir import nodes as n

    sys.path.insert(0, str(ROOT))
    found: dict[int, Any] = {}
    for path in sorted((ROOT / "st").glob("*.py")):
        module = importlib.import_module(f"st.{path.stem}")
        for value in vars(module).values():
            if isinstance(value, n.Program):
                found.setdefault(id(value), value)
    return list(found.values())


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
    for p in _st_programs():
        try:
            api.lower(p, config)
        except Exception:  # noqa: BLE001  (a program of another arch, or a negative case)
            continue
        st.append(p)
    groups: list[tuple[str, list[Any]]] = [(f"st programs ({len(st)})", st)]
    groups.append(("chain 16 kernels", [_import("bench_ircopy_chain", _chain_source(16), tmp)]))
    for n_ops in (int(s) for s in args.ops.split(",") if s):
        groups.append((f"long {n_ops} ops", [_import(f"bench_ircopy_{n_ops}", _long_source(n_ops), tmp)]))

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
