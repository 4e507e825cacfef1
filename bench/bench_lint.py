# SPDX-License-Identifier: Apache-2.0
"""Cold vs warm wall time of `pytest lint` (docs/design/plugin.md §14: warm should cost little).

    python bench/bench_lint.py [--rounds 7] [--root DIR] [--variant NAME=PYTHONPATH ...]
                              [-- extra pytest args, e.g. -p no:hypothesispytest]

Runs are interleaved (cold, warm, cold, warm, ...) so load on a shared host hits both
alike; medians are reported.  Cold is `--cache-clear`; warm reruns on the cache the
cold run just wrote.  A variant puts another copy of the package first on PYTHONPATH
(say, a `git archive` of an older commit) to compare code on the same tree.
PYTHONDONTWRITEBYTECODE is dropped: with it, every run recompiles every module.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path


def _pytest() -> str:
    exe = Path(sys.executable).with_name("pytest")
    return str(exe) if exe.exists() else "pytest"


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--root", default=str(Path(__file__).resolve().parents[1]))
    ap.add_argument("--variant", action="append", default=[], metavar="NAME=PYTHONPATH")
    ap.add_argument("extra", nargs="*", help="extra pytest arguments (after --)")
    args = ap.parse_args(argv)
    variants = [v.partition("=")[::2] for v in args.variant] or [("current", "")]
    base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cmd = [_pytest(), "lint", "-q", "-p", "no:randomly", *args.extra]
    times: dict[tuple[str, str], list[float]] = {}
    for _ in range(args.rounds):
        for name, path in variants:
            env = dict(base_env)
            if path:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (path, env.get("PYTHONPATH")) if p)
            for kind, more in (("cold", ["--cache-clear"]), ("warm", [])):
                cpu0 = _children_cpu()
                start = time.perf_counter()
                proc = subprocess.run(cmd + more, cwd=args.root, env=env, capture_output=True)
                elapsed = time.perf_counter() - start
                if proc.returncode != 0:
                    sys.stderr.write(proc.stdout.decode()[-3000:])
                    return 1
                times.setdefault((name, kind), []).append(elapsed)
                times.setdefault((name, kind + " cpu"), []).append(_children_cpu() - cpu0)
    print(f"medians of {args.rounds} rounds; wall and CPU (user+sys, incl. git) seconds")
    print(
        f"{'variant':12s} {'cold':>7s} {'warm':>7s} {'ratio':>6s}  {'cold cpu':>8s} {'warm cpu':>8s} {'ratio':>6s}"
    )
    for name, _ in variants:
        row = [
            statistics.median(times[(name, k)]) for k in ("cold", "warm", "cold cpu", "warm cpu")
        ]
        cold, warm, cold_cpu, warm_cpu = row
        print(
            f"{name:12s} {cold:7.3f} {warm:7.3f} {warm / cold:6.3f}  "
            f"{cold_cpu:8.3f} {warm_cpu:8.3f} {warm_cpu / cold_cpu:6.3f}"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
