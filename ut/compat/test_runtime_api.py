"""PyPTO's runtime API on the simulator: execute_compiled, benchmark, ChipWorker and
DeviceTensor, from_dir replay, the log level and the Tier-3 names (issue 24 item 2)."""

from __future__ import annotations

import ctypes

import numpy as np
import pytest
import torch

import pytest_pypto.language as pl
from pytest_pypto.compat.pypto import ir, runtime
from pytest_pypto.compat.pypto.runtime import debug
from pytest_pypto.compat.pypto.runtime.runner import _DfxOpts
from pytest_pypto.ir.errors import UnsupportedFeatureError

N = 32


@pl.program
class ScaleAdd:
    """y = x * s + b, with ``s`` a scalar parameter."""

    @pl.function(type=pl.FunctionType.InCore)
    def kernel(
        self,
        x: pl.Tensor[[N, N], pl.FP32],
        b: pl.Tensor[[N, N], pl.FP32],
        s: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[N, N], pl.FP32]],
    ) -> pl.Tensor[[N, N], pl.FP32]:
        tx = pl.load(x, [0, 0], [N, N])
        tb = pl.load(b, [0, 0], [N, N])
        return pl.store(pl.add(pl.mul(tx, s), tb), [0, 0], y)

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self,
        x: pl.Tensor[[N, N], pl.FP32],
        b: pl.Tensor[[N, N], pl.FP32],
        s: pl.Scalar[pl.FP32],
        y: pl.Out[pl.Tensor[[N, N], pl.FP32]],
    ) -> pl.Tensor[[N, N], pl.FP32]:
        return self.kernel(x, b, s, y)


def _inputs() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    x = torch.arange(N * N, dtype=torch.float32).reshape(N, N) / 7
    b = torch.full((N, N), 0.5, dtype=torch.float32)
    return x, b, torch.zeros((N, N), dtype=torch.float32)


@pytest.fixture(scope="module")
def work_dir(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("scale_add")
    ir.compile(ScaleAdd, output_dir=str(out), platform="a2a3sim")
    return str(out)


@pytest.mark.parametrize(
    "scalar", [3.0, ctypes.c_float(3.0), ctypes.c_double(3.0), np.float32(3.0)],
    ids=["float", "c_float", "c_double", "numpy_scalar"],
)
def test_execute_compiled_takes_numbers_and_ctypes_scalars(work_dir: str, scalar: object) -> None:
    x, b, y = _inputs()
    result = runtime.execute_compiled(
        work_dir, [x, b, scalar, y], platform="a2a3sim", device_id=0,
        dfx=_DfxOpts(enable_pmu=1), level=2, aicpu_thread_num=4,
        analyze_auto_scopes_for_deps=True,
    )
    assert result is None
    torch.testing.assert_close(y, x * 3.0 + 0.5)


def test_execute_compiled_with_numpy_and_refusals(work_dir: str, tmp_path) -> None:
    x = np.ones((N, N), np.float32)
    y = np.zeros((N, N), np.float32)
    runtime.execute_compiled(work_dir, [x, x, ctypes.c_float(2.0), y], platform="a2a3sim",
                             device_id=0)
    assert np.all(y == 3.0)
    with pytest.raises(TypeError, match=r"takes 4 arguments \['x', 'b', 's', 'y'\], got 2"):
        runtime.execute_compiled(work_dir, [x, y], platform="a2a3sim", device_id=0)
    with pytest.raises(UnsupportedFeatureError, match="level=3.*tier 3"):
        runtime.execute_compiled(work_dir, [x, x, 1.0, y], platform="a2a3sim", device_id=0,
                                 level=3)
    with pytest.raises(FileNotFoundError, match="holds no artifact of the bundled toolchain"):
        runtime.execute_compiled(tmp_path, [x], platform="a2a3sim", device_id=0)


def test_from_dir_replays_without_live_ir(work_dir: str) -> None:
    compiled = ir.CompiledProgram.from_dir(work_dir, platform="a2a3sim")
    assert compiled.program is None
    assert compiled.param_names == ["x", "b", "s", "y"]
    x, b, y = _inputs()
    compiled(x, b, 2.0, y, config=runtime.RunConfig(platform="a2a3sim"))
    torch.testing.assert_close(y, x * 2.0 + 0.5)
    assert ir.CompiledProgram.from_dir(work_dir, platform="a2a3").platform == "a2a3"
    with pytest.raises(ValueError, match="compiled for a2a3sim, which is not the arch of a5sim"):
        ir.CompiledProgram.from_dir(work_dir, platform="a5sim")


def test_debug_replay_runs_the_directory(work_dir: str) -> None:
    x, b, y = _inputs()
    debug.replay(work_dir, x, b, ctypes.c_float(-1.0), y,
                 config=runtime.RunConfig(platform="a2a3sim"))
    torch.testing.assert_close(y, 0.5 - x)
    with pytest.raises(UnsupportedFeatureError, match="validate=True"):
        debug.replay(work_dir, x, b, 1.0, y, validate=True)
    with pytest.raises(UnsupportedFeatureError, match="ptoas"):
        debug.rebuild_kernel_cpp_from_pto(work_dir)
    with pytest.raises(UnsupportedFeatureError, match="pto_isa_include_dir"):
        runtime.pto_isa_include_dir()


def test_benchmark_times_the_simulator_and_says_so(work_dir: str) -> None:
    compiled = ir.CompiledProgram.from_dir(work_dir)
    x, b, y = _inputs()
    stats = runtime.benchmark(compiled, [x, b, ctypes.c_float(2.0), y], rounds=4, warmup=2,
                              config=runtime.RunConfig(platform="a2a3sim"))
    torch.testing.assert_close(y, x * 2.0 + 0.5)
    assert isinstance(stats, runtime.BenchmarkStats)
    assert (stats.rounds, stats.warmup, len(stats.device_wall_us)) == (4, 2, 4)
    assert stats.device_us_min > 0 and not stats.all_zero_device
    assert stats.device_us_min <= stats.device_us_median <= stats.device_us_max
    assert stats.per_round("device") == stats.device_wall_us and stats.per_rank() == {}
    assert "simulator wall-clock" in stats.clock and "simulator wall-clock" in str(stats)
    with pytest.raises(ValueError, match="rounds must be a positive int"):
        runtime.benchmark(compiled, [x, b, 1.0, y], rounds=0)
    with pytest.raises(ValueError, match="not both"):
        runtime.benchmark(compiled, [x, b, 1.0, y], platform="a2a3sim",
                          config=runtime.RunConfig())
    with pytest.raises(TypeError, match="takes a CompiledProgram"):
        runtime.benchmark(ScaleAdd, [x, b, 1.0, y])


def test_chip_worker_resident_tensors_and_registered_handles(work_dir: str) -> None:
    compiled = ir.CompiledProgram.from_dir(work_dir)
    x, _, _ = _inputs()
    bias = torch.full((N, N), 4.0)
    with runtime.ChipWorker(config=runtime.RunConfig(platform="a2a3sim")) as w:
        assert runtime.ChipWorker.current() is w and isinstance(w, runtime.Worker)
        assert w.aicpu_dlopen_count == 0
        dev_b = w.alloc_tensor((N, N), torch.float32, init=bias)
        dev_y = w.alloc_tensor((N, N), torch.float32)
        assert isinstance(dev_b, runtime.DeviceTensor) and dev_b.nbytes == N * N * 4
        handle = w.register(compiled)
        handle(x, dev_b, ctypes.c_float(1.0), dev_y)  # the output stays on the worker
        handle(x, dev_b, 1.0, dev_y)
        assert w.aicpu_dlopen_count == 1  # one distinct program
        back = torch.zeros((N, N))
        w.copy_from(back.data_ptr(), dev_y.data_ptr, dev_y.nbytes)
        torch.testing.assert_close(back, x + 4.0)
        with pytest.raises(ValueError, match="not inside an allocation of this worker"):
            w.copy_from(back.data_ptr(), back.data_ptr(), 4)
        with pytest.raises(ValueError, match="init is .*the tensor is"):
            w.alloc_tensor((N, 2), torch.float32, init=bias)
        assert len(w._owned_tensors) == 2
    assert len(w._owned_tensors) == 0 and runtime.ChipWorker.current() is None
    with pytest.raises(RuntimeError, match="closed"):
        handle(x, x, 1.0, x)
    with pytest.raises(ValueError, match="only supports level=2"):
        runtime.ChipWorker(level=3)


def test_device_tensor_and_stacked_tensor_checks() -> None:
    with pytest.raises(ValueError, match="positive int"):
        runtime.DeviceTensor(0, (2, 2), torch.float32)
    with pytest.raises(ValueError, match="all positive"):
        runtime.DeviceTensor(64, (2, 0), torch.float32)
    shards = [runtime.DeviceTensor(64 * (i + 1), (4,), torch.float32) for i in range(2)]
    stacked = runtime.StackedDeviceTensor(shards, (2, 4), (0, 1))
    assert stacked[1] is shards[1] and stacked.shape == (2, 4)
    assert stacked[0, ...] is shards[0]
    with pytest.raises(ValueError, match="distinct"):
        runtime.StackedDeviceTensor(shards, (2, 4), (0, 0))
    with pytest.raises(TypeError, match="no buffer of a worker"):
        np.asarray(shards[0])


def test_configure_log_checks_and_remembers_the_level() -> None:
    from pytest_pypto.compat.pypto.runtime import log_config

    try:
        runtime.configure_log("timing")
        assert log_config.current_level() == 25
        runtime.configure_log(10, sync_pypto=True)
        assert runtime.log_level() == 10
        with pytest.raises(ValueError, match="unknown level 'loud'"):
            runtime.configure_log("loud")
    finally:
        runtime.configure_log("warn")
