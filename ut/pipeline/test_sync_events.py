# SPDX-License-Identifier: Apache-2.0
# ruff: noqa: F841  (kernel bodies are parsed, never run: their locals look unused)
"""Explicit cross-core events: `pl.system.sync_set` / `sync_wait` / `set_ffts` (issue 23;
docs/design/language.md §14).  An AIV kernel writes GM and raises an event, the AIC kernel
of its Group waits for it and reads what was written; references are numpy."""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import PyptoError, SimulationError
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")
D = 16
line_of = line_finder(__file__)


def _program(event_set=4, event_wait=4, ffts_mode=2):
    @pl.program
    class EventHandoff:
        @pl.function(type=pl.FunctionType.AIC)
        def cube(self, t: pl.InOut[pl.Tensor[[D, D], pl.FP32]], w: pl.Tensor[[D, D], pl.FP32],
                 ws: pl.Tensor[[256], pl.INT64], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
            pl.system.set_ffts(ws)
            pl.system.sync_wait(event_wait, pipe=pl.PipeType.MTE2)  # wait
            tm = pl.load(t, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat)
            wm = pl.load(w, [0, 0], [D, D], target_memory=pl.MemorySpace.Mat)
            r: pl.Tile[[D, D], pl.FP32] = pl.matmul(pl.move(tm, target_memory=pl.Mem.Left),
                                                    pl.move(wm, target_memory=pl.Mem.Right))
            pl.store(r, [0, 0], out)

        @pl.function(type=pl.FunctionType.AIV)
        def vec(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                t: pl.InOut[pl.Tensor[[D, D], pl.FP32]], ws: pl.Tensor[[256], pl.INT64]):
            pl.system.set_ffts(ws)
            x: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(a, [0, 0], [D, D])
            y: pl.Tile[[D, D], pl.FP32, pl.Mem.Vec] = pl.load(b, [0, 0], [D, D])
            pl.store(pl.add(x, y), [0, 0], t)
            pl.system.sync_set(event_set, pipe=pl.PipeType.MTE3, ffts_mode=ffts_mode)

        @pl.function(type=pl.FunctionType.Group)
        def grp(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                t: pl.InOut[pl.Tensor[[D, D], pl.FP32]], w: pl.Tensor[[D, D], pl.FP32],
                ws: pl.Tensor[[256], pl.INT64], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
            self.cube(t, w, ws, out)
            self.vec(a, b, t, ws)

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, a: pl.Tensor[[D, D], pl.FP32], b: pl.Tensor[[D, D], pl.FP32],
                 t: pl.InOut[pl.Tensor[[D, D], pl.FP32]], w: pl.Tensor[[D, D], pl.FP32],
                 ws: pl.Tensor[[256], pl.INT64], out: pl.Out[pl.Tensor[[D, D], pl.FP32]]):
            self.grp(a, b, t, w, ws, out)

    return EventHandoff


def _run(program, platform, rng):
    a, b, w = (rng.standard_normal((D, D)).astype(np.float32) for _ in range(3))
    t = np.zeros((D, D), np.float32)
    ws = np.zeros(256, np.int64)
    out = np.zeros((D, D), np.float32)
    config = RunConfig(platform=platform)
    pytest_pypto.run(pytest_pypto.compile(program, config), a, b, t, w, ws, out, config=config)
    return a, b, w, out


@pytest.mark.parametrize("platform", PLATFORMS)
def test_the_cube_reads_what_the_vector_wrote_once_the_event_is_set(platform):
    # the cube runs first in the group: without the wait it would read zeros
    a, b, w, out = _run(_program(), platform, np.random.default_rng(7))
    np.testing.assert_allclose(out, (a + b) @ w, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_a_wait_no_peer_sets_is_a_deadlock_naming_its_line(platform):
    with pytest.raises(SimulationError, match="deadlock") as info:
        _run(_program(event_set=4, event_wait=5), platform, np.random.default_rng(7))
    assert "event 5" in str(info.value)
    assert f"test_sync_events.py:{line_of('wait')}" in str(info.value)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"event_set": 14}, "event ids 14 and 15 are reserved"),
    ({"ffts_mode": 3}, "ffts_mode must be 0, 1 or 2"),
], ids=["reserved-event", "bad-mode"])
def test_bad_event_arguments_are_compile_errors(kwargs, message):
    with pytest.raises(PyptoError, match=message):
        pytest_pypto.compile(_program(**kwargs), RunConfig(platform="a2a3sim"))


def test_set_ffts_needs_a_long_enough_int64_vector():
    with pytest.raises(PyptoError, match="at least 256 INT64 elements, got INT64\\[64\\]") as info:
        @pl.program
        class Short:
            @pl.function(type=pl.FunctionType.AIV)
            def vec(self, ws: pl.Tensor[[64], pl.INT64]):
                pl.system.set_ffts(ws)  # short

            @pl.function(type=pl.FunctionType.Orchestration)
            def main(self, ws: pl.Tensor[[64], pl.INT64]):
                self.vec(ws)

    assert info.value.span.line == line_of("short")


def test_pipe_type_names_the_hardware_pipes():
    assert {p.name for p in pl.PipeType} >= {"MTE1", "MTE2", "MTE3", "M", "V", "S", "FIX", "ALL"}
