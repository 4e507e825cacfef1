"""PyPTO's runtime entry points for a compiled work dir (docs/design/plugin.md §16).

``execute_compiled(work_dir, args, platform=..., device_id=...)`` runs the artifact in
``work_dir`` (what ``ir.compile(..., output_dir=work_dir)`` wrote) with the caller's
tensors (torch or numpy, written in place), a worker's `DeviceTensor`s, and scalars
as Python numbers or ctypes values.  ``benchmark`` runs a compiled program
``warmup + rounds`` times and returns `BenchmarkStats`; its numbers are the
**wall-clock time of the simulator on the host** (``clock`` says so), not NPU time:
they compare runs of the simulator with each other, nothing more.

The DFX switches (`_DfxOpts`) and ``aicpu_thread_num`` are accepted and change
nothing here (the simulator has no AICPU threads and writes its task graph anyway).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_pypto.compat.runconfig import RunConfig
from pytest_pypto.compat.standins import unsupported
from pytest_pypto.harness.distributed_program import DistributedCompiledProgram
from pytest_pypto.ir.artifact import CompiledProgram

__all__ = ["SIM_CLOCK", "BenchmarkStats", "_DfxOpts", "benchmark", "execute_compiled"]

SIM_CLOCK = "simulator wall-clock on the host (not NPU time)"


@dataclass(frozen=True)
class _DfxOpts:
    """PyPTO's runtime DFX toggles: accepted, no effect on the simulator."""

    enable_chip_swimlane: int | bool = 0
    enable_dump_args: int = 0
    enable_pmu: int = 0
    enable_dep_gen: bool = False
    enable_scope_stats: bool = False

    def __post_init__(self) -> None:
        level = self.enable_chip_swimlane
        if isinstance(level, bool):
            object.__setattr__(self, "enable_chip_swimlane", int(level))

    def any(self) -> bool:
        """Whether any toggle is on."""
        return bool(self.enable_chip_swimlane or self.enable_dump_args or self.enable_pmu
                    or self.enable_dep_gen or self.enable_scope_stats)


def _work_dir_program(work_dir: str | Path, platform: str | None) -> CompiledProgram:
    try:
        return CompiledProgram.from_dir(work_dir, platform=platform)
    except FileNotFoundError as exc:
        raise FileNotFoundError(
            f"{work_dir} holds no artifact of the bundled toolchain ({exc}); pass the "
            f"output_dir of ir.compile(...) / pytest_pypto.compile(...)"
        ) from None


def execute_compiled(
    work_dir: str | Path,
    args: Sequence[Any],
    *,
    platform: str,
    device_id: int = 0,
    dfx: _DfxOpts | None = None,
    level: int = 2,
    aicpu_thread_num: int | None = None,
    analyze_auto_scopes_for_deps: bool = False,
) -> None:
    """Run the compiled program in ``work_dir`` on ``platform`` with every argument of
    its entry, in order; Out/InOut tensors receive the results in place."""
    __tracebackhide__ = True
    if level != 2:
        raise unsupported(f"runtime.execute_compiled(level={level})",
                          "distributed execution (only level 2, one chip, runs here)")
    compiled = _work_dir_program(work_dir, platform)
    if len(args) != len(compiled.param_names):
        raise TypeError(
            f"execute_compiled: '{compiled.program_name}' takes {len(compiled.param_names)} "
            f"arguments {compiled.param_names}, got {len(args)}"
        )
    compiled(*args, config=RunConfig(platform=platform, device_id=device_id))


@dataclass
class BenchmarkStats:
    """Per-launch timings of `benchmark`, in microseconds of ``clock`` (the
    simulator's host wall-clock: not NPU time).  ``device_wall_us`` and
    ``host_wall_us`` hold the same samples, one per measured launch."""

    device_wall_us: list[float] = field(default_factory=list)
    host_wall_us: list[float] = field(default_factory=list)
    rounds: int = 0
    warmup: int = 0
    invocations: list[Any] = field(default_factory=list)
    rounds_dispatches: list[dict[int, list[Any]]] = field(default_factory=list)
    fallback_flattened: bool = False
    unstable_dispatch_slots: bool = False
    clock: str = SIM_CLOCK
    # multi-chip runs (`benchmark` of a DistributedCompiledProgram): per metric, rank ->
    # one value per round; per round, the span from the first rank's start to the last
    # rank's end ("union"); per (rank, slot), one value per round
    rank_series: dict[str, dict[int, list[float]]] = field(default_factory=dict)
    union_us: list[float] = field(default_factory=list)
    dispatch_series: dict[tuple[int, int], list[float]] = field(default_factory=dict)

    def _stat(self, fn: Any) -> float:
        return float(fn(self.device_wall_us)) if self.device_wall_us else 0.0

    device_us_min = property(lambda self: self._stat(min))
    device_us_max = property(lambda self: self._stat(max))
    device_us_median = property(lambda self: self._stat(statistics.median))
    device_us_mean = property(lambda self: self._stat(statistics.fmean))
    device_wall_us_min = device_us_min
    device_wall_us_max = device_us_max
    device_wall_us_median = device_us_median
    device_wall_us_mean = device_us_mean

    @property
    def device_us_stdev(self) -> float:
        return statistics.stdev(self.device_wall_us) if len(self.device_wall_us) > 1 else 0.0

    device_wall_us_stdev = device_us_stdev

    @property
    def samples(self) -> list[float]:
        return self.device_wall_us

    @property
    def all_zero_device(self) -> bool:
        return bool(self.device_wall_us) and all(v == 0 for v in self.device_wall_us)

    def per_round(self, metric: str = "device") -> list[float]:
        """One value per measured launch (``device``/``host``/``effective``: the same
        wall-clock samples here; ``union``: the span over every rank, multi-chip runs)."""
        if metric == "union":
            return list(self.union_us)
        if metric not in ("device", "host", "effective"):
            raise ValueError(f"metric must be device, host, effective or union, got {metric!r}")
        return list(self.device_wall_us)

    def per_rank(self, metric: str = "device") -> dict[int, list[float]]:
        """Per-rank series, one value per round: multi-chip runs only (empty for one
        chip).  ``device`` and ``effective``: the summed time of the rank's dispatches;
        ``host``: from its first dispatch's start to its last one's end."""
        return {rank: list(v) for rank, v in self.rank_series.get(metric, {}).items()}

    def per_dispatch(self, metric: str = "device") -> dict[tuple[int, int], list[float]]:
        """(rank, slot) -> one value per round: the slot-th dispatch of that rank."""
        return {key: list(v) for key, v in self.dispatch_series.items()}

    def format_mean_tree(self, pid: int | None = None, slot: int | None = None) -> str:
        """The mean time of one dispatch (multi-chip) or of every launch."""
        if pid is not None:
            series = self.dispatch_series.get((pid, slot or 0), [])
            mean = statistics.fmean(series) if series else 0.0
            return f"dispatch pid={pid} slot={slot or 0}: mean {mean:.1f} us ({self.clock})"
        return str(self)

    def dispatch_tasks(self) -> dict[tuple[int, int], str]:
        return {}

    def format_tree(self, launch: int | None = None, *, us: bool = True) -> str:
        return str(self)

    def print_tree(self, launch: int | None = None, *, us: bool = True, file: Any = None) -> None:
        print(self.format_tree(launch, us=us), file=file)

    def __str__(self) -> str:
        return (
            f"BenchmarkStats({self.rounds} rounds after {self.warmup} warmup; {self.clock}: "
            f"median {self.device_us_median:.1f} us, min {self.device_us_min:.1f} us, "
            f"max {self.device_us_max:.1f} us)"
        )


def benchmark(
    compiled: Any,
    args: Sequence[Any],
    *,
    rounds: int = 100,
    warmup: int = 3,
    platform: str | None = None,
    device_id: int | None = None,
    config: RunConfig | None = None,
    persistent: bool = False,
    reset_persistent_windows: bool | None = None,
) -> BenchmarkStats:
    """Run ``compiled(*args)`` ``warmup + rounds`` times; the last ``rounds`` are timed
    (the simulator's wall-clock, module docstring).  ``config`` or
    ``platform``/``device_id`` pick where (default: the program's platform)."""
    __tracebackhide__ = True
    if isinstance(compiled, DistributedCompiledProgram):
        if platform is not None or device_id is not None:
            raise ValueError("benchmark(): a multi-chip program's devices are fixed at compile "
                             "time; platform=/device_id= are not accepted")
        return _benchmark_ranks(compiled, args, rounds, warmup)
    if not isinstance(compiled, CompiledProgram):
        raise TypeError(
            f"benchmark() takes a CompiledProgram (ir.compile(...)), got {type(compiled).__name__}"
        )
    if isinstance(rounds, bool) or not isinstance(rounds, int) or rounds <= 0:
        raise ValueError(f"benchmark(): rounds must be a positive int, got {rounds!r}")
    if isinstance(warmup, bool) or not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"benchmark(): warmup must be an int >= 0, got {warmup!r}")
    if config is not None and (platform is not None or device_id is not None):
        raise ValueError("benchmark(): pass config= or platform=/device_id=, not both")
    if config is None:
        config = RunConfig(platform=platform or compiled.platform)
        if device_id is not None:
            config.device_id = device_id
    samples: list[float] = []
    for i in range(warmup + rounds):
        start = time.perf_counter()
        compiled(*args, config=config)
        elapsed = (time.perf_counter() - start) * 1e6
        if i >= warmup:
            samples.append(elapsed)
    return BenchmarkStats(device_wall_us=samples, host_wall_us=list(samples), rounds=rounds,
                          warmup=warmup)


def _benchmark_ranks(compiled: DistributedCompiledProgram, args: Sequence[Any], rounds: int,
                     warmup: int) -> BenchmarkStats:
    """`benchmark` of a multi-chip program: each round's dispatch spans, per rank (the
    simulated ranks run one after another, so a rank's time is its own work)."""
    stats = BenchmarkStats(rounds=rounds, warmup=warmup)
    device: dict[int, list[float]] = {}
    host: dict[int, list[float]] = {}
    for i in range(warmup + rounds):
        compiled(*args)
        if i < warmup:
            continue
        spans = compiled.last_run.timings if compiled.last_run is not None else []
        ranks = sorted({rank for rank, *_ in spans})
        for rank in ranks:
            mine = [(s, e) for r, _, s, e in spans if r == rank]
            device.setdefault(rank, []).append(sum(e - s for s, e in mine) * 1e6)
            host.setdefault(rank, []).append((max(e for _, e in mine) - min(s for s, _ in mine))
                                             * 1e6)
        for rank, slot, start, end in spans:
            stats.dispatch_series.setdefault((rank, slot), []).append((end - start) * 1e6)
        union = (max(e for *_, e in spans) - min(s for _, _, s, _ in spans)) * 1e6 if spans else 0.0
        stats.union_us.append(union)
        stats.device_wall_us.append(max((device[r][-1] for r in ranks), default=0.0))
        stats.host_wall_us.append(union)
    stats.rank_series = {"device": device, "host": host, "effective": device}
    return stats
