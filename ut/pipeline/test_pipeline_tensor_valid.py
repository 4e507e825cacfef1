# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Tensor valid regions end to end on both sims (PyPTO's tensor valid_shape).

`pl.set_validshape(tensor, r, c)`, `pl.slice(..., valid_shape=..., clamp=True)` narrow
a tensor's valid region; tensor ops on it compute inside it, `pl.fillpad` paints the
rest, and `pl.assemble` / `dst[...] = src` transfer only it.  Also: an FP32 matmul
result assembled into an FP16/BF16 target (atomically or not) converts once.
References are plain numpy written here.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import ArchSupportError, ParserTypeError, ShapeError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
SENTINEL = -1000.0


line_of = line_finder(__file__)


def run(program, platform, *arrays):
    compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    return pytest_pypto.run(compiled, *arrays, config=RunConfig(platform=platform))


def padded_source(rows: int, cols: int, valid_cols: int) -> np.ndarray:
    """Payload in the first valid_cols columns, a sentinel in the rest (must not leak)."""
    src = np.full((rows, cols), SENTINEL, np.float32)
    src[:, :valid_cols] = np.arange(rows * valid_cols, dtype=np.float32).reshape(rows, valid_cols)
    return src


# ------------------------------------------------------- set_validshape + fillpad


def fillpad_program(pad):
    @pl.program
    class Fillpad:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[64, 64], pl.FP32],
                 out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                narrowed = pl.set_validshape(x, 48, 56)
                padded = pl.fillpad(narrowed, pad_value=pad)
                out = pl.assemble(out, padded, [0, 0])
            return out

    return Fillpad


@pytest.mark.parametrize("pad,fill", [(pl.PadValue.zero, 0.0), (pl.PadValue.max, np.inf),
                                      (pl.PadValue.min, -np.inf)])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_fillpad_of_a_narrowed_tensor_paints_outside_its_valid_region(platform, pad, fill):
    x = np.random.default_rng(1).standard_normal((64, 64)).astype(np.float32)
    out = np.zeros((64, 64), np.float32)
    run(fillpad_program(pad), platform, x, out)
    want = np.full((64, 64), fill, np.float32)
    want[:48, :56] = x[:48, :56]
    np.testing.assert_array_equal(out, want)


@pl.program
class RuntimeRows:
    """The valid row count is read at run time, so it cannot fold into the program."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[64, 64], pl.FP32], n: pl.Tensor[[1], pl.INT32],
             out: pl.Out[pl.Tensor[[64, 64], pl.FP32]]) -> pl.Tensor[[64, 64], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            rows = pl.cast(pl.read(n, [0]), pl.INDEX)
            padded = pl.fillpad(pl.set_validshape(x, rows, 56), pad_value=pl.PadValue.min)
            out = pl.assemble(out, padded, [0, 0])
        return out


@pytest.mark.parametrize("rows", [0, 37, 64])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_run_time_valid_extent_bounds_the_computation(platform, rows):
    x = np.random.default_rng(2).standard_normal((64, 64)).astype(np.float32)
    out = np.zeros((64, 64), np.float32)
    run(RuntimeRows, platform, x, np.array([rows], np.int32), out)
    want = np.full((64, 64), -np.inf, np.float32)
    want[:rows, :56] = x[:rows, :56]
    np.testing.assert_array_equal(out, want)


@pl.program
class BigNarrowed:
    """1 MiB of FP32: tiled to fit Vec, each tile's valid part cut from the region."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[512, 512], pl.FP32],
             out: pl.Out[pl.Tensor[[512, 512], pl.FP32]]) -> pl.Tensor[[512, 512], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            narrowed = pl.set_validshape(x, 300, 500)
            padded = pl.fillpad(pl.mul(narrowed, 2.0), pad_value=pl.PadValue.zero)
            out = pl.assemble(out, padded, [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_narrowed_tensor_too_big_for_vec_is_tiled_inside_its_region(platform):
    x = np.random.default_rng(3).standard_normal((512, 512)).astype(np.float32)
    out = np.ones((512, 512), np.float32)
    run(BigNarrowed, platform, x, out)
    want = np.zeros((512, 512), np.float32)
    want[:300, :500] = x[:300, :500] * np.float32(2)
    np.testing.assert_array_equal(out, want)


# ------------------------------------------------------- assemble transfers valid only


@pl.program
class AssembleAtOffset:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[16, 8], pl.FP32],
             out: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            narrowed = pl.set_validshape(src, 16, 4)
            out = pl.assemble(out, narrowed, [8, 0])
        return out


@pl.program
class SubscriptWrite:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[16, 8], pl.FP32],
             out: pl.InOut[pl.Tensor[[64, 32], pl.FP32]]) -> pl.Tensor[[64, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            narrowed = pl.set_validshape(src, 16, 4)
            out[8:24, 0:4] = narrowed
        return out


@pytest.mark.parametrize("program", [AssembleAtOffset, SubscriptWrite])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_assemble_writes_only_the_source_valid_region(platform, program):
    src = padded_source(16, 8, 4)
    out = np.zeros((64, 32), np.float32)
    run(program, platform, src, out)
    want = np.zeros((64, 32), np.float32)
    want[8:24, :4] = src[:, :4]
    np.testing.assert_array_equal(out, want)  # the sentinel columns never land


@pl.program
class IntoValidSized:
    """The target is the valid region's size: a whole-source write would overrun it."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[16, 8], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[16, 4], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            narrowed = pl.set_validshape(src, 16, 4)
            out[:, :] = narrowed
        return out


@pl.program
class ScalarOpKeepsRegion:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, src: pl.Tensor[[16, 8], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[16, 4], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            incremented = pl.add(pl.set_validshape(src, 16, 4), 1.0)
            out = pl.assemble(out, incremented, [0, 0])
        return out


@pl.program
class BinaryOpKeepsRegion:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[16, 8], pl.FP32], b: pl.Tensor[[16, 8], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[16, 4], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            summed = pl.add(pl.set_validshape(a, 16, 4), pl.set_validshape(b, 16, 4))
            out = pl.assemble(out, summed, [0, 0])
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_tensor_ops_keep_the_valid_region_into_a_valid_sized_target(platform):
    src = padded_source(16, 8, 4)
    out = np.zeros((16, 4), np.float32)
    run(IntoValidSized, platform, src, out)
    np.testing.assert_array_equal(out, src[:, :4])
    run(ScalarOpKeepsRegion, platform, src, out)
    np.testing.assert_array_equal(out, src[:, :4] + np.float32(1))
    half = src * np.float32(0.5)
    run(BinaryOpKeepsRegion, platform, src, half, out)
    np.testing.assert_array_equal(out, src[:, :4] + half[:, :4])


# ----------------------------------------------------------------- slices and loads


@pl.program
class ClampedSlice:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[40, 32], pl.FP32],
             out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            tail = pl.slice(x, [16, 32], [32, 0], clamp=True)  # rows 32..39 exist
            out = pl.assemble(out, tail, [0, 0])
        return out


@pl.program
class SliceValidThenLoad:
    """A slice narrowed by a run-time column count, read by the user's own pl.load."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[40, 32], pl.FP32], n: pl.Tensor[[1], pl.INT32],
             out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            cols = pl.cast(pl.read(n, [0]), pl.INDEX)
            window = pl.slice(x, [16, 32], [4, 0], valid_shape=[16, cols])
            t = pl.load(window, [0, 0], [16, 32])
            out = pl.store(pl.fillpad(t, pad_value=pl.PadValue.zero), [0, 0], out)
        return out


@pl.program
class StaticLoad:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 32], pl.FP32],
             out: pl.InOut[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            narrowed = pl.set_validshape(x, 10, 20)
            t = pl.load(narrowed, [8, 0], [8, 32])
            out = pl.store(t, [0, 0], out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_slices_and_loads_read_only_the_valid_region(platform):
    x = np.random.default_rng(4).standard_normal((40, 32)).astype(np.float32)
    out = np.full((16, 32), 5.0, np.float32)
    run(ClampedSlice, platform, x, out)
    want = np.full((16, 32), 5.0, np.float32)
    want[:8] = x[32:]
    np.testing.assert_array_equal(out, want)

    out = np.full((16, 32), 5.0, np.float32)
    run(SliceValidThenLoad, platform, x, np.array([9], np.int32), out)
    want = np.zeros((16, 32), np.float32)
    want[:, :9] = x[4:20, :9]
    np.testing.assert_array_equal(out, want)

    x16 = x[:16].copy()
    out = np.full((16, 32), 5.0, np.float32)
    run(StaticLoad, platform, x16, out)
    want = np.full((16, 32), 5.0, np.float32)
    want[:2, :20] = x16[8:10, :20]  # rows 8..9 of the 10 valid rows, 20 valid columns
    np.testing.assert_array_equal(out, want)


def test_the_types_carry_the_valid_region():
    from pytest_pypto.ir import dtypes as D
    from pytest_pypto.ir.types import TensorType, type_str

    narrowed = TensorType((16, 8), D.FP32, (16, 4))
    assert narrowed.narrowed and narrowed.valid_shape == (16, 4)
    assert type_str(narrowed) == "Tensor[[16, 8], FP32, valid=[16, 4]]"
    assert not TensorType((16, 8), D.FP32, (16, 8)).narrowed  # a full region is no region
    assert narrowed == TensorType((16, 8), D.FP32)  # metadata of a value, not of the type


# ------------------------------------------------------------- matmul dtype conversion


K, KS = 128, 32


def split_k_program(out_dtype, atomic):
    mode = pl.AtomicType.Add if atomic else pl.AtomicType.None_

    @pl.program
    class SplitK:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, a: pl.Tensor[[32, K], pl.FP16], b: pl.Tensor[[K, 32], pl.FP16],
                 c: pl.InOut[pl.Tensor[[32, 32], out_dtype]]) -> pl.Tensor[[32, 32], out_dtype]:
            for ks in pl.range(K // KS):
                with pl.at(level=pl.Level.CORE_GROUP):
                    k0 = ks * KS
                    partial = pl.matmul(a[:, k0:k0 + KS], b[k0:k0 + KS, :], out_dtype=pl.FP32)
                    c = pl.assemble(c, partial, [0, 0], atomic=mode)
            return c

    return SplitK


@pytest.mark.parametrize("name,store", [("FP16", np.float16), ("BF16", ml_dtypes.bfloat16)])
@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_matmul_result_converts_into_a_narrower_target(platform, name, store):
    dt = getattr(pl, name)
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((32, K)) * 0.25).astype(np.float16)
    b = (rng.standard_normal((K, 32)) * 0.25).astype(np.float16)
    wide_a, wide_b = a.astype(np.float64), b.astype(np.float64)
    c = np.zeros((32, 32), store)
    run(split_k_program(dt, atomic=False), platform, a, b, c)
    # the last partial product, rounded once from FP32 into the target (the FP32 sum's own
    # order is the cube's, so allow the target's last bit)
    last = (wide_a[:, K - KS:] @ wide_b[K - KS:]).astype(np.float32).astype(store)
    ulp = 2.0 ** -(10 if name == "FP16" else 7)
    np.testing.assert_allclose(c.astype(np.float32), last.astype(np.float32), rtol=ulp, atol=0)
    assert c.dtype == store
    if name == "BF16" and platform == "a5sim":
        return  # a5 has no BF16 atomic add (negative test below)
    c = np.zeros((32, 32), store)
    run(split_k_program(dt, atomic=True), platform, a, b, c)
    want = np.zeros((32, 32), np.float32)
    for k0 in range(0, K, KS):
        part = (wide_a[:, k0:k0 + KS] @ wide_b[k0:k0 + KS]).astype(np.float32)
        want = (want.astype(store).astype(np.float32) + part).astype(store).astype(np.float32)
    np.testing.assert_allclose(c.astype(np.float32), want, rtol=1e-2, atol=1e-2)


# ------------------------------------------------------------------------ negatives


def test_a_vector_result_does_not_convert_on_assemble():
    @pl.program
    class CastMissing:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[16, 16], pl.FP32],
                 out: pl.Out[pl.Tensor[[16, 16], pl.BF16]]) -> pl.Tensor[[16, 16], pl.BF16]:
            with pl.at(level=pl.Level.CORE_GROUP):
                y = pl.add(x, 1.0)
                out = pl.assemble(out, y, [0, 0])  # vector-convert
            return out

    with pytest.raises(ShapeError, match="converts FP32 into a BF16 target, but the source is "
                       "not a matmul result") as ei:
        pytest_pypto.compile(CastMissing, RunConfig(platform="a2a3sim"))
    assert ei.value.line == line_of("# vector-convert") and ei.value.file == __file__


def test_a5_has_no_bf16_atomic_assemble():
    with pytest.raises(ArchSupportError, match="atomically adds into a BF16 tensor, which the "
                       "'a5' backend cannot do"):
        pytest_pypto.compile(split_k_program(pl.BF16, atomic=True), RunConfig(platform="a5sim"))


def test_set_validshape_beyond_the_shape_is_rejected_at_its_line():
    with pytest.raises(ParserTypeError, match="requires 0 <= valid_cols <= 8, but got 9") as ei:
        @pl.program
        class TooWide:
            @pl.function(type=pl.FunctionType.InCore)
            def main(self, x: pl.Tensor[[16, 8], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 8], pl.FP32]]) -> pl.Tensor[[16, 8], pl.FP32]:
                narrowed = pl.set_validshape(x, 16, 9)  # too-wide
                out = pl.assemble(out, narrowed, [0, 0])
                return out
    assert ei.value.line == line_of("# too-wide")


def test_a_narrowed_source_must_fit_at_the_offset():
    with pytest.raises(ParserTypeError, match="offset 1 \\+ source valid extent 16 > target "
                       "extent 16") as ei:
        @pl.program
        class Overrun:
            @pl.function(type=pl.FunctionType.InCore)
            def main(self, x: pl.Tensor[[16, 8], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 4], pl.FP32]]) -> pl.Tensor[[16, 4], pl.FP32]:
                narrowed = pl.set_validshape(x, 16, 4)
                out = pl.assemble(out, narrowed, [1, 0])  # valid-overrun
                return out
    assert ei.value.line == line_of("# valid-overrun")


def test_a_slice_past_the_end_needs_clamp():
    with pytest.raises(ParserTypeError, match="reads past the end of dimension 0: offset 32 \\+ "
                       "extent 16 > source extent 40") as ei:
        @pl.program
        class NoClamp:
            @pl.function(type=pl.FunctionType.InCore)
            def main(self, x: pl.Tensor[[40, 32], pl.FP32],
                     out: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
                tail = pl.slice(x, [16, 32], [32, 0])  # no-clamp
                out = pl.assemble(out, tail, [0, 0])
                return out
    assert ei.value.line == line_of("# no-clamp")
    assert "clamp=True" in (ei.value.hint or "")


def test_a_run_time_region_lost_through_a_reshape_is_a_compile_error():
    @pl.program
    class Lost:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, x: pl.Tensor[[16, 8], pl.FP32], r: pl.Scalar[pl.INDEX],
                 out: pl.Out[pl.Tensor[[16, 8], pl.FP32]]) -> pl.Tensor[[16, 8], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                narrowed = pl.set_validshape(x, r, 8)
                back = pl.reshape(narrowed, [16, 8])
                out = pl.assemble(out, pl.fillpad(back), [0, 0])  # lost-region
            return out

    with pytest.raises(ShapeError, match="valid region of tensor 'back' is decided at run "
                       "time") as ei:
        pytest_pypto.compile(Lost, RunConfig(platform="a5sim"))
    assert ei.value.line == line_of("# lost-region")
