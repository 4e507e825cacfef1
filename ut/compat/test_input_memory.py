"""Large PyPTO-style inputs are made once: no copy when drawn from a torch factory, none
when handed to the golden, none kept for the report unless the run may change them; a
golden that writes an input in place still leaves the run the input as drawn (PyPTO's
device reads the inputs saved before the golden ran)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import torch
from pypto_kit import TorchAdd

from pytest_pypto.compat.harness import DataType, TensorSpec
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.runner import Runner
from pytest_pypto.harness.seeding import make_rng

MiB = 1 << 20


def _numpy_peak(fn):
    """(result, peak bytes numpy allocated while ``fn`` ran): numpy reports its buffers
    to tracemalloc, torch does not, so this counts exactly the copies we make."""
    tracemalloc.start()
    try:
        result = fn()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_an_input_drawn_from_a_torch_factory_is_not_copied():
    TensorSpec("w", [2], DataType.BF16, init_value=torch.randn).create(None)  # imports done
    spec = TensorSpec("k", [4096, 2048], DataType.BF16, init_value=torch.randn)  # 16 MiB
    array, peak = _numpy_peak(lambda: spec.create(make_rng(0)))
    assert array.shape == (4096, 2048) and array.dtype.name == "bfloat16"
    assert 0.5 < float(array.astype(np.float32).std()) < 2.0  # randn data
    assert peak < 1 * MiB


def test_an_input_given_as_a_tensor_is_copied_once_so_the_callers_tensor_is_never_written():
    given = torch.zeros(1024, 1024)  # 4 MiB
    array, peak = _numpy_peak(
        lambda: TensorSpec("x", [1024, 1024], DataType.FP32, init_value=given).create(None))
    array[0, 0] = 5.0
    assert given[0, 0].item() == 0.0
    assert 4 * MiB <= peak < 8 * MiB  # one copy, not two


class _BigInput(TorchAdd):
    def define_tensors(self):
        return [
            TensorSpec("a", [16, 32], DataType.FP32, init_value=torch.randn),
            TensorSpec("b", [16, 32], DataType.FP32),
            TensorSpec("big", [2048, 1024], DataType.FP32, init_value=torch.randn),  # 8 MiB
            TensorSpec("c", [16, 32], DataType.FP32, is_output=True),
        ]

    def compute_expected(self, tensors, params=None):
        tensors["c"][:] = tensors["a"] + tensors["b"]


def test_the_golden_sees_the_inputs_without_a_copy():
    case = _BigInput()
    case._harness_golden(*case._harness_inputs(make_rng(0), 3))  # imports done
    specs, tensors, scalars = case._harness_inputs(make_rng(0), 3)
    expected, peak = _numpy_peak(lambda: case._harness_golden(specs, tensors, scalars))
    np.testing.assert_allclose(expected["c"], tensors["a"] + tensors["b"], rtol=1e-6)
    assert peak < 2 * MiB


class _GoldenDoublesItsInput(TorchAdd):
    """A golden that scales input a in place, then expects c = (2a) + b: PyPTO's device
    reads a as drawn, so a kernel computing a + b must see a, not 2a."""

    def compute_expected(self, tensors, params=None):
        tensors["a"].mul_(2.0)
        tensors["c"][:] = tensors["a"] + tensors["b"]


def test_a_golden_writing_an_input_in_place_does_not_change_what_the_run_reads():
    runner = Runner(RunConfig(platform="a2a3sim", seed=5), rng_factory=lambda: make_rng(5))
    case = _GoldenDoublesItsInput()
    result = runner.run(case)
    assert not result.passed  # the kernel computes a + b; the golden wants 2a + b
    case = _GoldenDoublesItsInput()
    specs, tensors, scalars = case._harness_inputs(make_rng(5), 5)
    drawn = tensors["a"].copy()
    expected = case._harness_golden(specs, tensors, scalars)
    np.testing.assert_array_equal(tensors["a"], drawn)  # the run's a: as drawn
    np.testing.assert_allclose(expected["c"], 2 * drawn + tensors["b"], rtol=1e-6)


def test_the_report_keeps_every_input_as_it_was_before_the_run():
    runner = Runner(RunConfig(platform="a2a3sim", seed=1), rng_factory=lambda: make_rng(1))
    result = runner.check(TorchAdd())
    assert set(result.inputs) == {"a", "b", "c"}
    assert not result.inputs["c"].any()  # the output as it was before the run: zeros
    assert result.outputs["c"].any()


_HELD = torch.zeros(1024, 1024)  # 4 MiB a case keeps (a module global its init returns)


def _weights():
    return (torch.randn([2048, 2048], dtype=torch.float32) / 64).to(torch.bfloat16)  # 8 MiB


def test_an_input_made_by_the_cases_own_init_function_is_not_copied():
    spec = TensorSpec("w", [2048, 2048], DataType.BF16, init_value=_weights)
    spec.create(None)  # imports done
    array, peak = _numpy_peak(lambda: spec.create(None))
    assert array.shape == (2048, 2048) and array.dtype.name == "bfloat16"
    assert 0.005 < float(array.astype(np.float32).std()) < 0.05  # the function's data
    assert peak < 1 * MiB


def test_a_tensor_an_init_function_returns_but_still_holds_is_copied():
    spec = TensorSpec("x", [1024, 1024], DataType.FP32, init_value=lambda: _HELD)
    array, peak = _numpy_peak(lambda: spec.create(None))
    array[0, 0] = 5.0
    assert _HELD[0, 0].item() == 0.0
    assert peak >= 4 * MiB


def test_a_view_an_init_function_returns_is_copied():
    spec = TensorSpec("x", [512, 1024], DataType.FP32, init_value=lambda: _HELD[:512])
    array = spec.create(None)
    array[0, 0] = 7.0
    assert _HELD[0, 0].item() == 0.0


def test_an_output_made_by_an_init_function_is_copied():
    spec = TensorSpec("o", [1024, 1024], DataType.FP32, init_value=lambda: torch.ones(1024, 1024),
                      is_output=True)
    array, peak = _numpy_peak(lambda: spec.create(None))
    assert float(array.sum()) == 1024 * 1024
    assert peak >= 4 * MiB
