# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Buffer reuse in the capacity check (docs/design/checks.md §7), as PyPTO's memory planner does it.

A statement reads its operands before it writes its result, so a result may take the
buffer of an operand whose last use is that statement; an operand still needed later,
a value used inside a loop (needed again next iteration), and the operands of ops that
read while they write (recip, row_expand's row vector, a widening cast...) keep theirs.
Tile sizes and limits come from the arch table; byte counts are computed here from its
alignment, independently of the compiler.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.compiler.api import lower
from pytest_pypto.ir.errors import CapacityError
from ut.helpers import line_finder

ARCHS = ("a2a3", "a5")
C = 128  # columns of every FP32 tile here: 512 bytes a row


line_of = line_finder(__file__)


def config(arch: str) -> RunConfig:
    return RunConfig(platform=f"{arch}sim")


def vec_bytes(rows: int, cols: int, elem: int, arch: str) -> int:
    """docs/design/checks.md §7 for Vec: raw bytes rounded up to the arch's Vec allocation
    alignment."""
    align = spec(arch).alignment["Vec"]
    return math.ceil(rows * cols * elem / align) * align


def two_fit_three_do_not(arch: str) -> int:
    """Rows of an FP32 [rows, C] tile: two such tiles fit the arch's Vec, three do not."""
    cap = spec(arch).capacity["Vec"]
    rows = max(r for r in range(16, 4096, 16) if 2 * vec_bytes(r, C, 4, arch) <= cap)
    assert 3 * vec_bytes(rows, C, 4, arch) > cap
    return rows


def run(program, arch: str, *arrays) -> None:
    compiled = pytest_pypto.compile(program, config(arch))
    pytest_pypto.run(compiled, *arrays, config=config(arch))


def rand(shape, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).uniform(-4, 4, shape).astype(np.float32)


def error_of(program, arch: str) -> CapacityError:
    with pytest.raises(CapacityError) as info:
        lower(program, config(arch))
    return info.value


# ------------------------------------------------------------------ PyPTO's 128x128 add


@pl.program
class Add128:  # three 64 KiB tiles: 192 KiB without reuse, over a2a3's 184 KiB Vec
    @pl.function(type=pl.FunctionType.InCore)
    def add_kernel(self, x: pl.Tensor[[128, 128], pl.FP32], y: pl.Tensor[[128, 128], pl.FP32],
                   out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        a = pl.load(x, [0, 0], [128, 128])
        b = pl.load(y, [0, 0], [128, 128])
        c = pl.add(a, b)
        out = pl.store(c, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[128, 128], pl.FP32], y: pl.Tensor[[128, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[128, 128], pl.FP32]]) -> pl.Tensor[[128, 128], pl.FP32]:
        out = self.add_kernel(x, y, out)
        return out


def test_128x128_fp32_add_fits_a2a3_with_the_result_in_a_dying_operand():
    tile = vec_bytes(128, 128, 4, "a2a3")
    assert 3 * tile > spec("a2a3").capacity["Vec"] >= 2 * tile  # the case is the point
    _, ctx = lower(Add128, config("a2a3"))
    facts = ctx.kernels["add_kernel"]
    assert facts.peak == {"Vec": 2 * tile}
    offsets = {b.name: b.offset for b in facts.buffers}
    assert offsets["a"] != offsets["b"]  # live together
    assert offsets["c"] in (offsets["a"], offsets["b"])  # the memory map shows the reuse


@pytest.mark.parametrize("arch", ARCHS)
def test_128x128_fp32_add_runs_on_both_sims(arch):
    x, y = rand((128, 128), 1), rand((128, 128), 2)
    out = np.zeros((128, 128), np.float32)
    run(Add128, arch, x, y, out)
    np.testing.assert_array_equal(out, x + y)


# ------------------------------------------------------------------ operands live afterwards


def chains(rows: int):
    """``Dying``: each op's operands die at it.  ``Kept``: a and b are read again later."""

    @pl.program
    class Dying:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[rows, C], pl.FP32], y: pl.Tensor[[rows, C], pl.FP32],
              out: pl.Out[pl.Tensor[[rows, C], pl.FP32]]) -> pl.Tensor[[rows, C], pl.FP32]:
            a = pl.load(x, [0, 0], [rows, C])
            b = pl.load(y, [0, 0], [rows, C])
            c = pl.add(a, b)
            d = pl.mul(c, c)
            e = pl.sub(d, c)
            out = pl.store(e, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[rows, C], pl.FP32], y: pl.Tensor[[rows, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[rows, C], pl.FP32]]) -> pl.Tensor[[rows, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    @pl.program
    class Kept:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[rows, C], pl.FP32], y: pl.Tensor[[rows, C], pl.FP32],
              out: pl.Out[pl.Tensor[[rows, C], pl.FP32]]) -> pl.Tensor[[rows, C], pl.FP32]:
            a = pl.load(x, [0, 0], [rows, C])
            b = pl.load(y, [0, 0], [rows, C])
            c = pl.add(a, b)  # kept-third
            d = pl.mul(c, a)
            e = pl.sub(d, b)
            out = pl.store(e, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[rows, C], pl.FP32], y: pl.Tensor[[rows, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[rows, C], pl.FP32]]) -> pl.Tensor[[rows, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    return Dying, Kept


@pytest.mark.parametrize("arch", ARCHS)
def test_dying_operands_reuse_and_live_ones_do_not(arch):
    rows = two_fit_three_do_not(arch)
    tile = vec_bytes(rows, C, 4, arch)
    dying, kept = chains(rows)
    _, ctx = lower(dying, config(arch))
    assert ctx.kernels["k"].peak == {"Vec": 2 * tile}
    x, y = rand((rows, C), 3), rand((rows, C), 4)
    out = np.zeros((rows, C), np.float32)
    run(dying, arch, x, y, out)
    c = x + y
    np.testing.assert_array_equal(out, c * c - c)

    err = error_of(kept, arch)
    limit = spec(arch).capacity["Vec"]
    assert err.message == (
        f"Function 'k': Vec peak usage is {3 * tile} bytes, over the {limit}-byte limit "
        f"of the '{arch}' backend"
    )
    assert (err.file, err.line) == (__file__, line_of("# kept-third"))
    assert err.arch == arch
    assert [part.split(" (")[0] for part in err.notes[0].removeprefix("live at the peak: ").split("; ")] == [
        "a", "b", "c",
    ]


# ------------------------------------------------------------------ loops


def loops(rows: int):
    """``Invariant``: a and b loaded once, read in every iteration.  ``Streamed``: per iteration."""

    @pl.program
    class Invariant:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[rows, C], pl.FP32], y: pl.Tensor[[rows, C], pl.FP32],
              out: pl.Out[pl.Tensor[[rows, C], pl.FP32]]) -> pl.Tensor[[rows, C], pl.FP32]:
            a = pl.load(x, [0, 0], [rows, C])
            b = pl.load(y, [0, 0], [rows, C])
            for i in pl.range(2):
                c = pl.add(a, b)  # loop-third
                out = pl.store(c, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[rows, C], pl.FP32], y: pl.Tensor[[rows, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[rows, C], pl.FP32]]) -> pl.Tensor[[rows, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    @pl.program
    class Streamed:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2 * rows, C], pl.FP32], y: pl.Tensor[[2 * rows, C], pl.FP32],
              out: pl.Out[pl.Tensor[[2 * rows, C], pl.FP32]]) -> pl.Tensor[[2 * rows, C], pl.FP32]:
            for i in pl.range(2):
                a = pl.load(x, [i * rows, 0], [rows, C])
                b = pl.load(y, [i * rows, 0], [rows, C])
                c = pl.add(a, b)
                out = pl.store(c, [i * rows, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[2 * rows, C], pl.FP32], y: pl.Tensor[[2 * rows, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[2 * rows, C], pl.FP32]]) -> pl.Tensor[[2 * rows, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    return Invariant, Streamed


@pytest.mark.parametrize("arch", ARCHS)
def test_values_used_in_a_loop_stay_live_across_iterations(arch):
    rows = two_fit_three_do_not(arch)
    tile = vec_bytes(rows, C, 4, arch)
    invariant, streamed = loops(rows)
    err = error_of(invariant, arch)  # a and b are read again next iteration: c cannot reuse them
    assert f"Vec peak usage is {3 * tile} bytes, over the {spec(arch).capacity['Vec']}-byte" in err.message
    assert err.line == line_of("# loop-third")
    assert "Function 'k'" in err.message and f"'{arch}' backend" in err.message

    _, ctx = lower(streamed, config(arch))  # loaded in the iteration: they die at the add
    assert ctx.kernels["k"].peak == {"Vec": 2 * tile}
    x, y = rand((2 * rows, C), 5), rand((2 * rows, C), 6)
    out = np.zeros((2 * rows, C), np.float32)
    run(streamed, arch, x, y, out)
    np.testing.assert_array_equal(out, x + y)


def carries(rows: int):
    """A Vec accumulator carried by a loop; ``Clobber`` still reads it after its next value."""

    @pl.program
    class Accumulate:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2 * rows, C], pl.FP32], y: pl.Tensor[[2 * rows, C], pl.FP32],
              out: pl.Out[pl.Tensor[[2 * rows, C], pl.FP32]]) -> pl.Tensor[[2 * rows, C], pl.FP32]:
            acc0 = pl.load(x, [0, 0], [rows, C])
            for i, (acc,) in pl.range(2, init_values=(acc0,)):
                t = pl.load(y, [i * rows, 0], [rows, C])
                nxt = pl.add(acc, t)  # written straight into the carry's buffer
                u = pl.load(x, [i * rows, 0], [rows, C])
                out = pl.store(u, [i * rows, 0], out)
                acc_out = pl.yield_(nxt)
            out = pl.store(acc_out, [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[2 * rows, C], pl.FP32], y: pl.Tensor[[2 * rows, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[2 * rows, C], pl.FP32]]) -> pl.Tensor[[2 * rows, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    @pl.program
    class Clobber:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[2 * rows, C], pl.FP32], y: pl.Tensor[[2 * rows, C], pl.FP32],
              out: pl.Out[pl.Tensor[[2 * rows, C], pl.FP32]]) -> pl.Tensor[[2 * rows, C], pl.FP32]:
            acc0 = pl.load(x, [0, 0], [rows, C])
            for i, (acc,) in pl.range(2, init_values=(acc0,)):
                t = pl.load(y, [i * rows, 0], [rows, C])
                nxt = pl.add(t, t)
                v = pl.sub(acc, nxt)  # carry-read-late
                out = pl.store(v, [i * rows, 0], out)
                acc_out = pl.yield_(nxt)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[2 * rows, C], pl.FP32], y: pl.Tensor[[2 * rows, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[2 * rows, C], pl.FP32]]) -> pl.Tensor[[2 * rows, C], pl.FP32]:
            out = self.k(x, y, out)
            return out

    return Accumulate, Clobber


@pytest.mark.parametrize("arch", ARCHS)
def test_a_loops_yielded_value_is_written_into_the_carry_buffer(arch):
    rows = two_fit_three_do_not(arch)
    tile = vec_bytes(rows, C, 4, arch)
    accumulate, clobber = carries(rows)
    _, ctx = lower(accumulate, config(arch))  # the carry, then the next value or u: two tiles
    assert ctx.kernels["k"].peak == {"Vec": 2 * tile}
    x, y = rand((2 * rows, C), 7), rand((2 * rows, C), 8)
    out = np.zeros((2 * rows, C), np.float32)
    run(accumulate, arch, x, y, out)
    expected = x.copy()
    expected[:rows] = x[:rows] + y[:rows] + y[rows:]
    np.testing.assert_array_equal(out, expected)

    err = error_of(clobber, arch)  # acc is read after nxt: nxt needs its own buffer
    assert f"Vec peak usage is {3 * tile} bytes" in err.message
    assert err.line == line_of("# carry-read-late")


# ------------------------------------------------------------------ ops that read while writing


def unaries(rows: int, cols: int):
    """One [rows, cols] FP32 tile through exp (in place) and through recip (not)."""

    def build(op):
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[rows, cols], pl.FP32],
                  out: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]) -> pl.Tensor[[rows, cols], pl.FP32]:
                a = pl.load(x, [0, 0], [rows, cols])
                r = op(a)  # unary-result
                out = pl.store(r, [0, 0], out)
                return out

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, x: pl.Tensor[[rows, cols], pl.FP32],
                     out: pl.Out[pl.Tensor[[rows, cols], pl.FP32]]) -> pl.Tensor[[rows, cols], pl.FP32]:
                out = self.k(x, out)
                return out

        return P

    return build(pl.exp), build(pl.recip)


@pytest.mark.parametrize("arch", ARCHS)
def test_recip_cannot_write_over_its_operand(arch):
    cap = spec(arch).capacity["Vec"]
    rows = max(r for r in range(16, 4096, 16) if vec_bytes(r, C, 4, arch) <= cap)
    tile = vec_bytes(rows, C, 4, arch)
    assert 2 * tile > cap
    exp_prog, recip_prog = unaries(rows, C)
    _, ctx = lower(exp_prog, config(arch))
    assert ctx.kernels["k"].peak == {"Vec": tile}
    err = error_of(recip_prog, arch)
    assert err.message == (
        f"Function 'k': Vec peak usage is {2 * tile} bytes, over the {cap}-byte limit "
        f"of the '{arch}' backend"
    )
    assert err.line == line_of("# unary-result")


@pl.program
class Reads:  # small tiles: peaks only
    @pl.function(type=pl.FunctionType.InCore)
    def widen(self, x: pl.Tensor[[64, 128], pl.FP16],
              out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        h = pl.load(x, [0, 0], [64, 128])
        w = pl.cast(h, pl.FP32)
        out = pl.store(w, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def narrow(self, x: pl.Tensor[[64, 128], pl.FP32],
               out: pl.Out[pl.Tensor[[64, 128], pl.FP16]]) -> pl.Tensor[[64, 128], pl.FP16]:
        w = pl.load(x, [0, 0], [64, 128])
        h = pl.cast(w, pl.FP16)
        out = pl.store(h, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.InCore)
    def expand(self, x: pl.Tensor[[64, 128], pl.FP32], v: pl.Tensor[[64, 1], pl.FP32],
               out: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        t = pl.load(x, [0, 0], [64, 128])
        rv = pl.load(v, [0, 0], [64, 1])
        r = pl.row_expand_sub(t, rv)
        s = pl.add(r, t)
        out = pl.store(s, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x16: pl.Tensor[[64, 128], pl.FP16], x: pl.Tensor[[64, 128], pl.FP32],
             v: pl.Tensor[[64, 1], pl.FP32], o32: pl.Out[pl.Tensor[[64, 128], pl.FP32]],
             o16: pl.Out[pl.Tensor[[64, 128], pl.FP16]],
             o2: pl.Out[pl.Tensor[[64, 128], pl.FP32]]) -> pl.Tensor[[64, 128], pl.FP32]:
        o32 = self.widen(x16, o32)
        o16 = self.narrow(x, o16)
        o2 = self.expand(x, v, o2)
        return o2


@pytest.mark.parametrize("arch", ARCHS)
def test_widening_cast_and_row_vector_keep_their_operand_live(arch):
    _, ctx = lower(Reads, config(arch))
    fp16, fp32 = vec_bytes(64, 128, 2, arch), vec_bytes(64, 128, 4, arch)
    row_vec = vec_bytes(64, 1, 4, arch)
    assert ctx.kernels["widen"].peak == {"Vec": fp16 + fp32}  # read ahead of the write cursor
    assert ctx.kernels["narrow"].peak == {"Vec": fp32}  # the FP16 result fits the dying FP32
    # t is read again after r: r may not take the dying row vector's buffer either
    # (it is re-read for every row), so t, rv and r are all live as r is written
    assert ctx.kernels["expand"].peak == {"Vec": 2 * fp32 + row_vec}
