"""PyPTO's manual-dispatch surface (issue 25 item 3): a CompiledProgram's
chip_callable / build_call_config / build_orch_args run by the compat ``simpler``
worker, which ``import simpler`` reaches when no real one is installed."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest
import torch

import pytest_pypto.language as pl
from pytest_pypto.compat import alias
from pytest_pypto.compat.pypto import ir
from pytest_pypto.compat.pypto.runtime import RunConfig
from pytest_pypto.ir.errors import UnsupportedFeatureError

N = 16


@pl.jit
def add_kernel(a: pl.Tensor, b: pl.Tensor, c: pl.Out[pl.Tensor]):
    with pl.at(level=pl.Level.CORE_GROUP):
        t = pl.add(pl.load(a, [0, 0], [N, N]), pl.load(b, [0, 0], [N, N]))
        pl.store(t, [0, 0], c)
    return c


@pytest.fixture
def simpler() -> Iterator[object]:
    installed = alias.install_backend()
    try:
        import simpler.worker  # the compat stand-in (no real simpler here)

        yield simpler
    finally:
        if installed:
            alias.uninstall_backend()
        for name in [m for m in sys.modules if m == "simpler" or m.startswith("simpler.")]:
            del sys.modules[name]


def _compiled() -> ir.CompiledProgram:
    a = torch.ones((N, N))
    add_kernel(a, a, torch.zeros_like(a), config=RunConfig(platform="a2a3sim"))
    (compiled,) = [c for c in add_kernel._cache.values() if c.platform == "a2a3sim"]
    return compiled


def _dispatch(simpler, compiled, *args, cfg=None, device_id=0):
    w = simpler.worker.Worker(level=2, device_id=device_id, platform=compiled.platform,
                              runtime=compiled.runtime_name)
    w.init()
    try:
        orch_args, coerced, return_style = compiled.build_orch_args(*args, worker=w)
        cid = w.register(compiled.chip_callable)
        w.run(cid, orch_args, cfg if cfg is not None else compiled.build_call_config())
        w.unregister(cid)
    finally:
        w.close()
    return coerced, return_style


def test_return_style_and_in_place_manual_dispatch(simpler) -> None:
    assert simpler.__name__ == "pytest_pypto.compat.simpler"
    compiled = _compiled()
    a = torch.full((N, N), 2.0)
    b = torch.full((N, N), 5.0)
    coerced, return_style = _dispatch(simpler, compiled, a, b)
    assert return_style is True and len(coerced) == 3
    assert torch.equal(coerced[compiled.output_indices[0]], torch.full((N, N), 7.0))
    c = torch.zeros((N, N))
    coerced, return_style = _dispatch(simpler, compiled, a, b, c)
    assert return_style is False and coerced[2] is c
    assert torch.equal(c, torch.full((N, N), 7.0))


def test_a_level2_worker_without_a_device_id_runs_on_chip_0(simpler) -> None:
    """A sim config may carry no device id (device_id=None); the worker is chip 0."""
    compiled = _compiled()
    a = torch.full((N, N), 3.0)
    c = torch.zeros((N, N))
    _dispatch(simpler, compiled, a, a, c, device_id=None)
    assert torch.equal(c, torch.full((N, N), 6.0))


def test_artefacts_and_call_config(simpler) -> None:
    compiled = _compiled()
    assert compiled.chip_callable is compiled.chip_callable
    assert compiled.runtime_name == "tensormap_and_ringbuffer"
    assert compiled.runtime_config == {}
    config = RunConfig(platform="a2a3sim", aicpu_thread_num=6, enable_pmu=2)
    assert compiled.build_call_config(config).aicpu_thread_num == 6
    cfg = compiled.build_call_config(config, aicpu_thread_num=3)
    assert (cfg.aicpu_thread_num, cfg.enable_pmu) == (3, 2)
    with pytest.raises(TypeError, match="needs worker="):
        compiled.build_orch_args(torch.ones((N, N)), torch.ones((N, N)))


def test_worker_refusals(simpler) -> None:
    compiled = _compiled()
    w = simpler.worker.Worker(level=2, device_id=0, platform="a2a3sim", runtime="host_build")
    with pytest.raises(RuntimeError, match="before init"):
        w.register(compiled.chip_callable)
    w.init()
    with pytest.raises(ValueError, match="compiled for runtime 'tensormap_and_ringbuffer'"):
        w.register(compiled.chip_callable)
    other = simpler.worker.Worker(platform="a2a3sim")
    other.init()
    orch_args, _, _ = compiled.build_orch_args(torch.ones((N, N)), torch.ones((N, N)),
                                               worker=other)
    w2 = simpler.worker.Worker(platform="a2a3sim")
    w2.init()
    cid = w2.register(compiled.chip_callable)
    with pytest.raises(ValueError, match="built for another worker"):
        w2.run(cid, orch_args)
    with pytest.raises(UnsupportedFeatureError, match="level=4"):
        simpler.worker.Worker(level=4)


def test_a_real_simpler_is_never_shadowed(tmp_path, monkeypatch) -> None:
    (tmp_path / "simpler").mkdir()
    (tmp_path / "simpler" / "__init__.py").write_text("WHO = 'real'\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        assert alias.install_backend() is False
        import simpler

        assert simpler.WHO == "real"
    finally:
        sys.modules.pop("simpler", None)


def test_the_compat_plugin_makes_simpler_importable(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_s="""
        def test_import():
            from simpler.worker import Worker
            assert Worker.__module__ == "pytest_pypto.compat.simpler.worker"
        """
    )
    pytester.runpytest("-p", "pytest_pypto.compat").assert_outcomes(passed=1)
    pytester.runpytest().assert_outcomes(failed=1)
