"""The debugging switches as options: --pypto-shuffle, --pypto-strict-war, --pypto-precise,
--pypto-trace (each also as ini key and env mirror), and what a failing test keeps.

Expected schedules and edges are derived here from the kernels' data flow (which
kernel reads what another writes), never read back from the toolchain.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy  # noqa: F401  (loaded before in-process pytester runs, which cannot reload it)
import pytest

# Loaded once here: an in-process pytester run forgets the modules it imported, so
# without these every run would import (and assertion-rewrite) the toolchain again.
import pytest_pypto.compiler.api  # noqa: F401
import pytest_pypto.harness.runner  # noqa: F401
import pytest_pypto.language  # noqa: F401
import pytest_pypto.runtime.trace  # noqa: F401
import pytest_pypto.runtime.worker  # noqa: F401
from ut.helpers import line_of

PROBE = """
def test_probe(pypto_config):
    c = pypto_config
    print("SWITCHES", c.schedule_seed, c.strict_war, c.precise, c.trace, c.race_check)
"""

# (option, cli args, ini line, env pair, the printed "seed strict precise trace races")
SWITCHES = [
    ("shuffle", ["--pypto-shuffle", "7"], "pypto_shuffle = 7", ("PYPTO_SHUFFLE", "7"),
     "7 False False False True"),
    ("strict-war", ["--pypto-strict-war"], "pypto_strict_war = true",
     ("PYPTO_STRICT_WAR", "1"), "None True False False True"),
    ("precise", ["--pypto-precise"], "pypto_precise = yes", ("PYPTO_PRECISE", "on"),
     "None False True False True"),
    ("trace", ["--pypto-trace"], "pypto_trace = 1", ("PYPTO_TRACE", "true"),
     "None False False True True"),
    ("no-race-check", ["--pypto-no-race-check"], "pypto_no_race_check = 1",
     ("PYPTO_NO_RACE_CHECK", "yes"), "None False False False False"),
]


@pytest.mark.parametrize("source", ["option", "ini", "env"])
@pytest.mark.parametrize(("name", "cli", "ini", "env", "expected"), SWITCHES,
                         ids=[s[0] for s in SWITCHES])
def test_each_switch_reaches_the_cells_run_config(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch,
    source: str, name: str, cli: list[str], ini: str, env: tuple[str, str], expected: str,
) -> None:
    pytester.makepyfile(test_probe=PROBE)
    args = ["-s", "-p", "no:cacheprovider"]
    if source == "option":
        args += cli
    elif source == "ini":
        pytester.makeini(f"[pytest]\n{ini}\n")
    else:
        monkeypatch.setenv(*env)
    result = pytester.runpytest(*args)
    result.assert_outcomes(passed=1)
    (line,) = [ln[ln.index("SWITCHES "):] for ln in result.outlines if "SWITCHES " in ln]
    assert line == f"SWITCHES {expected}"


# --------------------------------------------------------------------- programs

R, C = 16, 32

PIPELINE = f'''
import numpy as np
import pytest_pypto
import pytest_pypto.language as pl

R, C = {R}, {C}


@pl.program
class Pipeline:
    @pl.function(type=pl.FunctionType.InCore)
    def plus_one(self, a: pl.Tensor[[R, C], pl.FP32],
                 o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(a, [0, 0], [R, C])
        o = pl.store(pl.adds(t, 1.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.InCore)
    def twice(self, a: pl.Tensor[[R, C], pl.FP32],
              o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(a, [0, 0], [R, C])
        o = pl.store(pl.muls(t, 2.0), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.InCore)
    def combine(self, a: pl.Tensor[[R, C], pl.FP32], b: pl.Tensor[[R, C], pl.FP32],
                o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        x = pl.load(a, [0, 0], [R, C])
        y = pl.load(b, [0, 0], [R, C])
        o = pl.store(pl.mul(x, y), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], y: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        p = pl.create_tensor([R, C], dtype=pl.FP32)
        q = pl.create_tensor([R, C], dtype=pl.FP32)
        p = self.plus_one(x, p)
        q = self.twice(y, q)
        out = self.combine(p, q, out)
        return out


def data(rng):
    x = rng.standard_normal((R, C)).astype(np.float32)
    y = rng.standard_normal((R, C)).astype(np.float32)
    return x, y, np.zeros((R, C), np.float32)
'''

TRACE_TEST = PIPELINE + '''

def test_pipeline(pypto_runner, pypto_rng):
    x, y, out = data(pypto_rng)
    pypto_runner.run(Pipeline, x, y, out)
    np.testing.assert_allclose(out, (x + 1) * (y * 2), rtol=1e-6)
'''


def _kernels_dir(pytester: pytest.Pytester) -> Path:
    return pytester.path / "kept"


def test_trace_writes_tracks_of_the_cores_used_and_flows_of_the_edges(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_pipe=TRACE_TEST)
    kept = _kernels_dir(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", "--pypto-trace",
                                f"--pypto-kernels-dir={kept}")
    result.assert_outcomes(passed=1)
    (trace_path,) = kept.glob("*/runs/Pipeline-*/trace.json")
    trace = json.loads(trace_path.read_text())
    deps = json.loads((trace_path.parent / "deps.json").read_text())
    assert trace["displayTimeUnit"] == "ns"
    events = trace["traceEvents"]

    # From the data flow: plus_one and twice are independent AIV tasks (submitted 0, 1),
    # so they share step 0 on the two lowest AIVs; combine reads both (RAW) at step 1.
    expected_edges = {(0, 2, "RAW"), (1, 2, "RAW")}
    assert {(e["from"], e["to"], e["kind"]) for e in deps["edges"]} == expected_edges

    tracks = {e["tid"]: e["args"]["name"] for e in events
              if e["ph"] == "M" and e["name"] == "thread_name"}
    assert sorted(tracks.values()) == ["AIV 0", "AIV 1"]
    slices = {e["args"]["task"]: e for e in events if e["ph"] == "X"}
    assert {t: (tracks[s["tid"]], s["ts"]) for t, s in slices.items()} == {
        0: ("AIV 0", 0.0), 1: ("AIV 1", 0.0), 2: ("AIV 0", 1.0)}
    assert [slices[t]["name"] for t in (0, 1, 2)] == ["plus_one", "twice", "combine"]
    combine = slices[2]["args"]
    test_file = pytester.path / "test_pipe.py"
    line = line_of(test_file.read_text(), "x = pl.load(a", contains=True)
    assert combine["source"] == f"{test_file}:{line}"
    assert combine["params"]["a"].startswith("In p[16, 32]")
    assert combine["params"]["o"].startswith("Out out[16, 32]")

    def slice_at(flow: dict) -> int:  # the task whose slice holds the flow's end
        (task,) = [t for t, s in slices.items()
                   if s["tid"] == flow["tid"] and s["ts"] <= flow["ts"] < s["ts"] + s["dur"]]
        return task

    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends) and all(e["bp"] == "e" for e in ends.values())
    flows = {(slice_at(starts[i]), slice_at(ends[i]), starts[i]["name"]) for i in starts}
    assert flows == expected_edges


FAILING_TEST = PIPELINE + '''

def test_wrong_expectation(pypto_runner, pypto_rng):
    x, y, out = data(pypto_rng)
    pypto_runner.run(Pipeline, x, y, out)
    pytest_pypto.assert_close(out, (x + 1) * (y * 3))
'''


def test_a_failing_test_keeps_deps_and_trace(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fail=FAILING_TEST)
    kept = _kernels_dir(pytester)
    result = pytester.runpytest("-p", "no:cacheprovider", f"--pypto-kernels-dir={kept}")
    result.assert_outcomes(failed=1)
    (where,) = [p for p in kept.iterdir() if "test_wrong_expectation" in p.name]
    deps = json.loads((where / "deps.json").read_text())
    assert [t["kernel"] for t in deps["tasks"]] == ["plus_one", "twice", "combine"]
    trace = json.loads((where / "trace.json").read_text())
    assert sorted(e["name"] for e in trace["traceEvents"] if e["ph"] == "X") == [
        "combine", "plus_one", "twice"]
    result.stdout.fnmatch_lines([
        f"*artifacts kept in: {where}*",
        f"task graph: {where / 'deps.json'}; schedule: {where / 'trace.json'} "
        "(open in ui.perfetto.dev)*",
    ])
    if importlib.util.find_spec("matplotlib") is None:  # this venv: no plot extra
        assert "; schedule.png needs matplotlib: pip install pytest-pypto[plot]" in result.stdout.str()
        assert not (where / "schedule.png").exists()
    else:
        assert (where / "schedule.png").is_file()


WAR_TEST = '''
import numpy as np
import pytest_pypto.language as pl

R, C = 16, 32


@pl.program
class ReadThenOverwrite:
    @pl.function(type=pl.FunctionType.InCore)
    def snapshot(self, b: pl.Tensor[[R, C], pl.FP32],
                 s: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(b, [0, 0], [R, C])
        s = pl.store(t, [0, 0], s)
        return s

    @pl.function(type=pl.FunctionType.InCore)
    def overwrite(self, x: pl.Tensor[[R, C], pl.FP32],
                  b: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])  # first line of overwrite
        b = pl.store(pl.neg(t), [0, 0], b)
        return b

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], buf: pl.InOut[pl.Tensor[[R, C], pl.FP32]],
             snap: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        snap = self.snapshot(buf, snap)
        buf = self.overwrite(x, buf)
        return snap


def test_war(pypto_runner):
    x = np.ones((R, C), np.float32)
    buf, snap = np.full((R, C), 3.0, np.float32), np.zeros((R, C), np.float32)
    pypto_runner.run(ReadThenOverwrite, x, buf, snap)
    np.testing.assert_array_equal(snap, 3.0)
'''


def test_strict_war_fails_the_test_naming_the_hazard(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_war=WAR_TEST)
    kept = _kernels_dir(pytester)
    cache = f"--pypto-cache-dir={pytester.path / 'cache'}"
    plain = pytester.runpytest("-p", "no:cacheprovider", cache, f"--pypto-kernels-dir={kept}")
    plain.assert_outcomes(passed=1)  # the hazard is real but only strict mode reports it
    result = pytester.runpytest("-p", "no:cacheprovider", cache, "--pypto-strict-war",
                                f"--pypto-kernels-dir={kept}", "-rf")
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert "1 write-after-read hazard(s) the device does not order: task 1 (kernel " \
           "'overwrite') writes 'buf' bytes [0, 2048] that task 0 (kernel 'snapshot') reads" in out
    source = (pytester.path / "test_war.py").read_text()
    assert f"test_war.py:{line_of(source, 'first line of overwrite', contains=True)}" in out
    (where,) = [p for p in kept.iterdir() if "test_war" in p.name]
    assert f"task graph: {where / 'deps.json'}" in out  # the kept copy, not a temp dir
    assert "pypto-runs-" not in out
    deps = json.loads((where / "deps.json").read_text())
    assert [(h["reader"], h["writer"], h["tensor_name"]) for h in deps["war_hazards"]] == [
        (0, 1, "buf")]
    assert (where / "trace.json").is_file()


SHUFFLE_TEST = '''
import numpy as np
import pytest_pypto.language as pl

R, C = 8, 16


@pl.program
class Fanout:
    @pl.function(type=pl.FunctionType.InCore)
    def scale(self, a: pl.Tensor[[R, C], pl.FP32], s: pl.Scalar[pl.FP32],
              o: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(a, [0, 0], [R, C])
        o = pl.store(pl.muls(t, s), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32], o1: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             o2: pl.Out[pl.Tensor[[R, C], pl.FP32]], o3: pl.Out[pl.Tensor[[R, C], pl.FP32]],
             o4: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        o1 = self.scale(x, 1.0, o1)
        o2 = self.scale(x, 2.0, o2)
        o3 = self.scale(x, 3.0, o3)
        o4 = self.scale(x, 4.0, o4)
        return o4


def test_fanout(pypto_runner):
    x = np.arange(R * C, dtype=np.float32).reshape(R, C)
    outs = [np.zeros((R, C), np.float32) for _ in range(4)]
    run = pypto_runner.run(Fanout, x, *outs)
    for k, o in enumerate(outs, start=1):
        np.testing.assert_array_equal(o, x * k)
    print("ORDER", run.deps()["execution_order"])
'''


def test_shuffle_changes_the_order_not_the_results(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_fanout=SHUFFLE_TEST)
    orders = set()
    cache = f"--pypto-cache-dir={pytester.path / 'cache'}"  # one compile for all the runs
    for seed in ("1", "2", "3"):
        result = pytester.runpytest("-s", "-p", "no:cacheprovider", cache, "--pypto-shuffle", seed)
        result.assert_outcomes(passed=1)  # results of a correct program never change
        orders.add(_order(result))
    plain = pytester.runpytest("-s", "-p", "no:cacheprovider", cache)
    assert _order(plain) == "ORDER [0, 1, 2, 3]"  # unshuffled: submission order
    assert len(orders) > 1  # four independent tasks: the seeds reorder them


def _order(result: pytest.RunResult) -> str:
    (line,) = [ln[ln.index("ORDER "):] for ln in result.outlines if "ORDER " in ln]
    return line


def test_a_missing_dependency_passes_unshuffled_and_fails_under_some_seed(
    pytester: pytest.Pytester,
) -> None:
    """WAR_TEST snapshots buf before overwriting it, with no dependency between the two
    (a write-after-read): submission order passes; a seed running the writer first fails."""
    pytester.makepyfile(test_war=WAR_TEST)
    cache = f"--pypto-cache-dir={pytester.path / 'cache'}"
    assert pytester.runpytest("-p", "no:cacheprovider", cache).ret == 0
    outcomes = set()
    for seed in range(8):
        result = pytester.runpytest("-p", "no:cacheprovider", cache, "--pypto-shuffle", str(seed))
        outcomes.add(result.ret)
        if result.ret:
            result.stdout.fnmatch_lines(["*Mismatched elements: 512 / 512*"])
        if len(outcomes) == 2:
            break
    assert outcomes == {0, 1}  # some seeds keep the order, some run the overwrite first
