# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""System test: an orchestration written with outlined regions only (docs/design/language.md §9).

No InCore function is declared: a `pl.at` region widens the input into a scratch
buffer, a `pl.spmd` launch adds a bias row block per block, and a `pl.at` region in
an orchestration loop finishes each row block in place.  Every region is checked
against plain numpy on each requested cell, and the task graph against the
dependencies the inferred directions imply.
"""

from __future__ import annotations

import numpy as np

import pytest_pypto.language as pl

M, N, TM = 128, 64, 32
BLOCKS = M // TM


@pl.program
class OutlinedPipeline:
    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[M, N], pl.FP16],
        y: pl.Tensor[[M, N], pl.FP32],
        out: pl.Out[pl.Tensor[[M, N], pl.FP32]],
    ) -> pl.Tensor[[M, N], pl.FP32]:
        wide = pl.create_tensor([M, N], dtype=pl.FP32)
        with pl.at(level=pl.Level.CORE_GROUP, name_hint="widen"):
            for r in pl.range(0, M, TM):
                xf = pl.cast(pl.load(x, [r, 0], [TM, N]), pl.FP32)
                wide = pl.store(pl.muls(xf, 2.0), [r, 0], wide)
        for b in pl.spmd(BLOCKS, name_hint="shift"):
            row = b * TM
            t = pl.add(pl.load(wide, [row, 0], [TM, N]), pl.load(y, [row, 0], [TM, N]))
            out = pl.store(t, [row, 0], out)
        for r in pl.range(0, M, TM):
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="finish"):
                o = pl.load(out, [r, 0], [TM, N])
                out = pl.store(pl.abs(o), [r, 0], out)
        return out


def test_outlined_pipeline(pypto_config, pypto_runner, pypto_rng):
    x = pypto_rng.standard_normal((M, N)).astype(np.float16)
    y = pypto_rng.standard_normal((M, N)).astype(np.float32)
    out = np.zeros((M, N), np.float32)
    run = pypto_runner.run(OutlinedPipeline, x, y, out)
    # FP16 -> FP32 and * 2 are exact; one FP32 rounding for the add; abs is exact
    np.testing.assert_array_equal(out, np.abs(x.astype(np.float32) * np.float32(2) + y))
    assert run.platform == pypto_config.platform
    tasks = run.tasks
    kernels = [t["kernel"] for t in tasks]
    assert kernels == ["widen"] + ["shift"] * BLOCKS + ["finish"] * BLOCKS
    shift = [t for t in tasks if t["kernel"] == "shift"]
    assert sorted(t["block"]["index"] for t in shift) == list(range(BLOCKS))
    assert all(t["deps"] == [{"task": 0, "kind": "RAW"}] for t in shift)
    first_finish = tasks[1 + BLOCKS]
    assert {d["task"] for d in first_finish["deps"]} == {t["id"] for t in shift}
    directions = {t["kernel"]: [a["direction"] for a in t["args"]] for t in tasks}
    assert directions == {
        "widen": ["In", "Out"],
        "shift": ["In", "In", "Out"],
        "finish": ["InOut", "Scalar"],
    }
