# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""paged_gather, tensor scatter_update and the compare gather through the whole pipeline.

References are numpy loops written here: the page-table translation row by row,
row replacement by explicit loops, and the compare scan with np.flatnonzero.
"""

from __future__ import annotations

import numpy as np
import pytest
from pipeline_kit import PLATFORMS, run

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import CapacityError, PyptoError, SimulationError
from ut.helpers import line_finder

line_of = line_finder(__file__)


# ----------------------------------------------------------------- paged_gather

BS, BLOCKS, D, N = 8, 8, 32, 16  # block size, physical blocks, row width, gathered rows


def paged_reference(src, idx, table, size, col_off=0):
    rows = []
    for logical in idx:
        phys = table[logical // BS] * BS + logical % BS
        rows.append(src[phys, col_off:col_off + size])
    return np.stack(rows)


def k_paged_mat(SIZE, COL_OFF):
    @pl.program
    class PagedMat:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, src: pl.Tensor[[BS * BLOCKS, D], pl.FP16], idx: pl.Tensor[[N], pl.INT32],
                 bt: pl.Tensor[[BLOCKS], pl.INT32], eye: pl.Tensor[[N, N], pl.FP16],
                 out: pl.Out[pl.Tensor[[N, SIZE], pl.FP32]]) -> pl.Tensor[[N, SIZE], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                g = pl.paged_gather(src, idx, bt, block_size=BS, size=SIZE,  # paged-line
                                    max_indices=N, col_off=COL_OFF, space=pl.MemorySpace.Mat,
                                    is_b_matrix=True)
                r = pl.matmul(eye, g, out_dtype=pl.FP32)
                out = pl.assemble(out, r, [0, 0])
            return out

    return PagedMat


def k_paged_vec(TRANS):
    SHAPE = [D, N] if TRANS else [N, D]  # noqa: N806

    @pl.program
    class PagedVec:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, src: pl.Tensor[[BS * BLOCKS, D], pl.FP16], idx: pl.Tensor[[1, N], pl.INT32],
                 bt: pl.Tensor[[BLOCKS], pl.INT32],
                 out: pl.Out[pl.Tensor[SHAPE, pl.FP16]]) -> pl.Tensor[SHAPE, pl.FP16]:
            with pl.at(level=pl.Level.CORE_GROUP):
                if TRANS:
                    g = pl.tensor.paged_gather(src, idx, bt, BS, D, N, is_trans=True)
                else:
                    g = pl.tensor.paged_gather(src, idx, bt, BS, D, N, space=pl.Mem.Vec)
                t = pl.load(g, [0, 0], SHAPE)
                out = pl.store(t, [0, 0], out)
            return out

    return PagedVec


def paged_inputs(rng):
    src = (rng.integers(-64, 64, (BS * BLOCKS, D))).astype(np.float16)  # FP16-exact
    table = rng.permutation(BLOCKS).astype(np.int32)
    idx = rng.integers(0, BS * BLOCKS, N).astype(np.int32)
    return src, table, idx


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("size", "col_off"), [(D, 0), (16, 8)])
def test_paged_gather_into_mat_feeds_a_matmul(platform, size, col_off):
    src, table, idx = paged_inputs(np.random.default_rng(size))
    out = np.zeros((N, size), np.float32)
    run(k_paged_mat, (size, col_off), platform, src, idx, table, np.eye(N, dtype=np.float16),
        out)
    np.testing.assert_array_equal(out, paged_reference(src, idx, table, size, col_off))


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("trans", [False, True])
def test_paged_gather_into_vec_and_transposed(platform, trans):
    src, table, idx = paged_inputs(np.random.default_rng(3))
    want = paged_reference(src, idx, table, D)
    want = want.T if trans else want
    out = np.zeros(want.shape, np.float16)
    run(k_paged_vec, (trans,), platform, src, idx[None, :], table, out)
    np.testing.assert_array_equal(out, want)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_paged_gather_block_table_entry_outside_the_pool_is_a_simulation_error(platform):
    src, table, idx = paged_inputs(np.random.default_rng(4))
    idx[5] = 2 * BS + 1  # logical block 2
    table[2] = BLOCKS  # one past the pool
    with pytest.raises(SimulationError) as exc:
        run(k_paged_mat, (D, 0), platform, src, idx, table, np.eye(N, dtype=np.float16),
            np.zeros((N, D), np.float32))
    assert f"index {2 * BS + 1} at position [5]" in str(exc.value)
    assert f"physical row {BLOCKS * BS + 1}" in str(exc.value)
    assert exc.value.line == line_of("# paged-line")


def test_paged_gather_logical_block_past_the_table_is_a_simulation_error():
    src, table, idx = paged_inputs(np.random.default_rng(5))
    idx[0] = BS * BLOCKS + 3  # block 8 of an 8-entry table
    with pytest.raises(SimulationError) as exc:
        run(k_paged_mat, (D, 0), "a2a3sim", src, idx, table, np.eye(N, dtype=np.float16),
            np.zeros((N, D), np.float32))
    assert "tensor.paged_gather: index 8 at position [0] is out of range for block_table" \
        in str(exc.value)
    assert exc.value.line == line_of("# paged-line")


def test_paged_gather_reading_past_src_columns_is_rejected_at_the_line():
    with pytest.raises(PyptoError) as exc:
        k_paged_mat(32, 8)
    assert "reads columns 8..39, past src's 32 columns" in exc.value.message
    assert exc.value.line == line_of("# paged-line")


def k_paged_big():
    @pl.program
    class PagedBig:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, src: pl.Tensor[[4096, 512], pl.FP32], idx: pl.Tensor[[1024], pl.INT32],
                 bt: pl.Tensor[[64], pl.INT32],
                 out: pl.Out[pl.Tensor[[1024, 512], pl.FP32]]) -> pl.Tensor[[1024, 512], pl.FP32]:
            with pl.at(level=pl.Level.CORE_GROUP):
                g = pl.paged_gather(src, idx, bt, 64, 512, 1024, space=pl.Mem.Vec)  # big-line
                out = pl.assemble(out, g, [0, 0])
            return out

    return PagedBig


def test_paged_gather_larger_than_its_space_is_a_capacity_error():
    with pytest.raises(CapacityError) as exc:
        pytest_pypto.compile(k_paged_big(), RunConfig(platform="a5sim"))
    assert "pl.paged_gather of [1024, 512] FP32 needs 2097152 bytes of Vec" in exc.value.message
    assert exc.value.line == line_of("# big-line")


# --------------------------------------------------------------- scatter_update


def k_update(FORM, IN, SRC, DT):
    IN, SRC = list(IN), list(SRC)  # noqa: N806
    ZERO = [0] * len(IN)  # noqa: N806

    @pl.program
    class Update:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[IN, DT], i: pl.Tensor[[2, 4], pl.INT32],
              s: pl.Tensor[SRC, DT], out: pl.Out[pl.Tensor[IN, DT]]) -> pl.Tensor[IN, DT]:
            if FORM == 0:
                y = pl.scatter_update(x, -2, i, s)  # update-line
            elif FORM == 1:
                y = pl.tensor.scatter_update(x, i, s, dim=-2)
            else:
                y = pl.scatter_update(x, -2, index=i, src=s)
            out = pl.assemble(out, y, ZERO)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[IN, DT], i: pl.Tensor[[2, 4], pl.INT32],
                 s: pl.Tensor[SRC, DT], out: pl.Out[pl.Tensor[IN, DT]]) -> pl.Tensor[IN, DT]:
            out = self.k(x, i, s, out)
            return out

    return Update


def update_reference(x, idx, src):
    rows = x.reshape(-1, x.shape[-1]).copy()
    flat_src = src.reshape(-1, x.shape[-1])
    for b in range(idx.shape[0]):
        for s in range(idx.shape[1]):
            rows[idx[b, s]] = flat_src[b * idx.shape[1] + s]
    return rows.reshape(x.shape)


UPDATES = [  # (form, input shape, src shape, dtype)
    (0, (32, 16), (8, 16), pl.FP32),  # scatter_update(input, dim, index, src)
    (1, (16, 32), (8, 32), pl.FP16),  # scatter_update(input, index, src, dim=)
    (2, (4, 8, 1, 16), (2, 4, 1, 16), pl.INT32),  # scatter_update(input, dim, index=, src=)
]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("form", "shape", "src_shape", "dt"), UPDATES)
def test_scatter_update_on_tensors_in_every_call_shape(platform, form, shape, src_shape, dt):
    rng = np.random.default_rng(11)
    store = {"FP32": np.float32, "FP16": np.float16, "INT32": np.int32}[dt.name]
    x = rng.integers(-100, 100, shape).astype(store)
    src = rng.integers(-100, 100, src_shape).astype(store)
    rows = int(np.prod(shape[:-1]))
    idx = rng.permutation(rows)[:8].reshape(2, 4).astype(np.int32)
    out = np.zeros(shape, store)
    run(k_update, (form, shape, src_shape, dt), platform, x, idx, src, out)
    np.testing.assert_array_equal(out, update_reference(x, idx, src))


@pytest.mark.parametrize("platform", PLATFORMS)
def test_scatter_update_index_outside_input_rows_is_a_simulation_error(platform):
    idx = np.arange(8, dtype=np.int32).reshape(2, 4)
    idx[1, 2] = 32
    with pytest.raises(SimulationError) as exc:
        run(k_update, (0, (32, 16), (8, 16), pl.FP32), platform,
            np.zeros((32, 16), np.float32), idx, np.ones((8, 16), np.float32),
            np.zeros((32, 16), np.float32))
    assert "tile.scatter_update: index 32 at position [1, 2] is out of range for input of 32 " \
        "rows" in str(exc.value)
    assert exc.value.line == line_of("# update-line")


def test_scatter_update_two_byte_input_past_the_i16_flat_index_limit_is_rejected():
    prog = k_update(0, (128, 256), (8, 256), pl.FP16)
    with pytest.raises(CapacityError) as exc:
        pytest_pypto.compile(prog, RunConfig(platform="a2a3sim"))
    assert "exceeds the i16 flat-index limit (32767)" in exc.value.message
    assert exc.value.line == line_of("# update-line")


def k_update_wide():
    @pl.program
    class UpdateWide:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[32, 16], pl.FP32], i: pl.Tensor[[2, 4], pl.INT32],
              s: pl.Tensor[[8, 32], pl.FP32]) -> pl.Tensor[[32, 16], pl.FP32]:
            y = pl.scatter_update(x, -2, index=i, src=s)  # wide-line
            return y

    return UpdateWide


def test_scatter_update_src_of_another_width_is_rejected_at_the_line():
    with pytest.raises(PyptoError) as exc:
        pytest_pypto.compile(k_update_wide(), RunConfig(platform="a2a3sim"))
    assert "requires src rows of input's width 16, but got 32" in exc.value.message
    assert exc.value.line == line_of("# wide-line")


# --------------------------------------------------------------- gather_compare

MODES = {"eq": np.equal, "ne": np.not_equal, "lt": np.less, "le": np.less_equal,
         "gt": np.greater, "ge": np.greater_equal}


def compare_reference(src, kvalue, mode, offset, out_cols):
    """Per row: the first out_cols matching columns (+offset), -1 where none; counts."""
    dst = np.full((src.shape[0], out_cols), -1, np.int64)
    counts = np.zeros(src.shape[0], np.int64)
    for r, row in enumerate(src):
        hits = [j for j, v in enumerate(row) if MODES[mode](v, kvalue)]
        counts[r] = len(hits)
        for k, j in enumerate(hits[:out_cols]):
            dst[r, k] = j + offset
    return dst, counts


def k_tile_compare(DT, MODE, OFFSET, VR):
    @pl.program
    class TileCompare:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[8, 64], DT], kv: pl.Scalar[DT],
              od: pl.Out[pl.Tensor[[8, 8], pl.INT32]],
              oc: pl.InOut[pl.Tensor[[1, 8], pl.UINT32]]
              ) -> tuple[pl.Tensor[[8, 8], pl.INT32], pl.Tensor[[1, 8], pl.UINT32]]:
            s = pl.load(x, [0, 0], [8, 64], valid_shapes=[VR, 64])
            tmp = pl.tile.create([8, 64], pl.UINT8)
            d, c = pl.tile.gather_compare(s, kv, tmp, cmp_mode=MODE,  # tc-line
                                          offset=OFFSET, out_cols=8, count_dtype=pl.UINT32)
            od = pl.store(d, [0, 0], od)
            oc = pl.store(c, [0, 0], oc)
            return od, oc

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[8, 64], DT], kv: pl.Scalar[DT],
                 od: pl.Out[pl.Tensor[[8, 8], pl.INT32]],
                 oc: pl.InOut[pl.Tensor[[1, 8], pl.UINT32]]
                 ) -> tuple[pl.Tensor[[8, 8], pl.INT32], pl.Tensor[[1, 8], pl.UINT32]]:
            od, oc = self.k(x, kv, od, oc)
            return od, oc

    return TileCompare


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("dt", "mode", "offset", "vr"), [
    (pl.INT32, "eq", 0, 8), (pl.FP16, "gt", 4, 5), (pl.INT16, 4, 0, 8), (pl.FP32, "le", 1, 3),
])
def test_tile_gather_compare_returns_indices_and_counts(platform, dt, mode, offset, vr):
    store = {"INT32": np.int32, "FP16": np.float16, "INT16": np.int16, "FP32": np.float32}
    rng = np.random.default_rng(21)
    x = rng.integers(0, 6, (8, 64)).astype(store[dt.name])
    kv = 3
    od = np.full((8, 8), -1, np.int32)
    oc = np.full((1, 8), 999, np.uint32)
    run(k_tile_compare, (dt, mode, offset, vr), platform, x, kv, od, oc)
    name = mode if isinstance(mode, str) else list(MODES)[mode]
    want_d, want_c = compare_reference(x[:vr], kv, name, offset, 8)
    np.testing.assert_array_equal(oc[0, :vr], want_c)
    assert (oc[0, vr:] == 999).all()  # rows past the valid region are not stored
    for r in range(vr):
        n = min(int(want_c[r]), 8)
        np.testing.assert_array_equal(od[r, :n], want_d[r, :n])


def test_tile_gather_compare_rejects_an_unknown_cmp_mode_at_the_line():
    with pytest.raises(PyptoError) as exc:
        k_tile_compare(pl.FP32, "bogus", 0, 8)
    assert "requires cmp_mode in ['eq', 'ne', 'lt', 'le', 'gt', 'ge']" in exc.value.message
    assert exc.value.line == line_of("# tc-line")


def k_tensor_compare(DT, KDT, MODE):
    @pl.program
    class TensorCompare:
        @pl.function(type=pl.FunctionType.Opaque)
        def main(self, src: pl.Tensor[[16, 64], DT], kv: pl.Tensor[[1], KDT],
                 od: pl.Out[pl.Tensor[[16, 8], pl.INT32]],
                 oc: pl.Out[pl.Tensor[[1, 16], pl.INT32]]
                 ) -> tuple[pl.Tensor[[16, 8], pl.INT32], pl.Tensor[[1, 16], pl.INT32]]:
            with pl.at(level=pl.Level.CORE_GROUP):
                k = pl.tensor.read(kv, [0])
                d, c = pl.tensor.gather(src, kvalue=k, cmp_mode=MODE, out_cols=8)  # gc-line
                od = pl.assemble(od, d, [0, 0])
                oc = pl.assemble(oc, c, [0, 0])
            return od, oc

    return TensorCompare


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("dt", "mode"), [(pl.INT32, "eq"), (pl.FP16, "gt")])
def test_tensor_gather_compare_form(platform, dt, mode):
    store = {"INT32": np.int32, "FP16": np.float16}[dt.name]
    x = np.zeros((16, 64), store)
    rng = np.random.default_rng(2)
    for r in range(16):  # exactly 8 matches per row, at random columns
        x[r, np.sort(rng.choice(64, 8, replace=False))] = 100
    od = np.zeros((16, 8), np.int32)
    oc = np.zeros((1, 16), np.int32)
    kv = np.array([100 if mode == "eq" else 50], store)
    run(k_tensor_compare, (dt, dt, mode), platform, x, kv, od, oc)
    want_d, want_c = compare_reference(x, kv[0], mode, 0, 8)
    np.testing.assert_array_equal(od, want_d)
    np.testing.assert_array_equal(oc[0], want_c)


def test_tensor_gather_compare_kvalue_of_another_dtype_is_rejected_at_the_line():
    with pytest.raises(PyptoError) as exc:
        k_tensor_compare(pl.FP32, pl.FP16, "eq")
    assert "requires kvalue dtype to match src dtype (FP32), but got FP16" in exc.value.message
    assert exc.value.line == line_of("# gc-line")
