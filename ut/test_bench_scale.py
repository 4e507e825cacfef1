"""The scale bench's paged-attention kernels stay correct (bench/bench_scale.py, issue 22).

Small sizes on both sim platforms: requests whose context ends inside a block, on a block
edge and within the first block, so the masking of the last block, the online rescaling
across blocks and the first-block-only path all run.  The bench's numpy reference is
itself checked against a plain per-request, per-head loop written here.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import pytest_pypto
from bench import bench_scale
from pytest_pypto import RunConfig

sk = bench_scale.sk  # bench/scale_kernels.py, as the bench imports it
PLATFORMS = ("a2a3sim", "a5sim")
HEADS, DIM, BLOCK = 32, 64, 32
LENS = np.array([70, 32, 150, 5], np.int32)  # partial last block, block edge, 5 blocks, < 1
BATCH, POOL = len(LENS), 40


def loop_reference(a: dict[str, np.ndarray], heads: int, block: int) -> np.ndarray:
    """Attention request by request and head by head, rows looked up one token at a time."""
    batch, dim = len(a["context_lens"]), a["query"].shape[1]
    width = a["block_table"].size // batch
    k_pool = a["key_pool"].astype(np.float64)
    v_pool = a["value_pool"].astype(np.float64)
    out = np.zeros((batch * heads, dim))
    for b in range(batch):
        n = int(a["context_lens"][b])
        rows = [int(a["block_table"][b * width + t // block]) * block + t % block
                for t in range(n)]
        k, v = k_pool[rows], v_pool[rows]
        for h in range(heads):
            q = a["query"][b * heads + h].astype(np.float64)
            s = k @ q / math.sqrt(dim)
            w = np.exp(s - s.max())
            out[b * heads + h] = (w / w.sum()) @ v
    return out


def run_attention(platform: str, dynamic: bool, arrays: dict[str, np.ndarray],
                  compiled=None):
    batch = len(arrays["context_lens"])
    pool = arrays["key_pool"].shape[0] // BLOCK
    if compiled is None:
        program = sk.attention_program(HEADS, DIM, BLOCK, batch, pool, pool // batch,
                                       dynamic=dynamic)
        compiled = pytest_pypto.compile(program, RunConfig(platform=platform))
    run = pytest_pypto.run(compiled, *[arrays[n] for n in sk.ORDER],
                           config=RunConfig(platform=platform))
    return run, compiled


def test_numpy_reference_matches_a_per_token_loop():
    a = sk.make_inputs(BATCH, HEADS, DIM, BLOCK, POOL, LENS, seed=3)
    want = loop_reference(a, HEADS, BLOCK)
    got = sk.reference(*[a[n] for n in sk.ORDER[:5]], HEADS, BLOCK)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_paged_attention_matches_the_reference(platform, dynamic):
    a = sk.make_inputs(BATCH, HEADS, DIM, BLOCK, POOL, LENS, seed=1)
    run, _ = run_attention(platform, dynamic, a)
    want = sk.reference(*[a[n] for n in sk.ORDER[:5]], HEADS, BLOCK)
    np.testing.assert_allclose(a["out"], want, rtol=bench_scale.RTOL, atol=bench_scale.ATOL)
    blocks = sum(-(-int(n) // BLOCK) for n in LENS) * (HEADS // sk.Q_TILE)
    names = [t["kernel"] for t in run.tasks]
    assert len(names) == 4 * blocks == sk.task_count(BATCH, HEADS, BLOCK, LENS)
    for kernel in ("scores", "block_softmax", "weighted_values", "merge"):
        assert names.count(kernel) == blocks


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dynamic_program_serves_another_batch_and_pool_with_one_compile(platform):
    first = sk.make_inputs(BATCH, HEADS, DIM, BLOCK, POOL, LENS, seed=2)
    _, compiled = run_attention(platform, True, first)
    lens = np.array([33, 96], np.int32)
    other = sk.make_inputs(2, HEADS, DIM, BLOCK, 12, lens, seed=4)
    run_attention(platform, True, other, compiled)
    want = sk.reference(*[other[n] for n in sk.ORDER[:5]], HEADS, BLOCK)
    np.testing.assert_allclose(other["out"], want, rtol=bench_scale.RTOL, atol=bench_scale.ATOL)


def test_bench_row_checks_the_result_and_counts_tasks():
    params = {"kernel": "static", "platform": "a2a3sim", "batch": 2, "heads": 16,
              "head_dim": 32, "block": 32, "context": 80, "pool_blocks": 8, "ref_repeat": 1,
              "sim_repeat": 2}
    row = bench_scale.measure(params)
    assert row["ok"] and row["max_err"] < bench_scale.ATOL
    assert row["tasks"] == row["expected_tasks"] == 2 * 3 * 4  # 2 requests x 3 blocks
    assert row["entry"] == (2 * 16 * 32 * 2 + 2 * 8 * 32 * 32 * 2 + 2 * 4 * 4 + 2 * 4
                            + 2 * 16 * 32 * 4)
    assert row["peak"] >= row["entry"]
    assert bench_scale.check([row]) == []
    assert "max |sim - numpy|" in bench_scale.check([{**row, "ok": False}])[0]
    assert "expected 24" in bench_scale.check([{**row, "tasks": 23}])[0]


def test_tables_judge_the_targets(capsys):
    mib = 1 << 20
    row = {"kernel": "static", "platform": "a2a3sim", "batch": 4, "context": 8192,
           "pool_blocks": 512, "tasks": 1024, "compile": 1.0, "sim": 2.0, "kernels": 1.0,
           "numpy": 1.0, "entry": 100 * mib, "peak": 456 * mib, "max_err": 1e-3,
           "sim_cpu": 1.5, "numpy_cpu": 1.0}
    bench_scale.print_full([row, {**row, "sim": 2.5, "peak": 457 * mib, "sim_cpu": 3.0}])
    lines = capsys.readouterr().out.splitlines()
    # ratio 2.00x meets <= 2; 456 MiB = 2 x 100 + 256 meets the RSS bound; one more does not;
    # the last two columns: the simulator's CPU seconds and their ratio to the reference's
    assert lines[1].split()[10:12] == ["2.00x", "yes"] and lines[1].split()[-4] == "yes"
    assert lines[2].split()[10:12] == ["2.50x", "no"] and lines[2].split()[-4] == "no"
    assert lines[1].split()[-2:] == ["1.50", "1.50x"] and lines[2].split()[-2:] == ["3.00", "3.00x"]
    bench_scale.print_scale([row, {**row, "batch": 64, "tasks": 16384, "sim": 48.0}])
    out = capsys.readouterr().out
    assert "time per task at 16384 tasks / at 1024 tasks = 1.50x" in out
    assert out.splitlines()[1].split()[-1] == f"{1.5 / 1024 * 1e6:.1f}"  # CPU us per task
