# SPDX-License-Identifier: Apache-2.0
"""The `Runtime` protocol's conformance suite: checks any runtime can run against itself.

Each ``check_*`` function takes a constructed runtime and a platform it serves,
compiles small kernels of its own (with the runtime's ``compile`` when it brings
one, else with pytest-pypto's compiler), executes them, and raises
`AssertionError` saying what the runtime did wrong.  `CHECKS` names them all.

A third-party runtime runs the suite from its own test file::

    import pytest
    from pytest_pypto.harness import conformance
    from my_runtime import MyRuntime

    @pytest.fixture(scope="module")
    def runtime():
        rt = MyRuntime()
        yield rt
        rt.close()

    @pytest.mark.parametrize("check", conformance.CHECKS)
    @pytest.mark.parametrize("platform", MyRuntime.platforms)
    def test_conformance(runtime, check, platform):
        conformance.run_check(check, runtime, platform)

On a platform with a device (no ``sim`` suffix) the checks pass ``device=0``.
`check_close_idempotent` takes a factory (it constructs and closes its own
runtime); `run_check` passes ``type(runtime)``.

The kernels are defined here, at module level, so a runtime that rebuilds a
program from its source (the PyPTO adapter) can find it.  Expected values come
from numpy written out below, never from the toolchain.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

import pytest_pypto.language as pl
from pytest_pypto.arch import PLATFORMS, ExecutionMode, parse_platform
from pytest_pypto.compiler.api import compile as compile_program
from pytest_pypto.config import RunConfig
from pytest_pypto.harness.failures import failure_class_of
from pytest_pypto.runtime.protocol import FAILURE_CLASSES, RuntimeFailure, protocol_problems

__all__ = [
    "CHECKS",
    "artifact_for",
    "check_close_idempotent",
    "check_never_mutates_inputs",
    "check_protocol",
    "check_refuses_wrong_platform",
    "check_reports_kernel_failure",
    "check_survives_failure",
    "check_writes_outputs",
    "run_check",
]

M, N, TM = 32, 16, 8


@pl.program
class ConformanceAdd:
    """out = x + y (Out), acc = acc + x (InOut), x and y read only."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
          acc: pl.InOut[pl.Tensor[[M, N], pl.FP32]],
          out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        tx = pl.load(x, [0, 0], [M, N])
        out = pl.store(pl.add(tx, pl.load(y, [0, 0], [M, N])), [0, 0], out)
        acc = pl.store(pl.add(pl.load(acc, [0, 0], [M, N]), tx), [0, 0], acc)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], y: pl.Tensor[[M, N], pl.FP32],
             acc: pl.InOut[pl.Tensor[[M, N], pl.FP32]],
             out: pl.Out[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(x, y, acc, out)
        return out


@pl.program
class ConformanceWindow:
    """out[0:8] = x[r:r+8]: a window at the run-time row ``r``, out of bounds for r > 24."""

    @pl.function(type=pl.FunctionType.InCore)
    def k(self, x: pl.Tensor[[M, N], pl.FP32], r: pl.Scalar[pl.INDEX],
          out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = pl.store(pl.load(x, [r, 0], [TM, N]), [0, 0], out)
        return out

    @pl.function(type=pl.FunctionType.Orchestration)
    def main(self, x: pl.Tensor[[M, N], pl.FP32], r: pl.Scalar[pl.INDEX],
             out: pl.InOut[pl.Tensor[[M, N], pl.FP32]]) -> pl.Tensor[[M, N], pl.FP32]:
        out = self.k(x, r, out)
        return out


# -- helpers ---------------------------------------------------------------------------


def _config(platform: str) -> RunConfig:
    return RunConfig(platform=platform)


def _device(platform: str) -> int | None:
    return None if parse_platform(platform)[1] is ExecutionMode.SIM else 0


def _who(runtime: Any) -> str:
    return f"runtime {getattr(runtime, 'name', type(runtime).__name__)!r}"


def artifact_for(runtime: Any, program: Any, platform: str) -> Any:
    """``program`` compiled for ``platform`` the way the harness would for ``runtime``."""
    config = _config(platform)
    if getattr(runtime, "compiles", False) and platform in runtime.platforms:
        return runtime.compile(program, config)
    return compile_program(program, config)


def _execute(runtime: Any, artifact: Any, arrays: Sequence[Any], platform: str) -> Any:
    return runtime.execute(artifact, list(arrays), config=_config(platform),
                           device=_device(platform))


def _add_arrays(seed: int) -> tuple[np.ndarray, ...]:
    """x, y, acc, out: small integers in float32, so every sum is exact."""
    rng = np.random.default_rng(seed)
    x, y, acc = (rng.integers(-64, 64, (M, N)).astype(np.float32) for _ in range(3))
    out = np.full((M, N), -5.0, np.float32)
    return x, y, acc, out


def _failure_class(exc: BaseException) -> str | None:
    return failure_class_of(exc)


def _serves(runtime: Any, platform: str) -> None:
    assert platform in runtime.platforms, (
        f"{_who(runtime)} does not serve {platform!r} (it serves {runtime.platforms})"
    )


# -- the checks ------------------------------------------------------------------------


def check_protocol(runtime: Any, platform: str | None = None) -> None:
    """`protocol_problems` finds nothing; the version parses with packaging; the
    platforms are known platform strings."""
    from packaging.version import Version  # lazy: only the protocol check parses versions

    problems = protocol_problems(runtime)
    assert problems == [], f"{_who(runtime)} violates the protocol: {'; '.join(problems)}"
    Version(runtime.version)  # raises InvalidVersion
    assert set(runtime.platforms) <= set(PLATFORMS), runtime.platforms


def check_refuses_wrong_platform(runtime: Any, platform: str) -> None:
    """An artifact compiled for another platform is refused with RuntimeFailure (or
    DeviceFailure), and the caller's arrays stay as they were."""
    _serves(runtime, platform)
    others = [p for p in runtime.platforms if p != platform]
    other = others[0] if others else next(p for p in PLATFORMS if p != platform)
    artifact = artifact_for(runtime, ConformanceAdd, other)
    x, y, acc, out = _add_arrays(1)
    before = [a.copy() for a in (x, y, acc, out)]
    try:
        _execute(runtime, artifact, (x, y, acc, out), platform)
    except RuntimeFailure as exc:
        assert _failure_class(exc) in FAILURE_CLASSES, exc
    else:
        raise AssertionError(
            f"{_who(runtime)} ran on {platform!r} an artifact compiled for {other!r}; "
            f"it must raise RuntimeFailure"
        )
    for now, then in zip((x, y, acc, out), before):
        np.testing.assert_array_equal(now, then, err_msg="a refused run wrote an array")


def check_writes_outputs(runtime: Any, platform: str) -> None:
    """Out and InOut results land in the caller's arrays (numpy reference); the
    returned Execution names them, is on the platform and has a task list."""
    _serves(runtime, platform)
    artifact = artifact_for(runtime, ConformanceAdd, platform)
    x, y, acc, out = _add_arrays(2)
    want_out, want_acc = x + y, acc + x
    result = _execute(runtime, artifact, (x, y, acc, out), platform)
    np.testing.assert_array_equal(out, want_out, err_msg="Out result (out = x + y)")
    np.testing.assert_array_equal(acc, want_acc, err_msg="InOut result (acc += x)")
    assert result.platform == platform, (result.platform, platform)
    assert set(result.outputs) == {"acc", "out"}, sorted(result.outputs)
    assert result.outputs["out"] is out and result.outputs["acc"] is acc, (
        "Execution.outputs must hold the caller's arrays"
    )
    assert isinstance(result.returns, tuple), type(result.returns)
    assert isinstance(result.tasks, list), type(result.tasks)


def check_never_mutates_inputs(runtime: Any, platform: str) -> None:
    """In arrays are bit-for-bit what the caller passed, after a run that succeeded
    and after one that failed."""
    _serves(runtime, platform)
    x, y, acc, out = _add_arrays(3)
    x0, y0 = x.copy(), y.copy()
    _execute(runtime, artifact_for(runtime, ConformanceAdd, platform), (x, y, acc, out), platform)
    np.testing.assert_array_equal(x, x0, err_msg="In parameter x was written")
    np.testing.assert_array_equal(y, y0, err_msg="In parameter y was written")
    window = artifact_for(runtime, ConformanceWindow, platform)
    src, dst = _window_arrays()
    src0 = src.copy()
    try:
        _execute(runtime, window, (src, 30, dst), platform)
    except Exception:  # noqa: BLE001  (check_reports_kernel_failure judges the class)
        pass
    np.testing.assert_array_equal(src, src0, err_msg="In parameter x was written by a failing run")


def _window_arrays() -> tuple[np.ndarray, np.ndarray]:
    src = np.arange(M * N, dtype=np.float32).reshape(M, N)
    return src, np.full((M, N), -2.0, np.float32)


def check_reports_kernel_failure(
    runtime: Any, platform: str, failure_classes: Sequence[str] = ("runtime-error",),
) -> None:
    """A kernel that fails at run time (a window past the tensor's edge) raises an
    exception of one of ``failure_classes``, and leaves Out/InOut untouched (its Out is
    not fully written, so no runtime may have written it in place).

    A runtime that cannot tell a failing kernel from a failing device (PyPTO's
    reports neither) passes ``("device-error",)``.
    """
    _serves(runtime, platform)
    window = artifact_for(runtime, ConformanceWindow, platform)
    src, dst = _window_arrays()
    result = _execute(runtime, window, (src, 4, dst), platform)  # in bounds: works
    np.testing.assert_array_equal(dst[:TM], src[4:4 + TM], err_msg="window r=4")
    np.testing.assert_array_equal(dst[TM:], -2.0, err_msg="rows the kernel never writes")
    assert result.platform == platform
    src, dst = _window_arrays()
    try:
        _execute(runtime, window, (src, 30, dst), platform)
    except Exception as exc:  # noqa: BLE001  (the class is what is checked)
        got = _failure_class(exc)
        assert got in failure_classes, (
            f"{_who(runtime)}: a kernel failing at run time raised {type(exc).__name__} "
            f"of failure class {got!r}; expected {' or '.join(failure_classes)}"
        )
    else:
        raise AssertionError(
            f"{_who(runtime)} ran a window at row 30 of a {M}-row tensor without an error"
        )
    np.testing.assert_array_equal(dst, -2.0, err_msg="a failed run wrote its InOut")


def check_survives_failure(runtime: Any, platform: str) -> None:
    """After a kernel failed, the next execute succeeds with correct results."""
    _serves(runtime, platform)
    window = artifact_for(runtime, ConformanceWindow, platform)
    add = artifact_for(runtime, ConformanceAdd, platform)
    for attempt in range(2):
        src, dst = _window_arrays()
        try:
            _execute(runtime, window, (src, 30, dst), platform)
        except Exception:  # noqa: BLE001  (check_reports_kernel_failure judges the class)
            pass
        x, y, acc, out = _add_arrays(10 + attempt)
        want_out, want_acc = x + y, acc + x
        _execute(runtime, add, (x, y, acc, out), platform)
        np.testing.assert_array_equal(out, want_out, err_msg=f"run after failure {attempt + 1}")
        np.testing.assert_array_equal(acc, want_acc, err_msg=f"run after failure {attempt + 1}")


def check_close_idempotent(factory: Callable[[], Any], platform: str | None = None) -> None:
    """A runtime ``factory()`` makes, used or not, closes twice without error."""
    fresh = factory()
    fresh.close()
    fresh.close()
    used = factory()
    if platform is not None and platform in used.platforms:
        x, y, acc, out = _add_arrays(4)
        _execute(used, artifact_for(used, ConformanceAdd, platform), (x, y, acc, out), platform)
        np.testing.assert_array_equal(out, x + y)
    used.close()
    used.close()


CHECKS: tuple[str, ...] = (
    "protocol",
    "refuses_wrong_platform",
    "writes_outputs",
    "never_mutates_inputs",
    "reports_kernel_failure",
    "survives_failure",
    "close_idempotent",
)


def run_check(
    name: str, runtime: Any, platform: str, *,
    factory: Callable[[], Any] | None = None,
    failure_classes: Sequence[str] = ("runtime-error",),
) -> None:
    """Run the check ``name`` (one of `CHECKS`) on ``runtime`` and ``platform``.

    ``factory`` makes fresh runtimes for ``close_idempotent`` (default
    ``type(runtime)``); ``failure_classes`` is what ``reports_kernel_failure`` accepts.
    """
    if name not in CHECKS:
        raise ValueError(f"unknown conformance check {name!r}; checks: {', '.join(CHECKS)}")
    if name == "close_idempotent":
        check_close_idempotent(factory or type(runtime), platform)
    elif name == "reports_kernel_failure":
        check_reports_kernel_failure(runtime, platform, failure_classes)
    else:
        globals()[f"check_{name}"](runtime, platform)
