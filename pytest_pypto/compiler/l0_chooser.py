# SPDX-License-Identifier: Apache-2.0
"""The L0 tile chooser of the AutoL0 pass (docs/design/checks.md §7a): which ``(m, n, k)``
cube tile a Mat-resident matmul larger than L0 is cut into.

The choice is the minimum of a roofline wall-clock estimate over every legal tile:

* legal: ``m``, ``n``, ``k`` are multiples of the cube alignment and at least the cube
  minimum, no larger than the problem (no padding); the ``[m, k]`` and ``[k, n]``
  operand tiles fit L0A/L0B once per buffer (a moving operand is double-buffered, so it
  gets half); the accumulator, its rows rounded up to the Acc row alignment of its
  dtype, fits L0C (half of it with two accumulators); ``k`` divides ``K``, or, with
  ``allow_k_boundary`` and a 16-aligned ``K``, any aligned ``k`` (the last block is
  peeled); ``n`` is capped by ``max_n`` (the Bias table of a biased matmul).
* cost, in cycles: loading the operands (bytes over the L1->L0 bandwidths; which
  operand is re-loaded depends on the loop order), the MAD issue (a fixed head per K
  block plus passes per K fractal), and draining each output tile through FIXPIPE (a
  fixed part plus a per-row part).  Loads and MADs overlap; the drain adds to them, or
  overlaps them too with two accumulators.
* design points: the output-stationary order is always scored; A- or B-stationary
  (one operand held for the whole K, ``k == K``) and the double-buffered accumulator
  (``k == K`` and at least two full tiles along the moving axis) only when the config
  allows them, and replace the baseline only when strictly cheaper.  Ties prefer the
  smaller padded volume, fewer K blocks, cheaper loads, a larger tile area, a larger k.

A tile equal to the whole problem means the matmul already fits L0.  The arch's
capacities, alignments and cost model come from `pytest_pypto.arch` (`config_for`).
"""

from __future__ import annotations

import enum
import math
from dataclasses import dataclass

from pytest_pypto.arch import ArchSpec


class Stationarity(enum.Enum):
    """Which operand stays resident across the L0 loops."""

    OutputStationary = 0  # the accumulator: both operands stream
    AStationary = 1  # the left operand, held for the whole K (k == K)
    BStationary = 2  # the right operand, held for the whole K (k == K)


@dataclass(slots=True)
class L0TileConfig:
    """The problem, the L0 capacities, the alignments, the allowed design points and the
    cost model of one choice.  Defaults: BF16 x BF16 -> FP32 on a2a3's numbers.  Only these
    fields exist (a misspelt one is an AttributeError, as in PyPTO)."""

    M: int = 0
    N: int = 0
    K: int = 0
    l0a_bytes: int = 0
    l0b_bytes: int = 0
    l0c_bytes: int = 0
    bytes_a: int = 2
    bytes_b: int = 2
    bytes_c: int = 4
    min_m: int = 16
    min_n: int = 16
    min_k: int = 16
    align_m: int = 16
    align_n: int = 16
    align_k: int = 16
    l0c_align_m: int = 16
    box_align_m: int = 1
    box_align_n: int = 1
    max_n: int = 0
    max_n_pipelined: int = 0
    max_n_nested_pipelined: int = 0
    allow_a_stationary: bool = False
    allow_b_stationary: bool = False
    allow_double_buffer_c: bool = False
    c_read: bool = False
    bw_a: float = 129.7
    bw_b: float = 85.4
    bw_drain: float = 118.0
    drain_fixed_cycles: float = 164.0
    drain_row_cycles: float = 4.45
    drain_penalty_cycles: float = 2.6
    drain_c0_bytes: int = 32
    mad_head: int = 21
    mad_k_fractal_bytes: int = 32
    mad_fp32_passes: int = 2
    allow_padding: bool = False
    allow_k_boundary: bool = False


@dataclass(frozen=True)
class L0TileResult:
    """The chosen tile and design point, with the estimates it was ranked by."""

    m: int
    n: int
    k: int
    estimated_traffic_bytes: int
    estimated_cost_cycles: int
    padded_compute_volume: int
    stationarity: Stationarity
    os_holds_a: bool
    double_buffer_c: bool
    perf_hint: str = ""


def config_for(arch: ArchSpec, M: int, N: int, K: int, *, bytes_a: int, bytes_b: int,  # noqa: N803
               acc_dtype: str, max_n: int = 0) -> L0TileConfig:
    """A chooser config from the arch table: L0 capacities, cube alignment, the Acc row
    alignment of ``acc_dtype``, the cost model; K may be peeled."""
    cost = arch.l0_cost_model
    frac = arch.cube_fractal
    return L0TileConfig(
        M=M, N=N, K=K, l0a_bytes=arch.capacity["Left"], l0b_bytes=arch.capacity["Right"],
        l0c_bytes=arch.capacity["Acc"], bytes_a=bytes_a, bytes_b=bytes_b, bytes_c=4,
        min_m=frac, min_n=frac, min_k=frac, align_m=frac, align_n=frac, align_k=frac,
        l0c_align_m=arch.acc_m_align.get(acc_dtype, frac), max_n=max_n,
        bw_a=cost["bw_l0a"], bw_b=cost["bw_l0b"], bw_drain=cost["bw_drain"],
        drain_fixed_cycles=cost["drain_fixed_cycles"], drain_row_cycles=cost["drain_row_cycles"],
        drain_penalty_cycles=cost["drain_penalty_cycles"],
        drain_c0_bytes=int(cost["drain_c0_bytes"]), mad_head=int(cost["mad_head_cycles"]),
        mad_k_fractal_bytes=int(cost["mad_k_fractal_bytes"]),
        mad_fp32_passes=int(cost["mad_fp32_passes"]), allow_k_boundary=True,
    )


def _up(x: int, a: int) -> int:
    return -(-x // a) * a


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _odd_part(x: int) -> int:
    while x and x % 2 == 0:
        x //= 2
    return x


class _Model:
    """The cost terms of one config (pure functions of the tile)."""

    def __init__(self, cfg: L0TileConfig) -> None:
        self.c = cfg

    def acc_elements(self, m: int, n: int) -> int:
        c = self.c
        return _up(_up(m, c.box_align_m), c.l0c_align_m) * _up(n, c.box_align_n)

    def holds_a(self, m: int, n: int) -> bool:
        """Full-K output-stationary: hold A (rows outer) when that loads fewer cycles."""
        held_a, held_b = self._held(m, n)
        return held_a <= held_b

    def _held(self, m: int, n: int) -> tuple[float, float]:
        c = self.c
        a_once = c.bytes_a * c.M * c.K / c.bw_a
        b_once = c.bytes_b * c.K * c.N / c.bw_b
        a_again = c.bytes_a * c.M * c.K * _cdiv(c.N, n) / c.bw_a
        b_again = c.bytes_b * c.K * c.N * _cdiv(c.M, m) / c.bw_b
        return a_once + b_again, a_again + b_once

    def load(self, m: int, n: int, k: int, stat: Stationarity) -> float:
        c = self.c
        held_a, held_b = self._held(m, n)
        if stat is Stationarity.AStationary:
            return held_a
        if stat is Stationarity.BStationary:
            return held_b
        if k >= c.K:
            return held_a if held_a <= held_b else held_b
        return (c.bytes_a * c.M * c.K * _cdiv(c.N, n) / c.bw_a
                + c.bytes_b * c.K * c.N * _cdiv(c.M, m) / c.bw_b)

    def traffic(self, m: int, n: int, k: int, stat: Stationarity) -> int:
        c = self.c
        a_once, b_once = c.bytes_a * c.M * c.K, c.bytes_b * c.K * c.N
        a_again, b_again = a_once * _cdiv(c.N, n), b_once * _cdiv(c.M, m)
        if stat is Stationarity.AStationary or (
                stat is Stationarity.OutputStationary and k >= c.K and self.holds_a(m, n)):
            ab = a_once + b_again
        elif stat is Stationarity.BStationary or k >= c.K:
            ab = a_again + b_once
        else:
            ab = a_again + b_again
        return ab + (2 if c.c_read else 1) * c.bytes_c * c.M * c.N

    def mad(self, m: int, n: int, k: int) -> int:
        c = self.c
        kt = max(1, c.mad_k_fractal_bytes // c.bytes_a)
        passes = max(1, c.mad_fp32_passes) if c.bytes_a == 4 else max(1, c.bytes_a // 2)
        full, tail = divmod(c.K, k)
        blocks = full + (1 if tail else 0)
        fractals = full * _cdiv(k, kt) + (_cdiv(tail, kt) if tail else 0)
        per_tile = blocks * c.mad_head + passes * _cdiv(m, c.align_m) * fractals * _cdiv(
            n, c.align_n)
        return _cdiv(c.M, m) * _cdiv(c.N, n) * per_tile

    def drain(self, m: int, n: int) -> float:
        c = self.c
        n0 = max(1, c.drain_c0_bytes // c.bytes_c)
        per_row = (max(c.drain_row_cycles, c.bytes_c * n / c.bw_drain)
                   + c.drain_penalty_cycles * (_odd_part(_cdiv(n, n0)) - 1))
        return _cdiv(c.M, m) * _cdiv(c.N, n) * (c.drain_fixed_cycles + m * per_row)

    def wall(self, m: int, n: int, k: int, stat: Stationarity, dbc: bool) -> int:
        compute = max(self.load(m, n, k, stat), float(self.mad(m, n, k)))
        drain = self.drain(m, n)
        if dbc:
            tiles = _cdiv(self.c.M, m) * _cdiv(self.c.N, n)
            value = max(compute, drain) + min(compute, drain) / tiles
        else:
            value = compute + drain
        return math.floor(value + 0.5)

    def padded(self, m: int, n: int, k: int) -> int:
        c = self.c
        return _cdiv(c.M, m) * m * _cdiv(c.N, n) * n * _cdiv(c.K, k) * k


@dataclass(frozen=True)
class _Point:
    m: int
    n: int
    k: int
    stat: Stationarity
    dbc: bool
    wall: int
    key: tuple


def _ks(model: _Model, m: int, n: int, a_cap: int, b_cap: int) -> list[int]:
    """Every legal k of an (m, n) tile: the operand tiles fit, aligned, divisors of K
    unless the last block may be peeled (only for an aligned K)."""
    c = model.c
    cap = min(a_cap // _up(m, c.box_align_m), b_cap // _up(n, c.box_align_n))
    top = max(_up(c.K, c.align_k), c.min_k) if c.allow_padding else c.K
    hi = min(cap, top) // c.align_k * c.align_k
    peel = c.allow_k_boundary and c.K % c.align_k == 0
    return [k for k in range(c.min_k, hi + 1, c.align_k)
            if c.allow_padding or peel or c.K % k == 0]


def _inner_full_tiles(model: _Model, m: int, n: int, stat: Stationarity) -> int:
    c = model.c
    rows_outer = stat is Stationarity.AStationary or (
        stat is Stationarity.OutputStationary and model.holds_a(m, n))
    return c.N // n if rows_outer else c.M // m


def _best(model: _Model, stat: Stationarity, dbc: bool, need_pair: bool,
          need_full_k: bool) -> _Point | None:
    c = model.c
    a_cap = c.l0a_bytes // (c.bytes_a * (1 if stat is Stationarity.AStationary else 2))
    b_cap = c.l0b_bytes // (c.bytes_b * (1 if stat is Stationarity.BStationary else 2))
    c_cap = c.l0c_bytes // (c.bytes_c * (2 if dbc else 1))
    m_hi = _up(c.M, c.align_m) if c.allow_padding else c.M
    n_hi = _up(c.N, c.align_n) if c.allow_padding else c.N
    if c.max_n > 0:
        n_hi = min(n_hi, c.max_n)
    best: _Point | None = None
    for m in range(c.min_m, m_hi + 1, c.align_m):
        rows = _up(_up(m, c.box_align_m), c.l0c_align_m)
        if rows * _up(c.min_n, c.box_align_n) > c_cap:
            break
        for n in range(c.min_n, min(n_hi, c_cap // rows) + 1, c.align_n):
            if model.acc_elements(m, n) > c_cap:
                continue
            if need_pair and _inner_full_tiles(model, m, n, stat) < 2:
                continue
            for k in _ks(model, m, n, a_cap, b_cap):
                if need_full_k and k != c.K:
                    continue
                if not _n_allowed(model, m, n, k, stat):
                    continue
                wall = model.wall(m, n, k, stat, dbc)
                key = (wall, model.padded(m, n, k), _cdiv(c.K, k), model.load(m, n, k, stat),
                       -m * n, -k)
                if best is None or key < best.key:
                    best = _Point(m, n, k, stat, dbc, wall, key)
    return best


def _n_allowed(model: _Model, m: int, n: int, k: int, stat: Stationarity) -> bool:
    """The stage-replicated N caps of a full-K output grid (max_n_pipelined / nested)."""
    c = model.c
    grid = k == c.K and (m != c.M or n != c.N)
    if not grid:
        return True
    os_ = stat is Stationarity.OutputStationary
    if c.max_n_pipelined > 0 and (os_ or stat is Stationarity.AStationary) and \
            n > c.max_n_pipelined:
        return False
    return not (c.max_n_nested_pipelined > 0 and os_ and model.holds_a(m, n)
                and n > c.max_n_nested_pipelined)


def _validate(c: L0TileConfig) -> None:
    def need(ok: bool, what: str) -> None:
        if not ok:
            raise ValueError(f"choose_l0_tile: {what}")

    need(c.M > 0 and c.N > 0 and c.K > 0, f"M, N, K must be positive, got {c.M}, {c.N}, {c.K}")
    need(c.l0a_bytes > 0 and c.l0b_bytes > 0 and c.l0c_bytes > 0,
         "the L0 capacities must be positive")
    need(c.bytes_a > 0 and c.bytes_b > 0 and c.bytes_c > 0, "element sizes must be positive")
    need(c.min_m > 0 and c.min_n > 0 and c.min_k > 0, "minimum tile dims must be positive")
    need(min(c.align_m, c.align_n, c.align_k, c.l0c_align_m, c.box_align_m,
             c.box_align_n) > 0, "alignments must be positive")
    need(c.max_n == 0 or c.max_n >= c.min_n, f"max_n {c.max_n} is below min_n {c.min_n}")
    need(c.bw_a > 0 and c.bw_b > 0 and c.bw_drain > 0, "bandwidths must be positive")
    if not c.allow_padding:
        need(c.M >= c.min_m and c.N >= c.min_n and c.K >= c.min_k,
             f"without padding M, N, K ({c.M}, {c.N}, {c.K}) must reach the cube minimum "
             f"({c.min_m}, {c.min_n}, {c.min_k})")


def choose_l0_tile(cfg: L0TileConfig) -> L0TileResult:
    """The minimum-wall legal tile and design point (module docstring); ValueError when the
    config is invalid or no legal tile exists (e.g. a K off the cube alignment)."""
    _validate(cfg)
    model = _Model(cfg)
    best = _best(model, Stationarity.OutputStationary, False, False, False)
    if best is None:
        raise ValueError(
            f"choose_l0_tile: no legal (m, n, k) tile for M={cfg.M}, N={cfg.N}, K={cfg.K} "
            f"(K must be a multiple of {cfg.align_k}, and the minimum tile must fit L0)")
    if (best.m, best.n, best.k) != (cfg.M, cfg.N, cfg.K):
        stats = [Stationarity.OutputStationary]
        stats += [Stationarity.AStationary] if cfg.allow_a_stationary else []
        stats += [Stationarity.BStationary] if cfg.allow_b_stationary else []
        min_acc = model.acc_elements(cfg.min_m, cfg.min_n)
        for stat in stats:
            for dbc in (False, True) if cfg.allow_double_buffer_c else (False,):
                if stat is Stationarity.OutputStationary and not dbc:
                    continue
                if cfg.l0c_bytes // (cfg.bytes_c * (2 if dbc else 1)) < min_acc:
                    continue
                full_k = stat is not Stationarity.OutputStationary or dbc
                cand = _best(model, stat, dbc, dbc, full_k)
                if cand is not None and cand.wall < best.wall:
                    best = cand
    return L0TileResult(
        m=best.m, n=best.n, k=best.k,
        estimated_traffic_bytes=model.traffic(best.m, best.n, best.k, best.stat),
        estimated_cost_cycles=best.wall,
        padded_compute_volume=model.padded(best.m, best.n, best.k),
        stationarity=best.stat, os_holds_a=model.holds_a(best.m, best.n),
        double_buffer_c=best.dbc,
    )
