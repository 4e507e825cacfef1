"""Common slips are clear errors naming the argument and what is accepted (issue 26, item 12).

`run()` given something that is not a program, `check()` given something that is not a
case, ``config="a5sim"`` as a string, and a tensor too big to allocate in-process (a
raw ``MemoryError`` before: now a runtime-error naming the tensor and its size).
"""

from __future__ import annotations

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.cases import PTOTestCase, TensorSpec
from pytest_pypto.harness.dispatch import execute
from pytest_pypto.harness.failures import failure_class_of
from pytest_pypto.harness.runner import Runner
from pytest_pypto.ir.errors import SimulationError

R, C = 16, 32


@pl.program
class Copy:
    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        out = self.k(x, out)
        return out


@pl.program
class Huge:
    """Makes a 4 TiB scratch tensor in the orchestration."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[R, C], pl.FP32],
          out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        out = pl.store(t, [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[R, C], pl.FP32],
             out: pl.Out[pl.Tensor[[R, C], pl.FP32]]) -> pl.Tensor[[R, C], pl.FP32]:
        scratch: pl.Tensor[[1048576, 1048576], pl.FP32] = pl.create_tensor(
            [1048576, 1048576], dtype=pl.FP32)
        out = self.k(x, out)
        return out


class NotDecorated:
    pass


def plain_function(x):
    return x


class CopyCase(PTOTestCase):
    def define_tensors(self):
        return [TensorSpec("x", [R, C], "FP32"), TensorSpec("out", [R, C], "FP32",
                                                             is_output=True)]

    def get_program(self):
        return Copy

    def compute_expected(self, tensors, params=None):
        tensors["out"][:] = tensors["x"]


def _data() -> tuple[np.ndarray, np.ndarray]:
    return np.ones((R, C), np.float32), np.zeros((R, C), np.float32)


def _runner() -> Runner:
    return Runner(RunConfig(platform="a5sim"), rng_factory=lambda: np.random.default_rng(0))


ACCEPTED_PROGRAMS = "a program decorated with @pl.program, a CompiledProgram"


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (42, "an int (42)"),
        (None, "None"),
        (np.ones((R, C), np.float32), "a numpy array"),
        (NotDecorated, "the class 'NotDecorated', which is not decorated with @pl.program"),
        (plain_function, "the function 'plain_function'"),
    ],
)
@pytest.mark.parametrize("call", ["pytest_pypto.run", "pypto_runner.run"])
def test_run_given_a_non_program_names_the_argument(value, shown, call) -> None:
    run = pytest_pypto.run if call == "pytest_pypto.run" else _runner().run
    with pytest.raises(TypeError) as info:
        run(value, *_data())
    text = str(info.value)
    assert text.startswith(f"{call}(): program is {shown}"), text
    assert ACCEPTED_PROGRAMS in text and "artifact directory" in text


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (42, "an int (42)"),
        (Copy, "a program"),
        (CopyCase, "the class 'CopyCase'; pass an instance: CopyCase()"),
    ],
)
@pytest.mark.parametrize("method", ["check", "run_case"])
def test_check_given_a_non_case_names_the_argument(value, shown, method) -> None:
    with pytest.raises(TypeError) as info:
        getattr(_runner(), method)(value)
    text = str(info.value)
    assert text.startswith(f"pypto_runner.{method}(): case is {shown}"), text
    assert "PTOTestCase" in text


def test_run_given_a_case_class_asks_for_an_instance() -> None:
    with pytest.raises(TypeError, match=r"^pypto_runner.run\(\): case is the class 'CopyCase'; "
                       r"pass an instance: CopyCase\(\)"):
        _runner().run(CopyCase)


def test_check_still_runs_a_case() -> None:
    result = _runner().check(CopyCase())
    assert result.passed


@pytest.mark.parametrize("call", ["run", "compile"])
def test_a_platform_string_as_config_is_a_type_error(call) -> None:
    with pytest.raises(TypeError) as info:
        if call == "run":
            pytest_pypto.run(Copy, *_data(), config="a5sim")
        else:
            pytest_pypto.compile(Copy, config="a5sim")
    text = str(info.value)
    assert text.startswith(f"{call}(): config must be a RunConfig, got str ('a5sim')"), text
    assert "RunConfig(platform='a5sim')" in text


@pl.jit
def copy_jit(x: pl.Tensor, out: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        pl.store(pl.load(x, [0, 0], [R, C]), [0, 0], out)
    return out


def test_a_platform_string_as_config_of_a_jit_call_is_a_type_error() -> None:
    with pytest.raises(TypeError) as info:
        copy_jit(*_data(), config="a5sim")
    text = str(info.value)
    assert text.startswith("config= must be a RunConfig, but got str ('a5sim')"), text
    assert "RunConfig(platform='a5sim')" in text


def test_a_tensor_too_big_to_allocate_is_a_runtime_error_naming_it() -> None:
    with pytest.raises(SimulationError) as info:
        pytest_pypto.run(Huge, *_data(), config=RunConfig(platform="a5sim"))
    err = info.value
    assert not isinstance(err, MemoryError)
    assert "tensor 'scratch'" in err.message and "4.00 TiB" in err.message, err.message
    assert "[1048576, 1048576] FP32" in err.message
    assert err.line is not None  # points at the create_tensor line of the program
    assert failure_class_of(err) == "runtime-error"


def test_through_the_runner_it_is_classed_runtime_error() -> None:
    with pytest.raises(SimulationError) as info:
        _runner().run(Huge, *_data())
    assert info.value.failure_class == "runtime-error"


def test_a_memory_error_of_any_runtime_becomes_a_runtime_error() -> None:
    class Greedy:
        name = "greedy"

        def execute(self, compiled, arrays, **kwargs):
            raise MemoryError("Unable to allocate 8.00 GiB for an array")

    with pytest.raises(SimulationError) as info:
        execute(Greedy(), None, (), config=RunConfig(platform="a5sim"))
    err = info.value
    assert err.message == ("runtime 'greedy' ran out of memory on a5sim: Unable to allocate "
                           "8.00 GiB for an array")
    assert failure_class_of(err) == "runtime-error"
    assert isinstance(err.__cause__, MemoryError)
