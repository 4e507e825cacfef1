"""Reliability of the runtime: dependency tracking and placement that scale (same results
as the plain list-based algorithm), failed runs that leave the caller's arrays alone, and
caller data checked at the staging boundary."""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
from runtime_artifacts import K, S, T

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.artifact import read_manifest, write_manifest
from pytest_pypto.ir.dtypes import dtype_by_name
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime import graph as graph_module
from pytest_pypto.runtime import tensors as tensors_module
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.placement import Cores
from pytest_pypto.runtime.tensors import (
    RootBuffer,
    WindowIndex,
    covers,
    overlaps,
    slice_view,
    transpose_view,
)
from pytest_pypto.runtime.worker import Worker
from st.kernels import add_program

FP32 = dtype_by_name("FP32")
F = [16, 32]

# -- the task graph: same results as the list-based reference, at O(n log n) ------------


class _Reference:
    """The task graph's semantics the plain way (docs/design/runtime.md §5): every writer and reader
    kept
    in a list, ready tasks listed in id order and picked with ``rng.choice``, steps as sets
    of busy slots scanned from the earliest step."""

    def __init__(self, clusters: int, seed: int | None, strict: bool) -> None:
        self.clusters, self.strict = clusters, strict
        self.rng = random.Random(seed) if seed is not None else None
        self.tasks: list[dict] = []
        self.writers: dict[int, list] = {}
        self.readers: dict[int, list] = {}
        self.hazards: list[tuple[int, int]] = []
        self.order: list[int] = []
        self.busy: list[set[str]] = []

    def ancestors(self, tid: int) -> set[int]:
        seen, stack = set(), list(self.tasks[tid]["deps"])
        while stack:
            t = stack.pop()
            if t not in seen:
                seen.add(t)
                stack.extend(self.tasks[t]["deps"])
        return seen

    def submit(self, dirs: tuple[str, ...], core: str, handles: list) -> None:
        tid, deps = len(self.tasks), {}
        self.tasks.append({"deps": deps, "core": core, "handles": handles, "dirs": dirs,
                           "done": False, "step": -1, "slots": ()})
        for d, h in zip(dirs, handles):
            if h is not None and d != "Out":
                for w, wid in self.writers.get(h.root.id, []):
                    if wid != tid and overlaps(w, h):
                        deps[wid] = "RAW"
        for d, h in zip(dirs, handles):
            if h is None or d == "In":
                continue
            kept = []
            for w, wid in self.writers.get(h.root.id, []):
                if wid != tid and overlaps(w, h):
                    deps.setdefault(wid, "WAW")
                    if covers(h, w):
                        continue
                kept.append((w, wid))
            self.writers[h.root.id] = [*kept, (h, tid)]
            if self.strict:
                anc = self.ancestors(tid)
                for r, rid in self.readers.get(h.root.id, []):
                    if rid != tid and rid not in anc and overlaps(r, h):
                        self.hazards.append((rid, tid))
        if self.strict:
            for d, h in zip(dirs, handles):
                if h is not None and d != "Out":
                    self.readers.setdefault(h.root.id, []).append((h, tid))

    def execute(self, tid: int) -> None:
        task = self.tasks[tid]
        step = max([self.tasks[d]["step"] + 1 for d in task["deps"]], default=0)
        while True:
            while len(self.busy) <= step:
                self.busy.append(set())
            slots = self.free(task["core"], self.busy[step])
            if slots is not None:
                break
            step += 1
        self.busy[step].update(slots)
        task.update(step=step, slots=slots, done=True)
        self.order.append(tid)

    def free(self, core: str, taken: set[str]) -> tuple[str, ...] | None:
        for c in range(self.clusters):
            if core == "aiv":
                for v in (2 * c, 2 * c + 1):
                    if f"aiv{v}" not in taken:
                        return (f"aiv{v}",)
                continue
            want = (f"aic{c}",) if core == "aic" else (f"aic{c}", f"aiv{2 * c}", f"aiv{2 * c + 1}")
            if not taken.intersection(want):
                return want
        return None

    def run(self, needed: set[int]) -> None:
        pending = [t for t in range(len(self.tasks)) if not self.tasks[t]["done"]]
        if self.rng is None:
            last = max(needed, default=-1)
            for t in pending:
                if t <= last:
                    self.execute(t)
            return
        while needed:
            ready = [t for t in pending if t in needed
                     and all(self.tasks[d]["done"] for d in self.tasks[t]["deps"])]
            t = self.rng.choice(ready)
            needed.discard(t)
            pending.remove(t)
            self.execute(t)

    def finish(self, h, include_readers: bool) -> None:
        targets = {t for t, task in enumerate(self.tasks) if not task["done"] and any(
            a is not None and (d != "In" or include_readers) and overlaps(a, h)
            for d, a in zip(task["dirs"], task["handles"]))}
        needed = set(targets)
        for t in targets:
            needed |= {a for a in self.ancestors(t) if not self.tasks[a]["done"]}
        self.run(needed)


def _window(rnd: random.Random, root: RootBuffer):
    h = root.handle()
    if rnd.random() < 0.2:
        return h
    shape = [rnd.randint(0, d) for d in h.shape]
    w = slice_view(h, shape, [rnd.randint(0, d - s) for d, s in zip(h.shape, shape)])
    return transpose_view(w, 0, 1) if rnd.random() < 0.15 else w


def _kernel(dirs: tuple[str, ...], core: str) -> SimpleNamespace:
    return SimpleNamespace(name="k", func_id=0, core_type=core, fn=lambda *a: None,
                           arg_names=tuple(f"a{i}" for i in range(len(dirs))),
                           directions=dirs, returns=())


def _both(program: int, seed: int | None, strict: bool) -> tuple[TaskGraph, _Reference]:
    """One random orchestration (overlapping windows, transposes, blocking accesses)
    through the task graph and through the reference."""
    rnd = random.Random(program)
    shapes = [(rnd.randint(1, 6), rnd.randint(1, 6)) for _ in range(rnd.randint(1, 3))]
    clusters = 1 + program % 3
    graph, ref = TaskGraph(clusters, seed=seed, strict_war=strict), _Reference(clusters, seed, strict)
    roots = [[RootBuffer(i, np.zeros(s, np.float32), FP32, f"r{i}", "create_tensor")
              for i, s in enumerate(shapes)] for _ in range(2)]
    for _ in range(rnd.randint(1, 40)):
        state = rnd.getstate()
        if rnd.random() < 0.1:
            which, readers = rnd.randrange(len(shapes)), rnd.random() < 0.5
            for side, rs in ((graph, roots[0]), (ref, roots[1])):
                rnd.setstate(state)
                rnd.random(), rnd.randrange(len(shapes)), rnd.random()
                h = _window(rnd, rs[which])
                if side is graph:
                    graph.finish_writers(h, include_readers=readers)
                else:
                    ref.finish(h, readers)
            continue
        n = rnd.randint(1, 3)
        dirs = tuple(rnd.choice(["In", "Out", "InOut", "Scalar"]) for _ in range(n))
        core = rnd.choice(["aic", "aiv", "mix"])
        which = [rnd.randrange(len(shapes)) for _ in range(n)]
        after = rnd.getstate()
        for side, rs in ((graph, roots[0]), (ref, roots[1])):
            rnd.setstate(after)
            hs = [None if d == "Scalar" else _window(rnd, rs[w]) for d, w in zip(dirs, which)]
            if side is graph:
                graph.submit(_kernel(dirs, core), [1 if h is None else h.array for h in hs], hs)
            else:
                ref.submit(dirs, core, hs)
    graph.drain()
    ref.run({t for t in range(len(ref.tasks)) if not ref.tasks[t]["done"]})
    return graph, ref


@pytest.mark.parametrize("chunk", [512, 2])  # 2: every class's sorted run splits into chunks
def test_graph_matches_the_list_based_reference(monkeypatch, chunk):
    monkeypatch.setattr(tensors_module, "_CHUNK", chunk)
    hazards = reordered = 0
    for program in range(400):
        for seed in (None, program):
            strict = program % 2 == 0
            graph, ref = _both(program, seed, strict)
            assert [t.deps for t in graph.tasks] == [t["deps"] for t in ref.tasks], program
            assert graph.executed == ref.order, (program, seed)
            assert [(t.step, t.slots) for t in graph.tasks] == [
                (t["step"], t["slots"]) for t in ref.tasks], program
            assert [(h["reader"], h["writer"]) for h in graph.war_hazards] == ref.hazards
            hazards += bool(ref.hazards)
            reordered += ref.order != sorted(ref.order)
    assert hazards > 50 and reordered > 50  # the programs exercise both


def test_independent_tasks_are_checked_against_nearby_writers_only(monkeypatch):
    """N writers of disjoint rows: each new one meets O(1) candidate windows, not all
    earlier writers (the list-based graph made N * (N - 1) / 2 overlap tests)."""
    calls = [0]
    real = graph_module.overlaps

    def counting(a, b):
        calls[0] += 1
        return real(a, b)

    monkeypatch.setattr(graph_module, "overlaps", counting)
    n = 3000
    graph = TaskGraph(4, seed=0)
    x = RootBuffer(0, np.zeros((n, 8), np.float32), FP32, "x", "In")
    out = RootBuffer(1, np.zeros((n, 8), np.float32), FP32, "out", "Out")
    kernel = _kernel(("In", "Out"), "aiv")
    for i in range(n):
        hs = [slice_view(r.handle(), (1, 8), (i, 0)) for r in (x, out)]
        graph.submit(kernel, [h.array for h in hs], hs)
    graph.drain()
    assert calls[0] <= 2 * n
    assert all(not t.deps for t in graph.tasks)
    assert sorted(graph.executed) == list(range(n)) and graph.executed != list(range(n))
    assert max(t.step for t in graph.tasks) == (n - 1) // 8  # 8 AIVs per step, none idle


def test_window_index_finds_every_overlapping_window(monkeypatch):
    monkeypatch.setattr(tensors_module, "_CHUNK", 3)
    rnd = random.Random(7)
    root = RootBuffer(0, np.zeros((9, 7), np.float32), FP32, "t", "create_tensor")
    index, entries = WindowIndex(), []
    for step in range(600):
        h = _window(rnd, root)
        if entries and rnd.random() < 0.3:
            gone = rnd.choice(list(index))
            index.remove(gone)
            entries = [e for e in entries if e[0] != gone[0]]
        q = _window(rnd, root)
        want = [e for e in entries if e[1].lo < q.hi and q.lo < e[1].hi and q.lo < q.hi]
        assert index.overlapping(q) == want, step
        index.add(h, step)
        if h.hi > h.lo:
            entries.append((index._seq - 1, h, step))
        assert len(index) == len(entries) and list(index) == entries


def test_cores_place_first_free_slot_of_the_earliest_step():
    rnd = random.Random(3)
    for clusters in (1, 2, 3):
        cores, ref = Cores(clusters), _Reference(clusters, None, False)
        for _ in range(500):
            core, earliest = rnd.choice(["aic", "aiv", "mix"]), rnd.randint(0, 40)
            step = earliest
            while True:
                while len(ref.busy) <= step:
                    ref.busy.append(set())
                slots = ref.free(core, ref.busy[step])
                if slots is not None:
                    break
                step += 1
            ref.busy[step].update(slots)
            assert cores.place(core, earliest) == (step, slots)


# -- a failed run leaves the caller's Out / InOut arrays as they were --------------------


def _partial_then_fail(artifact, fully_written: bool = False):
    """k writes out and buf (InOut) completely, then its load at row r runs off x."""
    art = artifact(
        entry_args=[T("x", F), S("r", "INDEX"), T("out", F, direction="Out"),
                    T("buf", F, direction="InOut")],
        kernels=[K("k", [T("a", F), S("r", "INDEX"), T("o", F, direction="Out"),
                         T("b", F, direction="InOut")],
                   "o[...] = a\nb[...] = -a\nt = load(a, offsets=(r, 0), shapes=(8, 32), out=None)")],
        orchestration="""
            out, buf = rt.submit("k", (x, r, out, buf), returns=(2, 3))
            return (out, buf)
        """,
    )
    path = art / "kernels" / "k.py"
    path.write_text(path.read_text().replace(
        "def make(bind):\n", "def make(bind):\n    load = bind('tile.load')\n"))
    if fully_written:
        manifest = read_manifest(art)
        manifest.entry_args[2].fully_written = True
        write_manifest(art, manifest)
    return art


@pytest.mark.parametrize("fully_written", [False, True])
@pytest.mark.parametrize("seed", [None, 0])
def test_run_time_error_leaves_out_and_inout_untouched(artifact, rng, fully_written, seed):
    """A failed run leaves InOut as it was; a pure Out too, except one proved fully
    written, which the run wrote in place: it holds poison, never a partial result."""
    art = _partial_then_fail(artifact, fully_written)
    x = rng.standard_normal(F).astype(np.float32)
    out = np.full(F, 7.0, np.float32)  # C-contiguous, writable, unaliased: written in place
    buf = np.full(F, 3.0, np.float32)
    with pytest.raises(SimulationError, match="offset 12 \\+ extent 8 > source extent 16"):
        Worker("a2a3sim").run(art, x, 12, out, buf, config=RunConfig(schedule_seed=seed))
    if fully_written:
        assert np.isnan(out).all()  # the kernel had written o[...] = a before failing
    else:
        np.testing.assert_array_equal(out, 7.0)
    np.testing.assert_array_equal(buf, 3.0)
    run = Worker("a2a3sim").run(art, x, 8, out, buf)  # the same call in bounds succeeds
    np.testing.assert_array_equal(out, x)
    np.testing.assert_array_equal(buf, -x)
    assert run.outputs["out"] is out


def test_staging_error_of_a_later_parameter_leaves_an_earlier_out_untouched(artifact):
    art = _partial_then_fail(artifact)
    out = np.full(F, 7.0, np.float32)
    with pytest.raises(SimulationError, match="parameter 'buf'"):
        Worker("a2a3sim").run(art, np.zeros(F, np.float32), 8, out, np.zeros(F, np.float16))
    np.testing.assert_array_equal(out, 7.0)


def test_strict_war_failure_leaves_outputs_untouched(artifact):
    art = artifact(
        entry_args=[T("buf", F, direction="InOut"), T("r", F, direction="Out")],
        kernels=[
            K("k_read", [T("b", F), T("o", F, direction="Out")], "o[...] = b"),
            K("k_write", [T("b", F, direction="Out")], "b[...] = -1.0"),
        ],
        orchestration="""
            r = rt.submit("k_read", (buf, r), returns=(1,))
            buf = rt.submit("k_write", (buf,), returns=(0,))
            return (buf, r)
        """,
    )
    buf, r = np.full(F, 3.0, np.float32), np.full(F, 5.0, np.float32)
    with pytest.raises(SimulationError, match="write-after-read"):
        Worker("a2a3sim").run(art, buf, r, config=RunConfig(strict_war=True))
    np.testing.assert_array_equal(buf, 3.0)
    np.testing.assert_array_equal(r, 5.0)


M, N, TM = 32, 16, 8


@pl.program
class Shifted:
    """out[0:8] = x[0:8], then a window at the run-time row r (out of bounds for r > 24)."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], r: pl.Scalar[pl.INDEX],
          out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = pl.store(pl.load(x, [0, 0], [TM, N]), [0, 0], out)
        out = pl.store(pl.load(x, [r, 0], [TM, N]), [TM, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], r: pl.Scalar[pl.INDEX],
             out: pl.InOut[pl.Tensor[[M, N], pl.FP32]],
             res: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        res = self.k(x, 0, res)
        out = self.k(x, r, out)
        return out


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_compiled_program_failing_mid_run_leaves_the_callers_arrays(platform, rng):
    x = rng.standard_normal((M, N)).astype(np.float32)
    out, res = np.full((M, N), -2.0, np.float32), np.full((M, N), 9.0, np.float32)
    with pytest.raises(SimulationError, match="at run time, r = 30") as info:
        pytest_pypto.run(Shifted, x, 30, out, res, config=RunConfig(platform=platform))
    assert info.value.line is not None
    np.testing.assert_array_equal(out, -2.0)
    np.testing.assert_array_equal(res, 9.0)


# -- caller data at the staging boundary ------------------------------------------------


ADD = add_program(64, 32, 16)  # a batched row loop: its windows reshape the arrays


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_matrix_arguments_are_taken_as_their_2d_data(platform, rng):
    a, b = rng.standard_normal((2, 64, 32)).astype(np.float32)
    x, y, out = np.asmatrix(a), np.asmatrix(b), np.asmatrix(np.zeros((64, 32), np.float32))
    pytest_pypto.run(ADD, x, y, out, config=RunConfig(platform=platform))
    assert type(out) is np.matrix
    np.testing.assert_array_equal(np.asarray(out), a + b)
    np.testing.assert_array_equal(np.asarray(x), a)  # In arrays are never mutated


@pytest.mark.parametrize("position", [0, 2])
def test_masked_arrays_are_refused_naming_the_parameter(rng, position):
    arrays = [np.zeros((64, 32), np.float32) for _ in range(3)]
    arrays[position] = np.ma.masked_array(arrays[position], mask=False)
    name = ["x", "y", "out"][position]
    with pytest.raises(SimulationError, match=f"parameter '{name}' of 'Add' is a masked array"):
        pytest_pypto.run(ADD, *arrays, config=RunConfig(platform="a2a3sim"))
    with pytest.raises(SimulationError) as info:
        pytest_pypto.run(ADD, *arrays, config=RunConfig(platform="a2a3sim"))
    assert f"{name}.filled(value)" in info.value.hint and f"{name}.data" in info.value.hint


def _scalar_prog(artifact, dtype: str):
    return artifact(
        entry_args=[S("s", dtype), T("o", [2], direction="Out")],
        kernels=[K("put", [S("s", dtype), T("o", [2], direction="Out")], "o[...] = s")],
        orchestration="""
            o = rt.submit("put", (s, o), returns=(1,))
            return (o,)
        """,
    )


@pytest.mark.parametrize(
    ("dtype", "value", "pattern"),
    [
        ("FP32", "2", r"'s' of 'Prog' is a Scalar\[FP32\], but the string '2' was given"),
        ("FP32", b"2", r"Scalar\[FP32\], but the string b'2' was given"),
        ("FP32", True, r"Scalar\[FP32\], but the bool True was given"),
        ("FP32", np.True_, r"Scalar\[FP32\], but the bool True was given"),
        ("FP32", 1j, r"Scalar\[FP32\], but 1j \(complex\) was given"),
        ("INT32", True, r"Scalar\[INT32\], but the bool True was given"),
        ("INT32", "3", r"Scalar\[INT32\], but the string '3' was given"),
        ("INT32", float("inf"), r"but inf \(float\) was given; INT32 holds integers in "
                                r"\[-2147483648, 2147483647\]"),
        ("INT32", float("nan"), r"but nan \(float\) was given; INT32 holds integers in "
                                r"\[-2147483648, 2147483647\]"),
        ("INT32", 2**31, r"but 2147483648 was given, outside its range: INT32 holds integers "
                         r"in \[-2147483648, 2147483647\]"),
        ("INT32", np.int64(-2**31 - 1), r"but -2147483649 was given, outside its range"),
        ("UINT8", -1, r"but -1 was given, outside its range: UINT8 holds integers in \[0, 255\]"),
        ("INDEX", 2**63, r"INDEX holds integers in \[-9223372036854775808, "),
        ("BOOL", "False", r"Scalar\[BOOL\], but 'False' \(str\) was given"),
        ("BOOL", 2, r"Scalar\[BOOL\], but 2 \(int\) was given"),
    ],
)
def test_scalar_arguments_are_checked_against_their_dtype(artifact, dtype, value, pattern):
    o = np.full([2], 4.0, np.float32)
    with pytest.raises(SimulationError, match=pattern):
        Worker("a2a3sim").run(_scalar_prog(artifact, dtype), value, o)
    np.testing.assert_array_equal(o, 4.0)


@pytest.mark.parametrize(
    ("dtype", "value", "stored"),
    [
        ("FP32", 2, 2.0), ("FP32", np.float16(0.5), 0.5), ("FP32", np.array(1.5), 1.5),
        ("FP32", float("inf"), np.inf), ("INT32", np.int16(-7), -7), ("INT32", 2**31 - 1, 2**31 - 1),
        ("UINT8", 255, 255), ("BOOL", True, 1.0), ("BOOL", np.False_, 0.0), ("BOOL", 1, 1.0),
    ],
)
def test_scalar_arguments_in_their_dtype_are_accepted(artifact, dtype, value, stored):
    o = np.zeros([2], np.float32)
    Worker("a2a3sim").run(_scalar_prog(artifact, dtype), value, o)
    np.testing.assert_array_equal(o, np.float32(stored))


@pl.program
class IntAdds:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[8, 16], pl.INT32], s: pl.Scalar[pl.FP32],
          out: pl.Out[pl.Tensor[[8, 16], pl.INT32]]) -> pl.Tensor[[8, 16], pl.INT32]:
        out = pl.store(pl.adds(pl.load(x, [0, 0], [8, 16]), s), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[8, 16], pl.INT32], s: pl.Scalar[pl.FP32],
             out: pl.Out[pl.Tensor[[8, 16], pl.INT32]]) -> pl.Tensor[[8, 16], pl.INT32]:
        out = self.k(x, s, out)
        return out


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_nan_or_inf_reaching_an_int_tile_is_a_run_time_error(value):
    x, out = np.zeros((8, 16), np.int32), np.full((8, 16), 5, np.int32)
    with pytest.raises(SimulationError) as info:
        pytest_pypto.run(IntAdds, x, value, out, config=RunConfig(platform="a2a3sim"))
    err = info.value
    assert f"the scalar {value!r} has no INT32 value" in err.message
    assert "INT32 holds integers in [-2147483648, 2147483647]" in err.message
    assert f"s = {value!r}" in err.message and err.file == __file__
    np.testing.assert_array_equal(out, 5)
    pytest_pypto.run(IntAdds, x, 2.75, out, config=RunConfig(platform="a2a3sim"))
    np.testing.assert_array_equal(out, 2)  # a finite float truncates as a C cast (docs/design/numerics.md §2)
