"""What keeps a simulated run fast at the scale of real kernels (docs/design/runtime.md §4):
the cyclic garbage collector is off while a run executes, and back on after it."""

from __future__ import annotations

import gc
import subprocess
import sys
import weakref

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import SimulationError
from pytest_pypto.runtime.loader import registry_bind
from pytest_pypto.runtime.worker import Worker


@pl.program
class Twice:
    @pl.function(type=pl.FunctionType.InCore)
    def double(self, a: pl.Tensor[[16, 16], pl.FP32],
               o: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        t = pl.load(a, [0, 0], [16, 16])
        o = pl.store(pl.add(t, t), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[16, 16], pl.FP32],
             out: pl.Out[pl.Tensor[[16, 16], pl.FP32]]) -> pl.Tensor[[16, 16], pl.FP32]:
        out = self.double(x, out)
        return out


def _watching_bind(seen, fail=False):
    """The registry's ops, with `tile.add` noting whether the collector is on (and failing
    when asked to)."""
    def bind(op):
        real = registry_bind(op)
        if op != "tile.add":
            return real

        def add(*args, **kwargs):
            seen.append(gc.isenabled())
            if fail:
                raise SimulationError("boom")
            return real(*args, **kwargs)
        return add
    return bind


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_the_collector_is_off_inside_a_run_and_on_after_it(platform):
    assert gc.isenabled()
    seen = []
    compiled = pytest_pypto.compile(Twice, RunConfig(platform=platform))
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = np.zeros_like(x)
    Worker(platform, bind=_watching_bind(seen)).run(compiled, x, out,
                                                    config=RunConfig(platform=platform))
    np.testing.assert_array_equal(out, 2 * x)
    assert seen == [False]
    assert gc.isenabled()


def test_a_finished_runs_task_graph_is_freed_without_the_collector(monkeypatch):
    """The collector is off during runs, so a run's task graph (holding its tasks'
    arguments: the run's tensors) must go by reference counting alone, in no cycle."""
    from pytest_pypto.runtime import graph  # lazy: the class whose instances are watched

    made = []
    real_init = graph.TaskGraph.__init__

    def watched(self, *args, **kwargs):
        real_init(self, *args, **kwargs)
        made.append(weakref.ref(self))

    monkeypatch.setattr(graph.TaskGraph, "__init__", watched)
    compiled = pytest_pypto.compile(Twice, RunConfig(platform="a2a3sim"))
    x = np.arange(256, dtype=np.float32).reshape(16, 16)
    out = np.zeros_like(x)
    gc.disable()
    try:
        pytest_pypto.run(compiled, x, out, config=RunConfig(platform="a2a3sim"))
        assert made and all(ref() is None for ref in made)
    finally:
        gc.enable()
    np.testing.assert_array_equal(out, 2 * x)


def test_the_collector_is_back_on_after_a_failed_run():
    seen = []
    compiled = pytest_pypto.compile(Twice, RunConfig(platform="a2a3sim"))
    x = np.ones((16, 16), np.float32)
    with pytest.raises(SimulationError, match="boom"):
        Worker("a2a3sim", bind=_watching_bind(seen, fail=True)).run(
            compiled, x, np.zeros_like(x), config=RunConfig(platform="a2a3sim"))
    assert seen == [False]
    assert gc.isenabled()


def test_a_run_leaves_a_disabled_collector_disabled():
    compiled = pytest_pypto.compile(Twice, RunConfig(platform="a2a3sim"))
    x = np.ones((16, 16), np.float32)
    gc.disable()
    try:
        Worker("a2a3sim").run(compiled, x, np.zeros_like(x), config=RunConfig(platform="a2a3sim"))
        assert not gc.isenabled()
    finally:
        gc.enable()


_AGING = """
import gc, sys
import numpy as np
import pytest_pypto
from pytest_pypto import RunConfig
from pytest_pypto.runtime.worker import Worker
from ut.runtime.test_run_speed import Twice

def where(obj):
    return [g for g in range(3) if any(o is obj for o in gc.get_objects(generation=g))]

import pytest_pypto.runtime.worker as worker
asked = []
real_count = gc.get_freeze_count
gc.get_freeze_count = lambda: asked.append(1) or real_count()
if sys.argv[1] != "small":
    worker.AGE_MIN_OBJECTS = 0  # (a small program stands for a large run)
if sys.argv[1] == "frozen":
    gc.freeze()
compiled = pytest_pypto.compile(Twice, RunConfig(platform="a2a3sim"))
x = np.ones((16, 16), np.float32)
run = Worker("a2a3sim").run(compiled, x, np.zeros_like(x), config=RunConfig(platform="a2a3sim"))
print(where(run) == [2], real_count() > 0, gc.is_tracked(run), bool(asked))
"""


_ROOT = __file__.rsplit("/ut/", 1)[0]  # (the script imports ut.runtime from the repository)


def _aging(mode: str) -> str:
    """Run a small program in a fresh interpreter (this suite freezes its own heap:
    conftest.py): whether the oldest generation (alone) holds the SimRun it returned,
    whether objects are frozen, whether the SimRun is tracked, whether the run asked
    whether objects are frozen."""
    out = subprocess.run([sys.executable, "-c", _AGING, mode], capture_output=True, text=True,
                         cwd=_ROOT, check=True)
    return out.stdout.strip()


def test_a_runs_record_is_aged_into_the_oldest_generation_unscanned():
    """The objects a run leaves (its record, made while the collector was off) start in the
    collector's oldest generation, so the first collections after a large run do not scan
    them all; they are aged, not frozen."""
    assert _aging("plain") == "True False True True"


def test_a_small_run_is_not_aged_and_does_not_count_frozen_objects():
    """A small run's few young objects are left to the collector, without asking whether
    objects are frozen (that walks every frozen object: this suite freezes ~10^5)."""
    assert _aging("small") == "False False True False"


def test_a_run_leaves_objects_frozen_by_others_alone():
    """Someone else froze objects: the run does not thaw them (its own stay young)."""
    assert _aging("frozen") == "False True True True"


# -- the 2-D fast path of slice_view gives the handle the general path gives ----------------


def _attrs(h):
    return (h.root, h.start, h.shape, h.strides, h.lo, h.hi, h.coords, h.window,
            h.array.shape, h.array.strides,
            h.array.__array_interface__["data"][0] if h.array.size else None)


def _sources():
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.runtime.tensors import reshape_view, transpose_view, whole_root

    roots = []
    fp32 = dtype_by_name("FP32")
    base = whole_root(roots, np.arange(12 * 20, dtype=np.float32).reshape(12, 20), fp32,
                      "base", "In")
    flat = whole_root(roots, np.zeros(96, np.float32), fp32, "flat", "In")
    return [base, transpose_view(base, 0, 1), reshape_view(flat, (8, 12)),
            _general(base, (7, 9), (3, 5))]


def _general(t, shape, offsets):
    from pytest_pypto.runtime.tensors import slice_view

    return slice_view(t, [np.int64(d) for d in shape], [np.int64(o) for o in offsets])


def test_a_2d_slice_of_ints_is_the_handle_of_the_general_path():
    from pytest_pypto.runtime.tensors import slice_view

    rnd = np.random.default_rng(7)
    checked = 0
    for src in _sources():
        n0, n1 = src.shape
        for _ in range(200):
            d0, d1 = int(rnd.integers(0, n0 + 1)), int(rnd.integers(0, n1 + 1))
            o0, o1 = int(rnd.integers(0, n0 + 1)), int(rnd.integers(0, n1 + 1))
            fast = slice_view(src, (d0, d1), (o0, o1))
            slow = _general(src, (d0, d1), (o0, o1))
            assert _attrs(fast) == _attrs(slow), (src, (d0, d1), (o0, o1))
            checked += 1
            # and a slice of the slice
            if fast.shape[0] and fast.shape[1]:
                inner = (fast.shape[0] // 2 + 1, fast.shape[1] // 2 + 1)
                assert _attrs(slice_view(fast, inner, (0, 0))) == _attrs(
                    _general(slow, inner, (0, 0)))
    assert checked == 800


def test_a_2d_slice_out_of_bounds_still_fails_as_before():
    from pytest_pypto.runtime.tensors import slice_view

    src = _sources()[0]
    with pytest.raises(SimulationError, match="starts outside dimension 0: offset -1"):
        slice_view(src, (2, 2), (-1, 0))
    with pytest.raises(SimulationError, match="valid extent -2 of dimension 1"):
        slice_view(src, (2, -2), (0, 0))


# -- a call whose argument shapes passed the check once is not checked again --------------


def _dyn_setup():
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.runtime.graph import TaskGraph
    from pytest_pypto.runtime.loader import Kernel
    from pytest_pypto.runtime.orchestrator import Orchestrator

    ran = []

    def fn(a, b, o, n):
        ran.append((a.shape, b.shape, o.shape, n))
        return (o,)

    k = Kernel(name="k", func_id=0, core_type="aiv", fn=fn, arg_names=("a", "b", "o", "n"),
               directions=("In", "In", "Out", "Scalar"),
               kinds=("tensor", "tensor", "tensor", "scalar"),
               dtypes=("FP32", "FP32", "FP32", "INDEX"),
               shapes=(("M", 8), ("M", 8), ("M", 8), ()), returns=(2,))
    graph = TaskGraph(2, kernels={"k": k}, deferred=True, eager=True)
    rt = Orchestrator({"k": k}, graph, [])
    fp32 = dtype_by_name("FP32")
    x = rt.add_root(np.ones((16, 8), np.float32), fp32, "x", "In")
    return rt, x, ran


def _errors(rt, args):
    try:
        rt.submit("k", args, returns=(2,))
    except SimulationError as exc:
        return str(exc)
    return None


def test_a_dynamic_dim_call_is_checked_once_per_shape_and_errors_stay_the_same(monkeypatch):
    rt, x, ran = _dyn_setup()
    checks = []
    real = type(rt)._checked_arguments

    def counted(self, k, args):
        checks.append(1)
        return real(self, k, args)

    monkeypatch.setattr(type(rt), "_checked_arguments", counted)
    four = rt.slice(x, (4, 8), (0, 0))
    for _ in range(3):
        rt.submit("k", (four, four, rt.create_tensor((4, 8), "FP32"), 3), returns=(2,))
    assert len(checks) == 1
    two = rt.slice(x, (2, 8), (4, 0))
    rt.submit("k", (two, two, rt.create_tensor((2, 8), "FP32"), 3), returns=(2,))
    assert len(checks) == 2
    rt._graph.drain()  # (task batching may hold them: runtime/task_batches.py)
    assert [r[0] for r in ran] == [(4, 8)] * 3 + [(2, 8)]
    # disagreeing dims, a wrong dtype, a wrong rank: the same errors as an unchecked call
    fresh, _, _ = _dyn_setup()
    bad = [
        (four, two, rt.create_tensor((4, 8), "FP32"), 1),
        (four, four, rt.create_tensor((4, 8), "FP16"), 1),
        (four, four, rt.reshape(rt.create_tensor((4, 8), "FP32"), (32,)), 1),
        (four, 5, rt.create_tensor((4, 8), "FP32"), 1),
        (four, four, rt.create_tensor((4, 8), "FP32"), four),
    ]
    for args in bad:
        message = _errors(rt, args)
        assert message is not None and message == _errors(fresh, args)
    assert "dynamic dimension" in _errors(rt, bad[0])


# -- a fresh buffer holds the same bits as np.full of its fill value ---------------------


@pytest.mark.parametrize("mode", ["poison", "zero"])
def test_a_fresh_buffer_holds_the_bits_np_full_gives(mode):
    from pytest_pypto.ir.dtypes import ALL_DTYPES
    from pytest_pypto.ir.values import UNINITIALIZED, fill_value, new_buffer

    token = UNINITIALIZED.set(mode)
    try:
        seen = 0
        for dtype in ALL_DTYPES:
            if dtype.storage is None:
                continue
            for pad in (None, "zero", "min", "max"):
                try:
                    fill = fill_value(dtype, pad)
                except ValueError:  # no such pad for the dtype (BOOL's min): both refuse it
                    with pytest.raises(ValueError):
                        new_buffer((3, 5), dtype, pad)
                    continue
                want = np.full((3, 5), fill, dtype=dtype.np)
                got = new_buffer((3, 5), dtype, pad)
                assert got.dtype == want.dtype and got.shape == (3, 5)
                assert got.tobytes() == want.tobytes(), (dtype.name, pad)
                seen += 1
        assert seen >= 40
    finally:
        UNINITIALIZED.reset(token)


# -- converted scalars are remembered, with the same results -----------------------------


def test_a_remembered_scalar_conversion_is_the_fresh_one():
    from pytest_pypto.ir.apply import scalar_to_dtype
    from pytest_pypto.ir.dtypes import dtype_by_name

    values = [0.1, -0.0, 0.0, 1e39, -1e39, 3, -7, 65504.5, 1.0000001, 2 ** 40, float("inf")]
    for name in ("FP32", "FP16", "BF16"):
        dtype = dtype_by_name(name)
        for value in values:
            with np.errstate(over="ignore"):  # (1e39 overflows FP16 and FP32 to inf)
                want = float(np.asarray(float(value), dtype=np.float64).astype(dtype.np))
            for _ in range(2):  # the first call converts, the second remembers
                got = scalar_to_dtype(value, dtype)
                assert got.__class__ is float
                assert np.asarray(got).tobytes() == np.asarray(want).tobytes(), (name, value)
    nan = scalar_to_dtype(float("nan"), dtype_by_name("FP32"))
    assert nan != nan


@pytest.mark.parametrize("name,value", [("FP32", 0.0), ("FP32", -0.0), ("BF16", 0.1),
                                        ("FP16", 1e5), ("INT8", 300), ("INT32", -5),
                                        ("UINT64", 2 ** 64 - 1), ("BOOL", 1)])
def test_tile_full_holds_the_value_np_full_gives(name, value):
    from pytest_pypto.ir.apply import scalar_to_dtype
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.registry import REGISTRY

    dtype = dtype_by_name(name)
    got = REGISTRY["tile.full"].execute(shape=(2, 3), dtype=dtype, value=value)
    want = np.full((2, 3), scalar_to_dtype(value, dtype), dtype=dtype.np)
    assert got.data.dtype == want.dtype and got.data.tobytes() == want.tobytes()
    assert got.valid == (2, 3)


# -- a fully valid tile reshapes on the fast path into what the general path gives --------


def test_reshape_of_a_fully_valid_tile_is_the_general_result():
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.ops.views import reshape_valid
    from pytest_pypto.ir.registry import REGISTRY
    from pytest_pypto.ir.values import TileValue

    reshape = REGISTRY["tile.reshape"].execute
    fp32 = dtype_by_name("FP32")
    src = TileValue(np.arange(32, dtype=np.float32).reshape(16, 2), (16, 2), fp32, "Vec", "min")
    for shape in [(2, 16), (32, 1), (1, 32), (4, 8)]:
        fast = reshape(src, shape=shape)
        slow = reshape(src, shape=[np.int64(d) for d in shape])  # a list: the general path
        assert fast.valid == slow.valid == reshape_valid("tile.reshape", (16, 2), (16, 2), shape)
        assert all(v.__class__ is int for v in fast.valid)
        assert (fast.dtype, fast.space, fast.pad) == (slow.dtype, slow.space, slow.pad)
        np.testing.assert_array_equal(fast.data, slow.data)
        assert np.shares_memory(fast.data, src.data)  # zero-copy
    partial = TileValue(np.zeros((16, 2), np.float32), (8, 2), fp32, "Vec")
    assert reshape(partial, shape=(32, 1)).valid == (16, 1)  # a row-major prefix maps
    with pytest.raises(ValueError):
        reshape(src, shape=(5, 5))


# -- a compiled float cast inside a run: the fast path's bits are the general path's -------


@pytest.mark.parametrize("precise", [False, True])
def test_a_float_cast_in_a_run_gives_the_bits_of_the_general_path(precise, monkeypatch):
    from pytest_pypto.ir.apply import PRECISE, QUIET_FLOATS
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.ops import cast as cast_module
    from pytest_pypto.ir.registry import REGISTRY
    from pytest_pypto.ir.types import TileType
    from pytest_pypto.ir.values import TileValue

    cast = REGISTRY["tile.cast"].execute
    rnd = np.random.default_rng(3)
    raw = np.concatenate([rnd.standard_normal(40) * 10.0 ** rnd.integers(-8, 8, 40),
                          [np.nan, np.inf, -np.inf, 0.0, -0.0, 1e30, -7e4, 65520.0]])
    names = ("FP32", "FP16", "BF16", "FP8E4M3FN", "FP8E5M2")
    token = PRECISE.set(precise)
    try:
        for src_name in names:
            for dst_name in names:
                s, d = dtype_by_name(src_name), dtype_by_name(dst_name)
                with np.errstate(all="ignore"):
                    data = raw.astype(np.float32).astype(s.np).reshape(6, 8)
                if precise and s.bits < 32:  # a precise run keeps a narrow tile in FP32
                    data = data.astype(np.float32)
                tile = TileValue(data, (6, 8), s, "Vec")
                out = TileType((6, 8), d, "Vec", (6, 8), None)
                kwargs = dict(target_type=d, chain=(src_name, dst_name), out=out)
                general = cast(tile, **kwargs)  # QUIET_FLOATS unset: the general path
                quiet = QUIET_FLOATS.set(True)
                real = cast_module.run_chain
                monkeypatch.setattr(cast_module, "run_chain", None)  # the fast path needs none
                try:
                    with np.errstate(all="ignore"):
                        fast = cast(tile, **kwargs)
                finally:
                    QUIET_FLOATS.reset(quiet)
                    monkeypatch.setattr(cast_module, "run_chain", real)
                assert fast.data.dtype == general.data.dtype, (src_name, dst_name)
                assert fast.data.tobytes() == general.data.tobytes(), (src_name, dst_name)
                assert (fast.valid, fast.dtype, fast.space) == (
                    general.valid, general.dtype, general.space)
                assert not np.shares_memory(fast.data, data)
    finally:
        PRECISE.reset(token)


# -- binary FP32 ops on the fast path, a column operand included: the general path's bits ----


@pytest.mark.parametrize("op", ["tile.row_expand_add", "tile.row_expand_sub",
                                "tile.row_expand_mul", "tile.row_expand_div",
                                "tile.row_expand_max", "tile.row_expand_min", "tile.add",
                                "tile.sub", "tile.mul", "tile.div", "tile.maximum"])
def test_a_binary_fp32_op_on_the_fast_path_gives_the_general_bits(op):
    from pytest_pypto.ir import apply as apply_module
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.registry import REGISTRY
    from pytest_pypto.ir.types import TileType
    from pytest_pypto.ir.values import TileValue

    spec = REGISTRY[op]
    fp32 = dtype_by_name("FP32")
    rnd = np.random.default_rng(5)
    a = rnd.standard_normal((8, 16)).astype(np.float32)
    a[0, :4] = [np.nan, np.inf, -np.inf, 0.0]
    column = op.startswith("tile.row_expand")
    b = rnd.standard_normal((8, 1) if column else (8, 16)).astype(np.float32)
    b[1] = 0.0
    out = TileType((8, 16), fp32, "Vec", (8, 16), None)
    ta = TileValue(a, (8, 16), fp32, "Vec")
    tb = TileValue(b, b.shape, fp32, "Vec")
    calls = []
    real = apply_module._float32_binary

    def watched(*args):
        got = real(*args)
        calls.append(got is not None)
        return got

    apply_module._float32_binary = watched
    try:
        with np.errstate(all="ignore"):
            fast = apply_module.apply(spec, ta, tb, out=out)
            general = apply_module.apply(spec, ta, tb, out=out, unused=None)  # attrs: general
    finally:
        apply_module._float32_binary = real
    assert calls == [True]  # the first call took the fast path, the second never tried it
    assert fast.data.dtype == general.data.dtype == np.float32
    assert fast.data.tobytes() == general.data.tobytes()
    assert (fast.valid, fast.dtype, fast.space) == (general.valid, general.dtype, general.space)


@pytest.mark.parametrize("op", ["tile.exp", "tile.log", "tile.sqrt", "tile.rsqrt", "tile.recip",
                                "tile.abs", "tile.neg", "tile.relu", "tile.sin", "tile.cos"])
def test_a_unary_fp32_op_on_the_fast_path_gives_the_general_bits(op):
    from pytest_pypto.ir import apply as apply_module
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.registry import REGISTRY
    from pytest_pypto.ir.types import TileType
    from pytest_pypto.ir.values import TileValue

    spec = REGISTRY[op]
    fp32 = dtype_by_name("FP32")
    rnd = np.random.default_rng(9)
    a = (rnd.standard_normal((8, 16)) * 30).astype(np.float32)
    a[0, :5] = [np.nan, np.inf, -np.inf, 0.0, -0.0]
    out = TileType((8, 16), fp32, "Vec", (8, 16), None)
    ta = TileValue(a, (8, 16), fp32, "Vec")
    with np.errstate(all="ignore"):
        fast = apply_module.apply(spec, ta, out=out)
        general = apply_module.apply(spec, ta, out=out, unused=None)  # attrs: the general path
    assert fast.data.tobytes() == general.data.tobytes()
    assert (fast.valid, fast.dtype, fast.space, fast.pad) == (
        general.valid, general.dtype, general.space, general.pad)
    assert not np.shares_memory(fast.data, a)
    np.testing.assert_array_equal(a[1], ta.data[1])  # the operand is untouched


# -- BF16 widening: what astype(float32) gives, layout included ------------------------------


def _every_bf16(shape=(256, 256)):
    import ml_dtypes

    return np.arange(65536, dtype=np.uint16).view(ml_dtypes.bfloat16).reshape(shape)


def test_widening_bf16_is_astype_for_every_value_and_layout():
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.values import widen

    every = _every_bf16()
    views = [every, every.T, every[::3, 5:], every[:, ::-2], every[40:200], every[:8, :8]]
    for view in views:
        want = view.astype(np.float32)
        got = widen(view, dtype_by_name("BF16"))
        assert got.dtype == np.float32 and got.shape == want.shape
        assert got.strides == want.strides
        assert got.tobytes(order="A") == want.tobytes(order="A")
        assert not np.shares_memory(got, view)
        # every finite value widens exactly: back to BF16 gives the same bits
        finite = np.isfinite(want)
        assert np.array_equal(got[finite].astype(view.dtype).view(np.uint16),
                              view[finite].view(np.uint16))
    f32 = np.ones((4, 4), np.float32)
    assert widen(f32, dtype_by_name("FP32")) is f32


@pytest.mark.parametrize("target", ["FP32", "FP16"])
def test_a_large_bf16_cast_in_a_run_gives_the_bits_of_the_general_path(target):
    from pytest_pypto.ir.apply import QUIET_FLOATS
    from pytest_pypto.ir.dtypes import dtype_by_name
    from pytest_pypto.ir.registry import REGISTRY
    from pytest_pypto.ir.types import TileType
    from pytest_pypto.ir.values import TileValue

    cast = REGISTRY["tile.cast"].execute
    data = _every_bf16()
    tile = TileValue(data, data.shape, dtype_by_name("BF16"), "Vec")
    d = dtype_by_name(target)
    kwargs = dict(target_type=d, chain=("BF16", target),
                  out=TileType(data.shape, d, "Vec", data.shape, None))
    with np.errstate(all="ignore"):
        general = cast(tile, **kwargs)
        quiet = QUIET_FLOATS.set(True)
        try:
            fast = cast(tile, **kwargs)
        finally:
            QUIET_FLOATS.reset(quiet)
    assert fast.data.dtype == general.data.dtype == d.np
    assert fast.data.tobytes() == general.data.tobytes()
    assert not np.shares_memory(fast.data, data)


_NO_ML_DTYPES = """
import sys
import numpy as np
import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig

DT = getattr(pl, sys.argv[1])

@pl.program
class Copy:
    @pl.function(type=pl.FunctionType.Opaque)
    def main(self, x: pl.Tensor[[16, 16], DT],
             out: pl.Out[pl.Tensor[[16, 16], DT]]) -> pl.Tensor[[16, 16], DT]:
        with pl.at(level=pl.Level.CORE_GROUP):
            y = pl.add(x, x)
            out = pl.assemble(out, y, [0, 0])  # (tensor.assemble: looks its dtype up)
        return out

compiled = pytest_pypto.compile(Copy, RunConfig(platform="a2a3sim"))
storage = {"FP32": "float32", "INT32": "int32", "FP16": "float16"}.get(sys.argv[1])
if storage is None:
    import ml_dtypes
    storage = ml_dtypes.bfloat16
x = np.arange(256).reshape(16, 16).astype(storage)
out = np.zeros_like(x)
pytest_pypto.run(compiled, x, out)
assert (out.astype(np.float32) == 2 * x.astype(np.float32)).all(), out
print("ml_dtypes" in sys.modules)
"""


def _imports_ml_dtypes(tmp_path, dtype: str) -> bool:
    """Compile and run a one-kernel program of ``dtype`` in a fresh interpreter; whether
    ml_dtypes got imported."""
    script = tmp_path / "run_one.py"  # (a program's source must be in a file: pl.program reads it)
    script.write_text(_NO_ML_DTYPES)
    out = subprocess.run([sys.executable, str(script), dtype], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    return out.stdout.strip() == "True"


@pytest.mark.parametrize("dtype", ["FP32", "INT32", "FP16"])
def test_a_run_without_ml_dtypes_types_does_not_import_ml_dtypes(tmp_path, dtype):
    """Importing ml_dtypes costs 0.8 s (version 0.7, once per process: per xdist worker and
    per pytest run); a program of numpy's own dtypes compiles and runs without it."""
    assert not _imports_ml_dtypes(tmp_path, dtype)


def test_a_bf16_run_still_finds_its_dtype_from_ml_dtypes(tmp_path):
    assert _imports_ml_dtypes(tmp_path, "BF16")
