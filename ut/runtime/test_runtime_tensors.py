"""Tensor windows: overlap and containment agree with the elements the views really share."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_pypto.ir.dtypes import FP16, FP32
from pytest_pypto.runtime.tensors import (
    RootBuffer,
    covers,
    overlaps,
    reshape_view,
    slice_view,
    transpose_view,
)


def _root(shape, dtype=FP32):
    data = np.arange(int(np.prod(shape)), dtype=dtype.np).reshape(shape)
    return RootBuffer(0, data, dtype, "t", "create_tensor")


def _elements(h):
    """Flat element indices a view touches (the root holds 0..n-1 in order)."""
    return set(h.array.astype(np.int64).ravel().tolist())


@st.composite
def windows(draw, shape):
    offs, ext = [], []
    for n in shape:
        o = draw(st.integers(0, n))
        offs.append(o)
        ext.append(draw(st.integers(0, n - o)))
    return ext, offs


@st.composite
def views(draw):
    """A window of a 2-D root, optionally of a reshaped or transposed whole."""
    rows, cols = draw(st.sampled_from([(6, 8), (4, 12), (5, 5)]))
    root = _root((rows, cols))
    frame = root.handle()
    kind = draw(st.sampled_from(["plain", "reshape", "transpose"]))
    if kind == "reshape":
        frame = reshape_view(frame, (cols, rows))
    elif kind == "transpose":
        frame = transpose_view(frame, 0, 1)
    return root, frame, kind


@settings(max_examples=300, deadline=None)
@given(data=st.data())
def test_overlap_and_cover_match_the_shared_elements(data):
    root, frame, _ = data.draw(views())
    ext_a, off_a = data.draw(windows(frame.shape))
    ext_b, off_b = data.draw(windows(frame.shape))
    a = slice_view(frame, ext_a, off_a)
    b = slice_view(frame, ext_b, off_b)
    ea, eb = _elements(a), _elements(b)
    if ea & eb:
        assert overlaps(a, b) and overlaps(b, a)  # never drop a real dependency
    elif a.strides == b.strides and a.coords is not None:
        assert not overlaps(a, b)  # boxes of one frame are exact
    if covers(a, b):
        assert eb <= ea
    if a.strides == b.strides and a.coords is not None and b.coords is not None and eb:
        # boxes of one frame: containment is exact, so a superseded writer is dropped
        assert covers(a, b) == (eb <= ea)
    # byte range: from the first to one past the last byte touched
    if ea:
        assert a.byte_range == (min(ea) * 4, (max(ea) + 1) * 4)


@settings(max_examples=100, deadline=None)
@given(data=st.data())
def test_windows_of_differently_shaped_frames_are_conservative(data):
    root = _root((6, 8))
    a = slice_view(root.handle(), *data.draw(windows((6, 8))))
    b = slice_view(reshape_view(root.handle(), (4, 12)), *data.draw(windows((4, 12))))
    if _elements(a) & _elements(b):
        assert overlaps(a, b)


def test_views_of_different_roots_never_overlap():
    a, b = _root((4, 4)), _root((4, 4))
    b.id = 1
    assert not overlaps(a.handle(), b.handle())


def test_byte_ranges_scale_with_the_element_size():
    h = slice_view(_root((8, 16), FP16).handle(), [2, 4], [1, 3])
    assert h.byte_range == ((16 + 3) * 2, (2 * 16 + 3 + 4) * 2)


def _fields(h):
    return (h.root, h.start, h.shape, h.strides, h.lo, h.hi, h.coords, h.window,
            h.array.shape, h.array.tobytes())


@given(st.data())
@settings(max_examples=60, deadline=None)
def test_a_2d_slice_with_a_valid_shape_is_the_general_paths_handle(data):
    """The 2-D fast path takes a valid_shape too: the same handle as the general path
    (numpy ints go that way), and the same refusals."""
    import pytest

    from pytest_pypto.ir.errors import SimulationError

    t = slice_view(_root((9, 12)).handle(), [8, 10], [1, 2])  # a window of a window
    ext, offs = data.draw(windows((8, 10)))
    valid = [data.draw(st.integers(-1, e + 1)) for e in ext]
    general = ([np.int64(e) for e in ext], [np.int64(o) for o in offs],
               [np.int64(v) for v in valid])
    try:
        want = slice_view(t, *general)
    except SimulationError as e:
        with pytest.raises(SimulationError) as got:
            slice_view(t, ext, offs, valid)
        assert str(got.value) == str(e)
        return
    assert _fields(slice_view(t, ext, offs, valid)) == _fields(want)
