# SPDX-License-Identifier: Apache-2.0
"""On-core arrays (`pl.Array`, `pl.array.*`): parse, type rules, and runs on both sims.

The expected outputs are written out here from the kernels' meaning (a row index
carried through the array), never from the simulator's own array semantics.
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import ParserTypeError, SimulationError
from pytest_pypto.ir.types import ArrayType
from ut.helpers import line_finder

PLATFORMS = ("a2a3sim", "a5sim")


@pl.program
class RowThroughArray:
    @pl.function(type=pl.FunctionType.InCore)
    def kernel(self, index_t: pl.Tensor[[1, 8], pl.INT32], src_t: pl.Tensor[[1, 32], pl.FP32],
               dst_t: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        idx: pl.Tile[[1, 8], pl.INT32] = pl.load(index_t, [0, 0], [1, 8])
        src: pl.Tile[[1, 32], pl.FP32] = pl.load(src_t, [0, 0], [1, 32])
        a: pl.Scalar[pl.INT32] = pl.tile.read(idx, [0, 0])
        b: pl.Scalar[pl.INT32] = pl.tile.read(idx, [0, 1])
        k: pl.Scalar[pl.INT32] = pl.tile.read(idx, [0, 2])
        arr: pl.Array[4, pl.INT32] = pl.array.create(4, pl.INT32)
        arr[0] = a
        arr = pl.array.update_element(arr, 1, b)
        for i in pl.range(2, 4):  # a carried array: slot i = slot i-1 + slot i-2
            arr[i] = arr[i - 1] + pl.array.get_element(arr, i - 2)
        if a > b:
            arr[3] = a
        chosen: pl.Scalar[pl.INT32] = arr[k]  # dynamic index
        row: pl.Scalar[pl.INDEX] = pl.cast(chosen, pl.INDEX)
        return pl.store(src, [row, 0], dst_t)

    @pl.function(type=pl.FunctionType.Orchestration)
    def orchestrator(self, index_t: pl.Tensor[[1, 8], pl.INT32],
                     src_t: pl.Tensor[[1, 32], pl.FP32],
                     dst_t: pl.InOut[pl.Tensor[[32, 32], pl.FP32]]) -> pl.Tensor[[32, 32], pl.FP32]:
        dst_t = self.kernel(index_t, src_t, dst_t)
        return dst_t


def _run(platform: str, a: int, b: int, k: int) -> np.ndarray:
    idx = np.zeros((1, 8), np.int32)
    idx[0, :3] = (a, b, k)
    src = np.arange(1, 33, dtype=np.float32).reshape(1, 32)
    dst = np.zeros((32, 32), np.float32)
    compiled = pytest_pypto.compile(RowThroughArray, RunConfig(platform=platform))
    pytest_pypto.run(compiled, idx, src, dst, config=RunConfig(platform=platform))
    return dst


def _expected_row(a: int, b: int, k: int) -> int:
    slots = [a, b, a + b, a + 2 * b]
    if a > b:
        slots[3] = a
    return slots[k]


@pytest.mark.parametrize("platform", PLATFORMS)
@pytest.mark.parametrize(("a", "b", "k"), [(3, 5, 3), (9, 2, 3), (1, 4, 2), (6, 7, 0)])
def test_array_round_trip_drives_the_store_row(platform, a, b, k):
    dst = _run(platform, a, b, k)
    want = np.zeros((32, 32), np.float32)
    want[_expected_row(a, b, k)] = np.arange(1, 33, dtype=np.float32)
    np.testing.assert_array_equal(dst, want)


def test_array_values_have_array_type():
    body = RowThroughArray.functions["kernel"].body
    created = next(s for s in body if getattr(getattr(s, "value", None), "op", "") == "array.create")
    assert created.value.type == ArrayType(4, pl.INT32)


@pytest.mark.parametrize("platform", PLATFORMS)
def test_dynamic_index_outside_the_array_is_a_simulation_error(platform):
    with pytest.raises(SimulationError) as info:
        _run(platform, 1, 2, 4)
    assert "array.get_element index 4 is outside the array of extent 4" in info.value.message
    assert info.value.line == _line("# dynamic index")


_line = line_finder(__file__)


def test_constant_index_outside_the_array(line_of):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
                arr = pl.array.create(2, pl.INT32)
                arr[2] = 1  # bad-index
                return x
    assert "index 2 is outside the array of extent 2" in info.value.message
    assert info.value.line == line_of("bad-index")


def test_float_arrays_are_rejected(line_of):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
                arr = pl.array.create(4, pl.FP32)  # bad-dtype
                return x
    assert "requires an integer or BOOL dtype, but got FP32" in info.value.message
    assert info.value.line == line_of("bad-dtype")


def test_written_value_must_have_the_array_dtype(line_of):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
                t: pl.Tile[[1, 8], pl.INT32] = pl.load(x, [0, 0], [1, 8])
                v: pl.Scalar[pl.INT32] = pl.tile.read(t, [0, 0])
                arr = pl.array.create(4, pl.INT16)
                arr[0] = v  # bad-value
                return x
    assert "destination dtype INT16, but got INT32" in info.value.message
    assert info.value.line == line_of("bad-value")


def test_arrays_take_one_index(line_of):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
                arr = pl.array.create(4, pl.INT32)
                y = arr[0:2]  # bad-slice
                return x
    assert "an on-core array takes one integer index" in info.value.message
    assert info.value.line == line_of("bad-slice")


def test_array_parameters_and_returns_are_rejected(line_of):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class BadParam:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, arr: pl.Array[8, pl.INT32],  # bad-param
                  x: pl.Tensor[[16], pl.INT32]) -> pl.Tensor[[16], pl.INT32]:
                return x
    assert "cannot be a function parameter" in info.value.message
    assert info.value.line == line_of("bad-param")
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class BadReturn:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[16], pl.INT32]) -> pl.Array[4, pl.INT32]:  # bad-ret
                arr = pl.array.create(4, pl.INT32)
                return arr
    assert "return type" in info.value.message
    assert info.value.line == line_of("bad-ret")


def test_annotation_extent_must_match(line_of):
    with pytest.raises(ParserTypeError) as info:
        @pl.program
        class Bad:
            @pl.function(type=pl.FunctionType.InCore)
            def k(self, x: pl.Tensor[[1, 8], pl.INT32]) -> pl.Tensor[[1, 8], pl.INT32]:
                arr: pl.Array[8, pl.INT32] = pl.array.create(4, pl.INT32)  # bad-ann
                return x
    assert "says extent 8, but the array has 4" in info.value.message
    assert info.value.line == line_of("bad-ann")


def test_array_names_are_no_longer_unsupported():
    assert pl.array.create is not None and repr(pl.Array) == "pl.Array"
    with pytest.raises(AttributeError, match="pl.array has no op 'push'"):
        pl.array.push  # noqa: B018
