# SPDX-License-Identifier: Apache-2.0
"""Wall time of our own suites: `pytest st` cold/warm, serial/-n 2, and the whole suite.

    python bench/bench_suite.py [--rounds 3] [--before DIR] [--suite-rounds 1]
                                [--no-suite] [--suite-serial]

Every run starts from a fresh copy of a tree (no ``__pycache__``, no ``.pytest_cache``,
so no compile cache): "cold" is the first run in that copy, "warm" the run right after
it on the caches the cold run left.  The environment is this machine's as it is
(``PYTHONDONTWRITEBYTECODE`` included, when exported), since that is what the suite
meets; before each cold run the assert-rewritten ``*-pytest-*.pyc`` files pytest keeps
in the venv (hypothesis, xdist) are dropped, so every tree pays for them alike.
``--before DIR`` (say ``git archive 275dd6b | tar x -C DIR``) measures that tree the
same way, interleaved with this one, so load on a shared host hits both alike.
The whole suite runs the README's command (``pytest -n auto --pypto-arch all``);
``--suite-serial`` adds it without ``-n``.  Medians are printed, with ratios.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
_SKIP = shutil.ignore_patterns(
    "__pycache__", ".pytest_cache", ".hypothesis", ".venv", "build_output", "*.egg-info", ".git"
)
ST = ["st", "--pypto-arch", "all", "-p", "no:randomly"]
SUITE = ["-n", "auto", "--pypto-arch", "all"]
FAILED: set[str] = set()  # commands that exited non-zero (their times are still shown)


def _children_cpu() -> float:
    import resource

    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime


def _drop_rewritten_venv_pycs() -> None:
    """The venv's assert-rewritten caches (pytest writes them only when bytecode may be)."""
    site = Path(sysconfig.get_paths()["purelib"])
    for pyc in site.rglob("*-pytest-*.pyc"):
        pyc.unlink(missing_ok=True)


def _restore_rewritten_venv_pycs(tmp: Path) -> None:
    """Rebuild what `_drop_rewritten_venv_pycs` dropped: one plain pytest session with
    bytecode allowed.  Our suites no longer rewrite the installed plugins (root conftest),
    so without this every later pytest process on the machine that may not write
    bytecode (``PYTHONDONTWRITEBYTECODE``) would rewrite them again at start-up."""
    probe = tmp / "restore_rewrite_cache"
    probe.mkdir(exist_ok=True)
    (probe / "test_probe.py").write_text("def test_probe():\n    assert True\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(probe)],
                   cwd=probe, env=env, capture_output=True, check=False)


def _fresh_copy(tree: Path, into: Path) -> Path:
    dest = into / f"{tree.name or 'tree'}-{time.monotonic_ns()}"
    shutil.copytree(tree, dest, ignore=_SKIP)
    return dest


def _run(copy: Path, args: list[str]) -> tuple[float, float]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(copy), env.get("PYTHONPATH")) if p)
    env.pop("PYTEST_ADDOPTS", None)
    cmd = [sys.executable, "-m", "pytest", "-q", *args]
    cpu0 = _children_cpu()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=copy, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:  # still timed: others' work in progress must not stop a bench
        FAILED.add(" ".join(args))
        sys.stderr.write(f"{' '.join(cmd)} in {copy} exited {proc.returncode}\n")
        sys.stderr.write(proc.stdout[-1500:] + proc.stderr[-1000:])
    return wall, _children_cpu() - cpu0


def _cold_warm(tree: Path, tmp: Path, args: list[str], warm: bool = True) -> list[tuple]:
    _drop_rewritten_venv_pycs()
    copy = _fresh_copy(tree, tmp)
    try:
        runs = [_run(copy, args)]
        if warm:
            runs.append(_run(copy, args))
        return runs
    finally:
        shutil.rmtree(copy, ignore_errors=True)


def _row(name: str, samples: dict[str, list[float]], base: str | None) -> str:
    wall = statistics.median(samples[name])
    cpu = statistics.median(samples[name + " cpu"])
    ratio = f"{wall / statistics.median(samples[base]):6.2f}x" if base else "      "
    return f"  {name:34s} {wall:8.2f} {cpu:8.2f} {ratio}"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the st measurements")
    ap.add_argument("--suite-rounds", type=int, default=1, help="rounds of the whole suite")
    ap.add_argument("--before", type=Path, help="another tree to compare (e.g. 275dd6b)")
    ap.add_argument("--no-suite", action="store_true", help="only the st measurements")
    ap.add_argument("--suite-serial", action="store_true", help="also the whole suite serial")
    args = ap.parse_args(argv)
    trees = [("after", ROOT)] + ([("before", args.before.resolve())] if args.before else [])
    samples: dict[str, list[float]] = {}

    def add(key: str, run: tuple[float, float]) -> None:
        samples.setdefault(key, []).append(run[0])
        samples.setdefault(key + " cpu", []).append(run[1])

    with tempfile.TemporaryDirectory(prefix="bench_suite_") as tmp_name:
        tmp = Path(tmp_name)
        for _ in range(args.rounds):
            for label, tree in trees:
                for mode, more in (("serial", []), ("-n 2", ["-n", "2"])):
                    cold, warm = _cold_warm(tree, tmp, ST + more)
                    add(f"{label} st {mode} cold", cold)
                    add(f"{label} st {mode} warm", warm)
        if not args.no_suite:
            for _ in range(args.suite_rounds):
                for label, tree in trees:
                    (run,) = _cold_warm(tree, tmp, SUITE, warm=False)
                    add(f"{label} suite -n auto", run)
                if args.suite_serial:
                    (run,) = _cold_warm(ROOT, tmp, SUITE[2:], warm=False)
                    add("after suite serial", run)

        _restore_rewritten_venv_pycs(tmp)

    load = os.getloadavg()
    print(
        f"medians; {args.rounds} st rounds, {args.suite_rounds} suite rounds; "
        f"load average at the end {load[0]:.1f} {load[1]:.1f} {load[2]:.1f} on "
        f"{os.cpu_count()} cores; PYTHONDONTWRITEBYTECODE="
        f"{os.environ.get('PYTHONDONTWRITEBYTECODE', '(unset)')!s}"
    )
    print(f"  {'run':34s} {'wall s':>8s} {'cpu s':>8s} {'ratio':>7s}")
    for label, _ in trees if args.rounds else ():
        print(f"{label}:")
        print(_row(f"{label} st serial cold", samples, None))
        print(_row(f"{label} st serial warm", samples, f"{label} st serial cold"))
        print(_row(f"{label} st -n 2 cold", samples, f"{label} st serial cold"))
        print(_row(f"{label} st -n 2 warm", samples, f"{label} st serial warm"))
    if args.rounds and args.before:
        print("after vs before:")
        for key in ("st serial cold", "st serial warm", "st -n 2 cold", "st -n 2 warm"):
            print(_row(f"after {key}", samples, f"before {key}"))
    if not args.no_suite:
        print("whole suite (README command; ratio vs before, or vs -n auto for serial):")
        if args.before:
            print(_row("before suite -n auto", samples, None))
        print(_row("after suite -n auto", samples, "before suite -n auto" if args.before else None))
        if args.suite_serial:
            print(_row("after suite serial", samples, "after suite -n auto"))
    for command in sorted(FAILED):
        print(f"note: `pytest -q {command}` exited non-zero at least once (see stderr)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
