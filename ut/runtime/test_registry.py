"""The runtime registry: discovery, status, selection order, refusals; `SimRuntime`;
the dispatch path (`pytest_pypto.run`) through the registry, with leases onboard."""

from __future__ import annotations

import fcntl
from importlib.metadata import EntryPoint
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.runtime import registry as registry_module
from pytest_pypto.runtime.protocol import DeviceFailure, RuntimeFailure, RuntimeUnavailable
from pytest_pypto.runtime.registry import BUNDLED, Registry, RuntimeSelectionError
from pytest_pypto.runtime.simulator import SimRuntime

R, C = 16, 32


@pl.program
class Triple:
    @pl.function(type=pl.FunctionType.InCore)
    def triple(
        self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ) -> pl.Tensor[[R, C], pl.FP32]:
        t = pl.load(x, [0, 0], [R, C])
        o = pl.store(pl.add(pl.add(t, t), t), [0, 0], o)
        return o

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(
        self, x: pl.Tensor[[R, C], pl.FP32], o: pl.Out[pl.Tensor[[R, C], pl.FP32]]
    ) -> pl.Tensor[[R, C], pl.FP32]:
        o = self.triple(x, o)
        return o


# ------------------------------------------------------------------ fake runtimes
class Fake:
    """A conforming runtime; class attributes are overridden per test."""

    name = "fake"
    version = "1.0"
    platforms: tuple[str, ...] = ("a2a3",)
    built = 0

    def __init__(self) -> None:
        type(self).built += 1
        self.closed = 0
        self.calls: list[dict[str, Any]] = []

    def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
        self.calls.append({"device": device, "config_device": config.device_id})
        return "executed"

    def close(self) -> None:
        self.closed += 1


def fake(name: str, platforms: tuple[str, ...], **attrs: Any) -> type:
    return type(f"Fake_{name}", (Fake,), {"name": name, "platforms": platforms, **attrs})


class Stub:
    """An entry point whose target is an object of this module (no import needed)."""

    def __init__(self, name: str, target: Any, value: str | None = None) -> None:
        self.name = name
        self.value = value if value is not None else f"thirdparty.{name}:Runtime"
        self._target = target

    def load(self) -> Any:
        return self._target


def unavailable() -> Any:
    raise RuntimeUnavailable("no driver on this host")


def crashing() -> Any:
    raise ValueError("cannot open /dev/fake\nsecond line")


class Incomplete:
    name = "incomplete"
    version = "one point oh"
    platforms = ("a2a3", "z80")


SIM_PLATFORMS = ("a2a3sim", "a5sim")


def standard() -> Registry:
    return Registry(
        [
            Stub("sim", fake("sim", SIM_PLATFORMS), BUNDLED["sim"]),
            Stub("isolated", fake("isolated", SIM_PLATFORMS), BUNDLED["isolated"]),
            Stub("pypto", fake("pypto", ("a2a3", "a5", *SIM_PLATFORMS)), BUNDLED["pypto"]),
            Stub("zeta", fake("zeta", ("a2a3", "a2a3sim"))),
            Stub("alpha", fake("alpha", ("a2a3",))),
            Stub("offline", unavailable),
        ]
    )


# ------------------------------------------------------------------ selection
def test_default_order_sim_first_then_third_party_then_bundled_by_name() -> None:
    reg = standard()
    assert reg.serving("a2a3") == ["alpha", "zeta", "pypto"]
    assert reg.serving("a2a3sim") == ["sim", "zeta", "isolated", "pypto"]
    assert reg.serving("a5") == ["pypto"]
    assert reg.runtime_for(RunConfig(platform="a2a3")).name == "alpha"
    assert reg.runtime_for(RunConfig(platform="a5sim")).name == "sim"


def test_named_runtime_is_used_when_it_serves_the_platform() -> None:
    reg = standard()
    chosen = reg.runtime_for(RunConfig(platform="a2a3sim", runtime="isolated"))
    assert chosen.name == "isolated"
    assert reg.runtime_for(RunConfig(platform="a2a3", runtime="pypto")).name == "pypto"


def test_named_runtime_refused_for_a_platform_it_does_not_serve() -> None:
    with pytest.raises(RuntimeSelectionError) as info:
        standard().runtime_for(RunConfig(platform="a5", runtime="alpha"))
    assert info.value.message == (
        "runtime 'alpha' serves a2a3, not a5; runtimes serving a5: pypto"
    )
    assert info.value.failure_class == "device-error" and info.value.runtime == "alpha"


def test_named_runtime_not_installed_or_unavailable() -> None:
    reg = standard()
    with pytest.raises(RuntimeSelectionError) as info:
        reg.runtime_for(RunConfig(platform="a2a3", runtime="nope"))
    assert info.value.message == (
        "runtime 'nope' (RunConfig.runtime / --pypto-runtime) is not installed; "
        "runtimes serving a2a3: alpha, zeta, pypto"
    )
    with pytest.raises(RuntimeSelectionError) as info:
        reg.runtime_for(RunConfig(platform="a2a3", runtime="offline"))
    assert info.value.message == (
        "runtime 'offline' is unavailable (no driver on this host); "
        "runtimes serving a2a3: alpha, zeta, pypto"
    )


def test_no_runtime_for_a_platform_names_what_is_installed() -> None:
    reg = Registry([Stub("sim", fake("sim", SIM_PLATFORMS), BUNDLED["sim"])])
    with pytest.raises(DeviceFailure) as info:
        reg.runtime_for(RunConfig(platform="a5"))
    assert info.value.message == (
        "no available runtime serves a5 (it needs an Ascend NPU and an onboard runtime: an "
        "entry point in group 'pytest_pypto.runtimes'); installed: sim 1.0 (a2a3sim, a5sim)"
    )


# ------------------------------------------------------------------ status
def test_unavailable_and_broken_are_told_apart() -> None:
    reg = Registry(
        [
            Stub("offline", unavailable),
            Stub("crashing", crashing),
            EntryPoint("missing", "no_such_runtime_module:Runtime", "pytest_pypto.runtimes"),
            Stub("incomplete", Incomplete),
        ]
    )
    infos = {i.name: i for i in reg.installed()}
    assert infos["offline"].status == "unavailable"
    assert infos["offline"].reason == "no driver on this host"
    assert infos["crashing"].status == "broken"
    # One paragraph: the first line of the message only.
    assert infos["crashing"].reason == (
        "thirdparty.crashing:Runtime() raised ValueError: cannot open /dev/fake"
    )
    assert infos["missing"].status == "broken"
    assert infos["missing"].reason == (
        "cannot import no_such_runtime_module:Runtime: "
        "ModuleNotFoundError: No module named 'no_such_runtime_module'"
    )
    assert infos["incomplete"].status == "broken"
    assert infos["incomplete"].describe() == (
        "incomplete broken (thirdparty.incomplete:Runtime does not implement the Runtime "
        "protocol: version 'one point oh' is not a PEP 440 version; 'platforms' has 'z80'; "
        "valid: a2a3sim, a2a3, a5sim, a5; 'execute' must be a method; 'close' must be a method)"
    )
    assert all(i.version == "" or i.name == "incomplete" for i in infos.values())


def test_a_runtime_must_carry_its_entry_point_name() -> None:
    reg = Registry([Stub("npu", fake("other", ("a2a3",)))])
    (info,) = reg.installed()
    assert info.status == "broken"
    assert info.reason.endswith("its name 'other' differs from its entry point 'npu'")


def test_broken_third_party_runtime_is_named_when_nothing_serves_the_platform() -> None:
    reg = Registry(
        [
            Stub("sim", fake("sim", SIM_PLATFORMS), BUNDLED["sim"]),
            EntryPoint("npu", "no_such_runtime_module:Runtime", "pytest_pypto.runtimes"),
        ]
    )
    assert [i.name for i in reg.broken_third_party()] == ["npu"]
    with pytest.raises(RuntimeSelectionError) as info:
        reg.runtime_for(RunConfig(platform="a2a3"))
    assert info.value.message == (
        "no available runtime serves a2a3: runtime 'npu' is broken "
        "(the report header and summary say why)"
    )
    assert info.value.one_line  # reported as one line per test (plugin)


def test_constructed_once_lazily_and_closed_at_the_end() -> None:
    cls = fake("once", ("a2a3",))
    reg = Registry([Stub("once", cls)])
    assert reg.names() == ("once",) and cls.built == 0  # discovery is metadata only
    first = reg.get("once")
    assert reg.get("once") is first and reg.runtime_for(RunConfig(platform="a2a3")) is first
    assert cls.built == 1
    assert [i.name for i in reg.loaded_infos()] == ["once"]
    reg.close_all()
    reg.close_all()
    assert first.closed == 1
    assert reg.get("once") is not first and cls.built == 2  # a new session builds anew


def test_installed_runtimes_of_this_package_include_the_simulator() -> None:
    reg = Registry()  # the real entry points (pyproject.toml)
    assert {"sim", "isolated", "pypto"} <= set(reg.names())
    sim = reg.info("sim")
    assert (sim.status, sim.version, sim.platforms) == (
        "ok", pytest_pypto.__version__, ("a2a3sim", "a5sim")
    )
    assert sim.bundled and sim.describe() == f"sim {pytest_pypto.__version__} (a2a3sim, a5sim)"
    reg.close_all()


# ------------------------------------------------------------------ SimRuntime
@pytest.mark.parametrize("platform", ["a2a3sim", "a5sim"])
def test_sim_runtime_executes_on_the_worker_of_its_platform(platform: str) -> None:
    rt = SimRuntime()
    x = np.random.default_rng(3).standard_normal((R, C)).astype(np.float32)
    o = np.zeros_like(x)
    compiled = pytest_pypto.compile(Triple, config=RunConfig(platform=platform))
    run = rt.execute(compiled, (x, o), config=RunConfig(platform=platform))
    np.testing.assert_allclose(o, x * 3, rtol=1e-6)
    assert run.platform == platform and run.outputs["o"] is o
    assert rt.worker(platform) is rt.worker(platform)
    o2 = np.zeros_like(x)
    rt.execute(str(compiled.artifact_dir()), (x, o2), config=RunConfig(platform=platform))
    np.testing.assert_array_equal(o2, o)  # an artifact directory works too
    rt.close()
    rt.close()


def test_sim_runtime_refuses_other_platforms() -> None:
    rt = SimRuntime()
    compiled = pytest_pypto.compile(Triple, config=RunConfig(platform="a5sim"))
    x = np.zeros((R, C), np.float32)
    with pytest.raises(RuntimeFailure) as info:
        rt.execute(compiled, (x, x.copy()), config=RunConfig(platform="a2a3sim"))
    assert info.value.message == (
        "artifact of 'Triple' was compiled for platform 'a5sim', but the config asks "
        "runtime 'sim' to run it on 'a2a3sim'"
    )
    with pytest.raises(RuntimeFailure) as info:
        rt.execute(compiled, (x, x.copy()), config=RunConfig(platform="a5"))
    assert info.value.message == (
        "runtime 'sim' serves a2a3sim, a5sim, not platform 'a5' (the config's)"
    )
    assert info.value.failure_class == "runtime-error" and info.value.runtime == "sim"


# ------------------------------------------------------------------ dispatch
@pytest.fixture
def onboard_host(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Fake NPUs davinci0..1, a lock dir; returns the lock dir."""
    dev = tmp_path / "dev"
    dev.mkdir()
    for n in range(2):
        (dev / f"davinci{n}").touch()
    locks = tmp_path / "locks"
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(dev))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(locks))
    monkeypatch.delenv("ASCEND_RT_VISIBLE_DEVICES", raising=False)
    return locks


def _held(locks: Path, device: int) -> bool:
    with open(locks / f"davinci{device}.lock", "a+") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
        return False


def _use(monkeypatch: pytest.MonkeyPatch, reg: Registry) -> None:
    monkeypatch.setattr(registry_module, "_default", reg)


def test_run_leases_a_device_exactly_around_execute(
    onboard_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int | None, int | None, bool]] = []

    class Npu(Fake):
        name = "npu"
        platforms = ("a2a3",)

        def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
            seen.append((device, config.device_id, _held(onboard_host, device)))
            return "ran"

    _use(monkeypatch, Registry([Stub("npu", Npu)]))
    x = np.zeros((R, C), np.float32)
    assert pytest_pypto.run(Triple, x, x.copy(), config=RunConfig(platform="a2a3")) == "ran"
    (device, config_device, held), = seen
    assert device in (0, 1) and config_device == device and held
    assert not _held(onboard_host, device)  # released after execute
    # A config naming its device is not leased again.
    pytest_pypto.run(Triple, x, x.copy(), config=RunConfig(platform="a2a3", device_id=1))
    assert seen[-1] == (1, 1, False)


def test_foreign_exception_of_an_onboard_runtime_is_a_device_error(
    onboard_host: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Flaky(Fake):
        name = "flaky"

        def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
            raise OSError("ioctl failed")

    _use(monkeypatch, Registry([Stub("flaky", Flaky)]))
    x = np.zeros((R, C), np.float32)
    with pytest.raises(DeviceFailure) as info:
        pytest_pypto.run(Triple, x, x.copy(), config=RunConfig(platform="a2a3"))
    assert info.value.runtime == "flaky" and info.value.failure_class == "device-error"
    assert info.value.message.startswith("runtime 'flaky' failed on a2a3 (device ")
    assert info.value.message.endswith("): OSError: ioctl failed")
    assert isinstance(info.value.__cause__, OSError)


def test_a_runtime_that_compiles_gets_the_program(monkeypatch: pytest.MonkeyPatch) -> None:
    got: list[Any] = []

    class Compiling(Fake):
        name = "own"
        platforms = ("a5sim",)
        compiles = True

        def compile(self, program: Any, config: Any) -> Any:
            got.append(("compile", program, config.platform))
            return "their artifact"

        def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
            got.append(("execute", artifact))
            return "ran"

    _use(monkeypatch, Registry([Stub("own", Compiling)]))
    x = np.zeros((R, C), np.float32)
    pytest_pypto.run(Triple, x, x.copy(), config=RunConfig(platform="a5sim", runtime="own"))
    assert got == [("compile", Triple, "a5sim"), ("execute", "their artifact")]


def test_bundled_table_matches_our_installed_entry_points() -> None:
    """BUNDLED repeats pyproject's entry points (for ordering and source checkouts):
    the two must not drift."""
    from importlib.metadata import distribution

    ours = {
        ep.name: ep.value
        for ep in distribution("pytest-pypto").entry_points
        if ep.group == "pytest_pypto.runtimes"
    }
    assert ours == BUNDLED
