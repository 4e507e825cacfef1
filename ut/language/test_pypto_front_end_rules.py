# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Front-end rules read as PyPTO applies them (issue 24 item 5): each rule with a
program that compiles and runs, and one that fails with the user's line.

* `pl.cast(v, target_type=...)` on a Scalar: the one cast signature
  (input, target_type, mode) of docs/design/language.md §19;
* a padded window `pl.slice(src, shape, offset, valid_shape=v)` may overhang its
  source when offset + valid_shape fits (docs/design/checks.md §6), checked at
  compile time and at run time;
* a name bound in a loop escapes it only on a forward *use*: re-assigned before
  any read after the loop, it is not carried out (docs/design/language.md §17);
* `pl.store` / `pl.tile.store` take PyPTO's 4th operand ``shapes=``, the ND partition
  the tile fills (docs/ops.md, tile.store).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.ir.errors import InvalidOperationError, ParserTypeError, PyptoError

ROWS, COLS = 40, 64


def _run(prog, *args, platform: str = "a2a3sim") -> None:
    pytest_pypto.run(prog, *args, config=RunConfig(platform=platform))


# ------------------------------------------------------------ scalar cast


def _scale_by(n_cast):
    """A kernel multiplying a tile by ``n_cast(n)`` (a Scalar cast of an INT32 argument)."""

    @pl.program
    class Scale:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[16, COLS], pl.FP32], n: pl.Scalar[pl.INT32],
              out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
            f = n_cast(n)
            out = pl.store(pl.mul(pl.load(x, [0, 0], [16, COLS]), f), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[16, COLS], pl.FP32], n: pl.Scalar[pl.INT32],
                 out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
            out = self.k(x, n, out)
            return out

    return Scale


@pl.inline
def _cast_keyword(n: pl.Scalar[pl.INT32]) -> pl.Scalar[pl.FP32]:
    return pl.cast(n, target_type=pl.FP32)


@pl.inline
def _cast_positional(n: pl.Scalar[pl.INT32]) -> pl.Scalar[pl.FP32]:
    return pl.cast(n, pl.FP32, "round")


@pytest.mark.parametrize("form", [_cast_keyword, _cast_positional], ids=["keyword", "positional"])
def test_scalar_cast_takes_target_type(form) -> None:
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS) / 7
    out = np.zeros_like(x)
    _run(_scale_by(form), x, 3, out)
    np.testing.assert_array_equal(out, x * np.float32(3.0))


def test_scalar_cast_refuses_a_keyword_it_does_not_have(line_of) -> None:
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, n: pl.Scalar[pl.INT32], out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]):
                f = pl.cast(n, dtype=pl.FP32)  # bad-cast-kw
    assert ei.value.line == line_of("bad-cast-kw")
    assert "target_type" in ei.value.message and "dtype=" in ei.value.message


def test_scalar_cast_keeps_refusing_a_rounding_mode(line_of) -> None:
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, n: pl.Scalar[pl.FP32], out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]):
                f = pl.cast(n, target_type=pl.INT32, mode="floor")  # bad-cast-mode
    assert ei.value.line == line_of("bad-cast-mode")


# ------------------------------------------------------------ padded windows


def _copy_rows(first: int, valid: int):
    """Copies rows [first, first + valid) of x through a 16-row window with valid_shape."""

    @pl.program
    class Window:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                w = pl.slice(x, [16, COLS], [first, 0], valid_shape=[valid, COLS])  # window
                out = pl.assemble(out, w, [first, 0])
            return out

    return Window


def test_a_padded_window_may_overhang_its_source() -> None:
    x = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    out = np.zeros_like(x)
    _run(_copy_rows(32, 8), x, out)  # rows 32..47 of a 40-row source; 8 of them valid
    np.testing.assert_array_equal(out[32:], x[32:])


def test_a_padded_window_whose_valid_region_overhangs_is_a_compile_error(line_of) -> None:
    x = np.zeros((ROWS, COLS), np.float32)
    with pytest.raises(ParserTypeError) as ei:
        _run(_copy_rows(32, 9), x, np.zeros_like(x))
    assert ei.value.line == line_of("window")
    assert "offset 32 + valid extent 9 > source extent 40" in ei.value.message


def _tail_rows(limit: int):
    """Row tiles of 16 over 48 rows of a 40-row source, each valid up to ``limit``."""

    @pl.program
    class Tail:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[ROWS, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[ROWS, COLS], pl.FP32]]) -> pl.Tensor[[ROWS, COLS], pl.FP32]:
            for b in pl.parallel(0, 48, 16):
                v = pl.max(pl.min(16, limit - b), 0)
                with pl.at(level=pl.Level.CORE_GROUP):
                    w = pl.slice(x, [16, COLS], [b, 0], valid_shape=[v, COLS])  # tail
                    out = pl.assemble(out, w, [b, 0])
            return out

    return Tail


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_run_time_valid_extents_bound_the_window_read(platform: str) -> None:
    x = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS) + 1
    out = np.zeros_like(x)
    _run(_tail_rows(ROWS), x, out, platform=platform)
    np.testing.assert_array_equal(out, x)


def test_a_run_time_valid_extent_past_the_source_fails_at_its_line(line_of) -> None:
    x = np.zeros((ROWS, COLS), np.float32)
    with pytest.raises(PyptoError) as ei:
        _run(_tail_rows(ROWS + 2), x, np.zeros_like(x))
    assert ei.value.line == line_of("tail")
    assert "offset 32 + extent 10 > source extent 40" in ei.value.message


# ------------------------------------------------------------ escaping loop values


def _staged(reassigned: bool):
    """`buf` is first bound inside a loop; after it, either bound again before its read
    (no forward use: nothing escapes) or read as it stands (a forward use)."""
    if reassigned:
        @pl.program
        class Staged:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
                for i in pl.range(2):
                    buf = pl.create_tensor([8, COLS], dtype=pl.FP32)
                    with pl.at(level=pl.Level.CORE_GROUP):
                        t = pl.load(x, [0, 0], [8, COLS])
                        buf = pl.store(t, [0, 0], buf)
                buf = pl.create_tensor([8, COLS], dtype=pl.FP32)
                with pl.at(level=pl.Level.CORE_GROUP):
                    buf = pl.store(pl.load(x, [8, 0], [8, COLS]), [0, 0], buf)
                    u = pl.load(buf, [0, 0], [8, COLS])
                    out = pl.store(u, [0, 0], out)
                    out = pl.store(u, [8, 0], out)
                return out
        return Staged

    @pl.program
    class Escapes:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
            for i in pl.range(2):  # escaping-loop
                buf = pl.create_tensor([8, COLS], dtype=pl.FP32)
                with pl.at(level=pl.Level.CORE_GROUP):
                    buf = pl.store(pl.load(x, [0, 0], [8, COLS]), [0, 0], buf)
            with pl.at(level=pl.Level.CORE_GROUP):
                out = pl.store(pl.load(buf, [0, 0], [8, COLS]), [0, 0], out)
            return out
    return Escapes


def test_a_name_reassigned_after_the_loop_does_not_escape_it() -> None:
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS)
    out = np.zeros_like(x)
    _run(_staged(reassigned=True), x, out)
    np.testing.assert_array_equal(out[:8], x[8:])
    np.testing.assert_array_equal(out[8:], x[8:])


def test_a_name_read_after_the_loop_escapes_it(line_of) -> None:
    x = np.zeros((16, COLS), np.float32)
    with pytest.raises(ParserTypeError) as ei:
        _run(_staged(reassigned=False), x, np.zeros_like(x))
    assert ei.value.line == line_of("escaping-loop")
    assert "'buf' is assigned inside the loop" in ei.value.message


# ------------------------------------------------------------ store with shapes=


def _store_partition(shapes, flat: bool):
    """Stores row 1 of x (a [1, 16, COLS] window) into row 2 of out with ``shapes=``;
    ``flat`` stores it as a 2-D [16, COLS] tile (a lower-rank tile)."""

    @pl.program
    class Partition:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[4, 16, COLS], pl.FP32],
              out: pl.Out[pl.Tensor[[4, 16, COLS], pl.FP32]]) -> pl.Tensor[[4, 16, COLS], pl.FP32]:
            t = pl.load(x, [1, 0, 0], [1, 16, COLS])
            if flat:
                t2 = pl.reshape(t, [16, COLS])
                out = pl.tile.store(t2, [2, 0, 0], out, shapes=shapes)
            else:
                out = pl.store(t, [2, 0, 0], out, shapes)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[4, 16, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[4, 16, COLS], pl.FP32]]) -> pl.Tensor[[4, 16, COLS], pl.FP32]:
            out = self.k(x, out)
            return out

    return Partition


@pytest.mark.parametrize(("shapes", "flat"), [([1, 16, COLS], False), ([1, 16, COLS], True),
                                               ([2, 8, COLS], True)])
def test_store_takes_the_nd_partition_shapes(shapes, flat) -> None:
    x = np.arange(4 * 16 * COLS, dtype=np.float32).reshape(4, 16, COLS)
    out = np.zeros_like(x)
    _run(_store_partition(shapes, flat), x, out)
    rows = np.prod(shapes[:2])
    got = out[2:2 + shapes[0], :shapes[1]].reshape(rows, COLS)
    np.testing.assert_array_equal(got, x[1])


def test_store_shapes_that_do_not_hold_the_tile_are_refused(line_of) -> None:
    with pytest.raises(PyptoError) as ei:
        @pl.program
        class Short:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[4, 16, COLS], pl.FP32],
                  out: pl.Out[pl.Tensor[[4, 16, COLS], pl.FP32]]) -> pl.Tensor[[4, 16, COLS], pl.FP32]:
                t = pl.reshape(pl.load(x, [1, 0, 0], [1, 16, COLS]), [16, COLS])
                out = pl.tile.store(t, [2, 0, 0], out, shapes=[1, 8, COLS])  # short-partition
                return out
    assert ei.value.line == line_of("short-partition")
    assert "shapes [1, 8, 64] to hold the tile [16, 64]" in ei.value.message


# ------------------------------------------------------------ clamped orchestration views


def _gather_rows(reads: int):
    """Orchestration slices 8 entries of a 12-entry index table at offset 8 (4 inside);
    the kernel reads ``reads`` of them."""

    @pl.program
    class Gather:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, idx: pl.Tensor[[8], pl.INT32], x: pl.Tensor[[16, COLS], pl.FP32],
              out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
            for i in pl.range(reads):
                r = pl.read(idx, i)  # index-read
                out = pl.store(pl.load(x, [r, 0], [1, COLS]), [i, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, table: pl.Tensor[[12], pl.INT32], x: pl.Tensor[[16, COLS], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
            start = pl.tensor.read(table, [0])
            idx = pl.slice(table, [8], [start])
            out = self.k(idx, x, out)
            return out

    return Gather


def test_an_orchestration_window_overhanging_at_run_time_is_cut_at_the_edge() -> None:
    table = np.array([8, 0, 0, 0, 0, 0, 0, 0, 5, 3, 9, 1], np.int32)
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS)
    out = np.zeros_like(x)
    _run(_gather_rows(4), table, x, out)
    np.testing.assert_array_equal(out[:4], x[[5, 3, 9, 1]])


def test_a_read_past_the_cut_window_fails_at_the_read(line_of) -> None:
    table = np.array([8, 0, 0, 0, 0, 0, 0, 0, 5, 3, 9, 1], np.int32)
    x = np.zeros((16, COLS), np.float32)
    with pytest.raises(PyptoError) as ei:
        _run(_gather_rows(5), table, x, np.zeros_like(x))
    assert ei.value.line == line_of("index-read")


# ------------------------------------------------------------ values defined in a pl.at region


@pl.program
class RegionLocal:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
             out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            doubled = pl.add(x, x)  # a tensor first defined in the region
            buf = pl.create_tensor([16, COLS], dtype=pl.FP32)
            buf = pl.store(pl.mul(pl.load(x, [0, 0], [16, COLS]), 3.0), [0, 0], buf)
        with pl.at(level=pl.Level.CORE_GROUP):
            t = pl.add(pl.load(doubled, [0, 0], [16, COLS]), pl.load(buf, [0, 0], [16, COLS]))
            out = pl.store(t, [0, 0], out)
        return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_a_tensor_first_defined_in_a_region_is_visible_after_it(platform) -> None:
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS)
    out = np.zeros_like(x)
    _run(RegionLocal, x, out, platform=platform)
    np.testing.assert_array_equal(out, x * 5)


def test_a_tile_defined_in_a_region_is_not_visible_after_it(line_of) -> None:
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class TileAfter:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]):
                with pl.at(level=pl.Level.CORE_GROUP):
                    t = pl.load(x, [0, 0], [16, COLS])
                with pl.at(level=pl.Level.CORE_GROUP):
                    out = pl.store(t, [0, 0], out)  # tile-after
                return out
    assert ei.value.line == line_of("tile-after")
    assert "'t' is a Tile defined inside the pl.at region" in ei.value.message


# ------------------------------------------------------------ names carried across regions


@pl.program
class CarriedAcross:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
             out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
        k0 = pl.create_tensor([16, COLS], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP):
            k0 = pl.assemble(k0, x, [0, 0])
        for i in pl.range(2):
            with pl.at(level=pl.Level.CORE_GROUP):
                k0 = pl.add(k0, k0)
            with pl.at(level=pl.Level.CORE_GROUP):
                k0 = pl.add(k0, x)
        with pl.at(level=pl.Level.CORE_GROUP):
            out = pl.assemble(out, k0, [0, 0])
        return out


def test_a_name_carried_across_regions_in_a_loop_runs() -> None:
    x = np.arange(16 * COLS, dtype=np.float32).reshape(16, COLS)
    out = np.zeros_like(x)
    _run(CarriedAcross, x, out)
    np.testing.assert_array_equal(out, x * 7)  # x -> 3x -> 7x


def test_a_name_escaping_a_loop_around_a_region_fails_at_compile_time(line_of) -> None:
    # The outer loop carries k0 out; inside the region the inner loop binds it afresh.
    # Compiled, the region once read the outer loop's variable (`k0 = k0`), which failed
    # at run time; the region cannot see it, so the read after the loop is the error.
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class LeaksOut:
            @pl.function(type=pl.FunctionType.Opaque)
            def main(self, x: pl.Tensor[[16, COLS], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, COLS], pl.FP32]]) -> pl.Tensor[[16, COLS], pl.FP32]:
                for i in pl.range(2):
                    with pl.at(level=pl.Level.CORE_GROUP):
                        for j in pl.range(2):
                            k0 = pl.store(pl.load(x, [0, 0], [16, COLS]), [0, 0], out)
                return k0  # escaped-read
    assert ei.value.line == line_of("escaped-read")
    assert "'k0' is defined inside the loop" in ei.value.message
