"""The capacity pass on long kernels: the same verdicts, peaks and memory map as on short ones.

check_capacity sums live bytes with a running sum and places buffers with an
expiring active set (O(n log n)); these tests pin that a kernel thousands of ops
long reports exactly the CapacityError of a short kernel with the same peak, and
that peaks and offsets equal the plain definitions (sum over every point, first
fit among every overlapping buffer) on a kernel with lifetimes of every length.
"""

from __future__ import annotations

import copy
import math

import pytest
from irb import Fn, T, orchestrate, program
from kernels import OUT

from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.compiler.api import lower
from pytest_pypto.ir.errors import CapacityError

A2A3 = RunConfig(platform="a2a3sim")


def _overlapping_peak(k: Fn, line: int, result: str, into: str) -> str:
    """Two 96 KiB Vec tiles live at once (c reuses a dying operand): 192 KiB, over a2a3's 184 KiB."""
    k.let("a", "tile.load", line, "x", [0, 0], [192, 128])
    k.let("b", "tile.load", line + 1, "x", [0, 0], [192, 128])
    k.let("c", "tile.add", line + 2, "a", "b")
    k.let(result, "tile.store", line + 3, "c", [0, 0], into)
    return result


def _small_chain(k: Fn, prefix: str, ops: int, into: str, result: str) -> str:
    """``ops`` small Vec ops one after another (two 512-byte tiles live at a time)."""
    prev = f"{prefix}0"
    k.let(prev, "tile.load", 200, "x", [0, 0], [8, 16])
    for i in range(1, ops):
        name = f"{prefix}{i}"
        k.let(name, "tile.adds", 200, prev, 1.0)
        prev = name
    k.let(result, "tile.store", 200, prev, [0, 0], into)
    return result


def _kernel(before: int, after: int):
    k = Fn("v", "InCore", 50, x=T(192, 128), y=(T(192, 128), OUT))
    out = "y"
    if before:
        out = _small_chain(k, "p", before, out, "y0")
    out = _overlapping_peak(k, 51, "y1", out)
    if after:
        out = _small_chain(k, "q", after, out, "y2")
    k.ret(out, line=300)
    return program(k, orchestrate(k))


def _capacity_error(prog) -> CapacityError:
    with pytest.raises(CapacityError) as info:
        lower(prog, A2A3)
    return info.value


def test_long_kernel_reports_the_short_kernels_capacity_error():
    short = _capacity_error(_kernel(0, 0))
    long = _capacity_error(_kernel(3000, 3000))
    assert long.message == (
        "Function 'v': Vec peak usage is 196608 bytes, over the 188416-byte limit of the "
        "'a2a3' backend"
    )
    assert (long.message, long.notes, long.hint, long.line, long.arch) == (
        short.message, short.notes, short.hint, short.line, short.arch
    )
    assert long.line == 52  # the load that made the second tile live
    assert long.notes == (
        "live at the peak: a (Vec [192, 128] FP32, 98304 bytes, line 51); "
        "b (Vec [192, 128] FP32, 98304 bytes, line 52)",
    )


def _naive_peak(buffers, points: int) -> int:
    return max(
        [sum(b.nbytes for b in buffers if b.start <= p <= b.end) for p in range(points)],
        default=0,
    )


def _naive_offsets(buffers, arch) -> dict[str, int]:
    """The memory map's definition: first fit among all placed, overlapping buffers."""
    placed: dict[str, list] = {}
    offsets: dict[str, int] = {}
    for buf in sorted(copy.copy(buffers), key=lambda b: (b.start, b.name)):
        align = arch.alignment.get(buf.space, 1)
        others = sorted(
            (o for o in placed.get(buf.space, []) if o.start <= buf.end and buf.start <= o.end),
            key=lambda o: offsets[o.name],
        )
        offset = 0
        for o in others:
            if offset + buf.nbytes <= offsets[o.name]:
                break
            offset = max(offset, math.ceil((offsets[o.name] + o.nbytes) / align) * align)
        offsets[buf.name] = offset
        placed.setdefault(buf.space, []).append(buf)
    return offsets


def test_peaks_and_offsets_match_the_definitions_on_a_long_kernel():
    # Every tile is used again 1..7 ops later and some stay live across a loop, so
    # lifetimes overlap in every pattern; sizes vary so first fit leaves gaps.
    k = Fn("w", "InCore", 10, x=T(64, 128), y=(T(64, 128), OUT))
    names = []
    for i in range(400):
        rows = (1, 2, 4, 8)[i % 4]
        if i % 9 == 0 or len(names) < 8:
            k.let(f"t{i}", "tile.load", 11, "x", [0, 0], [rows, 128])
        else:
            k.let(f"t{i}", "tile.adds", 12, names[-1 - (i * 5) % 7], 1.0)
        names.append(f"t{i}")
    with k.loop("r", 0, 4, 1, 13, carry=(("o", "y"),), results=("y2",)):
        k.let("u", "tile.add", 14, names[-1], names[-2])
        k.let("o2", "tile.store", 15, "u", [0, 0], "o")
        k.yield_("o2", line=15)
    k.ret("y2", line=16)
    _, ctx = lower(program(k, orchestrate(k)), A2A3)
    facts = ctx.kernels["w"]
    buffers = facts.buffers
    points = max(b.end for b in buffers) + 1
    assert len(buffers) > 350
    for space in {b.space for b in buffers}:
        in_space = [b for b in buffers if b.space == space]
        assert facts.peak[space] == _naive_peak(in_space, points)
    expected = _naive_offsets(buffers, spec("a2a3"))
    assert {b.name: b.offset for b in buffers} == expected
    assert len(set(expected.values())) > 3  # the map is not trivially all zeros
