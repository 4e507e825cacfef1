"""Allocation stability of a dispatch: fresh-process vs warm time, and page faults per run.

    .venv/bin/python bench/bench_alloc.py [--platform a2a3sim] [--repeat 30] [--rounds 3]

Every measurement runs in its own child process (``--child``), so "fresh" really is a
process that allocated nothing big before its first dispatch.  Each child compiles the
kernel, then times ``pytest_pypto.run`` and the equivalent numpy expression alternately
(medians of ``--repeat``), and counts minor page faults (``ru_minflt`` deltas of
``getrusage(RUSAGE_SELF)``) per dispatch and per numpy call.  "warm" children first churn
the allocator (allocate and free arrays of 64 KiB .. 8 MiB, as a process that ran other
tests has), which moves glibc's dynamic mmap threshold; a dispatch whose temporaries fall
on either side of that threshold shows it as a fresh/warm difference.  ``--rounds``
children per (case, state); the table shows the median child.

Before/after side by side: ``--trees /tmp/before,/tmp/after`` runs every child once per
tree (as ``PYTHONPATH=<tree>``), interleaved, so both trees see the same machine load;
the default is the tree this script's interpreter imports.

BLAS runs single-threaded on both sides (as in bench_dispatch.py).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")  # before numpy loads its BLAS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ("matmul 256x256x256", "matmul 512x512x512", "add 512x512", "softmax 512x512")


def _build(case: str, platform: str):
    """(program, arrays, numpy reference) of one case; FP32 throughout."""
    import numpy as np

    sys.path.insert(0, ROOT)
    from st.kernels import add_program, matmul_program, softmax_program

    rng = np.random.default_rng(0)

    def mat(*shape: int):
        return rng.standard_normal(shape).astype(np.float32)

    if case.startswith("matmul"):
        m = int(case.split()[1].split("x")[0])
        a, b, c = mat(m, m), mat(m, m), np.empty((m, m), np.float32)
        return matmul_program(m, m, m, 128, 128, 128), (a, b, c), lambda: a @ b
    x, y = mat(512, 512), mat(512, 512)
    rows = _vec_rows(platform, 512, 3 if case.startswith("add") else 4)
    if case.startswith("add"):
        out = np.empty((512, 512), np.float32)
        return add_program(512, 512, rows), (x, y, out), lambda: x + y

    def np_softmax():
        mx = x.max(axis=1, keepdims=True)
        e = np.exp(x - mx)
        return e / e.sum(axis=1, keepdims=True)

    return softmax_program(512, 512, rows), (x, np.empty((512, 512), np.float32)), np_softmax


def _vec_rows(platform: str, cols: int, live_tiles: int) -> int:
    """Largest power-of-two row count whose ``live_tiles`` FP32 [rows, cols] tiles fit Vec."""
    from pytest_pypto.arch import parse_platform, spec

    cap = spec(parse_platform(platform)[0]).capacity["Vec"]
    rows = 1
    while live_tiles * (2 * rows) * cols * 4 <= cap:
        rows *= 2
    return rows


def _churn() -> None:
    """Allocate and free big arrays, as a process that ran other work before has."""
    import numpy as np

    keep = [np.ones(n // 4, np.float32) for n in (1 << 16, 1 << 17, 1 << 20, 1 << 23)]
    del keep


def child(case: str, platform: str, repeat: int, warm: bool) -> dict:
    """One measurement (runs in its own process)."""
    import resource

    import numpy as np

    import pytest_pypto
    from pytest_pypto import RunConfig

    cfg = RunConfig(platform=platform)
    program, arrays, ref = _build(case, platform)
    compiled = pytest_pypto.compile(program, cfg)
    if warm:
        _churn()

    def faults() -> int:
        return resource.getrusage(resource.RUSAGE_SELF).ru_minflt

    t_sim, t_ref, f_sim, f_ref = [], [], [], []
    for _ in range(repeat):
        f0 = faults()
        t0 = time.perf_counter()
        pytest_pypto.run(compiled, *arrays, config=cfg)
        t1 = time.perf_counter()
        f1 = faults()
        ref()
        t2 = time.perf_counter()
        f2 = faults()
        t_sim.append(t1 - t0)
        t_ref.append(t2 - t1)
        f_sim.append(f1 - f0)
        f_ref.append(f2 - f1)
    np.testing.assert_allclose(arrays[-1], ref(), rtol=1e-4, atol=1e-4)
    return {
        "sim": statistics.median(t_sim[1:]), "ref": statistics.median(t_ref[1:]),
        "first": t_sim[0], "faults": statistics.median(f_sim[1:]),
        "ref_faults": statistics.median(f_ref[1:]),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--platform", default="a2a3sim")
    parser.add_argument("--repeat", type=int, default=30)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--cases", default=",".join(CASES))
    parser.add_argument("--trees", default="", help="comma-separated PYTHONPATH roots")
    parser.add_argument("--child", nargs=2, metavar=("CASE", "STATE"))
    args = parser.parse_args(argv)
    if args.child:
        case, state = args.child
        print(json.dumps(child(case, args.platform, args.repeat, state == "warm")))
        return 0
    trees = args.trees.split(",") if args.trees else [None]
    print(f"load average {os.getloadavg()[0]:.2f}; trees: "
          + ", ".join(f"{chr(65 + i)} = {t or 'installed'}" for i, t in enumerate(trees)))
    print(f"{'case':<20} {'state':<6} {'tree':<4} {'sim (us)':>10} {'numpy (us)':>11} "
          f"{'ratio':>7} {'1st run (us)':>12} {'faults/run':>10} {'numpy flt':>9}")
    for case in args.cases.split(","):
        for state in ("fresh", "warm"):
            results: list[list[dict]] = [[] for _ in trees]
            for _ in range(args.rounds):
                for i, tree in enumerate(trees):
                    env = dict(os.environ)
                    if tree:
                        env["PYTHONPATH"] = tree
                    out = subprocess.run(
                        [sys.executable, os.path.abspath(__file__), "--platform", args.platform,
                         "--repeat", str(args.repeat), "--child", case, state],
                        check=True, capture_output=True, text=True, env=env,
                    )
                    results[i].append(json.loads(out.stdout.strip().splitlines()[-1]))
            for i, rows in enumerate(results):
                rows.sort(key=lambda r: r["sim"] / r["ref"])
                r = rows[len(rows) // 2]
                print(f"{case:<20} {state:<6} {chr(65 + i):<4} {r['sim'] * 1e6:>10.1f} "
                      f"{r['ref'] * 1e6:>11.1f} {r['sim'] / r['ref']:>6.2f}x "
                      f"{r['first'] * 1e6:>12.0f} {r['faults']:>10.0f} {r['ref_faults']:>9.0f}")
    print(f"median child of {args.rounds} per row; in each child the median of "
          f"{args.repeat} alternating dispatches (the first, '1st run', excluded); faults are "
          f"minor page faults (ru_minflt) per dispatch; platform {args.platform}; "
          f"BLAS threads: {os.environ['OPENBLAS_NUM_THREADS']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
