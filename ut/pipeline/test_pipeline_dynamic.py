# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""`pl.dynamic` dims end to end (docs/design/language.md §12, docs/design/checks.md §1, §6) on both
archs.

One compiled artifact serves every size of a dynamic dim: the dims bind at run time
from the actual arrays (kernels and orchestration read them from their tensor
parameters), two `pl.dynamic("M")` objects are two dims, the first entry parameter
carrying a dim binds it (later ones are not checked against it, as in PyPTO), and a window that a dynamic size pushes past a tensor's
edge fails at run time at the user's pl.load / pl.store line with the Scalar values.
"""

from __future__ import annotations

import functools

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import CompileError, SimulationError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")


line_of = line_finder(__file__)


M = pl.dynamic("M")
N, TM = 32, 32


@pl.program
class TiledAbs:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            t = pl.load(x, [r, 0], [TM, N], valid_shape=[pl.min(TM, M - r), N])
            out = pl.store(pl.abs(t), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(x, out)
        return out


FLAT_R = 8


@pl.program
class FlatThenRows:
    """One name for a flat [M] input and the [M, N] output, as PyPTO's reshape tests use it."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        t = pl.load(x, [0, 0], [FLAT_R, N])
        out = pl.store(pl.add(t, t), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, flat: pl.Tensor[[M], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        x2: pl.Tensor[[FLAT_R, N], pl.FP32] = pl.reshape(flat, [FLAT_R, N])
        out = self.k(x2, out)
        return out


MA = pl.dynamic("M")
MB = pl.dynamic("M")  # same name, another dim


@pl.program
class TwoDims:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, a: pl.Tensor[[MA, N], pl.FP32], b: pl.Tensor[[MB, N], pl.FP32],
          oa: pl.Out[pl.Tensor[[MA, N], pl.FP32]], ob: pl.Out[pl.Tensor[[MB, N], pl.FP32]],
          ) -> tuple[pl.Tensor[[MA, N], pl.FP32], pl.Tensor[[MB, N], pl.FP32]]:
        for r in pl.range(0, MA, TM):
            oa = pl.store(pl.neg(pl.load(a, [r, 0], [TM, N])), [r, 0], oa)
        for s in pl.range(0, MB, TM):
            ob = pl.store(pl.adds(pl.load(b, [s, 0], [TM, N]), 1.0), [s, 0], ob)
        return oa, ob

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[MA, N], pl.FP32], b: pl.Tensor[[MB, N], pl.FP32],
             oa: pl.Out[pl.Tensor[[MA, N], pl.FP32]], ob: pl.Out[pl.Tensor[[MB, N], pl.FP32]],
             ) -> tuple[pl.Tensor[[MA, N], pl.FP32], pl.Tensor[[MB, N], pl.FP32]]:
        oa, ob = self.k(a, b, oa, ob)
        return oa, ob


P = pl.dynamic("P")
Q = pl.dynamic("Q")


@pl.program
class KernelUnify:
    """The entry's P and Q are independent; the kernel's M ties its two arguments."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            out = pl.store(pl.load(x, [r, 0], [TM, N]), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[P, N], pl.FP32],
             out: pl.Out[pl.Tensor[[Q, N], pl.FP32]]) -> pl.Tensor[[Q, N], pl.FP32]:
        out = self.k(x, out)  # unify-call
        return out


@pl.program
class TwoStages:
    """The orchestration sizes a temporary by the dynamic dim: tmp = x + 1, out = -tmp."""

    @pl.function(type=pl.FunctionType.InCore)
    def inc(self, x: pl.Tensor[[M, N], pl.FP32],
            y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            y = pl.store(pl.adds(pl.load(x, [r, 0], [TM, N]), 1.0), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.InCore)
    def neg(self, x: pl.Tensor[[M, N], pl.FP32],
            y: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            y = pl.store(pl.neg(pl.load(x, [r, 0], [TM, N])), [r, 0], y)
        return y

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        tmp = pl.create_tensor([M, N], pl.FP32)
        tmp = self.inc(x, tmp)
        out = self.neg(tmp, out)
        return out


W = pl.dynamic("W")


@pl.program
class PastTheEdge:
    """Two 64-column tiles into a destination W columns wide: fine for W=128, not W=96."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, 128], pl.FP32],
          out: pl.Out[pl.Tensor[[32, W], pl.FP32]]) -> pl.Tensor[[32, W], pl.FP32]:
        for c in pl.range(0, 2):
            t = pl.load(x, [0, c * 64], [32, 64])
            out = pl.store(t, [0, c * 64], out)  # edge-store
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, 128], pl.FP32],
             out: pl.Out[pl.Tensor[[32, W], pl.FP32]]) -> pl.Tensor[[32, W], pl.FP32]:
        out = self.k(x, out)
        return out


@pl.program
class LoadPastTheEdge:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[32, W], pl.FP32],
          out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]) -> pl.Tensor[[32, 128], pl.FP32]:
        for c in pl.range(0, 2):
            t = pl.load(x, [0, c * 64], [32, 64])  # edge-load
            out = pl.store(t, [0, c * 64], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[32, W], pl.FP32],
             out: pl.Out[pl.Tensor[[32, 128], pl.FP32]]) -> pl.Tensor[[32, 128], pl.FP32]:
        out = self.k(x, out)
        return out


@pl.program
class ScalarFromDim:
    """The orchestration passes the dynamic dim as a Scalar: rows M - 8 get x + 1."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], rows: pl.Scalar[pl.INDEX],
          out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, rows, 8):
            out = pl.store(pl.adds(pl.load(x, [r, 0], [8, N]), 1.0), [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32],
             out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(x, M - 8, out)
        return out


@functools.cache
def compiled(program, platform: str):
    return pytest_pypto.compile(program, RunConfig(platform=platform))


def run(program, platform: str, *arrays):
    return pytest_pypto.run(compiled(program, platform), *arrays,
                            config=RunConfig(platform=platform))


def rows(m: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed + m).standard_normal((m, N)).astype(np.float32)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_one_artifact_serves_every_size_of_a_dynamic_dim(platform):
    artifact = compiled(TiledAbs, platform)
    for m in (64, 96, 80, 8):  # 80 and 8: the last tile is partial (valid rows M - r)
        x = rows(m)
        out = np.full((m, N), 123.0, np.float32)
        run(TiledAbs, platform, x, out)
        np.testing.assert_array_equal(out, np.abs(x))
    assert compiled(TiledAbs, platform) is artifact


@pytest.mark.parametrize("platform", PLATFORMS)
def test_two_dynamic_objects_with_one_name_are_two_dims(platform):
    a, b = rows(64), rows(96, seed=1)
    oa, ob = np.zeros((64, N), np.float32), np.zeros((96, N), np.float32)
    run(TwoDims, platform, a, b, oa, ob)
    np.testing.assert_array_equal(oa, -a)
    np.testing.assert_array_equal(ob, b + np.float32(1.0))
    shapes = [arg.shape[0] for arg in compiled(TwoDims, platform).manifest.entry_args]
    assert shapes[0] == shapes[2] and shapes[1] == shapes[3] and shapes[0] != shapes[1]


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_first_entry_parameter_binds_a_dynamic_dim(platform):
    flat = np.arange(FLAT_R * N, dtype=np.float32)
    out = np.zeros((FLAT_R, N), np.float32)
    run(FlatThenRows, platform, flat, out)  # M = FLAT_R * N from flat, FLAT_R rows in out
    np.testing.assert_array_equal(out, flat.reshape(FLAT_R, N) * np.float32(2.0))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_kernel_dynamic_dim_bound_inconsistently_by_a_task(platform):
    x, out = rows(64), np.zeros((64, N), np.float32)
    run(KernelUnify, platform, x, out)  # P = Q: fine
    np.testing.assert_array_equal(out, x)
    with pytest.raises(SimulationError) as info:
        run(KernelUnify, platform, rows(64), np.zeros((96, N), np.float32))
    message = info.value.message
    assert "kernel 'k'" in message and "'x'" in message and "'out'" in message
    assert "64" in message and "96" in message
    assert info.value.line == line_of("# unify-call")  # the orchestration's task line


@pytest.mark.parametrize("platform", PLATFORMS)
def test_orchestration_sizes_a_temporary_by_the_dynamic_dim(platform):
    for m in (32, 96):
        x = rows(m)
        out = np.zeros((m, N), np.float32)
        run(TwoStages, platform, x, out)
        np.testing.assert_array_equal(out, -(x + np.float32(1.0)))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_store_past_a_dynamic_edge_fails_at_the_store_line_with_the_loop_value(platform):
    x = rows(32).repeat(4, axis=1)  # [32, 128]
    out = np.zeros((32, 128), np.float32)
    run(PastTheEdge, platform, x, out)
    np.testing.assert_array_equal(out, x)
    with pytest.raises(SimulationError) as info:
        run(PastTheEdge, platform, x, np.zeros((32, 96), np.float32))
    err = info.value
    assert err.file == __file__ and err.line == line_of("# edge-store")
    assert "tile.store writes past the end of dimension 1" in err.message
    assert "offset 64 + extent 64 > destination extent 96" in err.message
    assert "at run time, c = 1" in err.message
    assert err.hint


@pytest.mark.parametrize("platform", PLATFORMS)
def test_load_past_a_dynamic_edge_fails_at_the_load_line(platform):
    with pytest.raises(SimulationError) as info:
        run(LoadPastTheEdge, platform, np.zeros((32, 96), np.float32),
            np.zeros((32, 128), np.float32))
    err = info.value
    assert err.line == line_of("# edge-load")
    assert "offset 64 + extent 64 > source extent 96" in err.message
    assert "c = 1" in err.message
    assert "clamp=True" in (err.hint or "")


@pytest.mark.parametrize("platform", PLATFORMS)
def test_orchestration_passes_a_dynamic_dim_as_a_scalar(platform):
    for m in (16, 40):
        x = rows(m)
        out = np.full((m, N), 5.0, np.float32)
        run(ScalarFromDim, platform, x, out)
        np.testing.assert_array_equal(out[: m - 8], x[: m - 8] + np.float32(1.0))
        np.testing.assert_array_equal(out[m - 8:], np.float32(5.0))


def test_a_dynamic_dim_no_parameter_carries_is_a_compile_error():
    @pl.program
    class Unbound:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, N], pl.FP32],
              out: pl.Out[pl.Tensor[[32, N], pl.FP32]]) -> pl.Tensor[[32, N], pl.FP32]:
            for r in pl.range(0, W, 32):  # unbound-W
                out = pl.store(pl.load(x, [0, 0], [32, N]), [0, r * 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[32, N], pl.FP32],
                 out: pl.Out[pl.Tensor[[32, N], pl.FP32]]) -> pl.Tensor[[32, N], pl.FP32]:
            out = self.k(x, out)
            return out

    with pytest.raises(CompileError) as info:
        pytest_pypto.compile(Unbound, RunConfig(platform="a2a3sim"))
    assert info.value.line == line_of("# unbound-W")
    assert "'W'" in info.value.message


def test_listings_and_generated_code_name_dynamic_dims_by_their_names():
    artifact = compiled(ScalarFromDim, "a2a3sim")
    kernel_listing = (artifact.artifact_dir() / "kernels" / "k.txt").read_text()
    orchestration = (artifact.artifact_dir() / "orchestration.txt").read_text()
    assert "self.k(x, (M - 8), out)" in orchestration
    two = compiled(TwoDims, "a2a3sim").artifact_dir()
    assert "pl.range(0, M, 32)" in (two / "kernels" / "k.txt").read_text()
    for text in (kernel_listing, orchestration, (two / "kernels" / "k.py").read_text(),
                 (artifact.artifact_dir() / "orchestration.py").read_text()):
        assert "DynDim" not in text
