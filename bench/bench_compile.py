"""Compile time: per st program with and without disk, kernel-count and op-count sweeps.

    .venv/bin/python bench/bench_compile.py [--against DIR] [--rounds 3] [--repeat 5]
        [--kernels 1,4,16,64] [--ops 250,1000,4000,16000] [--op-repeat 3] [--style tile|tensor]

Each round runs the measurements in a fresh child process per tree: this checkout,
and with ``--against DIR`` the tree at DIR too (``git archive 275dd6b | tar x -C DIR``:
the same st kernels compiled by that tree's toolchain), alternating which goes first,
so both see the same machine load.  Tables show the median over rounds of CPU time
(the steadier number on a shared machine; wall time in the last column of the first
table), and ``new/old`` when comparing.

1. st programs: every ``@pl.program`` at module level of ``st/*.py``, on a2a3sim and
   a5sim, compiled ``--repeat`` times each way; milliseconds per program:
   ``in memory`` (``pytest_pypto.compile``, nothing saved), ``+ load`` (and its kernels
   built by the simulator's loader, what a run needs), ``output_dir`` (files written:
   save-kernels), ``cache miss`` (a fresh disk cache: compile, write the entry, load),
   ``disk hit`` (a new cache object on that root: what another process gets, + load),
   ``process hit`` (the same cache object again, + load).  Target: ``in memory`` <= 1 ms
   per st kernel (the verdict line shows it per kernel and per program).
2. kernel count: one program of N small InCore kernels chained by the orchestration;
   compile in memory, ms per kernel, and ``x 1st`` (per-kernel time over the first
   row's: about 1 when linear).
3. op count: one straight-line kernel of N ops (``--style``); compile in memory and
   with ``output_dir``, us per op and ``x 1st`` (about 1 when linear up to 16k ops).
"""

from __future__ import annotations

import argparse
import gc
import glob
import importlib
import importlib.util
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
PLATFORMS = ("a2a3sim", "a5sim")
ST_MODES = ("in memory", "+ load", "output_dir", "cache miss", "disk hit", "process hit")
TARGET_MS = 1.0
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


def chain_source(n_kernels: int) -> str:
    """A program of ``n_kernels`` InCore kernels, each adding 1 to a [16, 64] tile; the
    orchestration runs them one after another through local tensors."""
    t = "pl.Tensor[[16, 64], pl.FP32]"
    lines = ["import pytest_pypto.language as pl", "", "", "@pl.program", "class Chain:"]
    for i in range(n_kernels):
        lines += [
            "    @pl.function(type=pl.FunctionType.InCore)",
            f"    def k{i}(self, x: {t}, out: pl.Out[{t}]) -> {t}:",
            "        v = pl.load(x, [0, 0], [16, 64])",
            "        out = pl.store(pl.adds(v, 1.0), [0, 0], out)",
            "        return out",
            "",
        ]
    lines += [
        "    @pl.function(type=pl.FunctionType.Orchestration)",
        f"    def main(self, x: {t}, out: pl.Out[{t}]) -> {t}:",
    ]
    prev = "x"
    for i in range(n_kernels - 1):
        lines += [f"        t{i} = pl.create_tensor([16, 64], pl.FP32)",
                  f"        t{i} = self.k{i}({prev}, t{i})"]
        prev = f"t{i}"
    lines += [f"        out = self.k{n_kernels - 1}({prev}, out)", "        return out", ""]
    return "\n".join(lines)


def import_source(name: str, source: str, directory: Path) -> Any:
    """Write ``source`` to ``directory/name.py``, import it; the module's program."""
    path = directory / f"{name}.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds the class source through the module
    spec.loader.exec_module(module)
    program = next(v for v in vars(module).values() if hasattr(v, "functions"))
    return program


def st_programs() -> list[Any]:
    """The module-level programs of st/*.py (each once)."""
    from pytest_pypto.ir import nodes as n

    sys.path.append(str(ROOT))
    found: dict[int, Any] = {}
    for path in sorted(glob.glob(str(ROOT / "st" / "*.py"))):
        module = importlib.import_module(f"st.{Path(path).stem}")
        for value in vars(module).values():
            if isinstance(value, n.Program):
                found.setdefault(id(value), value)
    return list(found.values())


def _timed(fn: Callable[[], Any], repeat: int, per: int) -> tuple[float, float]:
    """Median (CPU, wall) seconds of ``fn`` over ``repeat`` calls, divided by ``per``."""
    cpus, walls = [], []
    for _ in range(repeat):
        gc.collect()
        c0, t0 = time.process_time(), time.perf_counter()
        fn()
        cpus.append((time.process_time() - c0) / per)
        walls.append((time.perf_counter() - t0) / per)
    return statistics.median(cpus), statistics.median(walls)


def measure(opts: argparse.Namespace) -> dict[str, list[float]]:
    """Every row of every table: name -> [cpu seconds, wall seconds] (child process)."""
    import pytest_pypto
    from pytest_pypto import RunConfig
    from pytest_pypto.harness.cache import CompileCache
    from pytest_pypto.runtime.loader import clear_cache
    from pytest_pypto.runtime.worker import Worker

    out: dict[str, list[float]] = {}
    tmp = Path(tempfile.mkdtemp(prefix="bench-compile-"))
    workers = {p: Worker(p) for p in PLATFORMS}
    cases = []
    n_kernels = 0
    for program in st_programs():
        for platform in PLATFORMS:
            config = RunConfig(platform=platform)
            try:  # warm-up; skip what does not compile
                n_kernels += len(pytest_pypto.compile(program, config).manifest.kernels)
            except Exception:  # noqa: BLE001  (a program for one arch only)
                continue
            cases.append((program, config, workers[platform]))
    out["st programs"] = [float(len(cases)), 0.0]
    out["st kernels"] = [float(n_kernels), 0.0]
    count = iter(range(10**9))

    def each(step: Callable[[Any, Any, Any], Any]) -> Callable[[], None]:
        return lambda: [step(p, c, w) for p, c, w in cases]

    def fresh_dir() -> Path:
        return tmp / f"d{next(count)}"

    roots: dict[tuple[int, str], Path] = {}
    shared: dict[tuple[int, str], Any] = {}

    def miss(p: Any, c: Any, w: Any) -> None:
        root = roots[id(p), c.platform] = fresh_dir()
        w.load(CompileCache(root).compile(p, c))

    def disk_hit(p: Any, c: Any, w: Any) -> None:
        clear_cache()  # another process: nothing built from that directory yet
        w.load(CompileCache(roots[id(p), c.platform]).compile(p, c))

    def process_hit(p: Any, c: Any, w: Any) -> None:
        cache = shared.setdefault((id(p), c.platform), CompileCache(roots[id(p), c.platform]))
        w.load(cache.compile(p, c))

    steps = {
        "in memory": lambda p, c, w: pytest_pypto.compile(p, c),
        "+ load": lambda p, c, w: w.load(pytest_pypto.compile(p, c)),
        "output_dir": lambda p, c, w: pytest_pypto.compile(p, c, output_dir=fresh_dir()),
        "cache miss": miss,
        "disk hit": disk_hit,
        "process hit": process_hit,
    }
    for mode in ST_MODES:
        if mode == "process hit":
            each(process_hit)()  # the first lookup of each is a disk hit
        out[f"st {mode}"] = list(_timed(each(steps[mode]), opts.repeat, len(cases)))

    config = RunConfig(platform="a5sim")
    for n_kernels in opts.kernel_counts:
        program = import_source(f"bench_chain_{n_kernels}", chain_source(n_kernels), tmp)
        out[f"kernels {n_kernels}"] = list(_timed(
            lambda program=program: pytest_pypto.compile(program, config), opts.repeat, n_kernels))
    for n_ops in opts.op_counts:
        name = f"bench_compile_long_{opts.style}_{n_ops}"
        program = import_source(name, kernel_source(n_ops, opts.style), tmp)
        out[f"ops {n_ops} in memory"] = list(_timed(
            lambda program=program: pytest_pypto.compile(program, config), opts.op_repeat, n_ops))
        out[f"ops {n_ops} output_dir"] = list(_timed(
            lambda program=program: pytest_pypto.compile(program, config, output_dir=fresh_dir()),
            opts.op_repeat, n_ops))
    return out


def _child(tree: Path | None, argv: list[str]) -> dict[str, list[float]]:
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join([str(tree), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    proc = subprocess.run(
        [sys.executable, __file__, "--child", *argv], cwd=ROOT, env=env,
        capture_output=True, text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"bench child ({tree or 'this checkout'}) failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def _ints(text: str) -> list[int]:
    return [int(s) for s in text.split(",") if s]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", type=Path, help="another tree to compare (old)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--kernels", default="1,4,16,64")
    parser.add_argument("--ops", default="250,1000,4000,16000")
    parser.add_argument("--op-repeat", type=int, default=3)
    parser.add_argument("--style", choices=("tile", "tensor"), default="tile")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.kernel_counts, args.op_counts = _ints(args.kernels), _ints(args.ops)
    if args.child:
        print(json.dumps(measure(args)))
        return 0
    passed = [a for a in (argv if argv is not None else sys.argv[1:])]
    passed = [a for i, a in enumerate(passed)
              if not (a.startswith("--against") or (i and passed[i - 1] == "--against"))]
    trees: list[Path | None] = [None] + ([args.against] if args.against else [])
    runs: dict[Path | None, list[dict[str, list[float]]]] = {t: [] for t in trees}
    for r in range(args.rounds):
        for tree in trees if r % 2 == 0 else trees[::-1]:
            runs[tree].append(_child(tree, passed))
    report(args, {t: _medians(rs) for t, rs in runs.items()}, args.against)
    return 0


def _medians(rounds: list[dict[str, list[float]]]) -> dict[str, list[float]]:
    return {k: [statistics.median(r[k][i] for r in rounds) for i in range(2)] for k in rounds[0]}


def report(args: argparse.Namespace, m: dict[Path | None, dict[str, list[float]]],
           old_tree: Path | None) -> None:
    new = m[None]
    old = m.get(old_tree) if old_tree is not None else None

    def cols(key: str, scale: float, fmt: str) -> str:
        text = format(new[key][0] * scale, fmt)
        if old is not None and key in old:
            text = f"{format(old[key][0] * scale, fmt)} {text} {new[key][0] / old[key][0]:>6.2f}x"
        return text

    head = "old      new  new/old" if old is not None else "new"
    print(f"st programs: {int(new['st programs'][0])} (program, platform) pairs, "
          f"median of {args.rounds} rounds x {args.repeat} repeats, CPU ms per program")
    print(f"{'mode':<14} {head:>24} {'wall ms (new)':>14}")
    for mode in ST_MODES:
        key = f"st {mode}"
        print(f"{mode:<14} {cols(key, 1e3, '8.2f'):>24} {new[key][1] * 1e3:>14.2f}")
    per_program = new["st in memory"][0] * 1e3
    per_kernel = per_program * new["st programs"][0] / max(new["st kernels"][0], 1.0)
    print(f"target: in memory <= {TARGET_MS:.0f} ms per st kernel: {per_kernel:.2f} ms per kernel "
          f"({int(new['st kernels'][0])} kernels; {per_program:.2f} ms per program)\n")

    print("kernel count (a5sim, in memory): CPU ms per kernel")
    print(f"{'kernels':>8} {head:>24} {'x 1st':>6}")
    first = new[f"kernels {args.kernel_counts[0]}"][0] if args.kernel_counts else 1.0
    for k in args.kernel_counts:
        key = f"kernels {k}"
        print(f"{k:>8} {cols(key, 1e3, '8.3f'):>24} {new[key][0] / first:>5.2f}x")

    print(f"\nop count (a5sim, {args.style} ops): CPU us per op")
    print(f"{'ops':>6} {'in memory: ' + head:>30} {'x 1st':>6} {'output_dir: ' + head:>30}")
    first = new[f"ops {args.op_counts[0]} in memory"][0] if args.op_counts else 1.0
    for n_ops in args.op_counts:
        a, b = f"ops {n_ops} in memory", f"ops {n_ops} output_dir"
        print(f"{n_ops:>6} {cols(a, 1e6, '8.1f'):>30} {new[a][0] / first:>5.2f}x "
              f"{cols(b, 1e6, '8.1f'):>30}")
    print("x 1st: per-unit time over the first row's (about 1 when linear)")


if __name__ == "__main__":
    sys.exit(main())
