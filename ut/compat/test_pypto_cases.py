"""PyPTO's case semantics (compat/cases.py), run on the simulator in-process."""

from __future__ import annotations

import numpy as np
import pytest
import pytest_pypto.compat.pypto.language as pl
import torch
from pypto_kit import TorchAdd

from pytest_pypto.compat import cases as pypto_cases
from pytest_pypto.compat.harness import (
    ALL_PLATFORM_IDS,
    DataType,
    TensorSpec,
    platform_to_backend,
)
from pytest_pypto.config import BackendType, RunConfig
from pytest_pypto.harness.runner import Runner
from pytest_pypto.harness.seeding import make_rng


def _runner(platform: str = "a2a3sim", seed: int = 7) -> Runner:
    return Runner(RunConfig(platform=platform, seed=seed), rng_factory=lambda: make_rng(seed))


def test_datatype_is_pyptos_enum_with_torch_dtypes() -> None:
    assert DataType.FP32.value == "fp32" and DataType("bf16") is DataType.BF16
    assert DataType.BF16.torch_dtype is torch.bfloat16
    # unsigned wider than a byte: the signed torch type of the same width (same bits)
    assert DataType.UINT32.torch_dtype is torch.int32
    assert DataType.UINT16.torch_dtype is torch.int16
    assert DataType.UINT8.torch_dtype is torch.uint8
    assert DataType.FP32.dsl.name == "FP32"


def test_tensor_spec_inits_follow_pypto() -> None:
    rng = make_rng(0)
    zeros = TensorSpec("x", [2, 3], DataType.FP32).create(rng)
    assert zeros.dtype == np.float32 and not zeros.any()
    filled = TensorSpec("x", [2, 3], DataType.INT32, init_value=3).create(rng)
    assert (filled == 3).all() and filled.dtype == np.int32
    called = TensorSpec("x", [2, 2], DataType.FP16, init_value=lambda: torch.eye(2)).create(rng)
    assert called.dtype == np.float16 and called.tolist() == [[1, 0], [0, 1]]
    factory = TensorSpec("x", [4, 5], DataType.FP32, init_value=torch.ones).create(rng)
    assert factory.shape == (4, 5) and (factory == 1).all()
    # -1 as int32 bits is 0xFFFFFFFF in the UINT32 tensor the kernel sees
    bits = TensorSpec("u", [2], DataType.UINT32, init_value=torch.tensor([-1, 2], dtype=torch.int32))
    assert bits.create(rng).tolist() == [0xFFFFFFFF, 2]
    with pytest.raises(ValueError, match="does not fit"):
        TensorSpec("x", [3], DataType.FP32, init_value=torch.zeros(4)).create(rng)


def test_torch_golden_passes_and_inputs_are_seeded() -> None:
    first = _runner(seed=11).check(TorchAdd())
    again = _runner(seed=11).check(TorchAdd())
    other = _runner(seed=12).check(TorchAdd())
    a = first.inputs["a"]
    assert a.std() > 0.5  # torch.randn data, not zeros
    assert np.array_equal(a, again.inputs["a"]) and not np.array_equal(a, other.inputs["a"])
    assert not first.inputs["b"].any()  # the spec without init_value is zeros
    np.testing.assert_array_equal(first.outputs["c"], a)  # a + 0
    # torch's global generator is restored after the inputs are built
    torch.manual_seed(5)
    want = torch.randn(3)
    torch.manual_seed(5)
    _runner().check(TorchAdd())
    assert torch.equal(torch.randn(3), want)


def test_case_config_tolerances_are_honoured() -> None:
    case = TorchAdd(off=5e-4)  # golden off by 5e-4 everywhere
    assert (case.config.rtol, case.config.atol) == (1e-5, 1e-5)  # PyPTO's default
    failed = _runner().run_case(case)
    assert not failed.passed and failed.failure_class == "mismatch"
    assert "rtol=1e-05" in failed.error
    case = TorchAdd(off=5e-4)
    case.config.rtol = 1e-3  # PyPTO style: tune the case's own config
    case.config.atol = 1e-3
    assert _runner().run_case(case).passed


def test_nan_in_a_golden_is_a_dont_care() -> None:
    class Holes(TorchAdd):
        def compute_expected(self, tensors, params=None):
            tensors["c"][:] = tensors["a"]
            tensors["c"][0, :] = float("nan")  # undefined by contract

    assert _runner().check(Holes()).passed


def test_platform_and_selections() -> None:
    case = TorchAdd(platform="a5sim")
    assert case.get_platform() == "a5sim" and case.get_backend_type() is BackendType.Ascend950
    assert TorchAdd().get_platform() is None
    assert TorchAdd().get_backend_type() is BackendType.Ascend910B
    with pytest.raises(ValueError, match="a2a3sim"):
        TorchAdd(platform="a9")
    assert platform_to_backend("a5") is BackendType.Ascend950
    assert set(ALL_PLATFORM_IDS) == {"a2a3sim", "a5sim", "a2a3", "a5"}


def test_platform_lists_follow_the_requested_cells(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pypto_cases, "_requested", ("a5sim",))
    assert [p.values[0] for p in pypto_cases.PLATFORMS] == ["a5sim"]
    assert [p.id for p in pypto_cases.SIM_PLATFORMS] == ["a5sim"]
    onboard = pypto_cases.ONBOARD_PLATFORMS  # none requested: listed, each marked skip
    assert [p.values[0] for p in onboard] == ["a2a3", "a5"]
    assert all(m.name == "skip" and "not requested" in m.kwargs["reason"] for p in onboard for m in p.marks)
    monkeypatch.setattr(pypto_cases, "_requested", None)
    assert len(pypto_cases.PLATFORMS) == 4


def test_without_torch_a_pypto_case_skips_naming_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real = builtins.__import__

    def no_torch(name, *args, **kwargs):
        if name == "torch":
            raise ImportError("no torch here")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_torch)
    with pytest.raises(pytest.skip.Exception, match=r"pytest-pypto\[torch\]"):
        _runner().check(TorchAdd(init_a=1.0))



def test_a_case_missing_a_hook_cannot_be_instantiated() -> None:
    from pytest_pypto.compat.harness import PTOTestCase

    class NoGolden(PTOTestCase):  # PyPTO's PTOTestCase is an ABC: the same TypeError
        def get_name(self):
            return "x"

        def define_tensors(self):
            return []

        def get_program(self):
            return None

    with pytest.raises(TypeError, match="compute_expected"):
        NoGolden()
    case = TorchAdd()
    assert case.tensor_specs is case.tensor_specs  # cached, as PyPTO's property
    assert [s.name for s in case.tensor_specs] == ["a", "b", "c"] and case.scalar_specs == []
    assert case.get_strategy().name == "Default" and case.get_memory_planner() is None


@pl.program
class _HalfWrite:
    @pl.function(type=pl.FunctionType.InCore)
    def top(self, a: pl.Tensor[[16, 32], pl.FP32],
            c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        t = pl.load(a, [0, 0], [8, 32])
        c = pl.store(t, [0, 0], c)
        return c

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, a: pl.Tensor[[16, 32], pl.FP32],
             c: pl.Out[pl.Tensor[[16, 32], pl.FP32]]) -> pl.Tensor[[16, 32], pl.FP32]:
        c = self.top(a, c)
        return c


class _HalfWriteCase(pypto_cases.PTOTestCase):
    """The kernel writes the top half of c; PyPTO's c starts as its init_value."""

    def get_name(self) -> str:
        return "half_write"

    def define_tensors(self):
        return [
            TensorSpec("a", [16, 32], DataType.FP32, init_value=torch.randn),
            TensorSpec("c", [16, 32], DataType.FP32, init_value=3.0, is_output=True),
        ]

    def get_program(self):
        return _HalfWrite

    def compute_expected(self, tensors, params=None):
        tensors["c"][:8] = tensors["a"][:8]
        tensors["c"][8:] = 3.0


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_an_out_tensor_starts_with_its_init_value(platform: str) -> None:
    result = _runner(platform).run(_HalfWriteCase())
    assert result.passed, result.error
    assert (result.outputs["c"][8:] == 3.0).all()


def test_every_case_path_goes_through_execute_with_the_case_alone(monkeypatch) -> None:
    """`check` and `run_case` both call ``Runner._execute(case)``: the one seam an observer
    (PyPTO's system tests under a measuring conftest) wraps to see each case's outcome."""
    seen: list[tuple[str, bool]] = []
    original = Runner._execute

    def observed(self: Runner, case: object) -> object:  # exactly one argument
        try:
            result = original(self, case)
        except Exception:
            seen.append((type(case).__name__, False))
            raise
        seen.append((type(case).__name__, True))
        return result

    monkeypatch.setattr(Runner, "_execute", observed)
    assert _runner().check(TorchAdd()).passed
    assert not _runner().run_case(TorchAdd(off=5e-4)).passed
    assert _runner().run_case(TorchAdd()).passed
    assert seen == [("TorchAdd", True), ("TorchAdd", False), ("TorchAdd", True)]
