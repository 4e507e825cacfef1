"""sort32 / mrgsort and the Philox random entry against plain numpy (docs/design/language.md
§21)."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ophelpers import info, tt, tv

from pytest_pypto.ir import dtypes as D
from pytest_pypto.ir.apply import apply
from pytest_pypto.ir.ops._indexing import OpIndexError
from pytest_pypto.ir.registry import REGISTRY, OpTypeError
from pytest_pypto.ir.types import ScalarType

R = REGISTRY
BITS = {"FP32": np.uint32, "FP16": np.uint16}


def split_pairs(words, dtype):
    """(values, indices) of an interleaved [value, index bits] row (independent of the op)."""
    return words[..., 0::2].astype(np.float64), words[..., 1::2].copy().view(BITS[dtype.name])


def distinct(rng, shape, dtype):
    """Distinct values exactly representable in ``dtype`` (ties would make order ambiguous)."""
    n = int(np.prod(shape))
    return (rng.permutation(n) - n // 2).astype(dtype.np).reshape(shape)


# --------------------------------------------------------------------- sort32


@settings(max_examples=25, deadline=None)
@given(dtype=st.sampled_from((D.FP32, D.FP16)), rows=st.integers(1, 3),
       cols=st.sampled_from([32, 64, 96]), data=st.data(), seed=st.integers(0, 2**32 - 1))
def test_sort32_sorts_each_32_block_descending_with_its_index(dtype, rows, cols, data, seed):
    rng = np.random.default_rng(seed)
    vc = data.draw(st.integers(1, cols))
    src = distinct(rng, (rows, cols), dtype)
    idx = rng.integers(0, 1000, (rows, cols)).astype(np.uint32)
    t = R["tile.sort32"].type_rule(info("tile.sort32", {"src": tt((rows, cols), dtype, (rows, vc)),
                                                        "idx": tt((rows, cols), D.UINT32)}))
    assert t.shape == (rows, 2 * cols) and t.valid == (rows, 2 * vc)
    out = apply(R["tile.sort32"], tv(src, dtype, (rows, vc)), tv(idx, D.UINT32), out=t)
    values, ids = split_pairs(out.data[:, : 2 * vc], dtype)
    for r in range(rows):
        for s in range(0, vc, 32):
            block = src[r, s:min(s + 32, vc)].astype(np.float64)
            order = np.argsort(-block, kind="stable")
            np.testing.assert_array_equal(values[r, s:s + len(block)], block[order])
            np.testing.assert_array_equal(ids[r, s:s + len(block)],
                                          idx[r, s:s + len(block)][order].astype(BITS[dtype.name]))


def test_sort32_type_rules():
    with pytest.raises(OpTypeError, match="requires src dtype FP16 or FP32, but got INT32"):
        R["tile.sort32"].type_rule(info("tile.sort32", {"src": tt((1, 32), D.INT32),
                                                        "idx": tt((1, 32), D.UINT32)}))
    with pytest.raises(OpTypeError, match="requires an integer idx tile"):
        R["tile.sort32"].type_rule(info("tile.sort32", {"src": tt((1, 32), D.FP32),
                                                        "idx": tt((1, 32), D.FP32)}))
    with pytest.raises(OpTypeError, match="idx of src's shape"):
        R["tile.sort32"].type_rule(info("tile.sort32", {"src": tt((1, 32), D.FP32),
                                                        "idx": tt((1, 64), D.UINT32)}))


# -------------------------------------------------------------------- mrgsort


def sorted_pairs(rng, runs, run_pairs, dtype):
    """``runs`` descending runs of ``run_pairs`` pairs in one row, plus the plain arrays."""
    vals = distinct(rng, (runs, run_pairs), dtype)
    vals = -np.sort(-vals.astype(np.float64), axis=1)
    ids = rng.permutation(runs * run_pairs).reshape(runs, run_pairs).astype(np.uint32)
    words = np.empty((1, 2 * runs * run_pairs), dtype.np)
    words[0, 0::2] = vals.reshape(-1).astype(dtype.np)
    words[0, 1::2] = ids.reshape(-1).astype(BITS[dtype.name]).view(dtype.np)
    return words, vals.reshape(-1), ids.reshape(-1)


@pytest.mark.parametrize("dtype", [D.FP32, D.FP16], ids=lambda d: d.name)
@pytest.mark.parametrize("runs", [4, 8, 3])
def test_mrgsort_format1_merges_groups_of_four_runs(dtype, runs):
    rng = np.random.default_rng(runs)
    words, vals, ids = sorted_pairs(rng, runs, 32, dtype)
    out = apply(R["tile.mrgsort"], tv(words, dtype), block_len=64,
                out=tt(words.shape, dtype, space="Vec"))
    got_v, got_i = split_pairs(out.data, dtype)
    for g in range(0, runs, 4):
        span = slice(g * 32, min(g + 4, runs) * 32)
        order = np.argsort(-vals[span], kind="stable")
        np.testing.assert_array_equal(got_v[0, span], vals[span][order])
        np.testing.assert_array_equal(got_i[0, span], ids[span][order].astype(BITS[dtype.name]))
    with pytest.raises(OpIndexError, match="block_len 48 is not a positive multiple of 64"):
        apply(R["tile.mrgsort"], tv(words, dtype), block_len=48)


@pytest.mark.parametrize("ways", [2, 3, 4])
def test_mrgsort_format2_merges_sorted_lists_into_tmp_shape(ways):
    rng = np.random.default_rng(ways)
    lists = [sorted_pairs(rng, 1, 16 + 8 * w, D.FP32) for w in range(ways)]
    total = sum(w.shape[1] for w, _, _ in lists)
    tmp = tv(np.zeros((1, total), np.float32), D.FP32)
    srcs = [tv(w, D.FP32) for w, _, _ in lists] + [None] * (4 - ways)
    out = apply(R["tile.mrgsort"], *srcs, tmp, True, out=tt((1, total), D.FP32, space="Vec"))
    vals = np.concatenate([v for _, v, _ in lists])
    ids = np.concatenate([i for _, _, i in lists])
    order = np.argsort(-vals, kind="stable")
    got_v, got_i = split_pairs(out.data, D.FP32)
    np.testing.assert_array_equal(got_v[0], vals[order])
    np.testing.assert_array_equal(got_i[0], ids[order])


def test_mrgsort_type_rules():
    s = tt((1, 128), D.FP32)
    cases = [
        ({"src0": s, "block_len": ScalarType(D.INT32), "src1": s}, "mutually exclusive"),
        ({"src0": s}, "requires either block_len=<int> for format1"),
        ({"src0": s, "src1": s}, "format2 requires tmp"),
        ({"src0": s, "src1": tt((1, 128), D.FP16), "tmp": s}, "src0 and src1 in one dtype"),
        ({"src0": tt((1, 128), D.INT32), "block_len": ScalarType(D.INT32)}, "requires src dtype"),
        ({"src0": s, "block_len": ScalarType(D.FP32)}, "block_len to be an integer"),
    ]
    for types, message in cases:
        with pytest.raises(OpTypeError) as exc:
            R["tile.mrgsort"].type_rule(info("tile.mrgsort", types))
        assert message in exc.value.message
    merged = R["tile.mrgsort"].type_rule(info("tile.mrgsort", {
        "src0": s, "src1": s, "tmp": tt((1, 256), D.FP32)}))
    assert merged.shape == (1, 256)


# --------------------------------------------------------------------- random

M32 = 0xFFFFFFFF


def philox_reference(key, ctr, rounds):
    """Philox4x32 in plain Python integers (Salmon et al. 2011), one 128-bit block."""
    k0, k1 = key
    c = list(ctr)
    for _ in range(rounds):
        p0, p1 = 0xD2511F53 * c[0], 0xCD9E8D57 * c[2]
        c = [((p1 >> 32) ^ c[1] ^ k0) & M32, p1 & M32, ((p0 >> 32) ^ c[3] ^ k1) & M32, p0 & M32]
        k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
    return c


def test_philox_matches_the_published_known_answers():
    from pytest_pypto.ir.ops.random_ops import philox4x32

    kats = [((0, 0), (0, 0, 0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
            ((M32, M32), (M32,) * 4, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD))]
    for key, ctr, want in kats:
        got = philox4x32(key, np.array([ctr], np.uint64), 10)[0]
        assert tuple(int(x) for x in got) == want
        assert tuple(philox_reference(key, ctr, 10)) == want


def random_call(shape, valid=None, dtype=D.UINT32, rounds=10, seeds=(0x1234, 0x5678, 1, 2, 3, 4)):
    t = tt(shape, dtype, valid or shape, "Vec")
    return apply(R["tile.random"], *seeds, shape=shape, valid_shape=valid, dtype=dtype,
                 rounds=rounds, out=t)


@pytest.mark.parametrize("dtype", [D.UINT32, D.INT32], ids=lambda d: d.name)
@pytest.mark.parametrize("rounds", [7, 10])
def test_random_is_philox_of_counter_plus_block_deterministic(dtype, rounds):
    seeds = (0x0ABC, 0x0DEF, M32 - 1, 5, 0, 0)  # counter0 near the top: the carry propagates
    out = random_call((4, 16), (3, 10), dtype, rounds, seeds)
    again = random_call((4, 16), (3, 10), dtype, rounds, seeds)
    np.testing.assert_array_equal(out.data[:3, :10], again.data[:3, :10])
    base = seeds[2] | seeds[3] << 32
    words = []
    for b in range(8):
        c = base + b
        words += philox_reference(seeds[:2], [(c >> (32 * i)) & M32 for i in range(4)], rounds)
    want = np.array(words[:30], np.uint64).astype(np.uint32).view(dtype.np).reshape(3, 10)
    np.testing.assert_array_equal(out.data[:3, :10], want)
    assert out.valid == (3, 10)
    assert (out.data[3:].view(np.uint32) == 0xA5A5A5A5).all()  # outside valid: undefined
    other = random_call((4, 16), (3, 10), dtype, rounds, (0x0ABC, 0x0DEE, *seeds[2:]))
    assert (other.data[:3, :10] != out.data[:3, :10]).mean() > 0.9


@pytest.mark.parametrize(("types", "values", "message"), [
    ({"key0": ScalarType(D.FP32)}, {}, "requires key0 to be an integer scalar, but got FP32"),
    ({}, {"dtype": D.FP32}, "requires dtype INT32 or UINT32, but got FP32"),
    ({}, {"rounds": 8}, "requires rounds 7 or 10, but got 8"),
    ({}, {"valid_shape": (5, 8)}, "0 <= valid_shape <= shape"),
    ({}, {"shape": (4, 4, 4)}, "requires a 2D shape"),
])
def test_random_type_rules(types, values, message):
    seeds = {n: ScalarType(D.INT32) for n in ("key0", "key1", "counter0", "counter1", "counter2",
                                              "counter3")}
    vals = {"shape": (4, 8), "dtype": D.UINT32, "rounds": 10, "valid_shape": None, **values}
    with pytest.raises(OpTypeError) as exc:
        R["tile.random"].type_rule(info("tile.random", {**seeds, **types}, vals))
    assert message in exc.value.message


def test_random_is_a5_only_in_the_arch_table():
    from pytest_pypto.arch import spec

    assert "tile.random" in spec("a2a3").unavailable_ops
    assert "tile.random" not in spec("a5").unavailable_ops
