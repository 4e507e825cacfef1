"""The Runtime protocol's conformance suite, run on every available installed runtime.

Parametrized over the runtimes the registry lists as ``ok`` (the bundled ``sim``
and ``isolated``, and any third-party runtime installed in this environment) on
the sim platforms each serves, plus the PyPTO adapter on the stand-in package
(``standin_pypto``), which serves all four platforms (the onboard ones through
the stand-in's simulated device).  The checks live in
`pytest_pypto.harness.conformance`, so a third-party runtime runs the same ones.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from standin_pypto import installed as standin_installed

from pytest_pypto.harness import conformance
from pytest_pypto.runtime import registry

SIM_PLATFORMS = ("a2a3sim", "a5sim")


def _registered() -> list[tuple[str, str]]:
    cases = []
    for info in registry.installed():
        if info.status != "ok":
            continue
        for platform in info.platforms:
            if platform in SIM_PLATFORMS:
                cases.append((info.name, platform))
    return cases


REGISTERED = _registered()
PYPTO = [("pypto-standin", p) for p in ("a2a3sim", "a5sim", "a2a3", "a5")]


def test_the_bundled_runtimes_are_among_those_checked():
    names = {name for name, _ in REGISTERED}
    assert {"sim", "isolated"} <= names, names
    assert {p for n, p in REGISTERED if n == "sim"} == set(SIM_PLATFORMS)


@pytest.fixture(scope="module")
def pypto_runtime() -> Iterator[Any]:
    """The PyPTO adapter over the stand-in, shared by this module's tests."""
    from pytest_pypto.runtimes.pypto import PyptoRuntime

    with pytest.MonkeyPatch.context() as mp, standin_installed(mp):
        runtime = PyptoRuntime()
        yield runtime
        runtime.close()


def _runtime(name: str, request: pytest.FixtureRequest) -> Any:
    if name == "pypto-standin":
        return request.getfixturevalue("pypto_runtime")
    return registry.default_registry().get(name)


@pytest.mark.parametrize("check", conformance.CHECKS)
@pytest.mark.parametrize(("name", "platform"), REGISTERED + PYPTO)
def test_conformance(name: str, platform: str, check: str, request: pytest.FixtureRequest):
    runtime = _runtime(name, request)
    factory = None
    classes = ("runtime-error",)
    if name == "pypto-standin":
        from pytest_pypto.runtimes.pypto import PyptoRuntime

        factory = PyptoRuntime  # the stand-in stays installed for the module
        # PyPTO reports a failing kernel as an exception without a class: device-error.
        classes = ("device-error",)
    conformance.run_check(check, runtime, platform, factory=factory, failure_classes=classes)


# -- the suite catches what it claims to ---------------------------------------------------


class _Lax:
    """A runtime that wraps the simulator but breaks one rule at a time."""

    name = "lax"
    version = "1.0"
    platforms = ("a2a3sim", "a5sim")

    def __init__(self, flaw: str = "") -> None:
        from pytest_pypto.runtime.simulator import SimRuntime

        self.flaw = flaw
        self.sim = SimRuntime()

    def execute(self, artifact, arrays, *, config, outputs_in=False, device=None):
        import numpy as np

        if self.flaw == "ignores_platform":
            from pytest_pypto import RunConfig

            config = RunConfig(platform=artifact.platform)
        if self.flaw == "scribbles_on_inputs":
            for a in arrays:
                if isinstance(a, np.ndarray):
                    a += 1
        if self.flaw == "drops_outputs":
            copies = [a.copy() if isinstance(a, np.ndarray) else a for a in arrays]
            return self.sim.execute(artifact, copies, config=config)
        if self.flaw == "swallows_failures":
            try:
                return self.sim.execute(artifact, arrays, config=config)
            except Exception:
                return None
        return self.sim.execute(artifact, arrays, config=config)

    def close(self) -> None:
        if self.flaw == "closes_once":
            if getattr(self, "_closed", False):
                raise RuntimeError("already closed")
            self._closed = True


@pytest.mark.parametrize(("flaw", "check", "message"), [
    ("ignores_platform", "refuses_wrong_platform", "compiled for 'a5sim'"),
    ("scribbles_on_inputs", "never_mutates_inputs", "In parameter x was written"),
    ("drops_outputs", "writes_outputs", "Out result"),
    ("swallows_failures", "reports_kernel_failure", "without an error"),
    ("closes_once", "close_idempotent", "already closed"),
])
def test_each_check_fails_a_runtime_breaking_its_rule(flaw, check, message):
    with pytest.raises((AssertionError, RuntimeError), match=message):
        conformance.run_check(check, _Lax(flaw), "a2a3sim", factory=lambda: _Lax(flaw))
    conformance.run_check(check, _Lax(), "a2a3sim", factory=_Lax)  # the honest one passes


def test_the_protocol_check_names_what_is_missing():
    class Nameless:
        version = "not a version"
        platforms = ("a2a3sim", "a9")

        def execute(self, *a, **k):  # pragma: no cover - never called
            raise AssertionError

    with pytest.raises(AssertionError, match=r"'name' must be a string.*not a PEP 440.*'a9'"):
        conformance.check_protocol(Nameless())


def test_an_unknown_check_names_the_valid_ones():
    with pytest.raises(ValueError, match="unknown conformance check 'fast'; checks: protocol, "):
        conformance.run_check("fast", _Lax(), "a2a3sim")
