"""Large cases run one at a time on a machine (harness/admission.py): the machine-wide
lock is held exactly while a large case runs, never for a small one."""

from __future__ import annotations

import fcntl
import os
import threading
import time

import numpy as np
import pytest

from pytest_pypto import RunConfig
from pytest_pypto.harness import admission
from pytest_pypto.harness.cases import TensorSpec
from pytest_pypto.harness.runner import Runner
from pytest_pypto.harness.seeding import make_rng
from pytest_pypto.runtime.devices import user_lock_file
from ut.compat.pypto_kit import TorchAdd


@pytest.fixture(autouse=True)
def _own_lock_dir(tmp_path, monkeypatch):
    monkeypatch.setenv("PYPTO_LOCK_DIR", str(tmp_path / "locks"))
    monkeypatch.setattr(admission, "machine_memory", lambda: 64 << 20)  # a 64 MiB machine


def _held() -> bool:
    fd = user_lock_file(admission.LOCK_NAME)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
    return False


def test_declared_bytes_count_every_tensor_spec():
    specs = [TensorSpec("a", [1024, 1024], np.float32), TensorSpec("b", [16], np.int8)]
    assert admission.declared_bytes(specs) == 4 * 1024 * 1024 + 16
    assert admission.declared_bytes([object()]) == 0


def test_the_share_of_the_machine_decides(monkeypatch):
    assert admission.is_large(4 << 20) and not admission.is_large((4 << 20) - 1)
    monkeypatch.setattr(admission, "machine_memory", lambda: None)
    assert not admission.is_large(1 << 40)  # memory unknown: never large


class _Probe(TorchAdd):
    """TorchAdd whose golden records whether the large-case lock is held meanwhile."""

    seen: list = []

    def compute_expected(self, tensors, params=None):
        _Probe.seen.append(_held())
        super().compute_expected(tensors, params)


@pytest.mark.parametrize(("memory", "held"), [(64 << 20, False), (32 << 10, True)])
def test_the_runner_holds_the_lock_around_a_large_case(monkeypatch, memory, held):
    monkeypatch.setattr(admission, "machine_memory", lambda: memory)  # 6 KiB of tensors
    _Probe.seen = []
    result = Runner(RunConfig(platform="a2a3sim", seed=1), rng_factory=lambda: make_rng(1)).run(
        _Probe())
    assert result.passed, result.error
    assert _Probe.seen == [held] and not _held()


def test_a_large_case_holds_the_lock_a_small_one_does_not():
    with admission.large_case(1 << 20) as held:
        assert held is False and not _held()
    with admission.large_case(16 << 20) as held:
        assert held is True and _held()
    assert not _held()  # released after the case


def test_two_large_cases_run_one_after_the_other():
    spans = []

    def case():
        with admission.large_case(16 << 20):
            start = time.monotonic()
            time.sleep(0.2)
            spans.append((start, time.monotonic()))

    threads = [threading.Thread(target=case) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    (s1, e1), (s2, e2) = sorted(spans)
    assert s2 >= e1  # the second started only after the first ended


class _GoldenFails(TorchAdd):
    def compute_expected(self, tensors, params=None):
        raise RuntimeError("golden broke")


def test_the_steps_are_called_from_execute_itself():
    """Callers that classify a failure by the step _execute called (the golden, compile,
    dispatch) still see that step with the admission lock around it."""
    runner = Runner(RunConfig(platform="a2a3sim", seed=1), rng_factory=lambda: make_rng(1))
    with pytest.raises(RuntimeError) as info:
        runner._execute(_GoldenFails())
    names = [entry.name for entry in info.traceback]
    assert names[names.index("_execute") + 1] == "_harness_golden"
