# SPDX-License-Identifier: Apache-2.0
"""xdist workers in another directory (``-d --tx popen//chdir=DIR``, ``ssh=...``).

Such a worker resolves ``--pypto-kernels-dir`` from its own rootdir, so the artifacts it
keeps (failing tests, ``--pypto-save-kernels``, dumps, traces) land on its side.  A
worker whose kernels dir differs from the controller's ships them back through
``workeroutput`` as ``{"<kept dir>/<file>": bytes}``, up to `SHIP_LIMIT` bytes per
worker; the controller writes them under its own kernels dir and the terminal summary
names both ends (and what was too large to ship, where it stayed).

``-d`` also rewrites every path-like argument against the rsync roots and rejects an
existing relative path with an INTERNALERROR ("arg X not relative to an rsync root"),
so ``--pypto-kernels-dir X`` (two arguments) broke once X existed while
``--pypto-kernels-dir=X`` worked: `join_path_options` turns our path options into the
one-argument spelling before xdist reads the arguments.  As xdist never maps a relative
test path (``-d --rsyncdir DIR DIR/<file>``), `anchor_test_paths` makes them absolute;
one under no rsync root is a usage error naming it and the roots.

Also here: a failing test's "pypto artifacts" report section, whoever runs it.

PYTEST_DONT_REWRITE (see plugin/__init__.py).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_pypto.plugin import workers
from pytest_pypto.plugin.keys import KEPT_INPUT, KEPT_KEY, KEPT_OUTPUT, RUNNER_KEY, SHIPMENTS_KEY
from pytest_pypto.plugin.options import resolved, settings
from pytest_pypto.plugin.paths import rooted

__all__ = [
    "SHIP_LIMIT",
    "Shipment",
    "anchor_test_paths",
    "controller_kernels_dir",
    "join_path_options",
    "kept_text",
    "note_kept",
    "note_runner",
    "receive",
    "ship",
    "summary_lines",
]

SHIP_LIMIT = 64 * 1024 * 1024  # bytes of kept artifacts one worker ships back
# Options taking a path: ours, the compat plugin's PyPTO spelling, and xdist's own
# --rsyncdir (``-d --rsyncdir tests`` trips over the same check).
PATH_FLAGS = ("--pypto-kernels-dir", "--pypto-cache-dir", "--kernels-dir", "--rsyncdir")


def join_path_options(config: pytest.Config) -> None:
    """Rewrite ``--pypto-kernels-dir X`` as ``--pypto-kernels-dir=X`` in the invocation
    arguments xdist hands to its workers (module docstring)."""
    args = list(config.invocation_params.args or ())
    joined: list[str] = []
    i = 0
    while i < len(args):
        arg = str(args[i])
        if arg in PATH_FLAGS and i + 1 < len(args):
            joined.append(f"{arg}={args[i + 1]}")
            i += 2
            continue
        joined.append(arg)
        i += 1
    if joined != [str(a) for a in args]:
        config.invocation_params = dataclasses.replace(config.invocation_params, args=tuple(joined))


def _rsync_roots(config: pytest.Config) -> list[Path] | None:
    """xdist's rsync roots (None: no worker in another directory, nothing mapped)."""
    specs = [str(s).split("*", 1)[-1] for s in config.getoption("tx", None) or ()]
    if config.getoption("dist", "no") == "no" or not any(
        "popen" not in s.split("//") or "chdir=" in s for s in specs
    ):
        return None
    import _pytest  # lazy: only for xdist's own roots, under -d

    dirs = [*(config.getoption("rsyncdir", None) or ()), *config.getini("rsyncdirs")]
    roots = [Path(pytest.__file__).parent, Path(_pytest.__file__).parent, *map(Path, dirs)]
    return [r.resolve() for r in roots]


def anchor_test_paths(config: pytest.Config) -> None:
    """Make test paths absolute for xdist to map into its rsync roots; an existing path
    under none is a usage error (module docstring)."""
    roots = _rsync_roots(config)
    if roots is None:
        return
    here = config.invocation_params.dir
    positional = {str(a) for a in config.getoption("file_or_dir", None) or ()}
    args = [str(a) for a in config.invocation_params.args or ()]
    for i, arg in enumerate(args):
        head, sep, tail = arg.partition("::")
        path = Path(head)  # an option's value: as xdist sees it (relative: never mapped)
        if not head or head.startswith("-") or not (here / path).exists():
            continue
        if arg in positional:
            path = (here / path).resolve()
            args[i] = f"{path}{sep}{tail}"
        if not any(path.is_relative_to(r) for r in roots):
            raise pytest.UsageError(
                f"-d with workers in another directory: argument {arg!r} is an existing path "
                f"under no rsync root ({', '.join(map(str, roots))}); add --rsyncdir for its "
                f"directory (an option's value: give it as --option=value)"
            )
    config.invocation_params = dataclasses.replace(config.invocation_params, args=tuple(args))


def _kernels_dir(config: pytest.Config) -> Path:
    return rooted(config, settings(config).kernels_dir).resolve()


def configure_node(config: pytest.Config, node: Any) -> None:
    """Controller, per worker: tell it where the controller keeps artifacts."""
    node.workerinput[KEPT_INPUT] = str(_kernels_dir(config))


def controller_kernels_dir(config: pytest.Config) -> Path | None:
    """On a worker whose kernels dir is not the controller's: the controller's, else None."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or KEPT_INPUT not in workerinput:
        return None
    theirs = Path(workerinput[KEPT_INPUT])
    return None if theirs == _kernels_dir(config) else theirs


def note_kept(config: pytest.Config, directory: Path) -> None:
    """Remember a directory a test kept artifacts in (shipped at the session's end)."""
    kept = config.stash.setdefault(KEPT_KEY, [])
    if directory not in kept:
        kept.append(directory)


def note_runner(config: pytest.Config, runner: Any) -> None:
    """After a test's call: remember what its runner kept (a failure's or a saved artifact)."""
    if runner is None:
        return
    kept = getattr(runner, "kept", None)
    if kept is not None:
        note_kept(config, Path(kept))
    saved = getattr(getattr(runner, "config", None), "save_kernels_dir", None)
    if saved and Path(saved).is_dir():
        note_kept(config, Path(saved))


def kept_text(config: pytest.Config, runner: Any) -> str:
    """The failing test's "pypto artifacts" report section: where its artifact is (on a
    worker elsewhere: also where the controller will have it)."""
    if runner.kept is None:
        return f"artifacts not kept: {runner.keep_error}"
    text = f"artifacts kept in: {runner.kept}"
    theirs = controller_kernels_dir(config)
    if theirs is not None and Path(runner.kept).is_relative_to(_kernels_dir(config)):
        worker = config.workerinput.get("workerid", "?")
        name = Path(runner.kept).relative_to(_kernels_dir(config))
        text += (
            f" on worker {worker}; the controller gets a copy in {theirs / name} when the "
            f"session ends (see its summary)"
        )
    return text


def failure_section(config: pytest.Config, runner: Any, error: Any = None) -> str | None:
    """A failing test's "pypto artifacts" section (None: nothing to say): keeps the last
    artifact; where it is, an `assert_close` ``error``'s heatmap, the run's graph."""
    kept = runner.keep_failure()
    if kept is None and getattr(runner, "keep_error", None) is None:
        return None
    text = kept_text(config, runner)
    if kept is not None:
        from pytest_pypto.harness.runner import error_heatmap_lines, schedule_note  # lazy: cost

        if getattr(error, "arrays", None):
            text += "".join(f"\n{line}" for line in error_heatmap_lines(kept, error))
        if (kept / "trace.json").is_file():
            text += f"\n{schedule_note(kept)}"
    return text


def ship(config: pytest.Config, limit: int = SHIP_LIMIT) -> dict[str, Any] | None:
    """The worker's payload of kept artifacts (None when it needs none)."""
    if controller_kernels_dir(config) is None:
        return None
    base = _kernels_dir(config)
    files: dict[str, bytes] = {}
    left: list[tuple[str, int]] = []
    shipped: list[str] = []
    total = 0
    for directory in config.stash.get(KEPT_KEY, []):
        directory = Path(directory).resolve()
        if not directory.is_dir() or not directory.is_relative_to(base):
            continue
        members = [p for p in sorted(directory.rglob("*")) if p.is_file()]
        size = sum(p.stat().st_size for p in members)
        if total + size > limit:
            left.append((str(directory), size))
            continue
        total += size
        shipped.append(directory.relative_to(base).as_posix())
        for p in members:
            files[p.relative_to(base).as_posix()] = p.read_bytes()
    return {"where": str(base), "dirs": shipped, "files": files, "left": left}


@dataclasses.dataclass
class Shipment:
    """What one worker's kept artifacts became on the controller."""

    worker: str
    where: str  # the worker's kernels dir
    dirs: list[str]  # kept dirs (relative names) written on the controller
    left: list[tuple[str, int]]  # (worker path, bytes) not shipped: over the limit
    error: str | None = None  # why writing them on the controller failed


def receive(config: pytest.Config, worker: str, payload: dict[str, Any]) -> Shipment:
    """Controller: write a worker's payload under the controller's kernels dir."""
    base = _kernels_dir(config)
    shipment = Shipment(worker, payload["where"], list(payload["dirs"]), list(payload["left"]))
    try:
        for name, data in payload["files"].items():
            if Path(name).is_absolute() or ".." in Path(name).parts:
                continue  # never outside the kernels dir
            target = base / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
    except OSError as exc:
        shipment.error = f"{type(exc).__name__}: {exc}"
    return shipment


def summary_lines(config: pytest.Config, shipments: list[Shipment]) -> list[str]:
    """The terminal summary: where each remote worker's kept artifacts are now."""
    base = _kernels_dir(config)
    lines = []
    for s in shipments:
        for name in s.dirs:
            if s.error is None:
                lines.append(f"{base / name}  (kept by worker {s.worker} in {s.where}/{name})")
            else:
                lines.append(
                    f"{s.where}/{name} on worker {s.worker}: not copied to {base} ({s.error})"
                )
        for path, size in s.left:
            lines.append(
                f"{path} on worker {s.worker}: left there ({size / 2**20:.1f} MiB, over the "
                f"{SHIP_LIMIT // 2**20} MiB a worker ships back)"
            )
    return lines


def _fold(config: pytest.Config, worker: str, payload: dict[str, Any]) -> None:
    if payload:
        config.stash.setdefault(SHIPMENTS_KEY, []).append(receive(config, worker, payload))


workers.route(workers.Traffic(KEPT_OUTPUT, ship, _fold))


def pytest_configure(config: pytest.Config) -> None:
    if resolved(config) and not workers.is_worker(config):
        join_path_options(config)  # before xdist hands the arguments to -d workers
        anchor_test_paths(config)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    configure_node(node.config, node)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failing test's "pypto artifacts" section; after every call, what its runner
    kept is noted (shipped from -d workers) and its last run's graph let go."""
    report = yield
    runner = item.stash.get(RUNNER_KEY, None)
    if call.excinfo is not None and report.failed and runner is not None and call.when == "call":
        text = failure_section(item.config, runner, call.excinfo.value)
        if text is not None:
            report.sections.append(("pypto artifacts", text))
    if call.when == "call":
        note_runner(item.config, runner)
        if runner is not None:
            runner.forget_run()  # kept or not, the last run's graph is not held any longer
    return report


def pytest_terminal_summary(terminalreporter: Any) -> None:
    config = terminalreporter.config
    lines = summary_lines(config, config.stash.get(SHIPMENTS_KEY, []))
    if lines:
        terminalreporter.section("pypto artifacts kept by remote workers")
        for line in lines:
            terminalreporter.write_line(line)
