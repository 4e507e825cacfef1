"""The race detector of runs relying on explicit dependencies (docs/design/scheduling.md §5)."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.ir.errors import RaceError, SimulationError
from ut.helpers import line_finder

line_of = line_finder(__file__)
R, C, H = 32, 32, 16


@pl.program
class Races:
    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[R, C], pl.FP32], b: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [row, 0], [H, C])  # fill-line
        return pl.store(pl.add(t, 1.0), [row, 0], b)

    @pl.function(type=pl.FunctionType.InCore)
    def use(self, b: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(b, [row, 0], [H, C])  # use-line
        return pl.store(pl.mul(t, 2.0), [row, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def raw(self, x: pl.Tensor[[R, C], pl.FP32], b: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            b, t0 = pl.submit(self.fill, x, b, 0)
            b, t1 = pl.submit(self.fill, x, b, H)  # fill-h
            o, _ = pl.submit(self.use, b, o, 0, deps=[t0])
            o, _ = pl.submit(self.use, b, o, H)  # missing
        return o


def _arrays(rng):
    x = rng.standard_normal((R, C)).astype(np.float32)
    return x, np.zeros((R, C), np.float32), np.zeros((R, C), np.float32)


def test_missing_dependency_is_a_raw_race_even_when_the_order_happens_to_work(
        pypto_runner, pypto_config, pypto_rng):
    compiled = pypto_runner.compile(Races)
    x, b, o = _arrays(pypto_rng)
    off = dataclasses.replace(pypto_config, race_check=False)
    pytest_pypto.run(compiled, x, b, o, config=off)
    np.testing.assert_allclose(o, (x + 1) * 2, rtol=1e-6)  # submission order: right answer
    o[...] = 0
    with pytest.raises(RaceError) as ei:
        pytest_pypto.run(compiled, x, b, o, config=pypto_config)
    err = ei.value
    assert isinstance(err, SimulationError)
    (race,) = err.races
    assert (race["kind"], race["first"], race["second"]) == ("RAW", 1, 3)
    assert race["tensor_name"] == "b" and race["region"] == f"[{H}:{R}, 0:{C}]"
    assert (f"task 3 (kernel 'use', submitted at {__file__}:{line_of('missing')}, "
            f"kernel at {__file__}:{line_of('use-line')})") in err.message
    assert f"task 1 (kernel 'fill', submitted at {__file__}:{line_of('fill-h')}" in err.message
    assert (err.span.file, err.span.line) == (__file__, line_of("missing"))
    assert "deps=[...] of task 3" in err.hint
    np.testing.assert_array_equal(o, 0)  # a failed run writes nothing back


@pl.program
class War:
    @pl.function(type=pl.FunctionType.InCore)
    def snap(self, b: pl.Tensor[[R, C], pl.FP32],
             s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.load(b, [0, 0], [H, C]), [0, 0], s)

    @pl.function(type=pl.FunctionType.InCore)
    def clobber(self, x: pl.Tensor[[R, C], pl.FP32],
                b: pl.InOut[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [H, C]), [8, 0], b)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], b: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
             s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            s, t0 = pl.submit(self.snap, b, s)
            b, _ = pl.submit(self.clobber, x, b)
        return s


def test_an_unordered_overwrite_of_what_another_task_reads_is_a_war_race(
        pypto_runner, pypto_config, pypto_rng):
    x, b, s = _arrays(pypto_rng)
    with pytest.raises(RaceError) as ei:
        pytest_pypto.run(pypto_runner.compile(War), x, b, s, config=pypto_config)
    (race,) = ei.value.races
    assert (race["kind"], race["first"], race["second"], race["tensor_name"]) == \
        ("WAR", 0, 1, "b")
    assert race["region"] == f"[8:{H}, 0:{C}]"  # rows both touch: read 0:16, written 8:24


@pl.program
class Waw:
    @pl.function(type=pl.FunctionType.InCore)
    def put(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.load(x, [row, 0], [H, C]), [row, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            tids = pl.array.create(2, pl.TASK_ID)
            for i in pl.parallel(2):  # disjoint halves of the whole-tensor Out: no race
                o, t = pl.submit(self.put, x, o, i * H)
                tids[i] = t
            o, _ = pl.submit(self.put, x, o, 4, deps=[tids[0]])  # overlaps half 1 too
        return o


def test_two_unordered_writers_of_one_region_are_a_waw_race(pypto_runner, pypto_config,
                                                           pypto_rng):
    x, _, o = _arrays(pypto_rng)
    with pytest.raises(RaceError) as ei:
        pytest_pypto.run(pypto_runner.compile(Waw), x, o, config=pypto_config)
    (race,) = ei.value.races  # tasks 0 and 1 write disjoint rows: not a race
    assert (race["kind"], race["first"], race["second"], race["region"]) == \
        ("WAW", 1, 2, f"[{H}:{H + 4}, 0:{C}]")


@pl.program
class Fenced:
    """Phases of disjoint stripes of one whole-tensor Out; phase p+1 reads phase p."""

    @pl.function(type=pl.FunctionType.InCore)
    def step(self, src: pl.Tensor[[R, C], pl.FP32], dst: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.add(pl.load(src, [row, 0], [8, C]), 1.0), [row, 0], dst)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], a: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            tids = pl.array.create(4, pl.TASK_ID)
            for i in pl.parallel(4):
                a, t = pl.submit(self.step, x, a, i * 8)
                tids[i] = t
            barrier = pl.system.task_dummy(deps=[tids])
            for i in pl.parallel(4):
                o, _ = pl.submit(self.step, a, o, i * 8, deps=[barrier])
        return o


def test_a_correct_manual_pipeline_passes_under_50_shuffled_seeds(pypto_runner, pypto_config,
                                                                 pypto_rng):
    compiled = pypto_runner.compile(Fenced)
    x, a, o = _arrays(pypto_rng)
    orders = set()
    for seed in range(50):
        o[...] = 0
        run = pytest_pypto.run(compiled, x, a, o,
                               config=dataclasses.replace(pypto_config, schedule_seed=seed))
        np.testing.assert_allclose(o, x + 2, rtol=1e-6)
        orders.add(tuple(run.deps()["execution_order"]))
    assert len(orders) > 10  # the seeds did explore different orders


def test_shuffled_orders_expose_the_race_the_detector_names(pypto_runner, pypto_config,
                                                            pypto_rng):
    compiled = pypto_runner.compile(Races)
    x, b, o = _arrays(pypto_rng)
    wrong = 0
    for seed in range(20):
        o[...] = 0
        b[...] = 0
        with pytest.raises(RaceError):
            pytest_pypto.run(compiled, x, b, o,
                             config=dataclasses.replace(pypto_config, schedule_seed=seed))
        run = pytest_pypto.run(compiled, x, b, o, config=dataclasses.replace(
            pypto_config, schedule_seed=seed, race_check=False))
        order = run.deps()["execution_order"]
        if order.index(3) < order.index(1):
            wrong += 1
            assert not np.allclose(o[H:], (x[H:] + 1) * 2)  # it read b before it was filled
    assert wrong  # some seed ran the reader first


def test_no_race_check_turns_the_check_off(pypto_runner, pypto_config, pypto_rng):
    x, b, o = _arrays(pypto_rng)
    off = dataclasses.replace(pypto_config, race_check=False)
    run = pytest_pypto.run(pypto_runner.compile(Races), x, b, o, config=off)
    assert run.deps()["edges"] == [{"from": 0, "to": 2, "kind": "explicit"}]


@pl.program
class Scratch:
    """A manual_dep=True scratch buffer and a no_dep_args= region: no automatic edges."""

    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Tensor[[R, C], pl.FP32], b: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.add(pl.load(x, [row, 0], [H, C]), 1.0), [row, 0], b)

    @pl.function(type=pl.FunctionType.InCore)
    def use(self, b: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]],
            row: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.mul(pl.load(b, [row, 0], [H, C]), 2.0), [row, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def ordered(self, x: pl.Tensor[[R, C], pl.FP32],
                o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        b = pl.create_tensor([R, C], dtype=pl.FP32, manual_dep=True)
        b, t = pl.submit(self.fill, x, b, 0)
        o, _ = pl.submit(self.use, b, o, 0, deps=[t])
        b, _ = pl.submit(self.fill, x, b, H)
        o = self.use(b, o, H)  # b untracked: nothing orders this after the fill above
        return o


def test_a_manual_dep_buffer_is_ordered_only_by_deps(pypto_runner, pypto_config, pypto_rng):
    compiled = pypto_runner.compile(Scratch)
    x, _, o = _arrays(pypto_rng)
    off = dataclasses.replace(pypto_config, race_check=False)
    run = pytest_pypto.run(compiled, x, o, config=off)
    np.testing.assert_allclose(o, (x + 1) * 2, rtol=1e-6)
    edges = {(e["from"], e["to"], e["kind"]) for e in run.deps()["edges"]}
    assert edges == {(0, 1, "explicit"), (1, 3, "WAW")}  # o is tracked, b is not
    with pytest.raises(RaceError) as ei:
        pytest_pypto.run(compiled, x, o, config=pypto_config)
    (race,) = ei.value.races
    assert (race["kind"], race["first"], race["second"]) == ("RAW", 2, 3)
    assert race["tensor_name"] == "b"
