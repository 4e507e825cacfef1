"""Host orchestrators on simulated devices (docs/design/distributed.md §2, §3): dispatch
to ranks, window buffers, host-level collectives, against numpy references."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.ir.distributed_compiled_program import (
    DistributedCompiledProgram,
    DistributedConfig,
)
from pytest_pypto.ir.errors import ParserTypeError, SimulationError
from ut.distributed import programs as p


def _compile(program, ranks: int, platform: str = "a2a3sim"):
    return ir.compile(program, platform=platform,
                      distributed_config=DistributedConfig(device_ids=list(range(ranks)),
                                                           num_sub_workers=0))


@pytest.mark.parametrize("ranks", [1, 2, 4])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_each_rank_runs_its_own_dispatch(ranks, platform) -> None:
    compiled = _compile(p.RankOffset, ranks, platform)
    assert isinstance(compiled, DistributedCompiledProgram)
    x = torch.randn(ranks, 4, p.N)
    y = torch.zeros(ranks, 4, p.N)
    compiled(x, y)
    want = x.numpy() + np.arange(ranks, dtype=np.float32).reshape(ranks, 1, 1)
    np.testing.assert_allclose(y.numpy(), want, rtol=1e-6)


@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_host_allreduce_sum_over_windows(ranks) -> None:
    x = torch.arange(ranks * p.N, dtype=torch.float32).reshape(ranks, 1, p.N)
    y = torch.zeros(ranks, 1, p.N)
    _compile(p.ALLREDUCE_SUM, ranks)(x, y)
    want = np.broadcast_to(x.numpy().sum(axis=0), y.shape)
    np.testing.assert_allclose(y.numpy(), want)


def test_host_allreduce_max_and_broadcast_from_root() -> None:
    x = torch.randn(4, 1, p.N)
    y = torch.zeros(4, 1, p.N)
    _compile(p.ALLREDUCE_MAX, 4)(x, y)
    np.testing.assert_array_equal(y.numpy(), np.broadcast_to(x.numpy().max(axis=0), y.shape))
    y.zero_()
    _compile(p.BROADCAST, 2)(x[:2], y[:2])
    np.testing.assert_array_equal(y[:2].numpy(), np.broadcast_to(x[1].numpy(), (2, 1, p.N)))


def test_windows_start_zeroed_and_runs_do_not_share_them() -> None:
    compiled = _compile(p.ALLREDUCE_SUM, 2)
    x = torch.ones(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    compiled(x, y)
    compiled(x, y)  # a second run gets fresh windows: 1 + 1, not an accumulation
    np.testing.assert_array_equal(y.numpy(), np.full((2, 1, p.N), 2.0, np.float32))


def test_dispatch_to_a_rank_outside_the_run_names_the_ranks() -> None:
    compiled = _compile(p.RankOffset, 2)
    x = torch.zeros(3, 4, p.N)  # the host loops over world_size() = 2: fine
    compiled(x[:2], torch.zeros(2, 4, p.N))
    run = compiled.distributed_config
    assert run.device_ids == [0, 1]
    with pytest.raises(SimulationError, match=r"device=5.*2 rank\(s\), 0\.\.1"):
        from pytest_pypto.harness.distributed import DistributedRun  # lazy: test helper

        DistributedRun(compiled.program, compiled.host, "a2a3sim", [0, 1]).dispatch(
            "chip", (x[0], x[0], 0), {}, 5)


def test_config_needs_distinct_devices() -> None:
    with pytest.raises(ValueError, match="repeat"):
        DistributedConfig(device_ids=[0, 0])
    with pytest.raises(ValueError, match="at least one"):
        DistributedConfig(device_ids=[])


def test_a_function_level_other_than_host_is_refused() -> None:
    import pytest_pypto.language as pl  # lazy: the program is built inside the test

    def build():
        @pl.program
        class Bad:
            @pl.function(level=pl.Level.CHIP, role=pl.Role.Orchestrator)
            def host(self, x: pl.Tensor[[4, 4], pl.FP32]) -> pl.Tensor[[4, 4], pl.FP32]:
                return x

        return Bad

    with pytest.raises(ParserTypeError, match=r"level=pl\.Level\.CHIP"):
        build()


def test_a_kernel_may_write_a_window_parameter_declared_without_inout() -> None:
    x = torch.randn(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    _compile(p.WriteUndeclaredWindow, 2)(x, y)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


def test_prepared_runner_keeps_persistent_windows_and_resets_them_unless_asked_not_to() -> None:
    compiled = _compile(p.ALLREDUCE_SUM, 2)
    x = torch.ones(2, 1, p.N)
    y = torch.zeros(2, 1, p.N)
    with compiled.prepare(persistent=True) as rt:
        rt(x, y)
        rt(x, y)  # reset between calls: 1 + 1 again
        np.testing.assert_array_equal(y.numpy(), np.full((2, 1, p.N), 2.0, np.float32))
        handle = rt.submit(compiled, x, y)
        assert handle.result() is None
    with pytest.raises(RuntimeError, match="after close"):
        rt(x, y)


@pytest.mark.parametrize("ranks", [1, 4])
def test_host_code_reads_dynamic_dims_bound_from_its_arguments(ranks) -> None:
    x = torch.randn(ranks, 1, p.N)
    y = torch.zeros(ranks, 1, p.N)
    _compile(p.DynamicRanks, ranks)(x, y)
    np.testing.assert_array_equal(y.numpy(), x.numpy())


@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_jit_host_function_dispatches_jit_functions_to_ranks(platform) -> None:
    from pytest_pypto.compat.pypto.runtime import RunConfig  # lazy: the PyPTO flavour's config
    from ut.distributed import jit_programs as jp  # lazy: @pl.jit programs built at import

    x = torch.randn(4, 1, jp.N)
    y = torch.zeros(4, 1, jp.N)
    config = RunConfig(platform=platform,
                       distributed_config=DistributedConfig(device_ids=[0, 1, 2, 3]))
    compiled = jp.shift_plus_one.compile(x, y, config=config)
    assert isinstance(compiled, DistributedCompiledProgram)
    compiled(x, y, config=RunConfig(platform=platform))
    np.testing.assert_allclose(y.numpy(), np.roll(x.numpy(), 1, axis=0) + 1.0, rtol=1e-6)


def test_a_program_with_two_orchestrations_runs_each_by_name(tmp_path) -> None:
    compiled = ir.compile(p.TwoOrchestrations, output_dir=str(tmp_path), platform="a2a3sim")
    assert compiled.orchestration_names == ["orch_twice", "orch_square"]
    assert compiled["orch_twice"].param_names == ["x", "y"]
    assert compiled.orch_square.output_dir == tmp_path / "next_levels" / "orch_square"
    assert (tmp_path / "next_levels" / "orch_square" / "kernel_config.py").is_file()
    x = torch.randn(4, p.N)
    y = torch.zeros(4, p.N)
    compiled["orch_twice"](x, y)
    np.testing.assert_allclose(y.numpy(), 2 * x.numpy(), rtol=1e-6)
    compiled.orch_square(x, y)
    np.testing.assert_allclose(y.numpy(), x.numpy() ** 2, rtol=1e-6)
    with pytest.raises(TypeError, match="select one explicitly"):
        compiled(x, y)
    with pytest.raises(KeyError, match="orch_twice, orch_square"):
        compiled["missing"]


def test_an_unknown_attribute_of_a_multi_orch_program_is_an_attribute_error() -> None:
    compiled = ir.compile(p.TwoOrchestrations, platform="a2a3sim")
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        compiled.nothing_here  # noqa: B018 - the lookup is the test
