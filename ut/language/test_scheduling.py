"""Explicit scheduling constructs (docs/design/scheduling.md): parse, diagnostics, runs."""

from __future__ import annotations

import dataclasses
import importlib.util
import sys
import textwrap

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.ir.dtypes import TASK_ID
from pytest_pypto.ir.errors import (
    InvalidOperationError,
    ParserSyntaxError,
    ParserTypeError,
    RaceError,
)
from pytest_pypto.ir.nodes import Assign, Call, For, FuncCall
from pytest_pypto.ir.types import ScalarType, TupleType
from pytest_pypto.runtime.trace import chrome_trace

R, C, TR, TC = 32, 32, 16, 16
M, N = R // TR, C // TC


def _calls(fn):
    found = []

    def walk(body):
        for s in body:
            if isinstance(s, Assign) and isinstance(s.value, (FuncCall, Call)):
                found.append((s, s.value))
            if isinstance(s, For):
                walk(s.body)

    walk(fn.body)
    return found


@pl.program
class Pipeline:
    """out = 2 * x + 1 per tile, two stages, ordered only by deps= inside a manual scope."""

    @pl.function(type=pl.FunctionType.InCore)
    def stage1(self, x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
               row: pl.Scalar[pl.INDEX], col: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [row, col], [TR, TC])
        return pl.store(pl.add(t, t), [row, col], s)

    @pl.function(type=pl.FunctionType.InCore)
    def stage2(self, s: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]],
               row: pl.Scalar[pl.INDEX], col: pl.Scalar[pl.INDEX]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(s, [row, col], [TR, TC])
        return pl.store(pl.add(t, 1.0), [row, col], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], s: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            for i in pl.range(M):
                for j in pl.parallel(N):
                    s, t1 = pl.submit(self.stage1, x, s, i * TR, j * TC)
                    o, _ = pl.submit(self.stage2, s, o, i * TR, j * TC, deps=[t1])
        return o


def test_submit_yields_its_task_id_and_manual_scope_marks_the_calls():
    (s1, c1), (s2, c2) = _calls(Pipeline.functions["main"])
    assert isinstance(c1, FuncCall) and c1.task_id and c1.manual and c1.deps == ()
    assert isinstance(c1.type, TupleType) and c1.type.items[-1] == ScalarType(TASK_ID)
    assert [t.name.split("_")[0] for t in s1.targets] == ["s", "t1"]
    assert c2.manual and len(c2.deps) == 1 and c2.deps[0].name == s1.targets[1].name


def test_pipeline_runs_against_numpy_on_each_sim(pypto_runner, pypto_config, pypto_rng):
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    s, o = np.zeros((R, C), np.float32), np.zeros((R, C), np.float32)
    run = pytest_pypto.run(pypto_runner.compile(Pipeline), x, s, o, config=pypto_config)
    np.testing.assert_allclose(o, 2 * x + 1, rtol=1e-6)
    edges = {(e["from"], e["to"], e["kind"]) for e in run.deps()["edges"]}
    # only the declared edges: stage2 of a tile after stage1 of the same tile
    assert edges == {(2 * k, 2 * k + 1, "explicit") for k in range(M * N)}
    assert all(t["manual"] for t in run.deps()["tasks"])


@pl.program
class Regions:
    """pl.at / pl.spmd regions with `as tid`, deps=, a None seed and a TaskId array."""

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            tids = pl.array.create(N, pl.TASK_ID)
            for i in pl.range(M):
                prev = None
                for j in pl.range(N):
                    with pl.at(level=pl.Level.CORE_GROUP, name_hint="tile",
                               deps=[prev, tids]) as prev:
                        t = pl.load(x, [i * TR, j * TC], [TR, TC])
                        o = pl.store(pl.mul(t, 3.0), [i * TR, j * TC], o)
                    tids[j] = prev
            barrier = pl.system.task_dummy(deps=[tids])
            with pl.at(level=pl.Level.CORE_GROUP, name_hint="bump", deps=[barrier]) as _:
                u = pl.load(o, [0, 0], [TR, TC])
                o = pl.store(pl.add(u, 1.0), [0, 0], o)
        return o


def test_regions_bind_task_ids_and_a_dummy_joins_them(pypto_runner, pypto_config, pypto_rng):
    calls = [c for _, c in _calls(Regions.functions["main"])]
    dummy = [c for c in calls if isinstance(c, Call) and c.op == "system.task_dummy"]
    assert len(dummy) == 1 and dummy[0].type == ScalarType(TASK_ID)
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    run = pytest_pypto.run(pypto_runner.compile(Regions), x, o, config=pypto_config)
    want = 3 * x
    want[:TR, :TC] += 1
    np.testing.assert_allclose(o, want, rtol=1e-6)
    tasks = run.deps()["tasks"]
    barrier = next(t for t in tasks if t["kernel"] == "task_dummy")
    last_row = {t["id"] for t in tasks if t["kernel"] == "tile"} - {0, 1}
    assert {d["task"] for d in barrier["deps"]} == last_row
    bump = next(t for t in tasks if t["kernel"] == "bump")
    assert [d["task"] for d in bump["deps"]] == [barrier["id"]]


@pl.program
class Predicated:
    @pl.function(type=pl.FunctionType.InCore)
    def fill(self, x: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.tile.full([R, C], dtype=pl.FP32, value=5.0), [0, 0], x)

    @pl.function(type=pl.FunctionType.InCore)
    def copy(self, x: pl.Tensor[[R, C], pl.FP32],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        return pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.InOut[pl.Tensor[[R, C], pl.FP32]], gate: pl.Tensor[[R, C], pl.INT32],
             o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        with pl.manual_scope():
            x, t = pl.spmd_submit(self.fill, x, core_num=1, predicate=(0 < gate[1, 2]))
            o, _ = pl.submit(self.copy, x, o, deps=[t])
        return o


@pytest.mark.parametrize("gate", [0, 7])
def test_predicate_skips_or_dispatches(pypto_runner, pypto_config, gate):
    x = np.full((R, C), -1.0, np.float32)
    g = np.zeros((R, C), np.int32)
    g[1, 2] = gate
    o = np.zeros((R, C), np.float32)
    run = pytest_pypto.run(pypto_runner.compile(Predicated), x, g, o, config=pypto_config)
    np.testing.assert_array_equal(o, np.full((R, C), 5.0 if gate else -1.0, np.float32))
    assert run.deps()["tasks"][0]["predicate_skipped"] is (not gate)


def _parse(tmp_path, src: str):
    """A small program whose orchestration body is ``src`` (indented 8), in its own module
    so that diagnostics have lines: the body starts on line 13."""
    path = tmp_path / "sched_mod.py"
    path.write_text(f'''import pytest_pypto.language as pl
R, C = {R}, {C}
def build():
    @pl.program
    class P:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
              ) -> pl.Tensor[[R, C], pl.FP32]:
            return pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)
        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
                 ) -> pl.Tensor[[R, C], pl.FP32]:
{textwrap.indent(src, " " * 12)}
            return o
    return P
''')
    name = f"_sched_mod_{abs(hash(str(path)))}"
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # inspect finds a class's source through its module
    try:
        spec.loader.exec_module(module)
        return module.build()
    finally:
        del sys.modules[name]


@pytest.mark.parametrize(("body", "error", "message", "line"), [
    ("with pl.manual_scope():\n    with pl.manual_scope():\n        o, t = pl.submit(self.k, x, o)",
     ParserSyntaxError, "pl.manual_scope cannot nest inside another pl.manual_scope", 14),
    ("o, t = pl.submit(self.k, x, o, deps=[x])",
     ParserTypeError, "pl.submit deps= entries must be TaskIds, but 'x' is a tensor", 13),
    ("o, t = pl.submit(self.k, x, o, deps=7)",
     ParserSyntaxError, "pl.submit deps= takes a list of TaskIds", 13),
    ("o, t = pl.submit(x, o)",
     ParserSyntaxError, "pl.submit takes the kernel first, as self.<kernel>", 13),
    ("o, t = pl.spmd_submit(self.k, x, o)",
     ParserSyntaxError, "pl.spmd_submit requires core_num=", 13),
    ("o, t = pl.submit(self.k, x, o, core_num=2)",
     ParserSyntaxError, "pl.submit does not take core_num=", 13),
    ("with pl.spmd(2, deps=[None]):\n    o = self.k(x, o)",
     ParserSyntaxError, "pl.spmd() deps= needs the `with pl.spmd(...) as tid:` form", 13),
    ("o, t = pl.submit(self.k, x, o, predicate=(x[0, 0] > o[0, 0]))",
     ParserSyntaxError, "predicate= must compare a tensor element with an int literal", 13),
    ("o, t = pl.submit(self.k, x, o, predicate=(x[0] > 0))",
     ParserTypeError, "predicate= needs one index per dimension of 'x' (2), got 1", 13),
    ("b = pl.system.task_dummy(after=[None])",
     ParserSyntaxError, "Unknown keyword argument 'after' in pl.system.task_dummy()", 13),
    ("o, t = pl.submit(self.k, x, o, dumps=[7])",
     ParserTypeError, "pl.submit dumps= entries must be tensors, but '7' is not", 13),
    ("y = pl.create_tensor([R, C], dtype=pl.FP32)\no, t = pl.submit(self.k, x, o, dumps=[y])",
     ParserTypeError, "pl.submit dumps= entry 'y' is not an argument of this task", 14),
    ("pl.dump_tag(3)",
     ParserTypeError, "pl.dump_tag takes one tensor", 13),
    ("with pl.at(level=pl.Level.CORE_GROUP, no_dep_args=[7]):\n"
     "    o = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)",
     ParserTypeError, "no_dep_args= entries must be bare tensor names", 13),
])
def test_scheduling_mistakes_are_reported_at_their_line(tmp_path, body, error, message, line):
    with pytest.raises(error) as ei:
        _parse(tmp_path, body)
    assert message in ei.value.message
    assert ei.value.line == line


def test_manual_scope_belongs_to_the_orchestration():
    with pytest.raises(InvalidOperationError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]) -> pl.Tensor[[R, C], pl.FP32]:
                with pl.manual_scope():  # in-kernel
                    t = pl.load(x, [0, 0], [R, C])
                return x
    assert "pl.manual_scope is not supported inside InCore function 'k'" in ei.value.message


def test_none_seeds_and_none_deps_add_no_edge(tmp_path, pypto_runner, pypto_config, pypto_rng):
    P = _parse(tmp_path, "prev = None\nnone = pl.system.task_invalid()\n"
                         "o, t = pl.submit(self.k, x, o, deps=[prev, None, none])")
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    run = pytest_pypto.run(pypto_runner.compile(P), x, o, config=pypto_config)
    np.testing.assert_array_equal(o, x)
    assert run.deps()["edges"] == []


def test_deps_add_to_automatic_tracking_outside_a_manual_scope(tmp_path, pypto_runner,
                                                               pypto_config, pypto_rng):
    P = _parse(tmp_path, "o, t = pl.submit(self.k, x, o)\n"
                         "y, u = pl.submit(self.k, x, o, deps=[t])\n"
                         "o, _ = pl.submit(self.k, o, o)")
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    config = dataclasses.replace(pypto_config, schedule_seed=3)
    run = pytest_pypto.run(pypto_runner.compile(P), x, o, config=config)
    kinds = {(e["from"], e["to"]): e["kind"] for e in run.deps()["edges"]}
    assert kinds[(0, 1)] == "explicit" and kinds[(1, 2)] == "RAW"  # o: written by 1, read by 2


def test_the_trace_shows_declared_edges_apart_and_skips_the_coreless_dummy(
        pypto_runner, pypto_config, pypto_rng):
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    run = pytest_pypto.run(pypto_runner.compile(Regions), x, o, config=pypto_config)
    events = chrome_trace(run.deps())["traceEvents"]
    flows = [e for e in events if e["ph"] == "s"]
    # tile i*N+j waits for tile (i, j-1) (deps=[prev]) and the row before (deps=[tids]):
    # every edge between cored tasks is declared, none inferred
    assert flows and {e["cat"] for e in flows} == {"explicit dependency"}
    assert not any(e["ph"] == "X" and e["name"] == "task_dummy" for e in events)


def test_dumps_and_dump_tag_record_the_dumped_arguments_and_change_no_result(
        tmp_path, pypto_runner, pypto_config, pypto_rng):
    P = _parse(tmp_path, "o, t = pl.submit(self.k, x, o, dumps=[o])\n"
                         "pl.dump_tag(x)\n"
                         "with pl.at(level=pl.Level.CORE_GROUP, name_hint='r'):\n"
                         "    o = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)\n"
                         "with pl.at(level=pl.Level.CORE_GROUP, name_hint='q', dumps=[o]):\n"
                         "    o = pl.store(pl.load(o, [0, 0], [R, C]), [0, 0], o)")
    calls = [c for _, c in _calls(P.functions["main"]) if isinstance(c, FuncCall)]
    calls += [s.expr for s in P.functions["main"].body if isinstance(getattr(s, "expr", None),
                                                                     FuncCall)]
    by_name = {c.callee: c for c in calls}
    assert by_name["k"].dumps == (1,)  # o is argument 1 of k(x, o)
    r_params = [p.name for p in P.functions["r"].params]
    assert [r_params[i] for i in by_name["r"].dumps] == ["x"]  # tagged by pl.dump_tag
    assert [p.name for p in P.functions["q"].params][by_name["q"].dumps[0]] == "o"
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    pytest_pypto.run(pypto_runner.compile(P), x, o, config=pypto_config)
    np.testing.assert_array_equal(o, x)


def test_no_dep_args_leaves_that_argument_untracked(tmp_path, pypto_runner, pypto_config,
                                                     pypto_rng):
    P = _parse(tmp_path, "o, t = pl.submit(self.k, x, o)\n"
                         "with pl.at(level=pl.Level.CORE_GROUP, name_hint='r', no_dep_args=[o],"
                         " deps=[t]):\n"
                         "    o = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)\n"
                         "o, _ = pl.submit(self.k, x, o)")
    compiled = pypto_runner.compile(P)
    x = pypto_rng.standard_normal((R, C)).astype(np.float32)
    o = np.zeros((R, C), np.float32)
    off = dataclasses.replace(pypto_config, race_check=False)
    run = pytest_pypto.run(compiled, x, o, config=off)
    edges = {(e["from"], e["to"], e["kind"]) for e in run.deps()["edges"]}
    # the region neither waits for o's writer nor becomes one: task 2 follows task 0 only
    assert edges == {(0, 1, "explicit"), (0, 2, "WAW")}
    with pytest.raises(RaceError) as ei:
        pytest_pypto.run(compiled, x, o, config=pypto_config)
    assert [(r["first"], r["second"], r["kind"]) for r in ei.value.races] == [(1, 2, "WAW")]


def test_none_is_no_value_in_a_kernel():
    with pytest.raises(ParserTypeError) as ei:
        @pl.program
        class P:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[R, C], pl.FP32]) -> pl.Tensor[[R, C], pl.FP32]:
                nothing = None  # kernel-none
                return x
    assert "the value assigned to 'nothing' produces nothing" in ei.value.message


def test_a_dump_tag_follows_the_value_not_the_name(tmp_path):
    """A tag covers the tagged value wherever a later task is passed it (a region's capture
    or a plain ``self.k`` call); a name rebound by a call holds a new value, untagged."""
    P = _parse(tmp_path, "pl.dump_tag(o)\n"
                         "with pl.at(level=pl.Level.CORE_GROUP, name_hint='r'):\n"
                         "    o = pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], o)\n"
                         "with pl.at(level=pl.Level.CORE_GROUP, name_hint='q'):\n"
                         "    o = pl.store(pl.load(o, [0, 0], [R, C]), [0, 0], o)\n"
                         "pl.dump_tag(x)\n"
                         "o = self.k(x, o)\n"
                         "o = self.k(o, o)\n")
    calls = [s.expr if hasattr(s, "expr") else s.value for s in P.functions["main"].body
             if isinstance(getattr(s, "expr", getattr(s, "value", None)), FuncCall)]
    got = [(c.callee, c.dumps) for c in calls]
    r_params = [p.name for p in P.functions["r"].params]
    assert [r_params[i] for i in got[0][1]] == ["o"]  # tagged before the region
    assert got[1:] == [("q", ()), ("k", (0,)), ("k", ())]
