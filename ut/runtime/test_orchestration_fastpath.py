"""The orchestration calls' fast paths (#22): what they cache or skip must not show.

`Orchestrator.create_tensor` keeps per (shape, dtype, uninitialized mode) what it derives
(the dims as ints, the dtype, the bytes, the fill scalar); `read` and `element_window`
take a shortcut for an index of in-range ints.  Each is checked against values written
here: the fill follows the run's uninitialized mode and the dtype asked for, whatever
was created before; the checks still refuse what they refused.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_pypto.ir.dtypes import BF16, FP16, FP32, INT32, dtype_by_name
from pytest_pypto.ir.errors import MemoryLimitError, SimulationError
from pytest_pypto.ir.values import UNINITIALIZED
from pytest_pypto.runtime.graph import TaskGraph
from pytest_pypto.runtime.orchestrator import Orchestrator
from pytest_pypto.runtime.tensors import (
    TensorHandle,
    element_window,
    slice_view,
    transpose_view,
    whole_root,
)


def orchestrator(max_memory=None) -> Orchestrator:
    return Orchestrator({}, TaskGraph(4, deferred=True, eager=True), [], max_memory=max_memory)


def bits(array: np.ndarray) -> set[int]:
    return set(array.view(f"u{array.itemsize}").ravel().tolist())


@pytest.fixture(params=[None, 1 << 30], ids=["no-limit", "limit"])
def rt(request):
    return orchestrator(request.param)


@pytest.mark.parametrize("modes", [("poison", "zero", "poison"), ("zero", "poison", "zero")])
def test_the_fill_follows_the_uninitialized_mode_of_each_call(rt, modes):
    for mode in modes:
        token = UNINITIALIZED.set(mode)
        try:
            t = rt.create_tensor((3, 5), FP32)
        finally:
            UNINITIALIZED.reset(token)
        assert t.array.shape == (3, 5) and t.array.dtype == np.float32
        if mode == "zero":
            assert bits(t.array) == {0}
        else:  # the float poison: a NaN whose payload repeats 0xA5
            assert bits(t.array) == {0x7FE5A5A5}


def test_a_tensor_of_another_dtype_after_one_of_the_same_shape(rt):
    sequence = [FP32, BF16, "BF16", FP16, INT32, "FP32", FP32]
    expected_bits = {"FP32": {0x7FE5A5A5}, "BF16": {0x7FE5}, "FP16": {0x7EA5},
                     "INT32": {0xA5A5A5A5}}
    for dtype in sequence:
        name = dtype if isinstance(dtype, str) else dtype.name
        t = rt.create_tensor((4, 8), dtype)
        assert t.root.dtype is dtype_by_name(name)
        assert t.array.dtype == dtype_by_name(name).np
        assert t.array.shape == (4, 8)
        assert bits(t.array) == expected_bits[name], name


def test_init_values_shapes_and_labels_are_per_call(rt):
    a = rt.create_tensor((2, 3), FP32, 1.5, name="a")
    b = rt.create_tensor((2, 3), FP32)
    c = rt.create_tensor([2, 3], FP32, 7)  # a list: the same tensor as a tuple gives
    d = rt.create_tensor((np.int64(2), 3.0), FP32, 0.25)
    np.testing.assert_array_equal(a.array, np.full((2, 3), 1.5, np.float32))
    assert bits(b.array) == {0x7FE5A5A5}
    np.testing.assert_array_equal(c.array, np.full((2, 3), 7, np.float32))
    np.testing.assert_array_equal(d.array, np.full((2, 3), 0.25, np.float32))
    assert d.shape == (2, 3) and all(type(x) is int for x in d.shape)
    assert [t.root.name for t in (a, b, c, d)] == ["a", "create_tensor#1", "create_tensor#2",
                                                   "create_tensor#3"]
    assert [t.root.id for t in (a, b, c, d)] == [0, 1, 2, 3]
    assert all(t.root.data is None for t in (a, b, c, d))  # freed with their last handle
    assert not np.shares_memory(a.array, b.array)
    a.array[0, 0] = 9.0  # a fresh buffer each: no cached array handed out twice
    b.array[1, 2] = 3.0
    e = rt.create_tensor((2, 3), FP32, 1.5)
    f = rt.create_tensor((2, 3), FP32)
    np.testing.assert_array_equal(e.array, np.full((2, 3), 1.5, np.float32))
    assert bits(f.array) == {0x7FE5A5A5} and f.array.flags.writeable
    assert not np.shares_memory(f.array, b.array)


def test_a_negative_dim_is_refused_after_a_valid_shape(rt):
    rt.create_tensor((2, 3), FP32)
    with pytest.raises(SimulationError, match=r"negative dimension in \[2, -3\]"):
        rt.create_tensor((2, -3), FP32)
    with pytest.raises(SimulationError, match=r"negative dimension in \[2, -3\]"):
        rt.create_tensor((2, -3), FP32)  # (not remembered as valid either)


def test_the_memory_limit_counts_every_cached_creation():
    rt = orchestrator(max_memory=1000)
    held = [rt.create_tensor((10, 10), FP32, name=f"t{i}") for i in range(2)]  # 800 bytes
    with pytest.raises(MemoryLimitError, match=r"pl.create_tensor 't2' \[10, 10\] FP32 needs "
                                               r"400 bytes.*800 bytes the run holds"):
        rt.create_tensor((10, 10), FP32, name="t2")
    del held
    assert rt.create_tensor((10, 10), FP32, name="t3").array.nbytes == 400  # both freed


def test_made_tensors_count_only_under_a_limit():
    free, limited = orchestrator(), orchestrator(max_memory=1 << 20)
    kept = [free.create_tensor((8, 8), FP32), limited.create_tensor((8, 8), FP32)]
    assert free._live.alive() == 0
    assert limited._live.alive() == 256
    del kept
    assert limited._live.alive() == 0  # freed: no longer counted


def test_the_memory_limit_counts_only_made_tensors_still_alive_across_sweeps():
    """The live list is swept as it grows and checked exactly before a refusal: tensors
    freed long ago never count, those alive always do."""
    rt = orchestrator(max_memory=64 * 1024)
    kept = []
    for i in range(3000):  # three sweeps' worth; one tensor in a hundred stays alive
        t = rt.create_tensor((8, 8), FP32, name=f"t{i}")  # 256 bytes each
        if i % 100 == 0:
            kept.append(t)
    del t
    assert rt._live.alive() == 256 * len(kept)
    assert len(rt._live.entries) == len(kept)
    # up to 256 tensors alive (with the 30 kept) fit the 64 KiB limit, the next is refused;
    # the bound alone (every tensor ever made, 750 KiB) would have refused at once
    held = [rt.create_tensor((8, 8), FP32, name=f"h{i}") for i in range(256 - len(kept))]
    with pytest.raises(MemoryLimitError, match=r"made tensors still alive 64\.00 KiB"):
        rt.create_tensor((8, 8), FP32, name="more")
    del held[:10]
    assert rt.create_tensor((8, 8), FP32, name="fits").array.nbytes == 256  # freed: room


def entry(rt, array, dtype, name="x") -> TensorHandle:
    return whole_root(rt.roots, array, dtype, name, "In")


def test_read_returns_the_element_at_each_index_form(rt):
    x = entry(rt, np.arange(12, dtype=np.int32).reshape(3, 4), INT32)
    assert rt.read(x, (2, 1)) == 9
    assert rt.read(x, [1, 3]) == 7
    assert rt.read(x, (np.int64(2), 3)) == 11
    v = entry(rt, np.arange(5, dtype=np.int32) * 10, INT32, "v")
    assert rt.read(v, 4) == 40 and rt.read(v, (0,)) == 0
    window = slice_view(x, (2, 2), (1, 2))
    assert rt.read(window, (1, 0)) == 10
    assert rt.read(transpose_view(x, 0, 1), (3, 2)) == 11


@pytest.mark.parametrize("index, message", [
    ((3, 0), r"index 3 is out of range for dimension 0 of extent 3"),
    ((0, -1), r"index -1 is out of range for dimension 1 of extent 4"),
    ((1,), r"got index \[1\]; it needs one index per dimension"),
    ((True, 0, 0), r"got index \[1, 0, 0\]"),
])
def test_read_still_refuses_a_bad_index(rt, index, message):
    x = entry(rt, np.arange(12, dtype=np.int32).reshape(3, 4), INT32)
    with pytest.raises(SimulationError, match=message):
        rt.read(x, index)


def general_window(t: TensorHandle, index: tuple[int, ...]) -> TensorHandle:
    """The one-element window through the general constructor (the reference)."""
    start = t.start + sum(i * s for i, s in zip(index, t.strides))
    view = t.array[tuple(slice(i, i + 1) for i in index)]
    return TensorHandle(t.root, view, start, (1,) * len(index), t.strides)


def test_element_windows_match_the_general_constructor():
    roots: list = []
    base = whole_root(roots, np.arange(60, dtype=np.float32).reshape(3, 4, 5), FP32, "b", "In")
    flat = whole_root(roots, np.arange(7, dtype=np.float32), FP32, "f", "In")
    strided = TensorHandle(flat.root, flat.array[1::3], 1, (2,), (3,))
    handles = [base, slice_view(base, (2, 2, 3), (1, 1, 2)), transpose_view(base, 0, 2),
               flat, slice_view(flat, (3,), (4,)), strided]
    for h in handles:
        for index in np.ndindex(*h.shape):
            index = tuple(int(i) for i in index)
            got, want = element_window(h, index), general_window(h, index)
            for field in ("start", "shape", "strides", "lo", "hi", "coords", "window"):
                assert getattr(got, field) == getattr(want, field), (h, index, field)
            assert got.root is want.root
            assert got.array.shape == (1,) * len(index)
            assert got.array.item() == h.array[index]
            assert np.shares_memory(got.array, h.root.data)


def test_a_husk_keeps_the_window_and_drops_the_array():
    roots: list = []
    base = whole_root(roots, np.arange(60, dtype=np.float32).reshape(6, 10), FP32, "b", "In")
    for h in (base, slice_view(base, (2, 3), (4, 5)), transpose_view(base, 0, 1)):
        husk = h.husk()
        assert husk.array is None and husk.root is h.root
        for field in ("start", "shape", "strides", "lo", "hi", "coords"):
            assert getattr(husk, field) == getattr(h, field), field
        assert husk.byte_range == h.byte_range
