# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841, B007  (kernel bodies are parsed, never run: their locals look unused)
"""Cross-core programs end to end on both sims (docs/design/language.md §9, §14).

References are plain numpy written here.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.arch import spec
from pytest_pypto.ir.errors import (
    CompileError,
    MemorySpaceError,
    ParserTypeError,
    PlacementError,
    SimulationError,
    UnsupportedFeatureError,
)
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
M, K, N, NB = 16, 32, 64, 16


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(20261203)


def _run(program, platform, *arrays):
    compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    return compiled, pytest_pypto.run(compiled, *arrays, config=RunConfig(platform=platform))


@pl.program
class AccumulateIntoPlainParam:
    """An Opaque entry whose plain (In by default) tensor a region accumulates into."""

    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, a: pl.Tensor[[M, K], pl.FP32], b: pl.Tensor[[K, N], pl.FP32],
             c: pl.Tensor[[M, N], pl.FP32]) -> pl.Tensor[[M, N], pl.FP32]:
        with pl.at(level=pl.Level.CORE_GROUP):
            for j in pl.range(0, N // NB):
                n0 = j * NB
                prev = pl.slice(c, [M, NB], [0, n0])
                part = pl.slice(b, [K, NB], [0, n0])
                c = pl.assemble(c, pl.add(prev, pl.matmul(a, part)), [0, n0])
        return c


@pytest.mark.parametrize("platform", PLATFORMS)
def test_an_opaque_entry_parameter_written_by_a_region_becomes_inout(platform, rng):
    a = rng.standard_normal((M, K)).astype(np.float32)
    b = rng.standard_normal((K, N)).astype(np.float32)
    c = rng.standard_normal((M, N)).astype(np.float32)
    want = c + a @ b
    compiled, _ = _run(AccumulateIntoPlainParam, platform, a, b, c)
    np.testing.assert_allclose(c, want, rtol=1e-4, atol=1e-4)
    (kernel,) = compiled.manifest.kernels
    assert dict((x.name, x.direction) for x in kernel.args)["c"] == "InOut"


ROWS = pl.dynamic("ROWS")


@pl.jit
def pairs_per_block(x: pl.Tensor[[ROWS, 16, 16], pl.FP32],
                    out: pl.Out[pl.Tensor[[ROWS, 16, 16], pl.FP32]]):
    x.bind_dynamic(0, ROWS)
    out.bind_dynamic(0, ROWS)
    blocks = pl.tensor.dim(x, 0) // 2
    for g in pl.spmd(blocks, name_hint="pairs"):
        r = g * 2
        out[r : r + 1, :, :] = pl.add(x[r : r + 1, :, :], 1.0)
        out[r + 1 : r + 2, :, :] = pl.mul(x[r + 1 : r + 2, :, :], 2.0)
    return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_window_from_r_plus_1_to_r_plus_2_is_one_row_when_r_is_dynamic(platform, rng):
    x = rng.standard_normal((6, 16, 16)).astype(np.float32)
    out = np.zeros_like(x)
    pairs_per_block(x, out, config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out[0::2], x[0::2] + np.float32(1))
    np.testing.assert_array_equal(out[1::2], x[1::2] * np.float32(2))


# ------------------------------------------------------------ hand-written AIC/AIV groups

D = 16
SLOT = D * D * 4
line_of = line_finder(__file__)


def _group_run(program, platform, *arrays):
    return pytest_pypto.run(pytest_pypto.compile(program, RunConfig(platform=platform)), *arrays,
                            config=RunConfig(platform=platform))


@pl.program
class VectorFeedsCube:
    """V2C: the vector kernel sends a + b, the cube multiplies it by b."""

    @pl.function(type=pl.FunctionType.AIV, attrs={"dual_aiv_dispatch": True})
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        peer = pl.import_peer_buffer(name="v2c", peer_func="cube")
        pl.aiv_initialize_pipe(pl.const(0, pl.INT32), peer, dir_mask=2, slot_size=SLOT, id=3)
        x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
        y: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(b, [0, 0], [D, D])
        pl.tpush_to_aic(pl.add(x, y), split=0, id=3)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        buf = pl.reserve_buffer(name="v2c", size=SLOT * 8, base=pl.AUTO)
        pl.aic_initialize_pipe(pl.const(0, pl.INT32), buf, dir_mask=2, slot_size=SLOT, id=3)
        s: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0, id=3)
        bm = pl.load(b, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat)
        r: pl.Tile[[D, D], pl.FP32] = pl.matmul(pl.move(s, target_memory=pl.Mem.Left),
                                                pl.move(bm, target_memory=pl.Mem.Right))
        pl.tfree_to_aiv(s, id=3)
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
            out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.cube(a, b, out)
        self.vec(a, b, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
             out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, b, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_group_runs_its_aiv_and_aic_kernels_as_one_task(platform, rng):
    a = rng.standard_normal((D, D)).astype(np.float32)
    b = rng.standard_normal((D, D)).astype(np.float32)
    out = np.zeros((D, D), np.float32)
    run = _group_run(VectorFeedsCube, platform, a, b, out)
    np.testing.assert_allclose(out, (a + b) @ b, rtol=1e-5, atol=1e-5)
    (task,) = run.tasks
    assert (task["kernel"], task["core_type"]) == ("grp", "mix")


def _c2v_program(blocks, slot_num, pop_all_first=False):
    """C2V: the cube sends `blocks` products a @ b[:, j]; the vector adds 1 to each and
    stores it.  ``pop_all_first`` pops every block before freeing any."""

    @pl.program
    class CubeFeedsVector:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D * blocks], pl.FP32],
                 out: pl.Out[pl.Tensor[[D, D * blocks], pl.FP32]]):
            peer = pl.import_peer_buffer(name="c2v", peer_func="vec")
            pl.aic_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=peer,
                                   slot_num=slot_num)
            left = pl.move(pl.load(a, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat),
                           target_memory=pl.Mem.Left)
            for j in pl.range(blocks):
                bj = pl.load(b, [0, j * D], [D, D], target_memory=pl.MemorySpace.Mat)
                acc = pl.matmul(left, pl.move(bj, target_memory=pl.Mem.Right))
                pl.tpush_to_aiv(acc, split=0)  # c2v-push

        @pl.function(type=pl.FunctionType.AIV)
        def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D * blocks], pl.FP32],
                out: pl.Out[pl.Tensor[[D, D * blocks], pl.FP32]]
                ) -> pl.Tensor[[D, D * blocks], pl.FP32]:
            buf = pl.reserve_buffer(name="c2v", size=SLOT * slot_num, base=0x1000)
            pl.aiv_initialize_pipe(dir_mask=1, slot_size=SLOT, c2v_consumer_buf=buf,
                                   slot_num=slot_num)
            if pop_all_first:
                for j in pl.range(blocks):
                    p: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0)  # c2v-pop
                    out = pl.store(pl.add(p, 1.0), [0, j * D], out)
                for j in pl.range(blocks):
                    pl.tfree_to_aic(p)
            else:
                for j in pl.range(blocks):
                    q: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0)
                    out = pl.store(pl.add(q, 1.0), [0, j * D], out)
                    pl.tfree_to_aic(q)
            return out

        @pl.function(type=pl.FunctionType.Group)
        def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D * blocks], pl.FP32],
                out: pl.Out[pl.Tensor[[D, D * blocks], pl.FP32]]
                ) -> pl.Tensor[[D, D * blocks], pl.FP32]:
            self.cube(a, b, out)
            r = self.vec(a, b, out)
            return r

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D * blocks], pl.FP32],
                 out: pl.Out[pl.Tensor[[D, D * blocks], pl.FP32]]
                 ) -> pl.Tensor[[D, D * blocks], pl.FP32]:
            out = self.grp(a, b, out)
            return out

    return CubeFeedsVector


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_pipe_with_fewer_slots_than_tiles_interleaves_producer_and_consumer(platform, rng):
    a = rng.standard_normal((D, D)).astype(np.float32)
    b = rng.standard_normal((D, 4 * D)).astype(np.float32)
    out = np.zeros((D, 4 * D), np.float32)
    _group_run(_c2v_program(blocks=4, slot_num=1), platform, a, b, out)
    np.testing.assert_allclose(out, a @ b + np.float32(1), rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_pushing_more_tiles_than_slots_before_any_free_is_a_deadlock_naming_both_kernels(
        platform, rng):
    a = rng.standard_normal((D, D)).astype(np.float32)
    b = rng.standard_normal((D, 3 * D)).astype(np.float32)
    out = np.zeros((D, 3 * D), np.float32)
    with pytest.raises(SimulationError) as ei:
        _group_run(_c2v_program(blocks=3, slot_num=2, pop_all_first=True), platform, a, b, out)
    msg = ei.value.message
    assert msg.startswith("cross-core deadlock")
    assert f"'cube' waits at {__file__}:{line_of('# c2v-push')}" in msg
    assert "every slot of which is in use" in msg and "2 slots" in msg
    assert f"'vec' waits at {__file__}:{line_of('# c2v-pop')}" in msg
    assert "which is empty" in msg


@pl.program
class BothPopFirst:
    """Each kernel waits for the other's tile before sending its own: a deadlock."""

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        pl.aic_initialize_pipe(dir_mask=3, slot_size=SLOT)
        got: pl.Tile[[D, D], pl.FP32, pl.Mem.Mat] = pl.tpop_from_aiv(split=0)  # cube-waits
        pl.tfree_to_aiv(got)
        acc = pl.matmul(pl.move(got, target_memory=pl.Mem.Left),
                        pl.move(got, target_memory=pl.Mem.Right))
        pl.tpush_to_aiv(acc, split=0)

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
            ) -> pl.Tensor[[D, D], pl.FP32]:
        pl.aiv_initialize_pipe(dir_mask=3, slot_size=SLOT)
        back: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.tpop_from_aic(split=0)  # vec-waits
        pl.tfree_to_aic(back)
        pl.tpush_to_aic(pl.load(x, [0, 0], [D, D]), split=0)
        return pl.store(back, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
            ) -> pl.Tensor[[D, D], pl.FP32]:
        self.cube(x, out)
        r = self.vec(x, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
             ) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(x, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_two_kernels_each_popping_first_deadlock_with_both_lines(platform, rng):
    x = rng.standard_normal((D, D)).astype(np.float32)
    with pytest.raises(SimulationError) as ei:
        _group_run(BothPopFirst, platform, x, np.zeros((D, D), np.float32))
    msg = ei.value.message
    assert f"'cube' waits at {__file__}:{line_of('# cube-waits')}" in msg
    assert f"'vec' waits at {__file__}:{line_of('# vec-waits')}" in msg
    assert "pipe 0 (V2C, 4 slots)" in msg and "pipe 0 (C2V, 4 slots)" in msg  # both ways: 4


@pl.program
class PipeWithoutPeer:
    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
            ) -> pl.Tensor[[D, D], pl.FP32]:
        t = pl.load(x, [0, 0], [D, D])
        pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT)
        pl.tpush_to_aic(t, split=0)
        return pl.store(t, [0, 0], out)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
             ) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.vec(x, out)
        return out


def test_a_pipe_op_in_a_kernel_launched_on_its_own_names_the_missing_peer():
    x = np.ones((D, D), np.float32)
    with pytest.raises(SimulationError, match="needs its peer") as ei:
        _group_run(PipeWithoutPeer, "a2a3sim", x, np.zeros_like(x))
    assert "Group" in ei.value.hint


def _compile_error(program, platform="a2a3sim"):
    with pytest.raises(CompileError) as ei:
        pytest_pypto.compile(program, RunConfig(platform=platform))
    return ei.value


def test_a_pop_without_shape_or_annotation_is_an_error_at_its_line():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class Untyped:
            @pl.function(type=pl.FunctionType.AIV)
            def vec(self, out: pl.Out[pl.Tensor[[D, D], pl.FP32]]) -> pl.Tensor[[D, D], pl.FP32]:
                got = pl.tpop_from_aic(split=0)  # untyped-pop
                return pl.store(got, [0, 0], out)

    assert "requires the popped tile's shape and dtype" in ei.value.message
    assert "annotate" in ei.value.hint
    assert (ei.value.file, ei.value.line) == (__file__, line_of("# untyped-pop"))


def test_a_bad_dir_mask_is_an_error_at_its_line():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class BadMask:
            @pl.function(type=pl.FunctionType.AIV)
            def vec(self, x: pl.Tensor[[D, D], pl.FP32]):
                pl.aiv_initialize_pipe(dir_mask=4, slot_size=SLOT)  # bad-mask
                pl.tpush_to_aic(pl.load(x, [0, 0], [D, D]), split=0)

    assert "dir_mask 1 (C2V), 2 (V2C) or 3 (both), got 4" in ei.value.message
    assert ei.value.line == line_of("# bad-mask")


def _local_slots_program():
    @pl.program
    class LocalSlots:
        @pl.function(type=pl.FunctionType.AIV)
        def vec(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
                ) -> pl.Tensor[[D, D], pl.FP32]:
            pl.aiv_initialize_pipe(dir_mask=2, slot_size=SLOT, slot_num=4, local_slot_num=4)  # ls
            return pl.store(pl.load(x, [0, 0], [D, D]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
                 ) -> pl.Tensor[[D, D], pl.FP32]:
            out = self.vec(x, out)
            return out

    return LocalSlots


def test_local_slot_num_is_an_a2a3_operand():
    pytest_pypto.compile(_local_slots_program(), RunConfig(platform="a2a3sim"))  # accepted
    err = _compile_error(_local_slots_program(), "a5sim")
    assert "takes no local_slot_num on the 'a5' backend" in err.message
    assert err.line == line_of("# ls")


def test_a_group_must_call_one_aic_and_one_aiv_kernel():
    @pl.program
    class TwoVectors:
        @pl.function(type=pl.FunctionType.AIV)
        def v1(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
               ) -> pl.Tensor[[D, D], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [D, D]), [0, 0], out)

        @pl.function(type=pl.FunctionType.AIV)
        def v2(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
               ) -> pl.Tensor[[D, D], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [D, D]), [0, 0], out)

        @pl.function(type=pl.FunctionType.Group)
        def grp(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
                ) -> pl.Tensor[[D, D], pl.FP32]:
            self.v1(x, out)
            r = self.v2(x, out)  # second-aiv
            return r

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
                 ) -> pl.Tensor[[D, D], pl.FP32]:
            out = self.grp(x, out)
            return out

    err = _compile_error(TwoVectors)
    assert isinstance(err, PlacementError)
    assert "calls two AIV kernels ('v1' and 'v2')" in err.message
    assert err.line == line_of("# second-aiv")


def test_attrs_of_a_cross_core_kernel_are_checked_at_their_line():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class BadAttrs:
            @pl.function(type=pl.FunctionType.AIV, attrs={"splitt": 1})  # bad-attrs
            def vec(self, x: pl.Tensor[[D, D], pl.FP32]):
                pass

    assert "attrs= of a pl.FunctionType.AIV function has no key 'splitt'" in ei.value.message
    assert "'dual_aiv_dispatch'" in ei.value.hint
    assert ei.value.line == line_of("# bad-attrs")


def test_an_external_cpp_kernel_is_refused_naming_why():
    @pl.program
    class Extern:
        @pl.function(type=pl.FunctionType.AIV, external_source="k.cpp")  # extern
        def k(self, out: pl.InOut[pl.Tensor[[D], pl.FP32]]) -> pl.Tensor[[D], pl.FP32]: ...

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, out: pl.Out[pl.Tensor[[D], pl.FP32]]) -> pl.Tensor[[D], pl.FP32]:
            out = self.k(out)
            return out

    err = _compile_error(Extern)
    assert isinstance(err, UnsupportedFeatureError)
    assert "external C++ kernel" in err.message and "numpy simulator" in err.message
    assert err.line == line_of("# extern")


# ------------------------------------------------------------------ pl.system.syncall

B, R, C = 4, 8, 16


def _rotate(blocks, mode):
    """Each block writes its rows to a scratch tensor, waits for all, then reads the next
    block's rows: right only if every block wrote before any read."""
    soft = mode == "soft"

    @pl.program
    class RotateThroughScratch:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[blocks * R, C], pl.FP32], ws: pl.Tensor[[16], pl.INT32],
              tmp: pl.InOut[pl.Tensor[[blocks * R, C], pl.FP32]],
              out: pl.Out[pl.Tensor[[blocks * R, C], pl.FP32]]
              ) -> pl.Tensor[[blocks * R, C], pl.FP32]:
            i = pl.tile.get_block_idx()
            tmp = pl.store(pl.load(x, [i * R, 0], [R, C]), [i * R, 0], tmp)
            if soft:
                pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws,
                                  used_cores=blocks)
            else:
                pl.system.syncall(core_type="aiv_only")
            u = pl.load(tmp, [((i + 1) % blocks) * R, 0], [R, C])
            out = pl.store(u, [i * R, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[blocks * R, C], pl.FP32], ws: pl.Tensor[[16], pl.INT32],
                 tmp: pl.InOut[pl.Tensor[[blocks * R, C], pl.FP32]],
                 out: pl.Out[pl.Tensor[[blocks * R, C], pl.FP32]]
                 ) -> pl.Tensor[[blocks * R, C], pl.FP32]:
            with pl.spmd(blocks, sync_start=True):
                out = self.k(x, ws, tmp, out)  # hard-launch
            return out

    return RotateThroughScratch


def _rotate_run(blocks, mode, platform, rng):
    x = rng.standard_normal((blocks * R, C)).astype(np.float32)
    out = np.zeros_like(x)
    run = _group_run(_rotate(blocks, mode), platform, x, np.zeros(16, np.int32),
                     np.zeros_like(x), out)
    np.testing.assert_array_equal(
        out, np.roll(x.reshape(blocks, R, C), -1, axis=0).reshape(blocks * R, C))
    assert [t["kernel"] for t in run.tasks] == ["k"]  # the launch's blocks ran as one task


@pytest.mark.parametrize("platform", PLATFORMS)
def test_syncall_holds_every_block_until_all_arrive(platform, rng):
    _rotate_run(B, "soft", platform, rng)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_hard_syncall_launch_fills_every_aiv_core(platform, rng):
    _rotate_run(spec(RunConfig(platform=platform).arch).aiv_cores, "hard", platform, rng)


@pytest.mark.parametrize(("platform", "cores"), [("a2a3sim", 48), ("a5sim", 72)])
def test_a_hard_syncall_in_a_partial_launch_is_an_error_at_the_launch(platform, cores):
    err = _compile_error(_rotate(B, "hard"), platform)
    assert isinstance(err, PlacementError)
    assert f"waits for all {cores} AIV cores" in err.message and "launches 4 blocks" in err.message
    assert "mode='soft'" in err.hint
    assert err.line == line_of("# hard-launch")


def test_a_hard_mix_syncall_in_a_vector_kernel_can_never_complete():
    @pl.program
    class VectorMix:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[48 * R, C], pl.FP32], out: pl.Out[pl.Tensor[[48 * R, C], pl.FP32]]
              ) -> pl.Tensor[[48 * R, C], pl.FP32]:
            i = pl.tile.get_block_idx()
            t = pl.load(x, [i * R, 0], [R, C])
            pl.system.syncall()  # mix-barrier
            out = pl.store(t, [i * R, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[48 * R, C], pl.FP32],
                 out: pl.Out[pl.Tensor[[48 * R, C], pl.FP32]]) -> pl.Tensor[[48 * R, C], pl.FP32]:
            with pl.spmd(48, sync_start=True):
                out = self.k(x, out)
            return out

    err = _compile_error(VectorMix)
    assert "hard pl.system.syncall(core_type='mix') in AIV kernel 'k' can never complete" \
        in err.message
    assert err.line == line_of("# mix-barrier")


@pl.program
class BlockZeroSkipsTheBarrier:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[B * R, C], pl.FP32], ws: pl.Tensor[[16], pl.INT32],
          out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]]) -> pl.Tensor[[B * R, C], pl.FP32]:
        i = pl.tile.get_block_idx()
        if i > 0:
            pl.system.syncall(mode="soft", core_type="aiv_only", gm_workspace=ws,
                              used_cores=B)  # skipped-barrier
        out = pl.store(pl.load(x, [i * R, 0], [R, C]), [i * R, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[B * R, C], pl.FP32], ws: pl.Tensor[[16], pl.INT32],
             out: pl.Out[pl.Tensor[[B * R, C], pl.FP32]]) -> pl.Tensor[[B * R, C], pl.FP32]:
        with pl.spmd(B):
            out = self.k(x, ws, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_block_that_never_reaches_the_barrier_is_a_deadlock(platform, rng):
    x = rng.standard_normal((B * R, C)).astype(np.float32)
    with pytest.raises(SimulationError) as ei:
        _group_run(BlockZeroSkipsTheBarrier, platform, x, np.zeros(16, np.int32),
                   np.zeros_like(x))
    msg = ei.value.message
    assert "'k block 0' has finished" in msg
    where = f"{__file__}:{line_of('# skipped-barrier') - 1}"
    for i in (1, 2, 3):
        assert f"'k block {i}' waits at {where}: tile.syncall" in msg


def test_syncall_modes_and_workspace_are_checked_at_their_line():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class HardWithWorkspace:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, ws: pl.Tensor[[16], pl.INT32]):
                pl.system.syncall(core_type="mix", gm_workspace=ws)  # hard-ws

    assert "in hard mode takes no gm_workspace / used_cores" in ei.value.message
    assert ei.value.line == line_of("# hard-ws")
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class SmallWorkspace:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, ws: pl.Tensor[[8], pl.INT32]):
                pl.system.syncall(mode="soft", core_type="mix", gm_workspace=ws, used_cores=2)  # ws8

    assert "INT32 tensor of at least 16 elements, got INT32[8]" in ei.value.message
    assert ei.value.line == line_of("# ws8")


def test_other_pl_system_names_stay_tier3_markers():
    marker = pl.system.fence
    assert (type(marker).__name__, marker.name, marker.tier) == ("Unsupported",
                                                                 "system.fence", 3)
    assert pl.system.syncall is pl.system.syncall  # an op stub, resolved once
    assert type(pl.system.syncall).__name__ == "OpStub"


def test_an_aiv_kernel_holding_cube_tiles_is_a_memory_space_error():
    @pl.program
    class VectorDoesMatmul:
        @pl.function(type=pl.FunctionType.AIV)  # aiv-matmul
        def vec(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
                ) -> pl.Tensor[[D, D], pl.FP32]:
            t = pl.load(x, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat)
            r = pl.matmul(pl.move(t, target_memory=pl.Mem.Left),
                          pl.move(t, target_memory=pl.Mem.Right))
            return pl.store(r, [0, 0], out)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
                 ) -> pl.Tensor[[D, D], pl.FP32]:
            out = self.vec(x, out)
            return out

    err = _compile_error(VectorDoesMatmul)
    assert isinstance(err, MemorySpaceError)
    assert "pl.FunctionType.AIV kernel 'vec' uses cube (Mat, Left, Right, Acc, Bias) memory" \
        in err.message
    assert err.line == line_of("# aiv-matmul") + 1


@pl.program
class SystemSpellings:
    """The pipe ops spelled pl.system.* (PyPTO's namespace for them)."""

    @pl.function(type=pl.FunctionType.AIV)
    def vec(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
        peer = pl.system.import_peer_buffer(name="v2c", peer_func="cube")
        pl.system.aiv_initialize_pipe(v2c_consumer_buf=peer, dir_mask=2, slot_size=SLOT)
        pl.system.tpush_to_aic(pl.mul(pl.load(a, [0, 0], [D, D]), 3.0), split=0)

    @pl.function(type=pl.FunctionType.AIC)
    def cube(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
             ) -> pl.Tensor[[D, D], pl.FP32]:
        buf = pl.system.reserve_buffer(name="v2c", size=SLOT * 8)
        pl.system.aic_initialize_pipe(v2c_consumer_buf=buf, dir_mask=2, slot_size=SLOT)
        t = pl.system.tpop_from_aiv(shape=[D, D], dtype=pl.FP32, split=0)
        am = pl.load(a, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat)
        r = pl.matmul(pl.move(t, target_memory=pl.Mem.Left),
                      pl.move(am, target_memory=pl.Mem.Right))
        pl.system.tfree_to_aiv(t)
        return pl.store(r, [0, 0], out)

    @pl.function(type=pl.FunctionType.Group)
    def grp(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
            ) -> pl.Tensor[[D, D], pl.FP32]:
        r = self.cube(a, out)
        self.vec(a, out)
        return r

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[D, D], pl.FP32], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]
             ) -> pl.Tensor[[D, D], pl.FP32]:
        out = self.grp(a, out)
        return out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_pipe_ops_spelled_pl_system_and_a_pop_typed_by_shape_and_dtype(platform, rng):
    a = rng.standard_normal((D, D)).astype(np.float32)
    out = np.zeros((D, D), np.float32)
    _group_run(SystemSpellings, platform, a, out)
    np.testing.assert_allclose(out, (a * np.float32(3)) @ a, rtol=1e-5, atol=1e-5)
