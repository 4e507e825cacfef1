"""Parse and compile time of long straight-line kernels, 1k / 4k / 16k ops side by side.

    .venv/bin/python bench/bench_compile.py [--ops 1000,4000,16000] [--repeat 3] [--platform a5sim]
        [--style tile|tensor]

Each kernel is generated as source text (one InCore function: two loads, then a
chain of ``pl.add`` / ``pl.mul`` / ``pl.adds`` / ``pl.sub`` on the running tile, a
store), written to a temporary file and imported, which parses the ``@pl.program``
(the "parse" column).  ``pytest_pypto.compile`` of the program is then timed
``--repeat`` times, the median shown, wall and CPU seconds (CPU is the steadier
number on a loaded machine).  The per-op columns divide by the op count;
"x 1st" is the per-op compile time relative to the smallest kernel: about 1.0 when
compile time is linear in kernel length, growing with the length when some pass is
quadratic.  Target: the 16k-op kernel compiles in under 3 s (TARGET_SECONDS).
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import pytest_pypto
from pytest_pypto import RunConfig

TARGET_OPS = 16000
TARGET_SECONDS = 3.0
_CHAIN = ("t = pl.add(t, b)", "t = pl.mul(t, a)", "t = pl.adds(t, 1.0)", "t = pl.sub(t, b)")


def kernel_source(n_ops: int, style: str = "tile") -> str:
    """A program whose InCore kernel makes ``n_ops`` op calls in one straight line.

    ``style`` "tensor": the chain is of tensor-level ops on the parameters (each one
    lowered by compiler/tensor_lowering into a local tensor, loads, the tile op and a
    store), so the passes after the lowering see about five times as many statements.
    """
    if style == "tensor":
        return _tensor_kernel_source(n_ops)
    sig = (
        "self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Tensor[[16, 64], pl.FP32], "
        "out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]"
    )
    lines = [
        "import pytest_pypto.language as pl",
        "",
        "",
        "@pl.program",
        "class Long:",
        "    @pl.function(type=pl.FunctionType.InCore)",
        f"    def k({sig}) -> pl.Tensor[[16, 64], pl.FP32]:",
        "        a = pl.load(x, [0, 0], [16, 64])",
        "        b = pl.load(y, [0, 0], [16, 64])",
        "        t = pl.add(a, b)",
    ]
    lines += [f"        {_CHAIN[i % len(_CHAIN)]}" for i in range(n_ops - 4)]
    lines += [
        "        out = pl.store(t, [0, 0], out)",
        "        return out",
        "",
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        f"    def main({sig}) -> pl.Tensor[[16, 64], pl.FP32]:",
        "        out = self.k(x, y, out)",
        "        return out",
        "",
    ]
    return "\n".join(lines)


def _tensor_kernel_source(n_ops: int) -> str:
    sig = (
        "self, x: pl.Tensor[[16, 64], pl.FP32], y: pl.Tensor[[16, 64], pl.FP32], "
        "out: pl.Out[pl.Tensor[[16, 64], pl.FP32]]"
    )
    chain = ("t = pl.add(t, y)", "t = pl.mul(t, x)", "t = pl.adds(t, 1.0)", "t = pl.sub(t, y)")
    lines = [
        "import pytest_pypto.language as pl",
        "",
        "",
        "@pl.program",
        "class Long:",
        "    @pl.function(type=pl.FunctionType.InCore)",
        f"    def k({sig}) -> pl.Tensor[[16, 64], pl.FP32]:",
        "        t = pl.add(x, y)",
    ]
    lines += [f"        {chain[i % len(chain)]}" for i in range(n_ops - 3)]
    lines += [
        "        r = pl.load(t, [0, 0], [16, 64])",
        "        out = pl.store(r, [0, 0], out)",
        "        return out",
        "",
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        f"    def main({sig}) -> pl.Tensor[[16, 64], pl.FP32]:",
        "        out = self.k(x, y, out)",
        "        return out",
        "",
    ]
    return "\n".join(lines)


def import_program(n_ops: int, directory: Path, style: str = "tile") -> tuple[Any, float]:
    """Write the kernel to a file, import it; (the program, seconds the import took)."""
    name = f"bench_compile_long_{style}_{n_ops}"
    path = directory / f"{name}.py"
    path.write_text(kernel_source(n_ops, style), encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds the class source through the module
    t0 = time.perf_counter()
    spec.loader.exec_module(module)
    seconds = time.perf_counter() - t0
    program = module.Long
    if not hasattr(program, "functions"):  # a DeferredProgram: raise its parse error
        raise program.error()
    return program, seconds


def time_compile(
    program: Any, config: RunConfig, repeat: int, directory: Path
) -> tuple[float, float]:
    """Median wall and CPU seconds of compiling ``program`` (a fresh artifact directory
    each time); CPU time is the steadier number on a loaded machine."""
    walls, cpus = [], []
    for i in range(repeat):
        gc.collect()
        t0, c0 = time.perf_counter(), time.process_time()
        pytest_pypto.compile(program, config, output_dir=directory / f"artifact_{i}")
        walls.append(time.perf_counter() - t0)
        cpus.append(time.process_time() - c0)
    return statistics.median(walls), statistics.median(cpus)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="1000,4000,16000", help="comma-separated op counts")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--platform", default="a5sim")
    parser.add_argument("--style", choices=("tile", "tensor"), default="tile",
                        help="a chain of tile ops, or of tensor-level ops (lowered to tiles)")
    args = parser.parse_args(argv)
    config = RunConfig(platform=args.platform)
    sizes = [int(s) for s in args.ops.split(",")]
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-compile-") as tmp:
        for n_ops in sizes:
            work = Path(tmp) / str(n_ops)
            work.mkdir()
            program, t_parse = import_program(n_ops, work, args.style)
            t_compile, t_cpu = time_compile(program, config, args.repeat, work)
            rows.append((n_ops, t_parse, t_compile, t_cpu))
    print(f"{'ops':>6} {'parse (s)':>10} {'us/op':>7} {'x 1st':>6} "
          f"{'compile (s)':>12} {'cpu (s)':>8} {'us/op':>7} {'x 1st':>6}")
    first_parse = rows[0][1] / rows[0][0]
    first_compile = rows[0][2] / rows[0][0]
    for n_ops, t_parse, t_compile, t_cpu in rows:
        p_op, c_op = t_parse / n_ops, t_compile / n_ops
        print(f"{n_ops:>6} {t_parse:>10.2f} {p_op * 1e6:>7.0f} {p_op / first_parse:>5.2f}x "
              f"{t_compile:>12.2f} {t_cpu:>8.2f} {c_op * 1e6:>7.0f} {c_op / first_compile:>5.2f}x")
    at_target = [t for n_ops, _, t, _ in rows if n_ops == TARGET_OPS]
    verdict = (
        f"{TARGET_OPS}-op compile {at_target[0]:.2f} s (target < {TARGET_SECONDS:.0f} s)"
        if at_target else f"no {TARGET_OPS}-op row (target: it compiles in < {TARGET_SECONDS:.0f} s)"
    )
    print(f"{verdict}; {args.style} ops; platform {args.platform}; compile is the median of {args.repeat} runs, "
          "parse is one import; 'x 1st' is time per op relative to the first row "
          "(about 1 when linear)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
