"""The PyPTO adapter (`pytest_pypto.runtimes.pypto`), over the stand-in of PyPTO's surface.

No real PyPTO is installed here: ``standin_pypto`` provides the calls the adapter
makes, delegating to our compiler and simulator, so these tests check the
adapter's side of the seam (availability, versions, the rebuilt program, array
conversion, directions, errors), not PyPTO.
"""

from __future__ import annotations

import sys
import types

import ml_dtypes
import numpy as np
import pytest
from standin_pypto import installed

import pytest_pypto
import pytest_pypto.language as pl
from pytest_pypto import RunConfig
from pytest_pypto.ir.errors import CompileError
from pytest_pypto.runtime.protocol import DeviceFailure, RuntimeFailure, RuntimeUnavailable
from pytest_pypto.runtimes.pypto import SUPPORTED, PyptoArtifact, PyptoRuntime

PLATFORMS = ("a2a3sim", "a5sim", "a2a3", "a5")
M, N = 16, 32


@pl.program
class Blend:
    """out = x * s + y (s a run-time scalar); acc += y; x, y read only."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
          s: pl.Scalar[pl.FP32], acc: pl.InOut[pl.Tensor[[M, N], pl.FP32]],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        ty = pl.load(y, [0, 0], [M, N])
        out = pl.store(pl.add(pl.mul(pl.load(x, [0, 0], [M, N]), s), ty), [0, 0], out)
        acc = pl.store(pl.add(pl.load(acc, [0, 0], [M, N]), ty), [0, 0], acc)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             s: pl.Scalar[pl.FP32], acc: pl.InOut[pl.Tensor[[M, N], pl.FP32]],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(x, y, s, acc, out)
        return out


def doubled(rows: int, dtype):
    """A program built in a function: its shape and dtype are the function's locals."""

    @pl.program
    class Doubled:
        @pl.function(type=pl.FunctionType.InCore)
        def k(self, x: pl.Tensor[[rows, N], dtype],
              out: pl.Out[pl.Tensor[[rows, N], dtype]]) -> pl.Tensor[[rows, N], dtype]:
            t = pl.load(x, [0, 0], [rows, N])
            out = pl.store(pl.add(t, t), [0, 0], out)
            return out

        @pl.function(type=pl.FunctionType.Orchestration)
        def main(self, x: pl.Tensor[[rows, N], dtype],
                 out: pl.Out[pl.Tensor[[rows, N], dtype]]) -> pl.Tensor[[rows, N], dtype]:
            out = self.k(x, out)
            return out

    return Doubled


@pytest.fixture
def pypto(monkeypatch):
    with installed(monkeypatch) as module:
        yield module


@pytest.fixture
def adapter(pypto):
    runtime = PyptoRuntime()
    yield runtime
    runtime.close()


def _device(platform: str) -> int | None:
    return None if platform.endswith("sim") else 3


def _blend_arrays(seed: int):
    rng = np.random.default_rng(seed)
    x, y, acc = (rng.integers(-50, 50, (M, N)).astype(np.float32) for _ in range(3))
    return x, y, 3.0, acc, np.zeros((M, N), np.float32)


# -- availability and versions -------------------------------------------------------------


def test_without_pypto_the_adapter_is_unavailable(monkeypatch):
    monkeypatch.delitem(sys.modules, "pypto", raising=False)
    with pytest.raises(RuntimeUnavailable, match=r"^the real 'pypto' package is not importable$"):
        PyptoRuntime()


def test_the_compat_alias_is_not_taken_for_pypto(monkeypatch):
    from pytest_pypto.compat import alias

    installed_here = alias.install()
    assert alias.active()
    try:
        import pypto  # noqa: F401  (our compat surface, through the alias)

        with pytest.raises(RuntimeUnavailable, match="not importable"):
            PyptoRuntime()
        # Even if something reported it as real, the imported module is recognised.
        monkeypatch.setattr(alias, "real_pypto", lambda: "/somewhere/pypto")
        with pytest.raises(RuntimeUnavailable, match="compat alias"):
            PyptoRuntime()
    finally:
        if installed_here:
            alias.uninstall()


def test_the_registry_lists_it_unavailable_with_the_reason():
    from pytest_pypto.runtime.registry import Registry

    fresh = Registry()
    infos = {i.name: i for i in fresh.installed()}
    fresh.close_all()
    assert infos["pypto"].status == "unavailable"
    assert infos["pypto"].describe() == (
        "pypto unavailable (the real 'pypto' package is not importable)"
    )


@pytest.mark.parametrize("version", ["0.2.0", "0.0.9", "1.0"])
def test_a_version_outside_the_supported_range_is_refused_naming_both(monkeypatch, version):
    with installed(monkeypatch, version=version):
        with pytest.raises(RuntimeUnavailable) as info:
            PyptoRuntime()
    text = str(info.value)
    assert f"pypto {version} (at " in text
    assert text.endswith(f"outside the versions this adapter supports: pypto {SUPPORTED}")
    assert "standin_pypto" in text  # where the refused package lives


def test_a_version_that_is_not_pep440_is_refused(monkeypatch):
    with installed(monkeypatch, version="nightly"):
        with pytest.raises(RuntimeUnavailable, match="reports version 'nightly', not a PEP 440"):
            PyptoRuntime()


def test_it_reports_pyptos_version_and_platforms(adapter):
    assert adapter.version == "0.1.0"
    assert adapter.name == "pypto" and adapter.compiles is True
    assert set(adapter.platforms) == {"a2a3", "a2a3sim", "a5", "a5sim"}


# -- compile and execute through the stand-in ----------------------------------------------


@pytest.mark.parametrize("platform", PLATFORMS)
def test_compile_and_execute_give_numpy_results(adapter, pypto, platform):
    artifact = adapter.compile(Blend, RunConfig(platform=platform))
    assert isinstance(artifact, PyptoArtifact) and artifact.platform == platform
    compiled = pypto.ir.compiled_programs[-1]
    assert compiled.platform == platform
    assert compiled.program is not Blend  # PyPTO's own program, rebuilt from the source
    x, y, s, acc, out = _blend_arrays(7)
    x0, y0, acc0 = x.copy(), y.copy(), acc.copy()
    run = adapter.execute(artifact, [x, y, s, acc, out], config=RunConfig(platform=platform),
                          device=_device(platform))
    np.testing.assert_array_equal(out, x0 * 3.0 + y0)
    np.testing.assert_array_equal(acc, acc0 + y0)
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    assert run.platform == platform and run.tasks == []
    assert run.outputs == {"acc": acc, "out": out} and run.outputs["out"] is out
    assert len(run.returns) == 1 and run.returns[0] is out
    expected_device = 0 if platform.endswith("sim") else 3
    assert compiled.runs == [(platform, expected_device)]


@pytest.mark.parametrize(("dtype", "storage"), [
    (pl.FP16, np.float16), (pl.BF16, ml_dtypes.bfloat16), (pl.INT32, np.int32),
])
@pytest.mark.parametrize("platform", ["a2a3sim", "a5"])
def test_a_program_built_in_a_function_is_rebuilt_with_its_locals(adapter, platform, dtype,
                                                                  storage):
    program = doubled(8, dtype)
    artifact = adapter.compile(program, RunConfig(platform=platform))
    x = (np.arange(8 * N) % 37 - 18).reshape(8, N).astype(storage)
    out = np.zeros((8, N), storage)
    adapter.execute(artifact, [x, out], config=RunConfig(platform=platform),
                    device=_device(platform))
    want = (x.astype(np.float64) * 2).astype(storage)
    np.testing.assert_array_equal(out.astype(np.float64), want.astype(np.float64))


def test_compiling_twice_reuses_the_artifact(adapter, pypto):
    first = adapter.compile(Blend, RunConfig(platform="a5sim"))
    count = len(pypto.ir.compiled_programs)
    assert adapter.compile(Blend, RunConfig(platform="a5sim")) is first
    assert len(pypto.ir.compiled_programs) == count
    assert adapter.compile(Blend, RunConfig(platform="a2a3sim")) is not first


def test_tensors_cross_as_copies_and_only_outputs_come_back(adapter, pypto, monkeypatch):
    """PyPTO writes every tensor it is given; the caller sees only Out/InOut results."""
    import torch

    artifact = adapter.compile(Blend, RunConfig(platform="a2a3sim"))
    seen = []

    def scribble(self, *args, config=None):
        seen.extend(args)
        for a in args:
            if isinstance(a, torch.Tensor):
                a.fill_(11.0)

    monkeypatch.setattr(type(artifact.compiled), "__call__", scribble)
    x, y, s, acc, out = _blend_arrays(3)
    x0, y0 = x.copy(), y.copy()
    adapter.execute(artifact, [x, y, np.float32(s), acc, out], config=RunConfig(platform="a2a3sim"))
    assert [type(a).__name__ for a in seen] == ["Tensor", "Tensor", "float", "Tensor", "Tensor"]
    np.testing.assert_array_equal(x, x0)
    np.testing.assert_array_equal(y, y0)
    np.testing.assert_array_equal(acc, 11.0)
    np.testing.assert_array_equal(out, 11.0)


def test_through_the_harness_with_runtime_pypto(pypto, monkeypatch):
    """`pytest_pypto.run(..., RunConfig(runtime="pypto"))`: the registry finds the adapter
    (now that a pypto is importable) and the harness compiles with it."""
    from pytest_pypto.runtime import registry

    monkeypatch.setattr(registry, "_default", registry.Registry())
    try:
        x, y, s, acc, out = _blend_arrays(5)
        want_out, want_acc = x * 3.0 + y, acc + y
        result = pytest_pypto.run(Blend, x, y, s, acc, out,
                                  config=RunConfig(platform="a5sim", runtime="pypto"))
        np.testing.assert_array_equal(out, want_out)
        np.testing.assert_array_equal(acc, want_acc)
        assert type(result).__name__ == "PyptoRun"
        assert pypto.ir.compiled_programs[-1].platform == "a5sim"
        assert registry.default_registry().info("pypto").describe() == (
            "pypto 0.1.0 (a2a3sim, a2a3, a5sim, a5)"
        )
    finally:
        registry.default_registry().close_all()


# -- errors --------------------------------------------------------------------------------


def test_a_failing_run_is_a_device_error_naming_pypto(adapter):
    """The stand-in's run fails (a window past the tensor's edge) with a RuntimeError,
    as PyPTO's runtime reports failures."""
    from pytest_pypto.harness.conformance import ConformanceWindow

    artifact = adapter.compile(ConformanceWindow, RunConfig(platform="a2a3"))
    src = np.arange(32 * 16, dtype=np.float32).reshape(32, 16)
    dst = np.full((32, 16), -2.0, np.float32)
    with pytest.raises(DeviceFailure) as info:
        adapter.execute(artifact, [src, 30, dst], config=RunConfig(platform="a2a3"), device=5)
    exc = info.value
    assert exc.failure_class == "device-error" and exc.runtime == "pypto"
    assert exc.message.startswith(
        "pypto failed running 'ConformanceWindow' on a2a3 device 5: RuntimeError: "
        "run failed on device 5:"
    )
    assert isinstance(exc.__cause__, RuntimeError)
    np.testing.assert_array_equal(dst, -2.0)


def test_a_run_past_the_timeout_is_a_runtime_error_not_a_device_error(adapter, monkeypatch):
    import time

    artifact = adapter.compile(Blend, RunConfig(platform="a5sim"))
    monkeypatch.setattr(type(artifact.compiled), "__call__", lambda self, *a, config: time.sleep(5))
    x, y, s, acc, out = _blend_arrays(2)
    acc0 = acc.copy()
    start = time.monotonic()
    with pytest.raises(RuntimeFailure) as info:
        adapter.execute(artifact, [x, y, s, acc, out],
                        config=RunConfig(platform="a5sim", timeout=0.3))
    assert time.monotonic() - start < 3
    assert info.value.failure_class == "runtime-error" and info.value.runtime == "pypto"
    assert "pypto run of 'Blend' on a5sim: timed out" in info.value.message
    np.testing.assert_array_equal(acc, acc0)


def test_a_compile_error_from_pypto_is_a_compile_error_at_the_class(adapter, pypto, monkeypatch):
    def refuse(*args, **kwargs):
        raise ValueError("tile [16, 32] exceeds UB")

    monkeypatch.setattr(pypto.ir, "compile", refuse)
    with pytest.raises(CompileError) as info:
        adapter.compile(Blend, RunConfig(platform="a5"))
    exc = info.value
    assert exc.message == (
        "pypto could not compile program 'Blend' for a5: ValueError: tile [16, 32] exceeds UB"
    )
    assert exc.file == __file__ and exc.line == Blend.span.line and exc.arch == "a5"


def test_our_own_artifact_is_refused_with_a_hint(adapter):
    ours = pytest_pypto.compile(Blend, RunConfig(platform="a2a3sim"))
    with pytest.raises(RuntimeFailure, match="executes what its own compile\\(\\) built; got "
                       "CompiledProgram") as info:
        adapter.execute(ours, list(_blend_arrays(1)), config=RunConfig(platform="a2a3sim"))
    assert "pass the @pl.program itself" in str(info.value)


def test_a_wrong_argument_count_names_the_parameters(adapter):
    artifact = adapter.compile(Blend, RunConfig(platform="a2a3sim"))
    with pytest.raises(RuntimeFailure, match=r"'Blend' takes 5 arguments \(x, y, s, acc, out\), "
                       r"got 2"):
        adapter.execute(artifact, [1, 2], config=RunConfig(platform="a2a3sim"))


# -- the rebuild swaps our DSL objects for theirs --------------------------------------------


def test_the_class_is_executed_again_with_their_language():
    """Their `@pl.program` receives the class, run in the decoration-time names with
    every object of our language replaced by theirs of the same name."""
    from pytest_pypto.runtimes.pypto_source import rebuild_program

    theirs = types.ModuleType("their_pl")
    theirs.__dict__.update({k: v for k, v in vars(pl).items() if not k.startswith("__")})
    markers = {name: object() for name in ("FP16", "INT32")}
    theirs.__dict__.update(markers)
    captured = {}

    def program(cls):
        frame = sys._getframe(1)
        captured.update(cls=cls, names=dict(frame.f_globals))
        return "their program"

    theirs.program = program
    assert rebuild_program(doubled(8, pl.FP16), theirs) == "their program"
    names = captured["names"]
    assert names["pl"] is theirs
    assert names["dtype"] is markers["FP16"]  # a local holding our pl.FP16
    assert names["rows"] == 8
    cls = captured["cls"]
    assert cls.__name__ == "Doubled" and {"k", "main"} <= set(vars(cls))
    assert cls.k.__code__.co_firstlineno == doubled.__code__.co_firstlineno + 5


def test_swapping_reaches_into_containers_and_leaves_plain_values():
    from pytest_pypto.runtimes.pypto_source import swap_names

    ours, theirs = object(), object()
    names = {"a": ours, "b": [1, ours], "c": {"k": (ours, 2)}, "d": 7, "e": "FP16"}
    swapped = swap_names(names, {id(ours): theirs})
    assert swapped == {"a": theirs, "b": [1, theirs], "c": {"k": (theirs, 2)}, "d": 7,
                       "e": "FP16"}
    assert names["b"] == [1, ours]  # the original namespace is untouched


# -- a session on onboard cells, with fake NPUs --------------------------------------------

README_STYLE = '''
import numpy as np
import pytest_pypto
import pytest_pypto.language as pl

M, N, TM = 64, 32, 16

@pl.program
class Add:
    @pl.function(type=pl.FunctionType.InCore)
    def add(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
            out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        for r in pl.range(0, M, TM):
            t = pl.add(pl.load(x, [r, 0], [TM, N]), pl.load(y, [r, 0], [TM, N]))
            out = pl.store(t, [r, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.add(x, y, out)
        return out

def test_add(pypto_runner, pypto_rng):
    x, y = pypto_rng.standard_normal((2, M, N), dtype=np.float32)
    out = np.empty((M, N), np.float32)
    pypto_runner.run(Add, x, y, out)
    pytest_pypto.assert_close(out, x + y)
'''


def test_onboard_cells_run_through_pypto_on_a_leased_device(pytester, pypto, monkeypatch,
                                                              tmp_path):
    devices = tmp_path / "dev"
    devices.mkdir()
    for n in (0, 1):
        (devices / f"davinci{n}").touch()
    monkeypatch.setenv("PYPTO_DEV_ROOT", str(devices))
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(tmp_path / "locks"))
    pytester.makepyfile(test_readme=README_STYLE)
    before = len(pypto.ir.compiled_programs)
    result = pytester.runpytest("--pypto-mode", "onboard", "--pypto-arch", "all",
                                "-p", "no:randomly", "-q")
    result.assert_outcomes(passed=2)
    compiled = pypto.ir.compiled_programs[before:]
    runs = sorted(run for c in compiled for run in c.runs)
    assert [platform for platform, _ in runs] == ["a2a3", "a5"]
    assert {device for _, device in runs} <= {0, 1}
