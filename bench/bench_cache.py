"""The st/ suite cold (empty compile cache) vs warm (second run, same cache), side by side.

    .venv/bin/python bench/bench_cache.py [--rounds 5] [--suite st] [-- extra pytest args]

Each round makes a fresh ``--pypto-cache-dir``, runs the suite once (cold: every
kernel compiles) and again (warm: every kernel comes from the cache), each in its own
``pytest`` subprocess; rounds interleave cold and warm so both see the same machine
load.  The table gives the median wall seconds, the compiles (cache misses) and hits
of each, and the ratio warm / cold (target: at most 0.25).

Hypothesis draws new examples on every run, so a new program would compile in every
warm run; ``--hypothesis-seed=0`` makes both runs the same suite.

Where warm time goes is shown below the table: a run of the same command with
``--collect-only`` (interpreter + pytest + plugin start-up, importing the test modules,
which parses every ``@pl.program`` at import) and the in-session test time reported
by pytest.  The cache can only remove compile time; the rest is a floor.
"""

from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_RATIO = 0.25
ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"pypto compile cache: (\d+) hits, (\d+) misses")
SESSION = re.compile(r" in ([\d.]+)s")


def run(args: list[str]) -> tuple[float, int, int, float]:
    """(wall seconds, hits, misses, pytest's own session seconds) of one pytest run."""
    started = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    if proc.returncode not in (0, 5):
        sys.exit(f"pytest {' '.join(args)} failed ({proc.returncode}):\n{proc.stdout[-3000:]}")
    found = SUMMARY.search(proc.stdout)
    hits, misses = (int(found[1]), int(found[2])) if found else (0, 0)
    session = SESSION.findall(proc.stdout)
    return wall, hits, misses, float(session[-1]) if session else float("nan")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--suite", default="st")
    parser.add_argument("extra", nargs="*", help="more pytest arguments (after --)")
    opts = parser.parse_args()
    base = [
        opts.suite,
        "-q",
        "-p",
        "no:randomly",
        "--pypto-arch",
        "all",
        "--hypothesis-seed=0",
        *opts.extra,
    ]
    cold: list[tuple[float, int, int, float]] = []
    warm: list[tuple[float, int, int, float]] = []
    collect: list[float] = []
    for _ in range(opts.rounds):
        with tempfile.TemporaryDirectory(prefix="pypto-bench-cache-") as tmp:
            args = [*base, f"--pypto-cache-dir={tmp}"]
            cold.append(run(args))
            warm.append(run(args))
            collect.append(run([*args, "--collect-only"])[0])

    def med(rows: list[tuple[float, int, int, float]], i: int) -> float:
        return statistics.median(r[i] for r in rows)

    c_wall, w_wall = med(cold, 0), med(warm, 0)
    ratio = w_wall / c_wall
    print(f"suite: pytest {' '.join(base)} --pypto-cache-dir=<fresh per round>")
    print(f"rounds: {opts.rounds} (cold and warm interleaved)\n")
    print(f"{'run':<6}{'wall s (median)':>17}{'session s':>11}{'compiles':>10}{'hits':>7}")
    for name, rows in (("cold", cold), ("warm", warm)):
        print(
            f"{name:<6}{med(rows, 0):>17.2f}{med(rows, 3):>11.2f}"
            f"{int(med(rows, 2)):>10}{int(med(rows, 1)):>7}"
        )
    verdict = "meets" if ratio <= TARGET_RATIO else "misses"
    print(f"\nratio warm/cold: {ratio:.2f}x ({verdict} the target of {TARGET_RATIO}x)")
    start = statistics.median(collect)
    print(
        f"\nwarm breakdown: start-up + collection (imports, @pl.program parsing) "
        f"{start:.2f}s; tests and report {max(w_wall - start, 0.0):.2f}s"
    )
    print(
        f"cold breakdown: start-up + collection {start:.2f}s; "
        f"tests and report {max(c_wall - start, 0.0):.2f}s"
    )


if __name__ == "__main__":
    main()
